"""Dormant entries (`rk.core.schedule.dormant`): N unanswered deliveries, then silence until the pane shows life."""

from __future__ import annotations

from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.cost import caps
from rk.core.log.delivery import LogLine, LogView, Reason, Status, lines_to_keep, status_of
from rk.core.log.diagnostics import Diag
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.dormant import dormancy, dormant_line, parse_dormant_after, woken_line
from rk.core.schedule.due import due
from rk.core.schedule.entry import DORMANT_AFTER, CreatedBy, Entry, EntryError, Every, Target, TargetKind
from rk.core.schedule.forecast import forecast
from rk.core.schedule.health import is_trouble
from rk.core.schedule.simulate import AgentModel, StateChange, simulate
from rk.core.settings import Settings

PANE = "%1"
DAY = 86400


def entry(**kw: object) -> Entry:
    base: dict[str, object] = {
        "id": "dm01",
        "schedule": Every(300),
        "target": Target(TargetKind.PANE, PANE),
        "payload": "status?",
        "created_by": CreatedBy(at=0),
    }
    return Entry(**(base | kw))  # type: ignore[arg-type]


def sent(*stamps: int, pane: str = PANE, reason: str = Reason.SCHEDULE) -> list[LogLine]:
    return [LogLine(t, "dm01", pane, reason, "delivered") for t in stamps]


def idle(epoch: int, state: str = "idle") -> TargetFact:
    return TargetFact(pane=PANE, state=state, epoch=epoch)


# -- the count --------------------------------------------------------------------------------------


def test_three_unanswered_deliveries_make_it_dormant_and_a_stamp_after_any_of_them_does_not():
    view = LogView(sent(300, 600, 900))
    assert dormancy(entry(), view, idle(10)).dormant
    assert dormancy(entry(), view, idle(10)).since == 300
    assert dormancy(entry(), view, idle(300)).unanswered == 2  # a stamp in the delivery's second: answered
    assert not dormancy(entry(), view, idle(900)).dormant
    assert not dormancy(entry(), LogView(sent(600, 900)), idle(10)).dormant  # two are not three


@pytest.mark.parametrize(
    "cut",
    [
        LogLine(650, "dm01", "", Reason.EDIT, "rescheduled"),
        woken_line("dm01", 650),
        LogLine(650, "dm01", "%9", Reason.SCHEDULE, "delivered"),  # into another pane: the count is this pane's
    ],
    ids=["edit", "woken", "another-pane"],
)
def test_an_edit_a_wake_by_hand_or_another_pane_starts_the_count_again(cut):
    view = LogView([*sent(300, 600), cut, *sent(900, 1200)])
    assert dormancy(entry(), view, idle(10)).unanswered == 2


def test_skipped_fires_and_manual_runs_are_not_counted_and_do_not_cut():
    lines = [
        *sent(300),
        LogLine(400, "dm01", PANE, Reason.SCHEDULE, "skipped-busy: active"),
        *sent(500, reason=Reason.MANUAL),
        *sent(600, 900),
    ]
    rest = dormancy(entry(), LogView(lines), idle(10))
    assert (rest.unanswered, rest.since) == (3, 300)


def test_only_where_turns_can_be_known_and_never_when_off():
    view = LogView(sent(300, 600, 900, 1200))
    assert not dormancy(entry(), view, TargetFact(pane=PANE, state="", epoch=0)).dormant  # no agent state
    assert not dormancy(entry(), view, TargetFact(why="gone")).dormant  # unresolved
    assert not dormancy(entry(dormant_after=0), view, idle(10)).dormant
    assert dormancy(entry(dormant_after=4), view, idle(10)).dormant
    assert not dormancy(entry(dormant_after=5), view, idle(10)).dormant


def test_told_once_then_held_and_a_later_streak_is_told_again():
    e = entry()
    told = LogView([*sent(300, 600, 900), dormant_line(e, PANE, Reason.SCHEDULE, 1200)])
    assert dormancy(e, told, idle(10)).held
    again = LogView([*told.lines, *sent(2000, 2300, 2600)])  # life at 1500, three more unanswered
    assert not dormancy(e, again, idle(1500)).said


# -- due(): the one line, the hold, the wake ---------------------------------------------------------


def _due(view: LogView, now: int, epoch: int, e: Entry | None = None):
    pane = PaneFact(pane_id=PANE, state="idle", epoch=epoch)
    return due([e or entry()], view, [pane], {"dm01": idle(epoch)}, {}, now)


def test_the_fire_after_n_unanswered_is_one_dormant_line_and_nothing_typed():
    ev = _due(LogView(sent(300, 600, 900)), 1200, 10)
    assert ev.fires == ()
    assert [line.outcome for line, _ in ev.ledger(1200)] == ["dormant: no answer to 3 prompts"]
    assert [d.reason for d in ev.diagnostics] == [Diag.DORMANT]


def test_once_told_every_fire_is_held_without_a_line_until_the_pane_shows_life():
    view = LogView([*sent(300, 600, 900), dormant_line(entry(), PANE, Reason.SCHEDULE, 1200)])
    for now in (1500, 1800, 5000):
        ev = _due(view, now, 10)
        assert (ev.fires, ev.ledger(now)) == ((), [])
        assert [d.reason for d in ev.diagnostics] == [Diag.DORMANT]
    woke = _due(view, 5000, 4000)  # the agent's state written at 4000: a turn, a new agent, a change
    assert [f.entry for f in woke.fires] == ["dm01"]


def test_a_not_yet_due_entry_writes_nothing_even_with_n_unanswered():
    ev = _due(LogView(sent(300, 600, 900)), 1000, 10)
    assert (ev.fires, ev.ledger(1000), ev.diagnostics) == ((), [], ())


# -- the simulator: the figure of the closing note ---------------------------------------------------


def _day(e: Entry, agents: dict[str, AgentModel] | None = None):
    return simulate([e], start=0, end=DAY, tick=60, script=[StateChange(0, PANE, "idle")], agents=agents or {})


def test_a_deaf_agent_over_a_day_gets_3_prompts_instead_of_287():
    deaf = _day(entry())
    assert [status_of(line.outcome) for line in deaf.lines] == ["delivered"] * 3 + ["dormant"]
    assert len(deaf.fires()) == 3
    assert len(_day(entry(dormant_after=0)).fires()) == 287
    answering = _day(entry(), {PANE: AgentModel(busy_for=20)})
    assert len(answering.fires()) == 287 and not any(status_of(x.outcome) == "dormant" for x in answering.lines)


# -- the forecast and the views ------------------------------------------------------------------------


def _told(view: LogView, now: int, epoch: int, n: int = 5):
    return forecast(entry(), view, idle(epoch), now, zone=UTC, settings=Settings(), n=n)


def test_the_forecast_shows_no_fire_while_dormant_and_says_why():
    view = LogView([*sent(300, 600, 900), dormant_line(entry(), PANE, Reason.SCHEDULE, 1200)])
    told = _told(view, 1300, 10)
    assert told.fires == () and told.why_not is not None and told.why_not.startswith("dormant: no answer to 3")
    assert is_trouble(told.why_not)  # a deaf agent is something to look at
    going = _told(LogView(sent(300, 600, 900)), 1000, 10)
    assert going.fires == () and going.why_not is not None and going.why_not.startswith("dormant")


def test_the_forecast_assumes_an_answering_agent():
    told = _told(LogView(sent(300, 600)), 700, 10)  # two unanswered now: the next one is the third
    assert len(told.fires) == 5


# -- the field, the file, the rotation -------------------------------------------------------------------


def test_the_field_reads_n_off_and_refuses_the_rest():
    raw = {"id": "dm01", "schedule": {"kind": "every", "interval": "5m"}, "target": {"kind": "pane", "pane": PANE}}
    assert decode_entry(raw).dormant_after == DORMANT_AFTER
    assert decode_entry(raw | {"dormant_after": 5}).dormant_after == 5
    assert decode_entry(raw | {"dormant_after": "off"}).dormant_after == 0
    for bad in (-1, "soon", 1001, True, 2.5):
        with pytest.raises(EntryError):
            decode_entry(raw | {"dormant_after": bad})
    assert parse_dormant_after("OFF") == 0 and parse_dormant_after("7") == 7


def test_the_file_keeps_only_what_is_not_the_default():
    assert "dormant_after" not in entry().to_yaml()
    assert entry(dormant_after=0).to_yaml()["dormant_after"] == "off"
    assert entry(dormant_after=5).to_yaml()["dormant_after"] == 5
    back = decode_entry(entry(dormant_after=0).to_yaml())
    assert back.dormant_after == 0


def test_a_rotation_keeps_what_dormancy_reads():
    e = entry(dormant_after=3)
    lines = [*sent(100, 200, 300, 400), dormant_line(e, PANE, Reason.SCHEDULE, 500), woken_line("dm01", 50)]
    lines += [LogLine(600 + i, "other", "%2", Reason.SCHEDULE, "delivered") for i in range(5)]
    kept = [lines[i] for i in lines_to_keep(lines, 100_000, (), None, {"dm01": caps.kept_deliveries(e)})]
    assert {line.ts for line in kept if line.entry == "dm01"} >= {200, 300, 400, 500, 50}
    before = dormancy(e, LogView(lines), idle(10))
    assert dormancy(e, LogView(kept), idle(10)) == before


# -- properties ----------------------------------------------------------------------------------------------

_LIFE = st.lists(st.integers(min_value=1, max_value=DAY // 4 - 1), max_size=8, unique=True)


@settings(max_examples=60, deadline=None)
@given(life=_LIFE, n=st.integers(min_value=1, max_value=5), every=st.sampled_from([60, 300, 900]))
def test_never_more_than_n_unanswered_prompts_between_two_signs_of_life(life, n, every):
    """Between two state changes of the pane, at most N deliveries and one dormant line;
    and the first fire due after a change (a sign of life) is a delivery, not a dormant line."""
    script = [StateChange(0, PANE, "idle")]
    for i, at in enumerate(sorted(life)):
        script.append(StateChange(at, PANE, "active" if i % 2 == 0 else "idle"))
    e = entry(schedule=Every(every), dormant_after=n)
    sim = simulate([e], start=0, end=DAY // 4, tick=60, script=script)
    changes = sorted({0, *life})
    for lo, hi in zip(changes, [*changes[1:], DAY], strict=True):
        inside = [x for x in sim.lines if lo <= x.ts < hi]  # a fire in the change's own tick is answered by it
        assert sum(1 for x in inside if x.ts > lo and status_of(x.outcome) == Status.DELIVERED) <= n
        assert sum(1 for x in inside if status_of(x.outcome) == Status.DORMANT) <= 1  # told once
        if inside and lo > 0:
            assert status_of(inside[0].outcome) == Status.DELIVERED


# -- telling: the notification and the status line -------------------------------------------------------------


def test_the_dormant_line_is_one_notification_that_says_how_to_wake_it():
    from rk.core.channels.notice import DORMANT, EVENTS, Memory, events_of, message

    assert DORMANT in EVENTS  # a channel without `on:` hears of it
    line = dormant_line(entry(), PANE, Reason.SCHEDULE, 1200)
    events = events_of("work", [(line.entry, line.target, line.outcome)], [], 1200, Memory())
    assert [(e.kind, e.entry, e.pane, e.detail) for e in events] == [(DORMANT, "dm01", PANE, "no answer to 3 prompts")]
    title, body = message(events[0], 1200, UTC)
    assert "dormant" in title and "no answer to 3 prompts" in body and "rk -L work cron wake dm01" in body


def test_the_status_line_counts_dormant_entries():
    from rk.core.channels.glance import Glance

    seen = Glance.of(ticker=True, next_due=None, now=0, panes=[], dormant=2)
    assert "💤2" in seen.plain() and seen.to_dict()["dormant"] == 2
    assert "💤" not in Glance.of(ticker=True, next_due=None, now=0, panes=[]).plain()

"""only_if_changed, pure: the normalised screen (against real captured screens), the
marks and the verdict, the entry key, the disposition and the simulator's honesty."""

from __future__ import annotations

from pathlib import Path

import pytest

from rk.core.cost.unchanged import Mark, Print, Verdict, compared, mark_of, normalised, screen_hash, verdict, wants_mark
from rk.core.log.delivery import LogLine, LogView, Reason, Status, lines_to_keep
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.dispose import Act, Seen, dispose
from rk.core.schedule.due import Fire
from rk.core.schedule.entry import Entry, EntryError, Every, Target, TargetKind, WakeOn
from rk.core.schedule.simulate import AgentModel, simulate

SCREENS = Path(__file__).resolve().parent / "fixtures" / "screens"
AGENTS = ("claude", "claude-2.1.332", "codex", "gemini")


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("ext", ["txt", "ansi"])
def test_a_spinner_and_elapsed_time_tick_alone_normalise_away_on_real_screens(agent, ext):
    one = (SCREENS / agent / f"working_1.{ext}").read_text()
    two = (SCREENS / agent / f"working_2.{ext}").read_text()
    assert one != two
    assert screen_hash(one) == screen_hash(two)


@pytest.mark.parametrize("agent", AGENTS)
def test_an_answer_on_a_real_screen_is_a_change(agent):
    working = (SCREENS / agent / "working_1.txt").read_text()
    idle = (SCREENS / agent / "idle_after_turn.txt").read_text()
    assert screen_hash(working) != screen_hash(idle)


def test_a_draft_on_a_real_screen_is_a_change():
    for agent in ("claude", "codex", "gemini"):
        fresh = (SCREENS / agent / "idle_fresh.txt").read_text()
        draft = (SCREENS / agent / "draft.txt").read_text()
        assert screen_hash(fresh) != screen_hash(draft), agent


def test_what_normalising_replaces_and_what_it_keeps():
    text = "\x1b[1m✶ Percolating… (12s · ↑ 1.2k tokens)\x1b[0m   \n  Worked for <1s • 12:06\n⠸ 10:18am\n\n\n"
    assert normalised(text) == "◌ Percolating… (#time · #tokens)\n  Worked for #time • #clock\n◌ #clock"
    assert normalised("42 tests passed") != normalised("43 tests passed")  # a count is text, not a clock
    assert normalised("build ok") != normalised("build failed")
    assert normalised("a  \nb\n\n") == normalised("a\nb")  # trailing spaces and blank lines


T = 1_800_000_000
A = Print("idle", T + 30, "h1")
MARK = Mark(delivered=T, taken=T + 40, answered=T + 30, panes={"%1": A})


def test_the_first_fire_always_goes():
    assert verdict(None, 0, {"%1": A}, 30, T + 100) == Verdict.FIRST


def test_a_lost_state_file_means_the_fire_goes():
    assert verdict(None, T, {"%1": A}, 30, T + 100) == Verdict.UNANSWERED


def test_a_prompt_not_yet_answered_is_not_unchanged():
    newer = Mark(T - 600, T - 560, T - 570, {"%1": A})  # the mark of an older delivery
    assert verdict(newer, T, {"%1": A}, 30, T + 100) == Verdict.UNANSWERED
    assert not wants_mark(None, T, "active", T - 5)  # busy: not answered
    assert not wants_mark(None, T, "idle", T - 5)  # at rest, but its turn ended before the prompt
    assert wants_mark(None, T, "idle", T + 30)
    assert not wants_mark(MARK, T, "idle", T + 90)  # one mark per delivery, at the first sight


def test_nothing_new_skips_and_each_kind_of_change_goes():
    assert verdict(MARK, T, {"%1": A}, 30, T + 100) == Verdict.UNCHANGED
    assert verdict(MARK, T, {"%1": Print("idle", T + 300, "h1")}, 30, T + 100) == Verdict.TURN  # a new turn
    assert verdict(MARK, T, {"%1": Print("active", T + 30, "h1")}, 30, T + 100) == Verdict.STATE  # one under way
    assert verdict(MARK, T, {"%1": Print("idle", T + 30, "h2")}, 30, T + 100) == Verdict.SCREEN  # new text
    assert verdict(MARK, T, {"%1": A, "%2": A}, 30, T + 100) == Verdict.PANES


def test_a_mark_taken_by_the_tick_of_the_fire_is_not_trusted():
    assert verdict(MARK, T, {"%1": A}, 30, MARK.taken) == Verdict.FRESH  # a lost file, a first look at the fire


def test_a_mark_taken_long_after_the_answer_is_not_trusted():
    late = Mark(T, T + 30 + 121, T + 30, {"%1": A})
    assert verdict(late, T, {"%1": A}, 30, T + 200) == Verdict.LATE
    assert verdict(late, T, {"%1": A}, 61, T + 200) == Verdict.UNCHANGED  # two polls of 61 s
    assert verdict(Mark(T, T + 150, T + 30, {"%1": A}), T, {"%1": A}, 30, T + 200) == Verdict.UNCHANGED


def test_a_spinner_only_change_skips_and_a_text_change_goes_end_to_end():
    one = (SCREENS / "claude" / "working_1.txt").read_text()
    two = (SCREENS / "claude" / "working_2.txt").read_text()
    mark = Mark(T, T + 40, T + 30, {"%1": Print("idle", T + 30, screen_hash(one))})
    assert verdict(mark, T, {"%1": Print("idle", T + 30, screen_hash(two))}, 30, T + 100) == Verdict.UNCHANGED
    moved = two.replace("❯ take your time", "● The build finished: 3 failures.\n\n❯ take your time")
    assert verdict(mark, T, {"%1": Print("idle", T + 30, screen_hash(moved))}, 30, T + 100) == Verdict.SCREEN


def test_marks_read_back_and_a_malformed_one_is_none():
    assert mark_of(MARK.to_json()) == MARK
    for bad in (None, [], {"delivered": T}, {**MARK.to_json(), "taken": "x"}, {**MARK.to_json(), "panes": {}}):
        assert mark_of(bad) is None
    assert mark_of({**MARK.to_json(), "panes": {"%1": {"state": "idle", "turn_end": -1, "screen": ""}}}) is None


def test_scope_compares_the_panes_its_wake_watches():
    states = {"%1": "idle", "%2": "active", "%3": "", "%4": "idle"}
    assert compared("scope", True, "%1", states) == ("%2", "%4")  # its own target and stateless panes aside
    assert compared("scope", False, "%1", states) == ("%1",)  # limit-reset watches its own target
    assert compared("pane", True, "%1", states) == ("%1",)


def _raw(**extra):
    return {
        "id": "a",
        "schedule": {"kind": "every", "interval": "5m"},
        "target": {"kind": "pane", "pane": "%1"},
    } | extra


def test_the_entry_key_reads_writes_and_refuses_a_bad_value():
    assert decode_entry(_raw(only_if_changed="pane")).only_if_changed == "pane"
    assert decode_entry(_raw(only_if_changed=True)).only_if_changed == "pane"
    assert decode_entry(_raw()).only_if_changed == ""
    assert decode_entry(_raw(only_if_changed="pane")).to_yaml()["only_if_changed"] == "pane"
    assert "only_if_changed" not in decode_entry(_raw()).to_yaml()
    woken = decode_entry(_raw(only_if_changed="scope", wake_on={"event": "agent-state-change"}))
    assert woken.only_if_changed == "scope"
    for bad in ("always", 3):
        with pytest.raises(EntryError, match="only_if_changed must be pane or scope"):
            decode_entry(_raw(only_if_changed=bad))
    with pytest.raises(EntryError, match="needs wake_on"):
        decode_entry(_raw(only_if_changed="scope"))


ENTRY = Entry("a", Every(300), Target(TargetKind.PANE, "%1"), "status?", only_if_changed="pane")


def _fire(reason=Reason.SCHEDULE):
    return Fire("a", reason, "%1", 0, T, T)


def test_dispose_skips_an_unchanged_pane_at_rest_only():
    view = LogView()
    idle = Seen(state="idle", unchanged=True)
    assert dispose(_fire(), ENTRY, view, T, 60, idle).text == "skipped-unchanged"
    assert dispose(_fire(), ENTRY, view, T, 60, Seen(state="idle")).act == Act.SEND  # changed
    assert dispose(_fire(), Entry("a", Every(300), ENTRY.target), view, T, 60, idle).act == Act.SEND  # not asked
    assert dispose(_fire(Reason.MANUAL), ENTRY, view, T, 60, idle).act == Act.SEND  # rk cron run: a human asked
    assert dispose(_fire(), ENTRY, view, T, 60, Seen(state="idle", draft=True, unchanged=True)).text == (
        "held-busy: draft"
    )  # anything in the way: the deliver policy as usual


def test_a_skipped_unchanged_line_anchors_but_is_not_counted_against_the_rate_and_keeps_the_delivery():
    lines = [LogLine(T, "a", "%1", "schedule", "delivered")] + [
        LogLine(T + 300 * i, "a", "%1", "schedule", "skipped-unchanged") for i in range(1, 30)
    ]
    view = LogView(lines)
    assert view.anchor("a") == lines[-1]
    assert view.rate_count(T + 300 * 29, target="%1") == 0
    assert view.last_delivered("a") == lines[0]
    assert 0 in lines_to_keep(lines, T + 300 * 29, ())  # the mark's delivery survives a rotation
    assert Status("skipped-unchanged") == Status.SKIPPED_UNCHANGED


def test_the_simulator_delivers_every_fire_and_marks_those_the_screen_decides():
    from rk.core.schedule.simulate import StateChange

    sim = simulate(
        [ENTRY],
        start=T,
        end=T + 1800,
        tick=30,
        script=[
            StateChange(T, "%1", "idle"),
            StateChange(T + 1000, "%1", "active"),
            StateChange(T + 1100, "%1", "idle"),
        ],
        agents={"%1": AgentModel(busy_for=20)},
    )
    fires = [e for e in sim.events if e.kind == "line"]
    assert [e.outcome for e in fires] == ["delivered"] * 6
    # the first goes, and so does the one after a human's turn (1000 s…1100 s): no screen to read
    assert [e.at - T for e in fires if e.if_unchanged] == [300, 600, 900, 1500]
    assert [e.at - T for e in fires if not e.if_unchanged] == [0, 1200]


def test_a_wake_entry_in_scope_is_marked_by_the_watched_panes():
    entry = Entry(
        "w", Every(300), Target(TargetKind.PANE, "%1"), "look", wake_on=WakeOn(debounce=0), only_if_changed="scope"
    )
    from rk.core.schedule.simulate import StateChange

    sim = simulate(
        [entry],
        start=T,
        end=T + 1300,
        tick=30,
        script=[StateChange(T, "%1", "idle"), StateChange(T, "%2", "idle")],
        agents={"%1": AgentModel(busy_for=20)},
    )
    assert [(e.at - T, e.if_unchanged) for e in sim.events if e.kind == "line"] == [
        (0, False),
        (300, True),
        (600, True),
        (900, True),
        (1200, True),
    ]

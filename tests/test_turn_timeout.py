"""Turn timeouts, the pure part: whose turn it is, once per delivery, the boundary,
and that the new log lines move no schedule, cap no rate and survive rotation."""

from __future__ import annotations

from datetime import UTC

import pytest

from rk.core.channels.notice import TURN_TIMEOUT, Memory, events_of
from rk.core.cost.turn_timeout import (
    START_WINDOW,
    StateLine,
    candidates,
    runs,
    timed_out,
    why_not_press,
)
from rk.core.log.delivery import LogLine, LogView, Status, lines_to_keep
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.due import next_due
from rk.core.schedule.entry import CreatedBy, Entry, EntryError, Every, OnTimeout, Target
from rk.core.schedule.gaps import gaps
from rk.store.entries import parse_entries_text

T = 1_000_000  #: the delivery's instant
TIMEOUT = 20 * 60
PANE = PaneFact("%3", state="active", epoch=T + 5, agent="claude")


def delivered(ts: int = T, pane: str = "%3", entry: str = "e1") -> LogLine:
    return LogLine(ts, entry, pane, "schedule", "delivered")


def timeout_line(ts: int, entry: str = "e1") -> LogLine:
    return LogLine(ts, entry, "%3", "schedule", "turn-timeout: still active 20m after the delivery")


#: A pane at rest since T-100 (its last turn ended then), our prompt's turn from T+1 on.
OURS = [StateLine(T - 400, "active"), StateLine(T - 100, "idle", "ok"), StateLine(T + 1, "active")]


def verdict(lines, journal=OURS, now=T + TIMEOUT, pane=PANE, turn_end_at=T - 100):
    return timed_out("e1", TIMEOUT, LogView(lines), pane, turn_end_at, journal, now)


# -- whose turn


def test_runs_are_the_busy_stretches_with_the_rest_before_them():
    journal = [*OURS, StateLine(T + 2, "waiting"), StateLine(T + 3, "active")]
    assert runs(journal) == [runs(journal)[0], runs(journal)[1]]
    first, second = runs(journal)
    assert (first.start, first.end, first.rest_from) == (T - 400, T - 100, 0)
    assert (second.start, second.end, second.rest_from) == (T + 1, 0, T - 100)  # a dialog does not end a run


def test_a_turn_our_delivery_started_times_out():
    hit = verdict([delivered()])
    assert hit is not None and hit.delivery == delivered() and hit.state == "active"


def test_a_turn_that_ended_at_the_second_of_the_delivery_came_before_it():
    """A when-idle fire the Stop hook's nudge let through: idle and delivered in one second."""
    journal = [StateLine(T - 60, "active"), StateLine(T, "idle", "ok"), StateLine(T, "active")]
    assert verdict([delivered()], journal, turn_end_at=T) is not None


def test_an_immediate_prompt_into_a_busy_agent_started_nothing():
    journal = [StateLine(T - 100, "idle"), StateLine(T - 50, "active"), StateLine(T + 30, "active")]
    assert verdict([delivered()], journal) is None


def test_a_humans_turn_after_ours_ended_is_not_ours():
    journal = [*OURS, StateLine(T + 40, "idle", "ok"), StateLine(T + 45, "active")]
    assert verdict([delivered()], journal, turn_end_at=T + 40) is None


def test_a_humans_turn_after_a_sub_second_turn_of_ours_is_not_ours():
    """The journal's order tells what seconds cannot: ours started and ended at T."""
    journal = [StateLine(T - 100, "idle"), StateLine(T, "active"), StateLine(T, "idle", "ok"), StateLine(T, "active")]
    assert verdict([delivered()], journal, turn_end_at=T) is None


def test_a_turn_end_the_journal_missed_makes_the_turn_not_ours():
    assert verdict([delivered()], turn_end_at=T + 2) is None


def test_a_turn_that_began_long_after_the_delivery_is_a_humans():
    journal = [StateLine(T - 100, "idle"), StateLine(T + START_WINDOW + 1, "active")]
    assert verdict([delivered()], journal) is None
    journal = [StateLine(T - 100, "idle"), StateLine(T + START_WINDOW, "active")]
    assert verdict([delivered()], journal) is not None


def test_without_the_rest_before_it_the_turn_is_nobodys():
    assert verdict([delivered()], [StateLine(T + 1, "active")]) is None  # the journal starts mid-run
    assert verdict([delivered()], []) is None


def test_a_pane_the_journal_calls_at_rest_is_not_timed_out():
    assert verdict([delivered()], [*OURS, StateLine(T + 9, "idle", "ok")]) is None


def test_a_pane_at_rest_now_is_not_timed_out():
    from dataclasses import replace

    assert verdict([delivered()], pane=replace(PANE, state="idle")) is None


def test_a_dialog_left_open_times_out_too():
    from dataclasses import replace

    hit = verdict([delivered()], [*OURS, StateLine(T + 60, "waiting")], pane=replace(PANE, state="waiting"))
    assert hit is not None and hit.state == "waiting"


def test_the_delivery_that_started_the_run_counts_not_a_later_one_into_it():
    """`every` with immediate: a second prompt typed into the running turn starts nothing."""
    lines = [delivered(T), delivered(T + 600)]
    hit = verdict(lines, now=T + TIMEOUT)
    assert hit is not None and hit.delivery.ts == T


def test_another_entrys_delivery_or_another_pane_is_not_this_entrys():
    assert verdict([delivered(entry="e2")]) is None
    assert verdict([delivered(pane="%4")]) is None


# -- the boundary and once per delivery


def test_the_boundary_is_exactly_the_timeout():
    assert verdict([delivered()], now=T + TIMEOUT - 1) is None
    assert verdict([delivered()], now=T + TIMEOUT) is not None


def test_once_per_delivery():
    assert verdict([delivered(), timeout_line(T + TIMEOUT)], now=T + TIMEOUT + 60) is None
    interrupted = LogLine(T + TIMEOUT, "e1", "%3", "schedule", "interrupt-failed: still active 15s after Escape")
    assert verdict([delivered(), timeout_line(T + TIMEOUT), interrupted], now=T + 2 * TIMEOUT) is None


def test_a_new_delivery_after_a_handled_one_is_watched_again():
    later = T + 3 * TIMEOUT
    journal = [*OURS, StateLine(later - 10, "idle", "ok"), StateLine(later + 1, "active")]
    lines = [delivered(), timeout_line(T + TIMEOUT), delivered(later)]
    hit = verdict(lines, journal, now=later + TIMEOUT, turn_end_at=later - 10)
    assert hit is not None and hit.delivery.ts == later


def test_candidates_need_no_journal_and_skip_what_cannot_be_due():
    view = LogView([delivered(), LogLine(T + 5, "e1", "%3", "schedule", "skipped-busy: active")])
    assert candidates("e1", TIMEOUT, view, [PANE], T + TIMEOUT) == [delivered()]
    assert candidates("e1", TIMEOUT, view, [PANE], T + TIMEOUT - 1) == []
    assert candidates("e1", 0, view, [PANE], T + TIMEOUT) == []  # no turn_timeout: nothing watched
    assert candidates("e1", TIMEOUT, view, [PaneFact("%3", state="idle")], T + TIMEOUT) == []


# -- the new lines move nothing


def every_entry() -> Entry:
    return Entry(
        id="e1",
        schedule=Every(interval=TIMEOUT),
        target=Target("pane", "%3"),
        payload="status?",
        turn_timeout=TIMEOUT // 2,
        created_by=CreatedBy(at=T - 5000),
    )


def test_an_every_entrys_next_fire_does_not_move_for_a_turn_timeout_line():
    entry = every_entry()
    targets = {"e1": TargetFact(pane="%3", state="active", epoch=T)}
    plain = LogView([delivered()])
    annotated = LogView([delivered(), timeout_line(T + 600), LogLine(T + 600, "e1", "%3", "schedule", "interrupted")])
    now = T + 700
    assert next_due([entry], plain, targets, now) == T + TIMEOUT
    assert next_due([entry], annotated, targets, now) == T + TIMEOUT
    assert annotated.anchor("e1") == delivered()
    assert annotated.newest("e1") == delivered()  # the wake debounce starts at the fire, not the timeout
    assert annotated.schedule_history("e1") == [T]


def test_turn_timeout_lines_count_for_no_rate_cap_and_end_no_orphan_run():
    view = LogView([delivered(), timeout_line(T + 600), LogLine(T + 600, "e1", "%3", "schedule", "interrupted")])
    assert view.rate_count(T + 600, target="%3") == 1
    assert view.rate_count(T + 600, entry="e1") == 1
    assert view.orphaned_since("e1", 0) == 0
    assert [line.outcome.split(":")[0] for line in view.aftermath("e1")] == ["turn-timeout", "interrupted"]


def test_rotation_keeps_the_newest_turn_timeout_so_a_handled_delivery_stays_handled():
    lines = [delivered(), timeout_line(T + TIMEOUT)]
    now = T + 10 * 3600  # far past the rate window
    kept = [lines[i] for i in lines_to_keep(lines, now, backoff=set(), live={"e1"})]
    assert kept == lines
    assert [lines[i] for i in lines_to_keep(lines, now, backoff=set(), live=set())] == []  # a removed entry's go


def test_a_turn_timeout_line_answers_no_cron_occurrence():
    own = [delivered(T), timeout_line(T + 1200)]
    found = gaps([T, T + 900], own, T + 1800)
    assert [(g.occurrence, g.what) for g in found] == [(T + 900, "not run")]


# -- the entry's keys


def raw_entry(**extra) -> dict:
    return {
        "id": "e1",
        "schedule": {"kind": "every", "interval": "20m"},
        "target": {"kind": "pane", "pane": "%3"},
        "payload": "x",
        **extra,
    }


def test_the_keys_round_trip():
    entry = decode_entry(raw_entry(turn_timeout="20m", on_timeout="interrupt"))
    assert (entry.turn_timeout, entry.on_timeout) == (1200, OnTimeout.INTERRUPT)
    assert decode_entry(entry.to_yaml()) == entry
    plain = decode_entry(raw_entry(turn_timeout="5m"))
    assert plain.timeout_policy == OnTimeout.NOTIFY and "on_timeout" not in plain.to_yaml()
    assert "turn_timeout" not in decode_entry(raw_entry()).to_yaml()
    assert plain.timeout_summary == "5m, then notify"


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"turn_timeout": "soon"}, "turn_timeout"),
        ({"turn_timeout": "0s"}, "positive"),
        ({"turn_timeout": "5m", "on_timeout": "kill"}, "notify or interrupt"),
        ({"on_timeout": "interrupt"}, "needs turn_timeout"),
    ],
)
def test_a_bad_hand_edited_value_refuses_that_entry_only(extra, why):
    with pytest.raises(EntryError, match=why):
        decode_entry(raw_entry(**extra))
    import json

    good = raw_entry(turn_timeout="5m") | {"id": "good"}
    loaded = parse_entries_text(json.dumps({"entries": [raw_entry(**extra), good]}))
    assert [e.id for e in loaded.entries] == ["good"]
    assert any(d.entry == "e1" for d in loaded.diagnostics)


# -- pressing, and telling


def test_the_key_is_never_pressed_over_a_humans_screen():
    assert why_not_press("active", False, False, "", False, "claude") == ""
    assert why_not_press("waiting", True, False, "", False, "claude") == "a dialog is open"
    assert why_not_press("active", False, True, "", False, "claude") == "a draft is in the composer"
    assert why_not_press("active", False, False, "copy-mode", False, "claude") == "the pane is in copy-mode"
    assert why_not_press("active", False, False, "", True, "claude") == "the screen could not be read"
    assert "no interrupt key" in why_not_press("active", False, False, "", False, "aider")
    assert "idle" in why_not_press("idle", False, False, "", False, "codex")


def test_a_turn_timeout_is_a_notice_event():
    decisions = [("e1", "%3", "turn-timeout: still active 20m after the delivery")]
    events = events_of("srv", decisions, [], T, Memory())
    assert [(e.kind, e.pane, e.entry, e.detail) for e in events] == [
        (TURN_TIMEOUT, "%3", "e1", "still active 20m after the delivery")
    ]


def test_the_new_statuses_parse():
    assert Status("turn-timeout") == Status.TURN_TIMEOUT
    assert UTC  # the zone the forecasts above assume


# -- the command line (in-process, no tmux: a role target)


@pytest.fixture
def cenv(tmp_path):
    from cli_helpers import T0, make_env

    return make_env(tmp_path, RK_NOW=str(T0))


def cli(env, *args):
    from cli_helpers import run_in

    return run_in(list(args), env)


def entries_of(env) -> list[dict]:
    import json
    from pathlib import Path

    from rk.host.yamlguard import safe_load

    return safe_load((Path(env["RK_STATE_DIR"]) / "default.yaml").read_text())["entries"] or json.loads("[]")


@pytest.mark.shell
def test_add_edit_show_list_and_json_carry_the_timeout(cenv):
    from cli_helpers import json_ok

    entry_id = json_ok(
        cli(cenv, "cron", "add", "hi", "--every", "5m", "--role", "op", "--turn-timeout", "20m", "--json")
    )["id"]
    raw = entries_of(cenv)[0]
    assert (raw["turn_timeout"], "on_timeout" in raw) == ("20m", False)
    assert "turn:       timeout 20m, then notify" in cli(cenv, "cron", "show", entry_id).out
    (rec,) = json_ok(cli(cenv, "cron", "list", "--json"))
    assert (rec["turn_timeout"], rec["on_timeout"]) == ("20m0s", "notify")
    assert "timeout:20m" in cli(cenv, "cron", "list").out

    assert cli(cenv, "cron", "edit", entry_id, "--on-timeout", "interrupt").code == 0
    raw = entries_of(cenv)[0]
    assert (raw["turn_timeout"], raw["on_timeout"]) == ("20m", "interrupt")
    assert "interrupt:20m" in cli(cenv, "cron", "list").out
    from cli_helpers import run_in_pty

    shown = [line for line in run_in_pty(["cron", "list"], cenv, 80).splitlines() if line.strip()]
    assert shown and all(len(line) <= 80 for line in shown), shown  # in a terminal, list fits 80 columns
    assert json_ok(cli(cenv, "cron", "show", entry_id, "--json"))["on_timeout"] == "interrupt"

    for off in ("off", "0"):
        assert cli(cenv, "cron", "edit", entry_id, "--turn-timeout", "5m").code == 0
        assert cli(cenv, "cron", "edit", entry_id, "--turn-timeout", off).code == 0
        raw = entries_of(cenv)[0]
        assert "turn_timeout" not in raw and "on_timeout" not in raw
    assert "rescheduled" not in cli(cenv, "cron", "log").out  # a timeout is no schedule change


@pytest.mark.shell
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--turn-timeout", "soon"), "--turn-timeout: "),
        (("--turn-timeout", "0s"), "--turn-timeout must be positive"),
        (("--turn-timeout", "5m", "--on-timeout", "kill"), "--on-timeout must be one of notify, interrupt"),
        (("--on-timeout", "interrupt"), "--on-timeout needs --turn-timeout"),
        (("--turn-timeout", "5m", "--in", "30m"), "an --at/--in entry retires when it delivers"),
    ],
)
def test_bad_flags_are_usage_errors(cenv, args, message):
    schedule = () if "--in" in args else ("--every", "5m")
    res = cli(cenv, "cron", "add", "hi", *schedule, "--role", "op", *args)
    assert res.code == 2 and message in res.err and "Traceback" not in res.err, res
    assert not (cenv and entries_of_safe(cenv))


def entries_of_safe(env) -> list[dict]:
    try:
        return entries_of(env)
    except OSError:
        return []


@pytest.mark.shell
def test_edit_on_timeout_needs_a_timeout(cenv):
    from cli_helpers import json_ok

    entry_id = json_ok(cli(cenv, "cron", "add", "hi", "--every", "5m", "--role", "op", "--json"))["id"]
    res = cli(cenv, "cron", "edit", entry_id, "--on-timeout", "interrupt")
    assert res.code == 2 and "--on-timeout needs --turn-timeout" in res.err, res
    res = cli(cenv, "cron", "edit", entry_id, "--turn-timeout", "off", "--on-timeout", "notify")
    assert res.code == 2, res


def test_claudes_interrupted_screen_ends_the_turn_interrupted():
    """Claude Code draws `⎿` and a no-break space before `Interrupted`: the look that ends
    an Esc'd turn (Claude fires no hook) must read it as `interrupted`, not `ok`."""
    import re
    from pathlib import Path

    from rk.core.pane.turn import INTERRUPTED, screen_turn_end

    screen = (Path(__file__).parent / "fixtures" / "screens" / "claude" / "interrupted.ansi").read_text()
    assert screen_turn_end("active", "idle", re.sub(r"\x1b\[[0-9;:?]*[@-~]", "", screen)) == INTERRUPTED

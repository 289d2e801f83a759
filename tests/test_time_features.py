"""Issue 11, the time features: the catch-up window (`catch_up_within`), quiet
hours (`active_hours`), a server's pause (`rk cron pause | resume`), the gaps
of a cron entry (`rk cron log ID --gaps`), the daylight-saving note of
`rk cron next`, and `rk cron simulate` drawing a pause and `skipped-quiet`.

Sections:
 1. the pure core: ActiveHours, cron_verdict's window, due() with quiet hours
    and a pause, rk.store.pause's file, gaps.occurrences / gaps.gaps, dst_note
 2. the command line in-process: every flag, message and exit code; a usage
    error writes nothing
 3. two integration tests on a private tmux server, driving real
    `rk cron tick` processes with RK_NOW
"""

from __future__ import annotations

import json
import os
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from cli_helpers import (
    T0,
    json_error,
    json_ok,
    log_line,
    make_env,
    mode,
    one_line_error,
    run_in,
    snapshot,
    write_private,
)
from conftest import run_rk, wait_for
from ruamel.yaml import YAML

from rk.core.log.delivery import LogLine, LogView
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule.cronexpr import CronExpr
from rk.core.schedule.due import Fire, Quiet, cron_verdict, due, is_paused, next_due
from rk.core.schedule.entry import CreatedBy, Cron, Entry, Every, Target, WakeOn, WakeOnly
from rk.core.schedule.gaps import NOT_RUN, Gap, gaps, occurrences
from rk.core.schedule.grace import CRON_GRACE
from rk.core.schedule.hours import ActiveHours, HoursError
from rk.core.schedule.implied import dst_note
from rk.core.schedule.wake import Observation
from rk.store.delivery_log import read_live
from rk.store.pause import Pause, clear_pause, paused_until, read_pause, write_pause

BERLIN = ZoneInfo("Europe/Berlin")
HOUR = 3600
DAY = 86400

FIXED_NOTE = (
    "daylight saving changes in between: a fixed time that does not exist that day fires once,"
    " right after the jump, and one that repeats fires once, on its first pass"
)
CLOCK_NOTE = (
    "daylight saving changes in between: wall times that do not exist that day are skipped,"
    " and wall times that repeat fire in both passes"
)


def ts(text: str) -> int:
    """Unix seconds of an ISO-8601 instant with its offset (`Z` for UTC)."""
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def state_of(env) -> Path:
    return Path(env["RK_STATE_DIR"])


def load_yaml(path: Path):
    return YAML(typ="safe").load(Path(path).read_text())


def add_id(env, *args) -> str:
    """`rk cron add … --json` in-process that must succeed; the new id."""
    return json_ok(run_in(["cron", "add", *args, "--json"], env))["id"]


# =========================================================================== 1. the pure core

# --------------------------------------------------------------------------- ActiveHours.parse


@pytest.mark.parametrize(
    "text, ranges, canonical",
    [
        ("08:00-19:00", ((480, 1140),), "08:00-19:00"),
        ("22:00-02:00", ((1320, 120),), "22:00-02:00"),
        ("00:00-24:00", ((0, 1440),), "00:00-24:00"),
        ("23:59-24:00", ((1439, 1440),), "23:59-24:00"),
        ("00:00-00:01", ((0, 1),), "00:00-00:01"),
        ("09:00-12:00,14:00-17:30", ((540, 720), (840, 1050)), "09:00-12:00,14:00-17:30"),
        ("  09:00-12:00 ,  14:00-17:00  ", ((540, 720), (840, 1020)), "09:00-12:00,14:00-17:00"),
        ("22:00-02:00,09:00-12:00", ((1320, 120), (540, 720)), "22:00-02:00,09:00-12:00"),
    ],
)
def test_active_hours_parse_reads_ranges_and_writes_them_back_canonically(text, ranges, canonical):
    hours = ActiveHours.parse(text)
    assert hours.ranges == ranges
    assert hours.text == canonical
    assert ActiveHours.parse(hours.text) == hours


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "active hours '': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("8:00-19:00", "active hours '8:00-19:00': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("08:00", "active hours '08:00': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("08:00-19:00,", "active hours '08:00-19:00,': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("08:00 - 19:00", "active hours '08:00 - 19:00': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("08:00–19:00", "active hours '08:00–19:00': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),  # an en dash
        ("08:00-19:00;20:00-21:00", "active hours '08:00-19:00;20:00-21:00': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("０８:00-19:00", "active hours '０８:00-19:00': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),  # full-width digits
        ("8-19", "active hours '8-19': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("24:00-01:00", "active hours '24:00-01:00': not a time of day"),
        ("08:60-09:00", "active hours '08:60-09:00': not a time of day"),
        ("08:00-09:60", "active hours '08:00-09:60': not a time of day"),
        ("08:00-25:00", "active hours '08:00-25:00': not a time of day"),
        ("08:00-24:01", "active hours '08:00-24:01': not a time of day"),
        ("09:00-12:00,99:00-10:00", "active hours '99:00-10:00': not a time of day"),
        ("08:00-08:00", "active hours '08:00-08:00': an empty range (for all day write 00:00-24:00)"),
        ("00:00-00:00", "active hours '00:00-00:00': an empty range (for all day write 00:00-24:00)"),
    ],
)
def test_active_hours_parse_refuses_bad_values_with_a_message(text, message):
    with pytest.raises(HoursError) as info:
        ActiveHours.parse(text)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------- ActiveHours.active_at


def _active(text: str, instants: list[str], zone=UTC) -> list[bool]:
    hours = ActiveHours.parse(text)
    return [hours.active_at(ts(t), zone) for t in instants]


def test_active_at_includes_the_start_and_excludes_the_end():
    instants = [
        "2027-01-15T07:59:59Z",
        "2027-01-15T08:00:00Z",
        "2027-01-15T12:00:00Z",
        "2027-01-15T18:59:59Z",
        "2027-01-15T19:00:00Z",
        "2027-01-15T23:30:00Z",
    ]
    assert _active("08:00-19:00", instants) == [False, True, True, True, False, False]


def test_active_at_a_range_that_wraps_midnight():
    instants = [
        "2027-01-15T21:59:59Z",
        "2027-01-15T22:00:00Z",
        "2027-01-15T23:59:59Z",
        "2027-01-16T00:00:00Z",
        "2027-01-16T01:59:59Z",
        "2027-01-16T02:00:00Z",
        "2027-01-16T12:00:00Z",
    ]
    assert _active("22:00-02:00", instants) == [False, True, True, True, True, False, False]


def test_active_at_the_whole_day_and_a_range_ending_at_24():
    every_hour = [f"2027-01-15T{h:02d}:00:00Z" for h in range(24)] + ["2027-01-15T23:59:59Z"]
    assert _active("00:00-24:00", every_hour) == [True] * 25
    late = ["2027-01-15T21:59:59Z", "2027-01-15T22:00:00Z", "2027-01-15T23:59:59Z", "2027-01-16T00:00:00Z"]
    assert _active("22:00-24:00", late) == [False, True, True, False]


def test_active_at_several_ranges_and_the_quiet_between_them():
    instants = [
        "2027-01-15T08:59:00Z",
        "2027-01-15T09:00:00Z",
        "2027-01-15T11:59:00Z",
        "2027-01-15T12:00:00Z",
        "2027-01-15T13:59:00Z",
        "2027-01-15T14:00:00Z",
        "2027-01-15T17:00:00Z",
    ]
    assert _active("09:00-12:00,14:00-17:00", instants) == [False, True, True, False, False, True, False]


def test_active_at_reads_the_wall_clock_of_the_zone():
    # 08:00-19:00 in Berlin (UTC+1 in winter) is 07:00-18:00 UTC
    instants = ["2027-01-15T06:59:59Z", "2027-01-15T07:00:00Z", "2027-01-15T17:59:59Z", "2027-01-15T18:00:00Z"]
    assert _active("08:00-19:00", instants, BERLIN) == [False, True, True, False]
    assert _active("08:00-19:00", instants, UTC) == [False, False, True, True]
    # in summer (UTC+2) it is 06:00-17:00 UTC
    summer = ["2026-07-01T05:59:59Z", "2026-07-01T06:00:00Z", "2026-07-01T16:59:59Z", "2026-07-01T17:00:00Z"]
    assert _active("08:00-19:00", summer, BERLIN) == [False, True, True, False]


def test_active_at_on_the_spring_forward_day_follows_the_wall_clock():
    # Europe/Berlin, 2026-03-29: 02:00 CET is followed by 03:00 CEST (01:00 UTC)
    instants = ["2026-03-29T00:59:59Z", "2026-03-29T01:00:00Z", "2026-03-29T01:59:59Z", "2026-03-29T02:00:00Z"]
    assert _active("02:30-04:00", instants, BERLIN) == [False, True, True, False]


# --------------------------------------------------------------------------- ActiveHours.next_start


@pytest.mark.parametrize(
    "text, at, want",
    [
        ("08:00-19:00", "2027-01-15T07:00:00Z", "2027-01-15T08:00:00Z"),
        ("08:00-19:00", "2027-01-15T07:59:59Z", "2027-01-15T08:00:00Z"),
        # strictly after: at the start itself the next start is tomorrow's
        ("08:00-19:00", "2027-01-15T08:00:00Z", "2027-01-16T08:00:00Z"),
        ("08:00-19:00", "2027-01-15T19:00:00Z", "2027-01-16T08:00:00Z"),
        ("08:00-19:00", "2027-01-15T23:59:59Z", "2027-01-16T08:00:00Z"),
        ("22:00-02:00", "2027-01-15T03:00:00Z", "2027-01-15T22:00:00Z"),
        ("22:00-02:00", "2027-01-15T23:00:00Z", "2027-01-16T22:00:00Z"),
        ("09:00-12:00,14:00-17:00", "2027-01-15T12:30:00Z", "2027-01-15T14:00:00Z"),
        ("09:00-12:00,14:00-17:00", "2027-01-15T17:30:00Z", "2027-01-16T09:00:00Z"),
        ("14:00-17:00,09:00-12:00", "2027-01-15T08:00:00Z", "2027-01-15T09:00:00Z"),  # the earliest, not the first
        ("00:00-24:00", "2027-01-15T10:00:00Z", "2027-01-16T00:00:00Z"),
        ("08:00-19:00", "2027-01-15T07:30:30Z", "2027-01-15T08:00:00Z"),  # seconds do not shift it
    ],
)
def test_next_start_is_the_next_instant_a_range_begins(text, at, want):
    assert ActiveHours.parse(text).next_start(ts(at), UTC) == ts(want)


def test_next_start_in_a_zone_across_the_spring_change():
    hours = ActiveHours.parse("08:00-19:00")
    # Saturday 2026-03-28 noon, Berlin still UTC+1: Sunday 08:00 is already CEST (UTC+2)
    assert hours.next_start(ts("2026-03-28T12:00:00Z"), BERLIN) == ts("2026-03-29T06:00:00Z")
    assert hours.next_start(ts("2026-03-28T12:00:00Z"), BERLIN) == ts("2026-03-29T08:00:00+02:00")
    # and the autumn change: Sunday 2026-10-25 08:00 is CET (UTC+1) again
    assert hours.next_start(ts("2026-10-24T12:00:00Z"), BERLIN) == ts("2026-10-25T07:00:00Z")


def test_next_start_of_a_repeated_wall_time_is_its_first_pass():
    # Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 happens at 00:30Z and at 01:30Z
    hours = ActiveHours.parse("02:30-04:00")
    assert hours.next_start(ts("2026-10-24T22:00:00Z"), BERLIN) == ts("2026-10-25T00:30:00Z")


# A range whose start falls in the hour a spring-forward jump skips begins at the
# jump (as active_at says); converting the missing wall time 02:30 with the
# pre-jump offset put it half an hour late (found by this test, fixed).
def test_next_start_of_a_skipped_wall_time_is_right_after_the_jump():
    hours = ActiveHours.parse("02:30-04:00")
    start = hours.next_start(ts("2026-03-28T23:00:00Z"), BERLIN)  # 00:00 CET on the change day
    assert hours.active_at(ts("2026-03-29T01:00:00Z"), BERLIN)  # the range is open from the jump on
    assert datetime.fromtimestamp(start, BERLIN).isoformat() == "2026-03-29T03:00:00+02:00"
    assert start == ts("2026-03-29T01:00:00Z")


# --------------------------------------------------------------------------- due: catch_up_within, hours, pause


def _cron_entry(expr="0 9 * * *", catch_up="once", within=12 * HOUR, created="2026-01-01T00:00:00Z", **kw):
    return Entry(
        id="cw01",
        schedule=Cron(expr=expr, catch_up=catch_up, catch_up_within=within),
        target=Target("pane", "%1"),
        payload="p",
        created_by=CreatedBy(at=ts(created)),
        **kw,
    )


@pytest.mark.parametrize(
    "now, due_now",
    [
        ("2026-01-01T09:00:00Z", True),  # on time
        ("2026-01-01T09:02:00Z", True),  # the end of grace
        ("2026-01-01T15:00:00Z", True),  # a catch-up inside the window
        ("2026-01-01T21:00:00Z", True),  # exactly at the window's end
        ("2026-01-01T21:00:01Z", False),  # one second past: missed
        ("2026-01-02T08:59:59Z", False),
    ],
)
def test_cron_verdict_fires_a_missed_occurrence_only_within_the_window(now, due_now):
    entry = _cron_entry()
    verdict = cron_verdict(entry, entry.schedule, LogView(), ts(now), UTC)
    occurrence = ts("2026-01-01T09:00:00Z")
    assert (verdict.due, verdict.missed, verdict.occurrence) == (due_now, not due_now, occurrence)
    if due_now:
        on_time = ts(now) - occurrence <= CRON_GRACE
        assert verdict.due_at == (occurrence if on_time else ts(now))


def test_cron_verdict_without_a_window_catches_up_however_late():
    entry = _cron_entry(within=0)
    now = ts("2026-01-01T08:59:00Z") + 30 * DAY
    verdict = cron_verdict(entry, entry.schedule, LogView(), now, UTC)
    assert (verdict.due, verdict.missed, verdict.due_at) == (True, False, now)
    assert verdict.occurrence == ts("2026-01-30T09:00:00Z")


def test_cron_verdict_the_window_counts_from_the_latest_occurrence():
    # two days asleep: the latest occurrence (day 3, 09:00) is 3 h late, inside 12 h
    entry = _cron_entry()
    now = ts("2026-01-03T12:00:00Z")
    verdict = cron_verdict(entry, entry.schedule, LogView(), now, UTC)
    assert (verdict.due, verdict.due_at, verdict.occurrence) == (True, now, ts("2026-01-03T09:00:00Z"))


def _targets(*entries):
    return {e.id: TargetFact(pane="%1", state="idle", epoch=1) for e in entries}


PANES = [PaneFact("%1", state="idle", epoch=1)]


def test_due_logs_a_fire_outside_active_hours_as_quiet():
    entry = Entry(
        id="qh01",
        schedule=Every(interval=HOUR),
        target=Target("pane", "%1"),
        active_hours=ActiveHours.parse("08:00-19:00"),
        created_by=CreatedBy(at=ts("2026-01-01T18:30:00Z")),
    )
    now = ts("2026-01-01T19:30:00Z")
    ev = due([entry], LogView(), PANES, _targets(entry), {}, now)
    assert ev.fires == () and ev.absent == () and ev.missed == ()
    assert ev.quiet == (Quiet("qh01", "schedule", "%1"),)
    assert ev.diagnostics == (
        Diagnostic("qh01", Diag.QUIET_HOURS, "outside 08:00-19:00 (next opens 2026-01-02 08:00:00 UTC)"),
    )
    inside = ts("2026-01-02T08:00:00Z")  # the start of the range is inside it
    ev_in = due([entry], LogView(), PANES, _targets(entry), {}, inside)
    assert ev_in.fires == (Fire("qh01", "schedule", "%1", 0, now, inside),)
    assert ev_in.quiet == () and ev_in.diagnostics == ()


def test_next_due_of_an_entry_in_quiet_hours_is_the_opening():
    entry = Entry(
        id="qh01",
        schedule=Every(interval=10 * DAY),
        target=Target("pane", "%1"),
        active_hours=ActiveHours.parse("08:00-19:00"),
        created_by=CreatedBy(at=ts("2026-01-01T19:30:00Z")),
    )
    assert next_due([entry], LogView(), _targets(entry), ts("2026-01-01T20:00:00Z")) == ts("2026-01-02T08:00:00Z")


def test_due_reads_active_hours_in_the_cron_tz():
    entry = Entry(
        id="tz01",
        schedule=Cron(expr="30 8 * * *", tz="Europe/Berlin"),
        target=Target("pane", "%1"),
        active_hours=ActiveHours.parse("08:00-19:00"),
        created_by=CreatedBy(at=ts("2027-01-15T00:00:00Z")),
    )
    now = ts("2027-01-15T07:30:00Z")  # 08:30 in Berlin: inside; 07:30 in UTC would be outside
    ev = due([entry], LogView(), PANES, _targets(entry), {}, now, zone=UTC)
    assert ev.fires == (Fire("tz01", "schedule", "%1", 0, now, now, occurrence=now),)
    assert ev.quiet == ()


def test_due_a_cron_catch_up_waits_through_quiet_hours_and_fires_when_they_open():
    entry = _cron_entry(expr="0 6 * * *", within=0, active_hours=ActiveHours.parse("08:00-19:00"))
    at_six = ts("2026-01-01T06:00:00Z")
    ev = due([entry], LogView(), PANES, _targets(entry), {}, at_six)
    assert (ev.fires, ev.quiet, ev.missed) == ((), (), ())
    assert ev.diagnostics == (
        Diagnostic("cw01", Diag.QUIET_HOURS, "outside 08:00-19:00: fires at 2026-01-01 08:00:00 UTC"),
    )
    opened = ts("2026-01-01T08:00:10Z")
    ev = due([entry], LogView(), PANES, _targets(entry), {}, opened)
    (fire,) = ev.fires  # a catch-up: due now, for the 06:00 occurrence
    assert (fire.entry, fire.reason, fire.due_at, fire.occurrence) == ("cw01", "schedule", opened, at_six)


def test_due_a_waiting_catch_up_past_its_window_is_missed():
    entry = _cron_entry(expr="0 6 * * *", within=HOUR, active_hours=ActiveHours.parse("08:00-19:00"))
    ev = due([entry], LogView(), PANES, _targets(entry), {}, ts("2026-01-01T08:00:10Z"))
    assert ev.fires == () and ev.quiet == ()
    assert [(m.entry, m.occurrence) for m in ev.missed] == [("cw01", ts("2026-01-01T06:00:00Z"))]


def test_due_a_wake_edge_outside_active_hours_is_quiet_with_reason_wake():
    entry = Entry(
        id="wk01",
        schedule=WakeOnly(),
        target=Target("pane", "%1"),
        payload="{wake_pane} is {wake_state}",
        wake_on=WakeOn(debounce=0),
        active_hours=ActiveHours.parse("08:00-19:00"),
        created_by=CreatedBy(at=0),
    )
    panes = [PaneFact("%1", state="idle", epoch=1), PaneFact("%2", state="idle", epoch=100)]
    cursor = {"wk01": Observation("%2=active\n", 0)}  # %2 went from active to idle: an edge
    now = ts("2026-01-01T20:00:00Z")
    ev = due([entry], LogView(), panes, _targets(entry), cursor, now)
    assert ev.fires == () and ev.quiet == (Quiet("wk01", "wake", "%1"),)
    assert ev.diagnostics == (
        Diagnostic("wk01", Diag.QUIET_HOURS, "outside 08:00-19:00 (next opens 2026-01-02 08:00:00 UTC)"),
    )
    inside = ts("2026-01-02T10:00:00Z")
    ev = due([entry], LogView(), panes, _targets(entry), cursor, inside)
    assert ev.quiet == ()
    assert ev.fires == (
        Fire("wk01", "wake", "%1", 0, inside, inside, wake_pane="%2", wake_state="idle", wake_by="human"),
    )


def test_due_a_paused_server_is_silent_until_its_pause_lapses():
    every = Entry(id="ps01", schedule=Every(interval=300), target=Target("pane", "%1"), created_by=CreatedBy(at=0))
    cron = _cron_entry(catch_up="", within=0)
    now = ts("2026-01-01T12:00:00Z")
    entries = [every, cron]
    ev = due(entries, LogView(), PANES, _targets(*entries), {}, now, paused_until=0)
    assert (ev.fires, ev.absent, ev.missed, ev.quiet) == ((), (), (), ())
    assert ev.diagnostics == (
        Diagnostic("ps01", Diag.PAUSED, "the server is paused until resumed"),
        Diagnostic("cw01", Diag.PAUSED, "the server is paused until resumed"),
    )
    ev = due(entries, LogView(), PANES, _targets(*entries), {}, now, paused_until=now + 1)
    assert ev.fires == () and ev.missed == ()
    assert ev.diagnostics[0] == Diagnostic("ps01", Diag.PAUSED, "the server is paused until 2026-01-01 12:00:01 UTC")
    ev = due(entries, LogView(), PANES, _targets(*entries), {}, now, paused_until=now)  # lapses at that instant
    assert [f.entry for f in ev.fires] == ["ps01"] and [m.entry for m in ev.missed] == ["cw01"]
    assert (is_paused(None, now), is_paused(0, now), is_paused(now + 1, now), is_paused(now, now)) == (
        False,
        True,
        True,
        False,
    )
    assert next_due(entries, LogView(), _targets(*entries), now, paused_until=now + 600) == now + 600
    # paused until resumed: the cron occurrence (tomorrow 09:00) is due, to be dropped with its line; every is not
    assert next_due(entries, LogView(), _targets(*entries), now, paused_until=0) == ts("2026-01-02T09:00:00Z")
    assert next_due([every], LogView(), _targets(every), now, paused_until=0) is None


# --------------------------------------------------------------------------- rk.store.pause


@pytest.mark.shell
def test_pause_file_round_trip_and_mode(tmp_path):
    path = tmp_path / "state" / "s.pause"
    path.parent.mkdir(mode=0o700)
    assert read_pause(path) is None and paused_until(path, T0) is None
    write_pause(path, T0, T0 + 2 * HOUR)
    assert json.loads(path.read_text()) == {"since": T0, "until": T0 + 2 * HOUR}
    assert mode(path) == 0o600
    assert read_pause(path) == Pause(T0, T0 + 2 * HOUR)
    assert paused_until(path, T0) == T0 + 2 * HOUR
    assert paused_until(path, T0 + 2 * HOUR - 1) == T0 + 2 * HOUR
    assert paused_until(path, T0 + 2 * HOUR) is None  # lapsed by itself
    write_pause(path, T0, 0)
    assert paused_until(path, T0 + 10 * 365 * DAY) == 0  # until resumed
    assert clear_pause(path) is True
    assert not path.exists()
    assert clear_pause(path) is False


@pytest.mark.shell
@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"",
        b"[1, 2]",
        b'{"since": 1}',
        b'{"since": 1, "until": "soon"}',
        b'{"since": 1, "until": true}',
        b'{"since": 1, "until": -5}',
        b'{"since": 1.5, "until": 0}',
        b'{"since": 1, "until": 999999999999999}',
        b"\xff\xfe",
        b'{"since": 1, "until": 0}' + b" " * 5000,  # too large
    ],
)
def test_an_unreadable_pause_file_pauses_until_resumed(tmp_path, content):
    path = write_private(tmp_path / "s.pause", content)
    assert read_pause(path) == Pause(0, 0, readable=False)
    assert paused_until(path, T0) == 0  # fail closed
    assert clear_pause(path) is True and paused_until(path, T0) is None


@pytest.mark.shell
def test_a_pause_file_that_is_a_symlink_is_not_followed_and_pauses(tmp_path):
    target = write_private(tmp_path / "elsewhere.json", '{"since": 1, "until": 2}')
    link = tmp_path / "s.pause"
    link.symlink_to(target)
    assert paused_until(link, T0) == 0
    assert clear_pause(link) is True
    assert target.exists()  # resume removes the link, not what it points to


# --------------------------------------------------------------------------- gaps.occurrences / gaps.gaps

DAILY = CronExpr.parse("0 9 * * *")


def test_occurrences_are_those_after_since_up_to_and_including_until():
    got = occurrences(DAILY, ts("2026-01-01T09:00:00Z"), ts("2026-01-04T09:00:00Z"), UTC, 1000)
    assert got == [ts("2026-01-02T09:00:00Z"), ts("2026-01-03T09:00:00Z"), ts("2026-01-04T09:00:00Z")]
    assert occurrences(DAILY, ts("2026-01-01T09:00:00Z"), ts("2026-01-02T08:59:59Z"), UTC, 1000) == []


def test_occurrences_keep_the_newest_limit():
    since, until = ts("2026-01-01T00:00:00Z"), ts("2026-01-31T23:00:00Z")
    assert occurrences(DAILY, since, until, UTC, 2) == [ts("2026-01-30T09:00:00Z"), ts("2026-01-31T09:00:00Z")]
    assert occurrences(DAILY, since, until, UTC, 1) == [ts("2026-01-31T09:00:00Z")]
    assert len(occurrences(DAILY, since, until, UTC, 1000)) == 31


def test_occurrences_follow_the_dst_rule_of_the_zone():
    got = occurrences(CronExpr.parse("30 2 * * *"), ts("2026-03-27T12:00:00Z"), ts("2026-03-30T12:00:00Z"), BERLIN, 10)
    assert [datetime.fromtimestamp(t, BERLIN).isoformat() for t in got] == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",  # 02:30 does not exist that day: right after the jump
        "2026-03-30T02:30:00+02:00",
    ]


O1, O2, O3, O4 = (ts(f"2026-01-0{d}T09:00:00Z") for d in (1, 2, 3, 4))


def L(at: int, outcome: str = "delivered", reason: str = "schedule") -> LogLine:
    return LogLine(at, "e1", "%1", reason, outcome)


def test_gaps_every_occurrence_delivered_is_no_gap():
    own = [L(O1 + 5), L(O2), L(O3 + 119)]
    assert gaps([O1, O2, O3], own, O3 + 3600) == []


def test_gaps_an_occurrence_with_no_line_is_not_run():
    assert NOT_RUN == "not run"
    own = [L(O1 + 5), L(O3 + 5)]
    assert gaps([O1, O2, O3], own, O3 + 3600) == [Gap(O2, "not run")]
    assert gaps([O1, O2, O3], [], O3 + 3600) == [Gap(O1, "not run"), Gap(O2, "not run"), Gap(O3, "not run")]


def test_gaps_show_the_first_line_of_an_occurrence_that_was_not_delivered():
    own = [
        L(O1 + 30, "skipped-busy: active"),
        L(O1 + 60, "failed: tmux send-keys failed"),
        L(O2 + 10, "failed: tmux send-keys failed"),
        L(O3, "skipped-quiet"),
    ]
    assert gaps([O1, O2, O3], own, O3 + 60) == [
        Gap(O1, "skipped-busy: active"),
        Gap(O2, "failed: tmux send-keys failed"),
        Gap(O3, "skipped-quiet"),
    ]


def test_gaps_a_failure_followed_by_a_delivery_is_no_gap():
    own = [L(O1 + 30, "skipped-busy: active"), L(O1 + 600, "delivered")]
    assert gaps([O1, O2], own, O2 + 10) == [Gap(O2, "not run")]


def test_gaps_a_missed_line_belongs_to_the_occurrence_it_follows():
    # the ticker was down from before O1 until the next morning: the missed line
    # for O1 is logged at 08:00 on day 2, before O2
    own = [L(O2 - HOUR, "missed"), L(O2 + 5)]
    assert gaps([O1, O2], own, O2 + 60) == [Gap(O1, "missed")]


def test_gaps_a_late_catch_up_counts_for_the_latest_occurrence():
    # asleep from O1 to an hour after O3: the catch-up (delivered late) answers O3 only
    own = [L(O3 + HOUR)]
    assert gaps([O1, O2, O3], own, O3 + 2 * HOUR) == [Gap(O1, "not run"), Gap(O2, "not run")]
    # a longer gap with no catch-up: the missed line goes to the latest occurrence
    own = [L(O3 + HOUR, "missed")]
    assert gaps([O1, O2, O3], own, O3 + 2 * HOUR) == [Gap(O1, "not run"), Gap(O2, "not run"), Gap(O3, "missed")]


def test_gaps_ignore_lines_before_the_first_occurrence_and_count_now_for_the_last():
    own = [L(O1 - 10), L(O2 - 1, "skipped-busy: active"), L(O2 + 100)]
    assert gaps([O1, O2], own, O2 + 100) == [Gap(O1, "skipped-busy: active")]
    assert gaps([O1, O2], own[:2], O2 + 100) == [Gap(O1, "skipped-busy: active"), Gap(O2, "not run")]


# --------------------------------------------------------------------------- dst_note


def test_dst_note_for_a_fixed_time_across_the_spring_change():
    sched = Cron(expr="30 2 * * *", tz="Europe/Berlin")
    now = ts("2026-03-27T12:00:00Z")
    times = occurrences(CronExpr.parse(sched.expr), now, now + 5 * DAY, BERLIN, 5)
    assert dst_note(sched, times, now, BERLIN) == FIXED_NOTE


@pytest.mark.parametrize("expr", ["0 * * * *", "*/15 9 * * *", "0 */2 * * *", "* * * * *"])
def test_dst_note_for_an_expression_that_follows_the_clock(expr):
    sched = Cron(expr=expr, tz="Europe/Berlin")
    now = ts("2026-10-25T00:00:00Z")  # 02:00 CEST, an hour before the fall-back
    times = [now + i * 1800 for i in range(1, 6)]
    assert dst_note(sched, times, now, BERLIN) == CLOCK_NOTE


@pytest.mark.parametrize("expr", ["0 9 * * *", "0,30 9 * * *", "0 9-17 * * 1-5"])
def test_dst_note_fixed_time_kinds(expr):
    now = ts("2026-10-24T12:00:00Z")
    assert dst_note(Cron(expr=expr), [now + DAY, now + 2 * DAY], now, BERLIN) == FIXED_NOTE


def test_dst_note_is_empty_when_no_offset_change_is_crossed():
    sched = Cron(expr="30 2 * * *", tz="Europe/Berlin")
    now = ts("2026-06-01T12:00:00Z")
    assert dst_note(sched, [now + DAY * i for i in range(1, 6)], now, BERLIN) == ""
    assert dst_note(sched, [], ts("2026-03-27T12:00:00Z"), BERLIN) == ""
    # the same instants read in UTC cross nothing
    spring = ts("2026-03-27T12:00:00Z")
    assert dst_note(sched, [spring + DAY * i for i in range(1, 6)], spring, UTC) == ""


# =========================================================================== 2. the command line

CUW_USAGE = "--catch-up-within only applies with --catch-up once"


@pytest.fixture
def cenv(tmp_path):
    return make_env(tmp_path, RK_NOW=str(T0))


def _populate(env):
    """A hand-written file and log: what a usage error must leave byte for byte."""
    write_private(
        state_of(env) / "default.yaml",
        textwrap.dedent("""\
            entries:
              - id: c001
                name: daily
                schedule: {kind: cron, expr: '0 9 * * *', catch_up: once, catch_up_within: 12h}
                target: {kind: role, role: op}
                payload: ping
                active_hours: "08:00-19:00"
                created_by: {at: 1800000000}
              - id: e001
                name: every
                schedule: {kind: every, interval: 5m}
                target: {kind: role, role: op}
                payload: pong
                created_by: {at: 1800000000}
            """),
    )
    write_private(state_of(env) / "default.log", log_line(T0 + 300, "e001", "%1") + "\n")


# --------------------------------------------------------------------------- catch_up_within


@pytest.mark.shell
def test_add_with_a_catch_up_window_stores_it_and_shows_it(cenv):
    res = run_in(
        [
            "cron",
            "add",
            "morning",
            "--cron",
            "0 9 * * *",
            "--catch-up",
            "once",
            "--catch-up-within",
            "12h",
            "--role",
            "op",
        ],
        cenv,
    )
    assert res.code == 0, res
    (entry_id,) = [e["id"] for e in load_yaml(state_of(cenv) / "default.yaml")["entries"]]
    said = f"{entry_id} morning [cron 0 9 * * * (catch-up once within 12h) -> role:op]"
    assert res.out == f"{said}\nnext: 2027-01-15 09:00:00 UTC (in 1h)\n"
    raw = load_yaml(state_of(cenv) / "default.yaml")["entries"][0]
    assert raw["schedule"] == {"kind": "cron", "expr": "0 9 * * *", "catch_up": "once", "catch_up_within": "12h"}
    text = (state_of(cenv) / "default.yaml").read_text()
    assert "    schedule: {kind: cron, expr: '0 9 * * *', catch_up: once, catch_up_within: 12h}\n" in text
    (rec,) = json_ok(run_in(["cron", "list", "--json"], cenv))
    assert rec["schedule"] == {"kind": "cron", "expr": "0 9 * * *", "catch_up": "once", "catch_up_within": "12h0m0s"}
    assert rec["schedule_summary"] == "cron 0 9 * * * (catch-up once within 12h)"
    assert "active_hours" not in rec
    show = run_in(["cron", "show", entry_id], cenv)
    assert "schedule:   cron 0 9 * * * (catch-up once within 12h)\n" in show.out
    assert "active:" not in show.out


@pytest.mark.shell
def test_a_catch_up_window_in_minutes_is_written_in_the_short_form(cenv):
    receipt = json_ok(
        run_in(
            [
                "cron",
                "add",
                "x",
                "--cron",
                "0 9 * * *",
                "--tz",
                "Europe/Berlin",
                "--catch-up",
                "once",
                "--catch-up-within",
                "90m",
                "--role",
                "op",
                "--json",
            ],
            cenv,
        )
    )
    assert receipt["schedule"] == "cron 0 9 * * * Europe/Berlin (catch-up once within 1h30m)"
    raw = load_yaml(state_of(cenv) / "default.yaml")["entries"][0]
    assert raw["schedule"]["catch_up_within"] == "1h30m"
    (rec,) = json_ok(run_in(["cron", "list", "--json"], cenv))
    assert rec["schedule"]["catch_up_within"] == "1h30m0s" and rec["schedule"]["tz"] == "Europe/Berlin"


@pytest.mark.shell
@pytest.mark.parametrize(
    "args, message",
    [
        (("--cron", "0 9 * * *", "--catch-up-within", "12h"), CUW_USAGE),
        (("--every", "5m", "--catch-up-within", "12h"), CUW_USAGE),
        (("--catch-up-within", "12h"), CUW_USAGE),
        (
            ("--cron", "0 9 * * *", "--catch-up", "once", "--catch-up-within", "0s"),
            "--catch-up-within must be positive",
        ),
        (("--cron", "0 9 * * *", "--catch-up", "once", "--catch-up-within", "soon"), "--catch-up-within: invalid"),
        (("--every", "5m", "--active-hours", "8-19"), "--active-hours: active hours '8-19': want HH:MM-HH:MM"),
        (("--every", "5m", "--active-hours", "none"), "--active-hours: active hours 'none': want HH:MM-HH:MM"),
        (("--every", "5m", "--active-hours", "09:00-09:00"), "--active-hours: active hours '09:00-09:00': an empty"),
        (("--every", "5m", "--active-hours", "25:00-26:00"), "--active-hours: active hours '25:00-26:00': not a time"),
    ],
)
def test_add_usage_errors_exit_2_and_write_nothing(cenv, args, message):
    _populate(cenv)
    before = snapshot(state_of(cenv))
    res = run_in(["cron", "add", "hi", *args, "--role", "op"], cenv)
    assert res.code == 2, res
    assert one_line_error(res).startswith(message), res
    assert snapshot(state_of(cenv)) == before
    res = run_in(["cron", "add", "hi", *args, "--role", "op", "--json"], cenv)
    assert res.code == 2 and json_error(res, "usage").startswith(message), res
    assert snapshot(state_of(cenv)) == before


@pytest.mark.shell
def test_add_usage_error_with_no_state_dir_creates_nothing(cenv):
    res = run_in(["cron", "add", "hi", "--cron", "0 9 * * *", "--catch-up-within", "12h", "--role", "op"], cenv)
    assert (res.code, one_line_error(res)) == (2, CUW_USAGE)
    assert not state_of(cenv).exists()


@pytest.mark.shell
def test_edit_sets_a_catch_up_window_only_with_catch_up_once(cenv):
    _populate(cenv)
    before = snapshot(state_of(cenv))
    res = run_in(["cron", "edit", "c001", "--catch-up-within", "6h"], cenv)
    assert (res.code, one_line_error(res)) == (2, CUW_USAGE)
    assert snapshot(state_of(cenv)) == before
    res = run_in(["cron", "edit", "c001", "--cron", "0 9 * * *", "--catch-up", "once", "--catch-up-within", "6h"], cenv)
    assert res.code == 0, res
    said = "edited c001 daily [cron 0 9 * * * (catch-up once within 6h) -> role:op]"
    assert res.out == f"{said}\nnext: 2027-01-15 09:00:00 UTC (in 1h)\n"
    raw = load_yaml(state_of(cenv) / "default.yaml")["entries"][0]
    assert raw["schedule"] == {"kind": "cron", "expr": "0 9 * * *", "catch_up": "once", "catch_up_within": "6h"}
    assert raw["active_hours"] == "08:00-19:00"  # untouched


@pytest.mark.shell
def test_a_hand_edited_catch_up_window_without_catch_up_once_invalidates_only_that_entry(cenv):
    write_private(
        state_of(cenv) / "default.yaml",
        textwrap.dedent("""\
            entries:
              - id: good
                schedule: {kind: cron, expr: '0 9 * * *', catch_up: once, catch_up_within: 12h}
                target: {kind: role, role: op}
                payload: a
              - id: bad1
                schedule: {kind: cron, expr: '0 9 * * *', catch_up_within: 12h}
                target: {kind: role, role: op}
                payload: b
              - id: bad2
                schedule: {kind: every, interval: 5m, catch_up_within: 12h}
                target: {kind: role, role: op}
                payload: c
              - id: bad3
                schedule: {kind: cron, expr: '0 9 * * *', catch_up: once, catch_up_within: 0s}
                target: {kind: role, role: op}
                payload: d
              - id: bad4
                schedule: {kind: every, interval: 5m}
                active_hours: "8-19"
                target: {kind: role, role: op}
                payload: e
              - id: also
                schedule: {kind: every, interval: 5m}
                active_hours: "22:00-06:00"
                target: {kind: role, role: op}
                payload: f
            """),
    )
    res = run_in(["cron", "list", "--json"], cenv)
    recs = json_ok(res)
    assert [r["id"] for r in recs] == ["good", "also"]
    assert recs[1]["active_hours"] == "22:00-06:00"
    # one diagnostic line per bad entry (the line may name the server before the reason)
    lines = res.err.splitlines()
    assert all(line.startswith("rk: ") for line in lines), res
    assert [line.split("entry-invalid: ", 1)[1] for line in lines] == [
        "entry #2 (id bad1): catch_up_within only applies with catch_up: once",
        "entry #3 (id bad2): catch_up_within only applies with catch_up: once",
        "entry #4 (id bad3): catch_up_within must be a positive duration",
        "entry #5 (id bad4): active hours '8-19': want HH:MM-HH:MM[,HH:MM-HH:MM…]",
    ]


# --------------------------------------------------------------------------- active_hours


@pytest.mark.shell
def test_add_with_active_hours_stores_them_double_quoted_and_shows_them(cenv):
    entry_id = add_id(cenv, "hey", "--every", "1m", "--active-hours", "08:00-19:00", "--role", "op")
    text = (state_of(cenv) / "default.yaml").read_text()
    assert '    active_hours: "08:00-19:00"\n' in text
    assert load_yaml(state_of(cenv) / "default.yaml")["entries"][0]["active_hours"] == "08:00-19:00"
    show = run_in(["cron", "show", entry_id], cenv)
    assert show.code == 0, show
    lines = show.out.splitlines()
    at = lines.index("schedule:   every 1m")
    assert lines[at + 1] == "active:     08:00-19:00"
    assert lines[at + 2].startswith("wake_on:")
    (rec,) = json_ok(run_in(["cron", "list", "--json"], cenv))
    assert rec["active_hours"] == "08:00-19:00"


@pytest.mark.shell
def test_active_hours_are_written_canonically(cenv):
    add_id(cenv, "hey", "--every", "1m", "--active-hours", " 22:00-02:00 , 09:00-12:00 ", "--role", "op")
    text = (state_of(cenv) / "default.yaml").read_text()
    assert '    active_hours: "22:00-02:00,09:00-12:00"\n' in text


@pytest.mark.shell
def test_list_json_carries_active_hours_only_when_set(cenv):
    _populate(cenv)
    recs = {r["id"]: r for r in json_ok(run_in(["cron", "list", "--json"], cenv))}
    assert recs["c001"]["active_hours"] == "08:00-19:00"
    assert "active_hours" not in recs["e001"]


@pytest.mark.shell
def test_edit_changes_and_removes_active_hours(cenv):
    _populate(cenv)
    res = run_in(["cron", "edit", "e001", "--active-hours", "09:00-12:00,14:00-17:00"], cenv)
    said = "edited e001 every [every 5m -> role:op]\nnext: 2027-01-15 09:00:00 UTC (in 1h)\n"  # the hours' opening
    assert (res.code, res.out) == (0, said), res
    text = (state_of(cenv) / "default.yaml").read_text()
    assert '    active_hours: "09:00-12:00,14:00-17:00"\n' in text
    for off in ("off", "none", " NONE "):
        run_in(["cron", "edit", "e001", "--active-hours", "10:00-11:00"], cenv)
        res = run_in(["cron", "edit", "e001", "--active-hours", off], cenv)
        assert res.code == 0, res
        raw = next(e for e in load_yaml(state_of(cenv) / "default.yaml")["entries"] if e["id"] == "e001")
        assert "active_hours" not in raw, off
    # removing what is not there is fine, and other entries keep theirs
    assert run_in(["cron", "edit", "e001", "--active-hours", "off"], cenv).code == 0
    assert "active:     08:00-19:00\n" in run_in(["cron", "show", "c001"], cenv).out
    assert "active:" not in run_in(["cron", "show", "e001"], cenv).out


@pytest.mark.shell
def test_edit_of_another_field_keeps_active_hours_and_the_window(cenv):
    _populate(cenv)
    res = run_in(["cron", "edit", "c001", "--name", "renamed"], cenv)
    assert res.code == 0, res
    text = (state_of(cenv) / "default.yaml").read_text()
    assert "    schedule: {kind: cron, expr: '0 9 * * *', catch_up: once, catch_up_within: 12h}\n" in text
    assert '    active_hours: "08:00-19:00"\n' in text


@pytest.mark.shell
@pytest.mark.parametrize(
    "value, message",
    [
        ("8-19", "--active-hours: active hours '8-19': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("", "--active-hours: active hours '': want HH:MM-HH:MM[,HH:MM-HH:MM…]"),
        ("24:00-01:00", "--active-hours: active hours '24:00-01:00': not a time of day"),
        ("10:00-10:00", "--active-hours: active hours '10:00-10:00': an empty range (for all day write 00:00-24:00)"),
    ],
)
def test_edit_with_bad_active_hours_is_a_usage_error_that_writes_nothing(cenv, value, message):
    _populate(cenv)
    before = snapshot(state_of(cenv))
    res = run_in(["cron", "edit", "e001", "--active-hours", value], cenv)
    assert (res.code, one_line_error(res)) == (2, message)
    assert snapshot(state_of(cenv)) == before


@pytest.mark.shell
def test_simulate_with_bad_active_hours_is_a_usage_error(cenv):
    res = run_in(["cron", "simulate", "--every", "5m", "--active-hours", "7-9", "--start", "0"], cenv)
    assert (res.code, one_line_error(res)) == (2, "--active-hours: active hours '7-9': want HH:MM-HH:MM[,HH:MM-HH:MM…]")
    assert not state_of(cenv).exists()


# --------------------------------------------------------------------------- pause / resume


@pytest.mark.shell
def test_pause_for_a_while_writes_the_pause_file_and_says_until_when(cenv):
    res = run_in(["cron", "pause", "--for", "2h"], cenv)
    assert (res.code, res.out, res.err) == (0, "paused default until 2027-01-15 10:00:00 UTC\n", ""), res
    path = state_of(cenv) / "default.pause"
    assert json.loads(path.read_text()) == {"since": T0, "until": T0 + 2 * HOUR}
    assert mode(path) == 0o600 and mode(state_of(cenv)) == 0o700


@pytest.mark.shell
def test_pause_prints_its_lapse_in_the_local_zone(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0), TZ="Europe/Berlin")
    res = run_in(["cron", "pause", "-L", "work", "--for", "90m"], env)
    assert res.out == "paused work until 2027-01-15 10:30:00 CET\n", res
    assert json.loads((state_of(env) / "work.pause").read_text()) == {"since": T0, "until": T0 + 90 * 60}


@pytest.mark.shell
def test_pause_until_resumed_and_json(cenv):
    res = run_in(["cron", "pause"], cenv)
    assert (res.code, res.out) == (0, "paused default until resumed\n"), res
    assert json.loads((state_of(cenv) / "default.pause").read_text()) == {"since": T0, "until": 0}
    assert json_ok(run_in(["cron", "pause", "--json", "-L", "work", "--for", "2h"], cenv)) == [
        {"server": "work", "until": T0 + 2 * HOUR}
    ]
    assert json_ok(run_in(["cron", "pause", "--json"], cenv)) == [{"server": "default", "until": 0}]


@pytest.mark.shell
def test_pause_and_resume_all_servers_with_entries(cenv):
    add_id(cenv, "a", "--every", "5m", "--role", "op")
    add_id(cenv, "b", "--every", "5m", "--role", "op", "-L", "work")
    res = run_in(["cron", "pause", "--all", "--for", "1h"], cenv)
    assert res.out == ("paused default until 2027-01-15 09:00:00 UTC\npaused work until 2027-01-15 09:00:00 UTC\n"), res
    for slug in ("default", "work"):
        assert json.loads((state_of(cenv) / f"{slug}.pause").read_text()) == {"since": T0, "until": T0 + HOUR}
    res = run_in(["cron", "resume", "--all"], cenv)
    assert (res.code, res.out) == (0, "resumed default\nresumed work\n"), res
    for slug in ("default", "work"):  # ended at now: what it covered that no tick saw stays dropped
        assert json.loads((state_of(cenv) / f"{slug}.pause").read_text()) == {"since": T0, "until": T0}
    assert json_ok(run_in(["cron", "resume", "--all", "--json"], cenv)) == [
        {"server": "default", "resumed": False},
        {"server": "work", "resumed": False},
    ]
    assert json_ok(run_in(["cron", "pause", "--all", "--json"], cenv)) == [
        {"server": "default", "until": 0},
        {"server": "work", "until": 0},
    ]
    assert json_ok(run_in(["cron", "resume", "--all", "--json"], cenv)) == [
        {"server": "default", "resumed": True},
        {"server": "work", "resumed": True},
    ]


@pytest.mark.shell
def test_pause_all_with_no_servers(cenv):
    res = run_in(["cron", "pause", "--all"], cenv)
    assert (res.code, res.out) == (0, "no server has entries\n"), res
    assert json_ok(run_in(["cron", "pause", "--all", "--json"], cenv)) == []
    assert list(state_of(cenv).glob("*.pause")) == []


@pytest.mark.shell
def test_resume_says_whether_it_was_paused(cenv):
    res = run_in(["cron", "resume"], cenv)
    assert (res.code, res.out, res.err) == (0, "default was not paused\n", ""), res
    assert json_ok(run_in(["cron", "resume", "--json", "-L", "work"], cenv)) == [{"server": "work", "resumed": False}]
    run_in(["cron", "pause", "-L", "work"], cenv)
    assert run_in(["cron", "resume", "-L", "work"], cenv).out == "resumed work\n"
    assert json.loads((state_of(cenv) / "work.pause").read_text()) == {"since": T0, "until": T0}
    run_in(["cron", "pause", "-L", "work"], cenv)
    assert json_ok(run_in(["cron", "resume", "--json", "-L", "work"], cenv)) == [{"server": "work", "resumed": True}]


@pytest.mark.shell
@pytest.mark.parametrize(
    "args, message",
    [
        (("cron", "pause", "-L", "work", "--all"), "pass -L or --all, not both"),
        (("cron", "resume", "-L", "work", "--all"), "pass -L or --all, not both"),
        (("cron", "pause", "--for", "0s"), "--for must be positive"),
        (("cron", "pause", "--for", "soon"), "--for: invalid duration 'soon'"),
        (("cron", "pause", "--for", "-1h"), "--for"),
    ],
)
def test_pause_and_resume_usage_errors_write_nothing(cenv, args, message):
    _populate(cenv)
    run_in(["cron", "pause", "-L", "work"], cenv)  # one pause on file, which resume must not remove
    before = snapshot(state_of(cenv))
    res = run_in(args, cenv)
    assert res.code == 2, res
    assert one_line_error(res).startswith(message), res
    assert snapshot(state_of(cenv)) == before
    res = run_in([*args, "--json"], cenv)
    assert res.code == 2 and json_error(res, "usage").startswith(message), res
    assert snapshot(state_of(cenv)) == before


@pytest.mark.shell
def test_pause_usage_error_with_no_state_dir_creates_nothing(cenv):
    res = run_in(["cron", "pause", "--all", "-L", "x"], cenv)
    assert (res.code, one_line_error(res)) == (2, "pass -L or --all, not both")
    assert not state_of(cenv).exists()


def _pause_note(out: str, slug: str = "default") -> str | None:
    """What follows `server <slug> is paused until ` on the first line of `list`, or None."""
    first = out.splitlines()[0] if out else ""
    prefix = f"server {slug} is paused until "
    return first[len(prefix) :] if first.startswith(prefix) else None


def _stable(records: list[dict]) -> list[dict]:
    """A `list --json` record without what a pause is allowed to change (the next fire, why not)."""
    return [{k: v for k, v in r.items() if k not in ("next", "why_not")} for r in records]


@pytest.mark.shell
def test_list_shows_a_pause_first_and_json_is_unchanged(cenv):
    _populate(cenv)
    plain = run_in(["cron", "list"], cenv)
    records = json_ok(run_in(["cron", "list", "--json"], cenv))
    assert _pause_note(plain.out) is None
    run_in(["cron", "pause", "--for", "2h"], cenv)
    res = run_in(["cron", "list"], cenv)
    assert res.code == 0, res
    note = _pause_note(res.out)
    assert note is not None and "2027-01-15" in note and "10:00:00" in note, res
    assert res.out.splitlines()[1].split()[:2] == ["ID", "NAME"]  # then the table, as without a pause
    assert len(res.out.splitlines()) == len(plain.out.splitlines()) + 1
    paused = json_ok(run_in(["cron", "list", "--json"], cenv))
    assert isinstance(paused, list) and _stable(paused) == _stable(records)  # no pause record in the JSON
    run_in(["cron", "pause"], cenv)
    note = _pause_note(run_in(["cron", "list"], cenv).out)
    assert note is not None and note.startswith("resumed"), note
    run_in(["cron", "resume"], cenv)
    assert run_in(["cron", "list"], cenv).out == plain.out


@pytest.mark.shell
def test_list_of_a_server_without_entries_shows_its_pause(cenv):
    run_in(["cron", "pause", "-L", "work"], cenv)
    res = run_in(["cron", "list", "-L", "work"], cenv)
    assert res.code == 0, res
    assert _pause_note(res.out, "work").startswith("resumed"), res
    assert res.out.splitlines()[1:] == ["no cron entries on server work"], res
    assert run_in(["cron", "list"], cenv).out == "no cron entries on server default\n"  # only that server


@pytest.mark.shell
def test_a_pause_lapses_by_itself(cenv):
    _populate(cenv)
    run_in(["cron", "pause", "--for", "2h"], cenv)
    almost = dict(cenv, RK_NOW=str(T0 + 2 * HOUR - 1))
    assert "10:00:00" in _pause_note(run_in(["cron", "list"], almost).out)
    lapsed = dict(cenv, RK_NOW=str(T0 + 2 * HOUR))
    res = run_in(["cron", "list"], lapsed)
    assert _pause_note(res.out) is None and res.out.split()[:2] == ["ID", "NAME"], res
    assert (state_of(cenv) / "default.pause").exists()  # lapsed, not removed


@pytest.mark.shell
def test_an_unreadable_pause_file_pauses_until_resume_removes_it(cenv):
    _populate(cenv)
    write_private(state_of(cenv) / "default.pause", "garbage\n")
    later = dict(cenv, RK_NOW=str(T0 + 365 * DAY))
    assert _pause_note(run_in(["cron", "list"], later).out).startswith("resumed")
    res = run_in(["cron", "resume"], later)
    assert res.out == "resumed default\n", res
    assert not (state_of(cenv) / "default.pause").exists()
    assert _pause_note(run_in(["cron", "list"], later).out) is None


# --------------------------------------------------------------------------- log --gaps

GAPS_YAML = textwrap.dedent("""\
    entries:
      - id: g001
        name: daily
        schedule: {kind: cron, expr: '0 9 * * *'}
        target: {kind: role, role: op}
        payload: ping
        created_by: {at: 1800000000}
      - id: g002
        name: berlin
        schedule: {kind: cron, expr: '0 9 * * *', tz: Europe/Berlin}
        target: {kind: role, role: op}
        payload: ping
        created_by: {at: 1800000000}
      - id: e001
        name: every
        schedule: {kind: every, interval: 5m}
        target: {kind: role, role: op}
        payload: pong
        created_by: {at: 1800000000}
    """)

#: T0 is 2027-01-15T08:00Z; g001's occurrences are 09:00Z on the 15th … 20th.
D = [ts(f"2027-01-{d}T09:00:00Z") for d in range(15, 21)]
GAPS_NOW = ts("2027-01-20T12:00:00Z")


def _gaps_env(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(GAPS_NOW))
    write_private(state_of(env) / "default.yaml", GAPS_YAML)
    lines = [
        log_line(T0, "g001", "", "edit", "rescheduled"),  # before the first occurrence: no one's
        log_line(D[0] + 10, "g001", "%1"),  # the 15th: delivered
        log_line(D[0] + 10, "e001", "%1"),  # another entry's line: ignored
        log_line(D[1] + 30, "g001", "%1", "schedule", "skipped-busy: active"),  # the 16th
        log_line(D[2] + 5, "g001", "%1", "schedule", "failed: tmux send-keys failed"),  # the 17th
        # the 18th: nothing at all
        log_line(D[4] + 2 * HOUR, "g001", "", "schedule", "missed"),  # the 19th, noticed at 11:00
        log_line(D[5], "g001", "%1", "schedule", "skipped-quiet"),  # the 20th
        log_line(D[5] + 60, "g002", "%1"),  # g002's only line: the 20th at 09:01Z (10:01 Berlin)
    ]
    write_private(state_of(env) / "default.log", "".join(line + "\n" for line in lines))
    return env


@pytest.mark.shell
def test_log_gaps_lists_each_undelivered_occurrence_with_what_happened(tmp_path):
    env = _gaps_env(tmp_path)
    res = run_in(["cron", "log", "g001", "--gaps"], env)
    assert (res.code, res.err) == (0, ""), res
    assert res.out == (
        "OCCURRENCE (UTC)     WHAT\n"
        "2027-01-16 09:00:00  skipped-busy: active\n"
        "2027-01-17 09:00:00  failed: tmux send-keys failed\n"
        "2027-01-18 09:00:00  not run\n"
        "2027-01-19 09:00:00  missed\n"
        "2027-01-20 09:00:00  skipped-quiet\n"
    )
    assert json_ok(run_in(["cron", "log", "g001", "--gaps", "--json"], env)) == [
        {"ts": D[1], "local": "2027-01-16T09:00:00+00:00", "what": "skipped-busy: active"},
        {"ts": D[2], "local": "2027-01-17T09:00:00+00:00", "what": "failed: tmux send-keys failed"},
        {"ts": D[3], "local": "2027-01-18T09:00:00+00:00", "what": "not run"},
        {"ts": D[4], "local": "2027-01-19T09:00:00+00:00", "what": "missed"},
        {"ts": D[5], "local": "2027-01-20T09:00:00+00:00", "what": "skipped-quiet"},
    ]


@pytest.mark.shell
def test_log_gaps_since_a_duration_or_a_time(tmp_path):
    env = _gaps_env(tmp_path)
    res = run_in(["cron", "log", "g001", "--gaps", "--since", "2d"], env)  # from the 18th at 12:00
    assert res.out.splitlines()[1:] == ["2027-01-19 09:00:00  missed", "2027-01-20 09:00:00  skipped-quiet"], res
    res = run_in(["cron", "log", "g001", "--gaps", "--since", "2027-01-17T00:00:00Z"], env)
    assert res.out.splitlines()[1:] == [
        "2027-01-17 09:00:00  failed: tmux send-keys failed",
        "2027-01-18 09:00:00  not run",
        "2027-01-19 09:00:00  missed",
        "2027-01-20 09:00:00  skipped-quiet",
    ], res
    res = run_in(["cron", "log", "g001", "--gaps", "--since", str(D[3])], env)  # unix seconds, exclusive
    assert [line.split()[0] for line in res.out.splitlines()[1:]] == ["2027-01-19", "2027-01-20"], res


@pytest.mark.shell
def test_log_gaps_none(tmp_path):
    env = _gaps_env(tmp_path)
    res = run_in(["cron", "log", "g001", "--gaps", "--since", "2027-01-15T08:30:00Z"], dict(env, RK_NOW=str(D[1] - 1)))
    assert (res.code, res.out) == (
        0,
        "no gaps: every one of 1 occurrences since 2027-01-15 08:30:00 UTC was delivered\n",
    ), res
    assert json_ok(run_in(["cron", "log", "g001", "--gaps", "--json"], dict(env, RK_NOW=str(D[1] - 1)))) == []
    res = run_in(["cron", "log", "g001", "--gaps"], dict(env, RK_NOW=str(T0 + 60)))
    assert res.out == "no gaps: every one of 0 occurrences since 2027-01-15 08:00:00 UTC was delivered\n", res


@pytest.mark.shell
def test_log_gaps_reads_occurrences_in_the_entry_zone(tmp_path):
    env = _gaps_env(tmp_path)
    res = run_in(["cron", "log", "g002", "--gaps", "--since", "2027-01-18T00:00:00Z"], env)
    # 09:00 Berlin is 08:00Z; the 20th has a delivered line (09:01Z), the 18th and 19th none
    assert res.out.splitlines() == [
        "OCCURRENCE (Europe/Berlin)  WHAT",
        "2027-01-18 09:00:00         not run",
        "2027-01-19 09:00:00         not run",
    ], res
    assert [g["ts"] for g in json_ok(run_in(["cron", "log", "g002", "--gaps", "--json", "--since", "3d"], env))] == [
        ts("2027-01-18T08:00:00Z"),
        ts("2027-01-19T08:00:00Z"),
    ]


@pytest.mark.shell
@pytest.mark.parametrize(
    "args, message",
    [
        (("cron", "log", "--gaps"), "--gaps needs an entry id"),
        (("cron", "log", "e001", "--gaps"), "--gaps lists cron occurrences; e001 is every 5m"),
        (("cron", "log", "g001", "--gaps", "--outcome", "missed"), "--gaps goes with --since only"),
        (("cron", "log", "g001", "--gaps", "--follow"), "--gaps goes with --since only"),
        (
            ("cron", "log", "g001", "--gaps", "--since", "bogus"),
            "--since 'bogus': want a duration (7d, 12h) or a time (ISO-8601 or unix seconds)",
        ),
    ],
)
def test_log_gaps_usage_errors(tmp_path, args, message):
    env = _gaps_env(tmp_path)
    before = snapshot(state_of(env))
    res = run_in(args, env)
    assert (res.code, one_line_error(res)) == (2, message)
    res = run_in([*args, "--json"], env)
    assert res.code == 2 and json_error(res, "usage") == message, res
    assert snapshot(state_of(env)) == before


@pytest.mark.shell
def test_log_gaps_of_an_unknown_entry_is_not_found(tmp_path):
    env = _gaps_env(tmp_path)
    res = run_in(["cron", "log", "zzzz", "--gaps"], env)
    assert (res.code, one_line_error(res)) == (1, "no entry zzzz")


# --------------------------------------------------------------------------- next: the DST note

SPRING = ts("2026-03-27T12:00:00Z")


def _next(env, *args):
    return run_in(["cron", "next", *args], env)


@pytest.mark.shell
def test_next_states_the_fixed_time_rule_when_its_fires_cross_a_change(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(SPRING))
    entry_id = add_id(env, "a", "--cron", "30 2 * * *", "--tz", "Europe/Berlin", "--role", "op")
    res = _next(env, entry_id)
    assert (res.code, res.err) == (0, ""), res
    assert res.out == (
        "TIME (Europe/Berlin)  UTC\n"
        "2026-03-28 02:30:00   2026-03-28 01:30:00\n"
        "2026-03-29 03:00:00   2026-03-29 01:00:00\n"
        "2026-03-30 02:30:00   2026-03-30 00:30:00\n"
        "2026-03-31 02:30:00   2026-03-31 00:30:00\n"
        "2026-04-01 02:30:00   2026-04-01 00:30:00\n"
        f"{FIXED_NOTE}\n"
    )
    result = json_ok(_next(env, entry_id, "--json"))
    assert result["dst"] == FIXED_NOTE
    assert [f["local"] for f in result["fires"]][:2] == ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00"]
    assert set(result) == {"id", "fires", "dst"}


@pytest.mark.shell
def test_next_states_the_clock_rule_for_an_hourly_expression(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(ts("2026-03-29T00:30:00Z")))  # 01:30 CET
    entry_id = add_id(env, "b", "--cron", "0 * * * *", "--tz", "Europe/Berlin", "--role", "op")
    res = _next(env, entry_id, "-n", "3")
    assert res.out == (
        "TIME (Europe/Berlin)  UTC\n"
        "2026-03-29 03:00:00   2026-03-29 01:00:00\n"  # 02:00 does not exist: skipped
        "2026-03-29 04:00:00   2026-03-29 02:00:00\n"
        "2026-03-29 05:00:00   2026-03-29 03:00:00\n"
        f"{CLOCK_NOTE}\n"
    ), res
    assert json_ok(_next(env, entry_id, "-n", "3", "--json"))["dst"] == CLOCK_NOTE


@pytest.mark.shell
def test_next_reads_a_local_zone_cron_in_the_local_zone(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(ts("2026-10-24T12:00:00Z")), TZ="Europe/Berlin")
    entry_id = add_id(env, "c", "--cron", "30 2 * * *", "--role", "op")
    res = _next(env, entry_id, "-n", "2")
    assert res.out == (
        "TIME (Europe/Berlin)      UTC\n"
        "2026-10-25 02:30:00 CEST  2026-10-25 00:30:00\n"  # the first pass only, named: 02:30 comes twice that day
        "2026-10-26 02:30:00       2026-10-26 01:30:00\n"
        f"{FIXED_NOTE}\n"
    ), res


@pytest.mark.shell
def test_next_has_no_dst_line_when_no_change_is_crossed(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(SPRING))
    utc = add_id(env, "c", "--cron", "0 9 * * *", "--role", "op")
    res = _next(env, utc)
    assert res.code == 0 and "daylight" not in res.out, res
    assert len(res.out.splitlines()) == 1 + 5  # the header and five fires
    assert set(json_ok(_next(env, utc, "--json"))) == {"id", "fires"}
    summer = make_env(tmp_path / "summer", RK_NOW=str(ts("2026-06-01T12:00:00Z")))
    berlin = add_id(summer, "d", "--cron", "30 2 * * *", "--tz", "Europe/Berlin", "--role", "op")
    assert "daylight" not in _next(summer, berlin).out
    assert "dst" not in json_ok(_next(summer, berlin, "--json"))
    # only the listed fires count: one fire before the change says nothing
    berlin = add_id(env, "e", "--cron", "30 2 * * *", "--tz", "Europe/Berlin", "--role", "op")
    assert _next(env, berlin, "-n", "1").out == "TIME (Europe/Berlin)  UTC\n2026-03-28 02:30:00   2026-03-28 01:30:00\n"
    assert "daylight" in _next(env, berlin, "-n", "2").out


# --------------------------------------------------------------------------- simulate

SIM = (
    "cron",
    "simulate",
    "--every",
    "30m",
    "--active-hours",
    "09:00-10:00",
    "--start",
    "2026-12-01T08:00:00Z",
    "--for",
    "3h",
    "--states",
    "0 idle; 1h40m pause; 2h20m resume",
    "--busy",
    "0s",
    "--width",
    "80",
)
SIM_START = ts("2026-12-01T08:00:00Z")


def _row(out: str, label: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith(label + " ")]
    return line


@pytest.mark.shell
def test_simulate_draws_a_pause_and_skipped_quiet(cenv):
    res = run_in(SIM, cenv)
    assert (res.code, res.err) == (0, ""), res
    label_w = len("paused ")
    paused, fires = _row(res.out, "paused"), _row(res.out, "fires")
    # one column is 3 min; the pause covers the columns from 1h42m (col 34) to 2h18m (col 46)
    assert [i for i, ch in enumerate(paused[label_w:]) if ch == "‖"] == list(range(34, 47))
    assert set(paused[label_w:]) == {"‖", " "}
    assert {i: ch for i, ch in enumerate(fires[label_w:]) if ch != " "} == {10: "q", 20: "▲", 30: "▲", 46: "q", 56: "q"}
    legend = " ".join(res.out.split())  # the legend wraps at 80 columns
    assert "q skipped-quiet" in legend and "‖ paused" in legend
    listed = [line.split() for line in res.out.splitlines() if line.strip().startswith("+")]
    assert [row for row in listed if row[-1] in ("delivered", "skipped-quiet")] == [
        ["+30m", "08:30:00", "schedule", "skipped-quiet"],
        ["+1h", "09:00:00", "schedule", "delivered"],
        ["+1h30m", "09:30:00", "schedule", "delivered"],
        ["+2h20m", "10:20:00", "schedule", "skipped-quiet"],  # at resume: the fire due during the pause
        ["+2h50m", "10:50:00", "schedule", "skipped-quiet"],
    ]
    assert res.out.splitlines()[-1] == "5 log lines (2 delivered, 3 skipped-quiet), 0 holds"


@pytest.mark.shell
def test_simulate_json_carries_the_pause_steps_and_the_quiet_events(cenv):
    result = json_ok(run_in([*SIM, "--json"], cenv))
    assert result["start"] == SIM_START and result["end"] == SIM_START + 3 * HOUR and result["tick"] == 30
    assert result["states"] == [
        {"at": SIM_START, "pane": "%1", "state": "idle"},
        {"at": SIM_START + 100 * 60, "pane": "%1", "state": "pause"},
        {"at": SIM_START + 140 * 60, "pane": "%1", "state": "resume"},
    ]

    def event(minute, outcome):
        at = SIM_START + minute * 60
        return {
            "at": at,
            "kind": "line",
            "reason": "schedule",
            "outcome": outcome,
            "pane": "%1",
            "due_at": at,
            "rung": 0,
        }

    assert result["events"] == [
        event(30, "skipped-quiet"),
        event(60, "delivered"),
        event(90, "delivered"),
        event(140, "skipped-quiet"),
        event(170, "skipped-quiet"),
    ]


@pytest.mark.shell
def test_simulate_without_a_pause_has_no_paused_row_and_hours_off_removes_them(cenv):
    base = ["cron", "simulate", "--every", "30m", "--start", "2026-12-01T08:00:00Z", "--for", "3h", "--busy", "0s"]
    base += ["--dormant-after", "off"]  # the replayed agent never answers: only the hours are at stake
    res = run_in([*base, "--width", "80", "--active-hours", "09:00-10:00"], cenv)
    assert res.code == 0, res
    assert not [line for line in res.out.splitlines() if line.startswith("paused ")]
    # due at 08:30, 09:00, 09:30, 10:00 (the end is outside), 10:30
    assert res.out.splitlines()[-1] == "5 log lines (2 delivered, 3 skipped-quiet), 0 holds"
    events = json_ok(run_in([*base, "--active-hours", "off", "--json"], cenv))["events"]
    assert [((e["at"] - SIM_START) // 60, e["outcome"]) for e in events] == [
        (30, "delivered"),
        (60, "delivered"),
        (90, "delivered"),
        (120, "delivered"),
        (150, "delivered"),
    ]


@pytest.mark.shell
def test_simulate_a_stored_entry_uses_its_active_hours_and_catch_up_window(cenv):
    write_private(
        state_of(cenv) / "default.yaml",
        textwrap.dedent("""\
            entries:
              - id: s001
                schedule: {kind: every, interval: 30m}
                target: {kind: role, role: op}
                payload: p
                active_hours: "09:00-10:00"
            """),
    )
    args = ["cron", "simulate", "s001", "--start", "2026-12-01T08:00:00Z", "--for", "3h", "--busy", "0s", "--json"]
    args += ["--dormant-after", "off"]  # the replayed agent never answers: only the hours are at stake
    events = json_ok(run_in(args, cenv))["events"]
    assert [(e["at"] - SIM_START) // 60 for e in events if e["outcome"] == "delivered"] == [60, 90]
    events = json_ok(run_in([*args, "--active-hours", "none"], cenv))["events"]
    assert [e["outcome"] for e in events] == ["delivered"] * 5
    res = run_in([*args, "--cron", "0 9 * * *", "--catch-up-within", "1h"], cenv)
    assert (res.code, json_error(res, "usage")) == (2, CUW_USAGE)


# =========================================================================== 3. on a private tmux server


def _rk(args, env, now):
    return run_rk(args, dict(env, RK_NOW=str(now), TZ="UTC"), check=True)


def _first_pane(server) -> str:
    return server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]


def _submitted(server, pane: str, payload: str) -> int:
    """Screen lines equal to the payload: 2 per submission into `cat` (echo + output)."""
    return sum(1 for line in server.capture(pane).splitlines() if line.rstrip() == payload)


def _lines(env) -> list[LogLine]:
    return [line for p in sorted(state_of(env).glob("*.log")) for line in read_live(p)]


def _add(env, server, *args) -> str:
    out = _rk(["cron", "add", *args, "--any-program", "--json", "-L", server.name], env, T0)
    return json.loads(out.stdout)["result"]["id"]


def _tick(env, server, now) -> dict:
    out = _rk(["cron", "tick", "-L", server.name, "--json"], env, now)
    return json.loads(out.stdout)["result"]


@pytest.mark.shell
def test_a_paused_server_types_nothing_and_logs_nothing_until_resumed(env, tmux_server):
    pane = _first_pane(tmux_server)
    payload = "paused payload"
    entry = _add(env, tmux_server, payload, "--every", "1m", "--pane", pane)
    (slug,) = [p.stem for p in state_of(env).glob("*.yaml")]
    out = _rk(["cron", "pause", "-L", tmux_server.name], env, T0 + 30)
    assert out.stdout == f"paused {slug} until resumed\n"
    assert os.stat(state_of(env) / f"{slug}.pause").st_mode & 0o777 == 0o600
    for now in (T0 + 60, T0 + 120):  # due, and still due a minute later
        result = _tick(env, tmux_server, now)
        assert (result["fires"], result["decisions"]) == (0, []), result
        assert [(d["entry"], d["reason"], d["detail"]) for d in result["diagnostics"]] == [
            (entry, "server-paused", "the server is paused until resumed")
        ]
        assert _lines(env) == []
        assert not (state_of(env) / f"{slug}.log").exists()
    out = _rk(["cron", "resume", "-L", tmux_server.name], env, T0 + 150)
    assert out.stdout == f"resumed {slug}\n"
    result = _tick(env, tmux_server, T0 + 180)
    assert result["fires"] == 1, result
    assert result["decisions"] == [
        {"server": tmux_server.name, "entry": entry, "reason": "schedule", "pane": pane, "outcome": "delivered"}
    ]
    wait_for(lambda: _submitted(tmux_server, pane, payload) == 2, message="one submission: echo + cat")
    assert _lines(env) == [LogLine(T0 + 180, entry, pane, "schedule", "delivered")]
    again = _tick(env, tmux_server, T0 + 180)  # the same instant: nothing more is due
    assert (again["fires"], again["decisions"]) == (0, [])
    assert _lines(env) == [LogLine(T0 + 180, entry, pane, "schedule", "delivered")]
    assert _submitted(tmux_server, pane, payload) == 2


@pytest.mark.shell
def test_active_hours_skip_quietly_outside_and_type_inside(env, tmux_server):
    pane = _first_pane(tmux_server)
    payload = "quiet hours payload"
    # T0 is 08:00 UTC; the entry may fire from 10:00 to 11:00 UTC
    entry = _add(env, tmux_server, payload, "--every", "1m", "--active-hours", "10:00-11:00", "--pane", pane)
    result = _tick(env, tmux_server, T0 + 60)
    assert result["fires"] == 1, result  # the tick's count is of the log lines it wrote
    assert result["decisions"] == [
        {"server": tmux_server.name, "entry": entry, "reason": "schedule", "pane": pane, "outcome": "skipped-quiet"}
    ]
    assert [(d["entry"], d["reason"], d["detail"]) for d in result["diagnostics"]] == [
        (entry, "quiet-hours", "outside 10:00-11:00 (next opens 2027-01-15 10:00:00 UTC)")
    ]
    quiet = LogLine(T0 + 60, entry, pane, "schedule", "skipped-quiet")
    assert _lines(env) == [quiet]
    again = _tick(env, tmux_server, T0 + 90)  # the quiet line anchors the next minute: nothing due yet
    assert (again["fires"], again["decisions"]) == (0, [])
    assert _lines(env) == [quiet]
    inside = T0 + 2 * HOUR  # 10:00 UTC
    result = _tick(env, tmux_server, inside)
    assert result["fires"] == 1, result
    assert result["decisions"] == [
        {"server": tmux_server.name, "entry": entry, "reason": "schedule", "pane": pane, "outcome": "delivered"}
    ]
    wait_for(lambda: _submitted(tmux_server, pane, payload) == 2, message="one submission: echo + cat")
    assert _lines(env) == [quiet, LogLine(inside, entry, pane, "schedule", "delivered")]
    assert [line.outcome for line in _lines(env)].count("skipped-quiet") == 1


@pytest.mark.shell
def test_a_cron_occurrence_inside_a_pause_is_dropped_with_one_line_and_not_caught_up(env, tmux_server):
    """A pause drops what it covers: the 09:00 of a catch-up entry is logged
    `skipped-paused` once, and after `resume` it is neither typed nor logged missed."""
    pane = _first_pane(tmux_server)
    payload = "the nine o'clock prompt"
    # T0 is 08:00 UTC
    entry = _add(env, tmux_server, payload, "--cron", "0 9 * * *", "--tz", "UTC", "--catch-up", "once", "--pane", pane)
    _rk(["cron", "pause", "-L", tmux_server.name], env, T0 + 30)
    first = _tick(env, tmux_server, T0 + 3600 + 20)  # 09:00:20, paused
    assert first["decisions"] == [
        {"server": tmux_server.name, "entry": entry, "reason": "schedule", "pane": pane, "outcome": "skipped-paused"}
    ]
    assert _tick(env, tmux_server, T0 + 3600 + 50)["decisions"] == []  # once, not on every paused tick
    _rk(["cron", "resume", "-L", tmux_server.name], env, T0 + 3600 + 60)
    for now in (T0 + 3600 + 90, T0 + 5 * 3600):
        assert _tick(env, tmux_server, now)["decisions"] == [], now  # neither caught up nor missed
    assert _lines(env) == [LogLine(T0 + 3600 + 20, entry, pane, "schedule", "skipped-paused")]
    assert _submitted(tmux_server, pane, payload) == 0
    nxt = _tick(env, tmux_server, T0 + 25 * 3600 + 10)  # the next day's 09:00 goes out as usual
    assert [d["outcome"] for d in nxt["decisions"]] == ["delivered"]


@pytest.mark.shell
def test_log_gaps_since_before_the_entry_existed_start_at_its_creation(tmp_path):
    env = _gaps_env(tmp_path)
    created = run_in(["cron", "log", "g001", "--gaps"], env).out
    res = run_in(["cron", "log", "g001", "--gaps", "--since", "30d"], env)  # weeks before the entry was made
    assert (res.code, res.out) == (0, created), res

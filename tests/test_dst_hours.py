"""Issue 27 item 11: the forecast equals what fires, on every day.

Quiet hours open on both passes of a fall-back, at a jump back that lands in a
range, at a jump over a range's start, and never at a gap's end that lands
outside every range (`hours.ActiveHours.next_start`, checked minute by minute
against the wall clock); a pause is honoured when no tick saw it (its cron and
`at` occurrences dropped, `skipped-paused`); `{missed}` leaves out the
occurrences a day cap silenced; a repeated wall time is printed with what tells
its two instants apart.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from cli_helpers import make_env, run_in, write_private
from conftest import run_rk

from rk.cli.pausing import cmd_pause
from rk.core.log.delivery import LogLine, LogView, Reason, Status
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule.cronexpr import CronExpr
from rk.core.schedule.due import Missed, Quiet, due
from rk.core.schedule.entry import At, CreatedBy, Cron, Entry, Every, Target, TargetKind
from rk.core.schedule.forecast import forecast
from rk.core.schedule.gaps import CAPPED, gaps, occurrences
from rk.core.schedule.hours import ActiveHours
from rk.core.schedule.simulate import StateChange, simulate
from rk.core.settings import Settings
from rk.core.wallclock import stamp
from rk.store.delivery_log import read_live
from rk.store.pause import end_pause, pause_span, paused_until, write_pause

NEW_YORK = ZoneInfo("America/New_York")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")
SYDNEY = ZoneInfo("Australia/Sydney")
PANE = "%1"


def at(zone, *wall, fold=0) -> int:
    return int(datetime(*wall, tzinfo=zone, fold=fold).timestamp())


def shown(ts: int, zone) -> str:
    return datetime.fromtimestamp(ts, zone).strftime("%m-%d %H:%M %Z")


# -- quiet hours open where the wall clock opens them ------------------------------------------------


@pytest.mark.parametrize(
    "zone, hours, now, opens",
    [
        # the case: at 01:00 EST the range 01:30-06:00 opens again at 01:30 EST, not tomorrow
        (NEW_YORK, "01:30-06:00", at(NEW_YORK, 2026, 11, 1, 1, 0, fold=1), at(NEW_YORK, 2026, 11, 1, 1, 30, fold=1)),
        (
            NEW_YORK,
            "01:30-06:00",
            at(NEW_YORK, 2026, 11, 1, 1, 29, 30, fold=1),
            at(NEW_YORK, 2026, 11, 1, 1, 30, fold=1),
        ),
        # a jump back into a range opens it at the jump
        (NEW_YORK, "00:45-01:30", at(NEW_YORK, 2026, 11, 1, 1, 45), at(NEW_YORK, 2026, 11, 1, 1, 0, fold=1)),
        # a range in the gap opens nothing that day: its next opening is the day after, not 03:00 EDT
        (NEW_YORK, "02:00-02:30", at(NEW_YORK, 2026, 3, 8, 1, 0), at(NEW_YORK, 2026, 3, 9, 2, 0)),
        # a range whose start the jump skips opens at the jump
        (NEW_YORK, "02:30-04:00", at(NEW_YORK, 2026, 3, 8, 1, 0), at(NEW_YORK, 2026, 3, 8, 3, 0)),
        # Lord Howe's half-hour: 01:30-02:00 comes twice, 02:00-02:30 never
        (LORD_HOWE, "01:45-06:00", at(LORD_HOWE, 2026, 4, 5, 1, 30, fold=1), at(LORD_HOWE, 2026, 4, 5, 1, 45, fold=1)),
        (LORD_HOWE, "02:00-02:20", at(LORD_HOWE, 2026, 10, 4, 1, 0), at(LORD_HOWE, 2026, 10, 5, 2, 0)),
        (SYDNEY, "02:30-07:00", at(SYDNEY, 2026, 4, 5, 2, 0, fold=1), at(SYDNEY, 2026, 4, 5, 2, 30, fold=1)),
    ],
)
def test_quiet_hours_open_on_both_passes_and_never_in_a_gap(zone, hours, now, opens):
    assert shown(ActiveHours.parse(hours).next_start(now, zone), zone) == shown(opens, zone)


HOURS = [
    "01:30-06:00",
    "00:45-01:30",
    "02:00-02:30",
    "02:30-04:00",
    "01:45-02:15",
    "22:00-02:00",
    "01:00-01:59,03:00-04:00",
]
DAYS = [
    (NEW_YORK, (2026, 11, 1)),
    (NEW_YORK, (2026, 3, 8)),
    (LORD_HOWE, (2026, 4, 5)),
    (LORD_HOWE, (2026, 10, 4)),
    (SYDNEY, (2026, 4, 5)),
    (SYDNEY, (2026, 10, 4)),
    (UTC, (2026, 6, 1)),
]


@pytest.mark.parametrize("zone, day", DAYS, ids=lambda v: getattr(v, "key", None) or str(v))
@pytest.mark.parametrize("text", HOURS)
def test_the_opening_is_the_first_minute_the_wall_clock_is_inside_a_range(zone, day, text):
    """Every instant of a change day (each half minute), against the wall clock read minute by
    minute: a range opens at a minute boundary (each offset is whole minutes)."""
    hours = ActiveHours.parse(text)
    first = int(datetime(*day, tzinfo=zone).timestamp()) - 3 * 3600
    minutes = range(first, first + 3 * 86400, 60)
    active = [hours.active_at(m, zone) for m in minutes]
    opening: list[int | None] = [None] * len(active)
    nxt = None
    for i in range(len(active) - 1, -1, -1):  # the first active minute after each one
        opening[i] = nxt
        if active[i]:
            nxt = minutes[i]
    for i in range(0, 10 * 60):  # from 21:00 the day before to 07:00: the changes and the ranges
        for now in (minutes[i], minutes[i] + 30):
            if hours.active_at(now, zone):
                continue
            want = opening[i]
            assert want is not None
            got = hours.next_start(now, zone)
            assert got == want, f"{text} at {shown(now, zone)}: {shown(got, zone)}, the clock opens {shown(want, zone)}"


def test_the_quiet_hours_diagnostic_names_an_opening_that_comes():
    e = Entry(
        id="e1",
        schedule=Cron("0 * * * *", catch_up="once"),
        target=Target(TargetKind.PANE, PANE),
        active_hours=ActiveHours.parse("02:00-02:30,04:00-05:00"),
        created_by=CreatedBy(at=at(NEW_YORK, 2026, 3, 8, 0, 30)),
    )
    now = at(NEW_YORK, 2026, 3, 8, 3, 0, 10)
    ev = due([e], LogView(), [PaneFact(PANE, state="idle", epoch=1)], {"e1": _idle()}, {}, now, zone=NEW_YORK)
    [diag] = [d.detail for d in ev.diagnostics]
    assert diag == "outside 02:00-02:30,04:00-05:00: fires at 2026-03-08 04:00:00 EDT"


# -- a pause no tick saw ---------------------------------------------------------------------------

NINE = at(UTC, 2027, 1, 15, 9, 0)
SPAN = (NINE - 30 * 60, NINE + 30 * 60)  #: `pause --for 1h` at 08:30, lapsed at 09:30


def _idle() -> TargetFact:
    return TargetFact(pane=PANE, state="idle", epoch=1)


def _entry(schedule) -> Entry:
    return Entry(
        id="e1", schedule=schedule, target=Target(TargetKind.PANE, PANE), created_by=CreatedBy(at=NINE - 86400)
    )


def _tick(e: Entry, now: int, span):
    return due([e], LogView(), [PaneFact(PANE, state="idle", epoch=1)], {"e1": _idle()}, {}, now, paused_span=span)


@pytest.mark.parametrize(
    "schedule",
    [Cron("0 9 * * *"), Cron("0 9 * * *", catch_up="once"), At(NINE, catch_up="once"), At(NINE)],
    ids=["cron", "cron-catch-up", "at-catch-up", "at"],
)
def test_an_occurrence_a_lapsed_pause_covered_is_dropped_though_no_tick_saw_it(schedule):
    e = _entry(schedule)
    woke = NINE + 45 * 60  # the laptop slept from 08:31 to 09:45
    ev = _tick(e, woke, SPAN)
    assert (ev.fires, ev.missed, ev.paused) == ((), (), (Quiet("e1", Reason.SCHEDULE, PANE),))
    unpaused = _tick(e, woke, None)  # without the pause: late (catch-up) or missed
    assert unpaused.fires or unpaused.missed == (Missed("e1", NINE),)


def test_a_lapsed_pause_leaves_every_and_later_occurrences_alone():
    assert _tick(_entry(Every(3600)), NINE + 45 * 60, SPAN).fires  # every goes on when the pause ends
    ten = _tick(_entry(Cron("0 9,10 * * *")), NINE + 3600 + 30, SPAN)  # 10:00 came after the pause
    assert [f.occurrence for f in ten.fires] == [NINE + 3600] and ten.paused == ()


def test_the_forecast_after_an_unseen_pause_is_the_next_day():
    e = _entry(Cron("0 9 * * *", catch_up="once"))
    woke = NINE + 45 * 60
    told = forecast(e, LogView(), _idle(), woke, zone=UTC, settings=Settings(), paused_span=SPAN)
    assert told.next == NINE + 86400
    assert forecast(e, LogView(), _idle(), woke, zone=UTC, settings=Settings()).next == woke  # without it: now


def test_resume_ends_the_pause_at_now_and_keeps_its_span(tmp_path):
    path = tmp_path / "default.pause"
    write_pause(path, NINE - 3600, 0)
    assert pause_span(path) is None and paused_until(path, NINE) == 0  # until resumed: paused, no span yet
    assert end_pause(path, NINE) is True
    assert json.loads(path.read_text()) == {"since": NINE - 3600, "until": NINE}
    assert paused_until(path, NINE) is None and pause_span(path) == (NINE - 3600, NINE)
    assert end_pause(path, NINE + 60) is False  # over already
    path.write_text("garbage\n")
    assert pause_span(path) is None and end_pause(path, NINE) is True and not path.exists()


@pytest.mark.shell
def test_the_tick_drops_what_a_pause_covered_that_no_tick_saw(env, tmux_server):
    """`pause --for 1h` at 08:30, the laptop asleep until 09:45: the 09:00 is dropped, not caught up."""
    t0 = NINE - 3600
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    cron = ["cron", "add", "hello", "--cron", "0 9 * * *", "--catch-up", "once", "--pane", pane, "--any-program"]
    added = run_rk([*cron, "--json", "-L", tmux_server.name], dict(env, RK_NOW=str(t0), TZ="UTC"), check=True)
    entry_id = json.loads(added.stdout)["result"]["id"]
    run_rk(["cron", "pause", "--for", "1h", "-L", tmux_server.name], dict(env, RK_NOW=str(t0 + 1800)), check=True)
    run_rk(["cron", "tick", "-L", tmux_server.name], dict(env, RK_NOW=str(NINE + 45 * 60), TZ="UTC"), check=True)
    state = Path(env["RK_STATE_DIR"])
    lines = [(line.entry, line.outcome) for p in state.glob("*.log") for line in read_live(p)]
    assert lines == [(entry_id, Status.SKIPPED_PAUSED)]


def test_pause_help_says_what_a_pause_drops():
    doc = " ".join((cmd_pause.__doc__ or "").split())
    assert "no log lines" not in doc
    assert "skipped-paused" in doc and "no tick ran" in doc


# -- {missed} after a capped day -------------------------------------------------------------------


def test_missed_leaves_out_the_occurrences_a_day_cap_silenced():
    start = at(UTC, 2027, 1, 15, 0, 0)
    e = Entry(
        id="e1",
        schedule=Cron("0 * * * *"),
        target=Target(TargetKind.PANE, PANE),
        payload="{missed} missed: {occurrences}",
        max_per_day=3,
        created_by=CreatedBy(at=start - 60),
    )
    sim = simulate([e], start=start, end=start + 86400 + 120, tick=60, script=[StateChange(start, PANE, "idle")])
    typed = [ev.typed for ev in sim.events if ev.outcome == Status.DELIVERED]
    assert len(typed) == 4  # 00:00, 01:00, 02:00; 03:00 is skipped-cap; the rest of the day is silent
    assert typed[-1] == "0 missed: 2027-01-16T00:00:00+00:00"  # the capped 03:00 … 23:00 are not owed


def test_a_failed_occurrence_before_the_cap_is_still_missed():
    start = at(UTC, 2027, 1, 15, 0, 0)
    e = Entry(
        id="e1",
        schedule=Cron("0 * * * *"),
        target=Target(TargetKind.PANE, PANE),
        payload="{missed}",
        max_per_day=2,
        created_by=CreatedBy(at=start - 60),
    )
    log = [
        LogLine(start + 10, "e1", PANE, Reason.SCHEDULE, Status.DELIVERED),
        LogLine(start + 3610, "e1", PANE, Reason.SCHEDULE, "failed: no pane"),
        LogLine(start + 5400, "e1", PANE, Reason.MANUAL, Status.DELIVERED),
        LogLine(start + 7210, "e1", PANE, Reason.SCHEDULE, "skipped-cap: day"),
    ]
    script = [StateChange(start, PANE, "idle")]
    sim = simulate([e], start=start + 86400 - 60, end=start + 86400 + 120, tick=60, log=log, script=script)
    [typed] = [ev.typed for ev in sim.events if ev.outcome == Status.DELIVERED]
    assert typed == "1"  # 01:00 failed before the day was capped: still owed; 02:00 … 23:00 were capped


def test_gaps_show_a_capped_occurrence_as_capped():
    start = at(UTC, 2027, 1, 15, 0, 0)
    expr = CronExpr.parse("0 * * * *")
    times = occurrences(expr, start - 1, start + 5 * 3600, UTC, 100)
    own = [LogLine(start + 10, "e1", PANE, Reason.SCHEDULE, Status.DELIVERED)]
    own.append(LogLine(start + 3610, "e1", PANE, Reason.SCHEDULE, "skipped-cap: day"))
    found = gaps(times, own, start + 5 * 3600 + 10, UTC)
    assert [g.what for g in found] == ["skipped-cap: day", CAPPED, CAPPED, CAPPED, CAPPED]


# -- repeated wall times ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "zone, wall, first, second",
    [
        (NEW_YORK, (2026, 11, 1, 1, 30), "2026-11-01 01:30:00 EDT", "2026-11-01 01:30:00 EST"),
        (SYDNEY, (2026, 4, 5, 2, 30), "2026-04-05 02:30:00 AEDT", "2026-04-05 02:30:00 AEST"),
        (LORD_HOWE, (2026, 4, 5, 1, 45), "2026-04-05 01:45:00 +11:00", "2026-04-05 01:45:00 +10:30"),
    ],
)
def test_a_repeated_wall_time_is_printed_with_its_offset(zone, wall, first, second):
    one, two = at(zone, *wall, fold=0), at(zone, *wall, fold=1)
    assert (stamp(one, zone), stamp(two, zone)) == (first, second)
    later = datetime.fromtimestamp(two, zone) + timedelta(hours=2)
    assert stamp(int(later.timestamp()), zone) == later.strftime("%Y-%m-%d %H:%M:%S")  # once: no offset


@pytest.mark.shell
def test_log_gaps_prints_the_two_passes_of_a_repeated_time_apart(tmp_path):
    created = at(NEW_YORK, 2026, 11, 1, 0, 50)
    env = make_env(tmp_path, RK_NOW=str(at(NEW_YORK, 2026, 11, 1, 2, 10)), TZ="America/New_York")
    yaml = (
        "entries:\n  - id: g001\n    schedule: {kind: cron, expr: '*/30 * * * *'}\n"
        f"    target: {{kind: role, role: op}}\n    payload: ping\n    created_by: {{at: {created}}}\n"
    )
    write_private(Path(env["RK_STATE_DIR"]) / "default.yaml", yaml)
    res = run_in(["cron", "log", "g001", "--gaps"], env)
    assert (res.code, res.err) == (0, ""), res
    assert [" ".join(line.split()) for line in res.out.splitlines()[1:]] == [
        "2026-11-01 01:00:00 EDT not run",
        "2026-11-01 01:30:00 EDT not run",
        "2026-11-01 01:00:00 EST not run",
        "2026-11-01 01:30:00 EST not run",
        "2026-11-01 02:00:00 not run",
    ], res.out

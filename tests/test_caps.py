"""Per-entry caps (issue 20, item 1): `max_per_day` in the entry's local day and
`max_total` with its retirement (rk.core.cost.caps).

Sections:
 1. the pure core: day_bounds across DST (a property and the 23 h / 25 h days), the
    cap exactly at N, the entry keys, the log's retention, the forecast (NEXT after
    midnight, `capped: 3/3 today`, LEFT) and a forecast/simulator property with caps
 2. the command line in-process: flags, validation, receipt, list, show, --json, simulate
 3. the tick on a private tmux server: the N-th delivery retires the entry from the file
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from cli_helpers import T0, json_error, make_env, one_line_error, run_in, snapshot, write_private
from conftest import run_rk, wait_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast import START, TICK, cases, mismatch, real

from rk.core.cost import caps
from rk.core.log.delivery import LogLine, LogView, Reason, Status, lines_to_keep
from rk.core.pane.facts import TargetFact
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.entry import CreatedBy, Cron, Entry, EntryError, Every, Target, TargetKind
from rk.core.schedule.forecast import forecast
from rk.core.schedule.health import is_trouble
from rk.core.schedule.simulate import StateChange, simulate
from rk.core.settings import Settings
from rk.store import delivery_log as logfile
from rk.store.entries import load_entries

BERLIN = ZoneInfo("Europe/Berlin")
HOUR = 3600
PANE = "%1"


def ts(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp())


def entry(**kw) -> Entry:
    base = {
        "id": "cp01",
        "schedule": Every(HOUR),
        "target": Target(TargetKind.PANE, PANE),
        "payload": "go on",
        "created_by": CreatedBy(at=ts("2026-01-01T00:00:00+00:00")),
        "dormant_after": 0,  # its pane never answers here: only the caps are at stake (dormancy: test_dormant.py)
    }
    return Entry(**(base | kw))


def delivered(*stamps: int, entry_id: str = "cp01", outcome: str = "delivered") -> list[LogLine]:
    return [LogLine(t, entry_id, PANE, Reason.SCHEDULE, outcome) for t in stamps]


# --------------------------------------------------------------------------- 1. day_bounds

ZONES = [UTC, BERLIN, ZoneInfo("America/New_York"), ZoneInfo("America/Santiago"), ZoneInfo("Australia/Lord_Howe")]


@settings(max_examples=500, deadline=None)
@given(t=st.integers(0, 4_102_444_800), zone=st.sampled_from(ZONES))
def test_day_bounds_hold_the_instant_and_are_one_local_date(t, zone):
    start, end = caps.day_bounds(t, zone)
    assert start <= t < end
    assert 22 * HOUR <= end - start <= 26 * HOUR
    day = datetime.fromtimestamp(t, zone).date()
    assert datetime.fromtimestamp(start, zone).date() == day == datetime.fromtimestamp(end - 1, zone).date()
    assert datetime.fromtimestamp(end, zone).date() == day + timedelta(days=1)
    assert caps.day_bounds(start, zone) == (start, end) == caps.day_bounds(end - 1, zone)
    assert caps.day_bounds(end, zone)[0] == end  # the days tile the line: no gap, no overlap


@pytest.mark.parametrize(
    ("noon", "hours", "midnight"),
    [
        ("2026-03-29T12:00:00+02:00", 23, "2026-03-29T00:00:00+01:00"),  # spring forward: 23 h
        ("2026-10-25T12:00:00+01:00", 25, "2026-10-25T00:00:00+02:00"),  # fall back: 25 h
        ("2026-06-01T12:00:00+02:00", 24, "2026-06-01T00:00:00+02:00"),
    ],
)
def test_day_bounds_in_berlin_on_the_change_days(noon, hours, midnight):
    start, end = caps.day_bounds(ts(noon), BERLIN)
    assert (start, (end - start) // HOUR) == (ts(midnight), hours)


def test_day_bounds_where_the_clock_skips_midnight_start_after_the_gap():
    # Santiago springs forward at 24:00 on 2026-09-05: 2026-09-06 has no 00:00, it begins at 01:00
    start, end = caps.day_bounds(ts("2026-09-06T12:00:00-03:00"), ZoneInfo("America/Santiago"))
    assert datetime.fromtimestamp(start, ZoneInfo("America/Santiago")).isoformat() == "2026-09-06T01:00:00-03:00"
    assert end - start == 23 * HOUR


# --------------------------------------------------------------------------- 1. the cap exactly at N


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_a_day_cap_of_n_delivers_exactly_n_then_one_skip_line(n):
    e = entry(schedule=Every(600), max_per_day=n)
    day = ts("2026-01-01T00:00:00+00:00")
    sim = simulate([e], start=day, end=day + 86400, tick=60, script=[StateChange(day, PANE, "idle")])
    outcomes = [line.outcome for line in sim.lines]
    assert outcomes[:n] == ["delivered"] * n  # the N-th delivers
    assert outcomes[n:] == ["skipped-cap: day"]  # the N+1-th skips, once; the rest of the day is silent


@pytest.mark.parametrize("n", [1, 2, 5])
def test_a_total_cap_of_n_delivers_exactly_n_then_retires(n):
    e = entry(schedule=Every(600), max_total=n)
    day = ts("2026-01-01T00:00:00+00:00")
    sim = simulate([e], start=day, end=day + 86400, tick=60, script=[StateChange(day, PANE, "idle")])
    assert [line.outcome for line in sim.lines] == ["delivered"] * n + ["retired: max-total"]
    assert sim.lines[-1].ts == sim.lines[-2].ts  # retired in the tick of its N-th delivery


def test_caps_count_only_delivered_lines_and_only_their_own():
    e = entry(max_per_day=2, max_total=3)
    view = LogView(
        [
            *delivered(ts("2026-01-01T09:00:00+00:00")),
            *delivered(ts("2026-01-01T10:00:00+00:00"), outcome="failed: paste"),
            *delivered(ts("2026-01-01T11:00:00+00:00"), outcome="rate-capped"),
            *delivered(ts("2026-01-01T12:00:00+00:00"), entry_id="other"),
        ]
    )
    cap = caps.day_cap(e, view, ts("2026-01-01T13:00:00+00:00"), UTC)
    assert cap is not None and (cap.count, cap.capped) == (1, False)
    assert caps.left(e, view) == 2 and not caps.spent(e, view)
    assert caps.day_cap(entry(), view, 0, UTC) is None and caps.left(entry(), view) is None


# --------------------------------------------------------------------------- 1. the entry's keys


def test_the_caps_round_trip_through_the_entry_yaml():
    e = entry(max_per_day=3, max_total=10)
    raw = e.to_yaml()
    assert (raw["max_per_day"], raw["max_total"]) == (3, 10)
    assert decode_entry(raw) == e
    assert "max_per_day" not in entry().to_yaml() and "max_total" not in entry().to_yaml()


@pytest.mark.parametrize("bad", ["3", 0, -1, True, 2.5, 10**7, [3]])
@pytest.mark.parametrize("key", ["max_per_day", "max_total"])
def test_a_bad_cap_refuses_the_entry(key, bad):
    raw = entry().to_yaml() | {key: bad}
    with pytest.raises(EntryError, match=key):
        decode_entry(raw)


@pytest.mark.shell
def test_a_hand_edited_bad_cap_refuses_only_that_entry(tmp_path):
    path = write_private(
        tmp_path / "s.yaml",
        "entries:\n"
        "  - {id: ok01, schedule: {kind: every, interval: 1h}, target: {kind: pane, pane: '%1'}, max_per_day: 3}\n"
        "  - {id: bad1, schedule: {kind: every, interval: 1h}, target: {kind: pane, pane: '%1'}, max_total: lots}\n",
    )
    loaded = load_entries(path)
    assert [(e.id, e.max_per_day) for e in loaded.entries] == [("ok01", 3)]
    assert [(d.entry, d.reason) for d in loaded.diagnostics] == [("bad1", "entry-invalid")]
    assert "max_total must be a whole number" in loaded.diagnostics[0].detail


# --------------------------------------------------------------------------- 1. retention


def test_a_rotation_keeps_the_delivered_lines_the_caps_count():
    now = ts("2026-01-10T12:00:00+00:00")
    lines = delivered(*(now - 86400 * 5 + i * 60 for i in range(6)))  # six deliveries days ago
    lines += delivered(now - 7200, outcome="skipped-busy: active")
    plain = lines_to_keep(lines, now, (), {"cp01"})
    counted = lines_to_keep(lines, now, (), {"cp01"}, {"cp01": 4})
    assert sum(lines[i].outcome == "delivered" for i in plain) == 1  # without it, only the newest delivery stays
    assert [i for i in counted if lines[i].outcome == "delivered"] == [2, 3, 4, 5]  # the newest four
    view = LogView(lines[i] for i in counted)
    assert caps.left(entry(max_total=4), view) == caps.left(entry(max_total=4), LogView(lines)) == 0


def test_a_rotation_keeps_the_days_skip_line_so_it_is_not_written_twice():
    now = ts("2026-01-01T20:00:00+00:00")
    lines = delivered(ts("2026-01-01T09:00:00+00:00"))
    lines += delivered(ts("2026-01-01T10:00:00+00:00"), outcome="skipped-cap: day")
    lines += [LogLine(ts("2026-01-01T11:00:00+00:00"), "cp01", PANE, Reason.MANUAL, Status.DELIVERED)]  # rk cron run
    lines += [LogLine(ts("2026-01-01T11:30:00+00:00"), "cp01", "", Reason.EDIT, Status.RESCHEDULED)]
    assert 1 not in lines_to_keep(lines, now, (), {"cp01"})  # no other rule keeps it
    kept = lines_to_keep(lines, now, (), {"cp01"}, {"cp01": 1})
    assert 1 in kept
    cap = caps.day_cap(entry(max_per_day=1), LogView(lines[i] for i in kept), now, UTC)
    assert cap is not None and cap.said


# --------------------------------------------------------------------------- 1. the forecast

FACT = TargetFact(pane=PANE, state="idle", epoch=1)


def _told(e: Entry, lines: list[LogLine], now: int, n: int = 1, zone=UTC):
    return forecast(e, LogView(lines), FACT, now, zone=zone, settings=Settings(tick_interval=60), n=n)


def test_a_capped_entry_is_forecast_for_tomorrows_first_occurrence_and_says_why():
    e = entry(schedule=Cron("0 9,12,15,18 * * *", tz="Europe/Berlin"), max_per_day=3)
    day = [ts(f"2026-01-05T{h:02d}:00:00+01:00") for h in (9, 12, 15)]
    told = _told(e, delivered(*day), ts("2026-01-05T16:00:00+01:00"))
    assert told.next == ts("2026-01-06T09:00:00+01:00")
    assert told.why_not == "capped: 3/3 today" and not is_trouble(told.why_not)
    fires = _told(e, delivered(*day[:2]), ts("2026-01-05T13:00:00+01:00"), n=3).fires
    assert [f.ts for f in fires] == [ts(x) for x in ("2026-01-05T15:00:00+01:00", "2026-01-06T09:00:00+01:00",
                                                       "2026-01-06T12:00:00+01:00")]  # fmt: skip


def test_a_capped_every_entry_is_forecast_at_the_local_midnight():
    e = entry(max_per_day=2)
    lines = delivered(ts("2026-03-29T00:30:00+01:00"), ts("2026-03-29T01:30:00+01:00"))
    told = _told(e, lines, ts("2026-03-29T05:00:00+02:00"), zone=BERLIN)
    assert told.next == ts("2026-03-30T00:00:00+02:00")  # Berlin's midnight (22:00 UTC), not UTC's


def test_a_total_capped_entry_says_how_many_are_left_and_forecasts_no_more():
    e = entry(max_total=3)
    now = ts("2026-01-01T12:00:00+00:00")
    told = _told(e, delivered(now - 600), now, n=5)
    assert told.left == 2 and len(told.fires) == 2  # then it retires
    spent = _told(e, delivered(now - 1200, now - 900, now - 600), now)
    assert (spent.next, spent.left, spent.why_not) == (None, 0, "retired: made its 3 deliveries (max_total)")
    assert not is_trouble(spent.why_not)
    assert _told(entry(), [], now).left is None


@st.composite
def capped_cases(draw):
    """The forecast property's cases, with caps and deliveries earlier in the entry's day."""
    entry_, lines, state, paused, rate, zone = draw(cases())
    entry_ = replace(
        entry_, max_per_day=draw(st.sampled_from([0, 1, 2, 3])), max_total=draw(st.sampled_from([0, 0, 1, 2, 4]))
    )
    own = [START - m * TICK for m in sorted(draw(st.lists(st.integers(1, 600), max_size=3, unique=True)))]
    lines = sorted(lines + delivered(*own, entry_id=entry_.id), key=lambda line: line.ts)
    return entry_, lines, state, paused, rate, zone


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=capped_cases())
def test_the_forecast_of_a_capped_entry_is_what_the_simulator_then_does(case):
    assert mismatch(case, real) is None


def test_a_forecast_blind_to_the_day_cap_contradicts_the_simulator():
    """The property above fails for a forecast that leaves out the day cap (found once, kept)."""
    e = replace(entry(id="fc01", schedule=Every(30 * TICK)), created_by=CreatedBy(at=START - 300 * TICK))
    e = replace(e, max_per_day=1)
    case = (e, delivered(START - 10 * TICK, entry_id="fc01"), "idle", None, 30, UTC)
    blind = lambda e_, *rest: real(replace(e_, max_per_day=0), *rest)  # noqa: E731
    assert mismatch(case, real) is None
    assert mismatch(case, blind) is not None


# --------------------------------------------------------------------------- 2. the command line


@pytest.fixture
def cli(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0), TZ="Europe/Berlin")
    return env


def _add(env, *flags) -> dict:
    res = run_in(["cron", "add", "status?", "--every", "1h", "--pane", "%1", "--json", *flags], env)
    assert res.code == 0, res
    return res.json()["result"]


@pytest.mark.shell
def test_add_takes_the_caps_writes_them_and_says_them_in_the_receipt(cli):
    rec = _add(cli, "--max-per-day", "3", "--max-total", "10")
    assert (rec["max_per_day"], rec["max_total"], rec["left"]) == (3, 10, 10)
    text = (Path(cli["RK_STATE_DIR"]) / "default.yaml").read_text()
    assert "max_per_day: 3\n" in text and "max_total: 10\n" in text
    human = run_in(["cron", "add", "x", "--every", "1h", "--pane", "%1", "--max-per-day", "2"], cli)
    assert human.code == 0 and human.out.splitlines()[-1] == "caps: 2/day"


@pytest.mark.shell
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-per-day", "0"], "--max-per-day must be a whole number between 1 and 1000000"),
        (["--max-total", "-2"], "--max-total must be a whole number between 1 and 1000000"),
        (["--max-total", "1000001"], "--max-total must be a whole number between 1 and 1000000"),
        (["--max-per-day", "three"], "Invalid value for '--max-per-day'"),
    ],
)
def test_add_refuses_a_bad_cap_with_one_line_and_writes_nothing(cli, flags, message):
    before = snapshot(Path(cli["RK_STATE_DIR"]))
    res = run_in(["cron", "add", "x", "--every", "1h", "--pane", "%1", *flags], cli)
    assert res.code == 2 and message in one_line_error(res)
    assert snapshot(Path(cli["RK_STATE_DIR"])) == before
    as_json = run_in(["cron", "add", "x", "--every", "1h", "--pane", "%1", "--json", *flags], cli)
    assert as_json.code == 2 and message in json_error(as_json, "usage")


@pytest.mark.shell
def test_edit_sets_changes_and_clears_the_caps_without_a_rescheduled_line(cli):
    eid = _add(cli, "--max-per-day", "3")["id"]
    edited = run_in(["cron", "edit", eid, "--max-total", "5", "--max-per-day", "4", "--json"], cli)
    assert edited.code == 0, edited
    assert (edited.json()["result"]["max_per_day"], edited.json()["result"]["max_total"]) == (4, 5)
    cleared = run_in(["cron", "edit", eid, "--max-per-day", "0", "--json"], cli).json()["result"]
    assert "max_per_day" not in cleared and cleared["max_total"] == 5
    text = (Path(cli["RK_STATE_DIR"]) / "default.yaml").read_text()
    assert "max_per_day" not in text and "max_total: 5\n" in text
    assert not (Path(cli["RK_STATE_DIR"]) / "default.log").exists()  # a cap is not a schedule: no rescheduled
    bad = run_in(["cron", "edit", eid, "--max-total", "-1"], cli)
    assert bad.code == 2 and "(0 removes it)" in one_line_error(bad)
    nothing = run_in(["cron", "edit", eid], cli)
    assert nothing.code == 2 and "--max-per-day, --max-total" in one_line_error(nothing)


def _log(env, *lines: LogLine) -> None:
    logfile.append_lines(Path(env["RK_STATE_DIR"]) / "default.log", list(lines))


@pytest.mark.shell
def test_list_show_and_json_show_the_caps_the_day_count_and_what_is_left(cli):
    eid = _add(cli, "--max-per-day", "2", "--max-total", "5")["id"]
    _log(cli, *delivered(T0 - 1800, T0 - 600, entry_id=eid))  # two today (08:30 and 08:50 Berlin)
    listed = run_in(["cron", "list", "--json"], cli).json()["result"][0]
    assert (listed["max_per_day"], listed["delivered_today"], listed["max_total"], listed["left"]) == (2, 2, 5, 3)
    assert listed["why_not"] == "server not running"  # no tmux here: the forecast as the tick sees it
    next_ = run_in(["cron", "next", eid, "--json", "-n", "2"], cli).json()["result"]
    midnight = ts("2027-01-16T00:00:00+01:00")  # Berlin's, the entry's zone
    assert next_["why_not"] == "capped: 2/2 today" and next_["left"] == 3
    assert [f["ts"] for f in next_["fires"]] == [midnight, midnight + HOUR]
    human = run_in(["cron", "next", eid, "-n", "2"], cli).out.splitlines()
    assert human[0] == "note: capped: 2/2 today" and human[-1] == "3 deliveries left, then it retires (max_total)"
    shown = run_in(["cron", "show", eid], cli)
    assert "caps:       2/day (2 today), 5 in all (3 left, then it retires)" in shown.out.splitlines()
    assert run_in(["cron", "show", eid, "--json"], cli).json()["result"]["left"] == 3
    table = run_in(["cron", "list", "--full"], cli).out
    assert "max:2/day,max:5" in table


@pytest.mark.shell
def test_list_fits_80_columns_with_caps(cli):
    from cli_helpers import run_in_pty

    eid = _add(cli, "--max-per-day", "2", "--max-total", "5")["id"]
    _log(cli, *delivered(T0 - 1800, entry_id=eid))
    out = run_in_pty(["cron", "list"], cli, cols=80)
    assert all(len(line.rstrip("\r")) <= 80 for line in out.splitlines()), out


@pytest.mark.shell
def test_simulate_draws_the_skip_and_the_retirement(cli):
    sim = ["cron", "simulate", "--every", "1h", "--for", "1d", "--start", "2026-01-01T00:00:00+01:00", "--tick", "1m"]
    day = run_in([*sim, "--max-per-day", "3", "--json"], cli).json()["result"]
    assert [e["outcome"] for e in day["events"] if e["kind"] == "line"] == ["delivered"] * 3 + ["skipped-cap: day"]
    total = run_in([*sim, "--max-total", "2"], cli)
    assert total.code == 0 and "retired: max-total" in total.out and "1 retired" in total.out
    assert "C skipped-cap R retired" in " ".join(total.out.split())  # the legend, however it wraps


# --------------------------------------------------------------------------- 3. the tick


@pytest.mark.shell
def test_the_tick_retires_an_entry_after_its_max_total_th_delivery(tmp_path, tmux_server):
    env = dict(make_env(tmp_path, RK_NOW=str(T0)), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"], TZ="UTC")
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    srv = ["-L", tmux_server.name]
    add = ["cron", "add", "twice", "--every", "1m", "--pane", pane, "--any-program", "--max-total", "2", "--json"]
    eid = run_in([*add, *srv], env).json()["result"]["id"]
    for minute in (1, 2):
        run_rk(["cron", "tick", *srv], dict(env, RK_NOW=str(T0 + 60 * minute)), check=True)
        wait_for(
            lambda m=minute: [line.rstrip() for line in tmux_server.capture(pane).splitlines()].count("twice") == 2 * m,
            message=f"delivery {minute}",
        )
    assert run_in(["cron", "list", *srv, "--json"], dict(env, RK_NOW=str(T0 + 150))).json()["result"] == []
    run_rk(["cron", "tick", *srv], dict(env, RK_NOW=str(T0 + 600)), check=True)
    lines = logfile.read_live(Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.log")
    assert [(line.entry, line.outcome) for line in lines] == [
        (eid, "delivered"),
        (eid, "delivered"),
        (eid, "retired: max-total"),
    ]


def test_the_skip_line_anchors_like_a_skip_and_never_counts_toward_the_rate_cap():
    from rk.core.log.delivery import counts_for_rate

    assert not counts_for_rate("skipped-cap: day") and not counts_for_rate("retired: max-total")
    view = LogView(delivered(100) + delivered(200, outcome="skipped-cap: day"))
    assert view.anchor("cp01") == view.own("cp01")[-1]  # an every rhythm goes on from it
    assert view.rate_count(300, target=PANE) == 1


def test_gaps_say_a_silenced_occurrence_was_capped_not_that_nothing_ran():
    from rk.core.schedule.gaps import CAPPED, NOT_RUN, Gap, gaps

    o = [ts(f"2026-01-01T{h:02d}:00:00+00:00") for h in (9, 12, 15, 18)] + [ts("2026-01-02T09:00:00+00:00")]
    own = delivered(o[0], o[1]) + delivered(o[2], outcome="skipped-cap: day")
    now = o[4] + 60
    assert gaps(o, own, now, UTC) == [Gap(o[2], "skipped-cap: day"), Gap(o[3], CAPPED), Gap(o[4], NOT_RUN)]
    assert gaps(o, own, now) == [Gap(o[2], "skipped-cap: day"), Gap(o[3], NOT_RUN), Gap(o[4], NOT_RUN)]


@st.composite
def capped_histories(draw):
    """Log lines (in time order) of entries with random caps, and an instant after them."""
    ids = ["a", "b", "c"]
    t = ts("2026-03-27T00:00:00+00:00")
    lines = []
    for _ in range(draw(st.integers(5, 200))):
        t += draw(st.integers(0, 7200))
        outcome = draw(st.sampled_from(["delivered", "delivered", "skipped-cap: day", "failed: x", "rescheduled"]))
        lines.append(LogLine(t, draw(st.sampled_from(ids)), PANE, Reason.SCHEDULE, outcome))
    limits = {e: (draw(st.integers(0, 5)), draw(st.integers(0, 8))) for e in ids}
    return lines, limits, t + draw(st.integers(0, 86400))


@settings(max_examples=200, deadline=None)
@given(capped_histories(), st.sampled_from([UTC, BERLIN]))
def test_the_lines_a_rotation_keeps_answer_the_caps_as_the_whole_log_does(case, zone):
    lines, limits, now = case
    entries = {e: entry(id=e, max_per_day=d, max_total=n) for e, (d, n) in limits.items()}
    counted = {e: caps.kept_deliveries(x) for e, x in entries.items() if caps.kept_deliveries(x)}
    whole = LogView(lines)
    kept = LogView([lines[i] for i in lines_to_keep(lines, now, (), set(entries), counted)])
    for e in entries.values():
        assert caps.spent(e, kept) == caps.spent(e, whole) and caps.left(e, kept) == caps.left(e, whole)
        for at in (now, whole.newest(e.id).ts if whole.newest(e.id) else now):
            a, b = caps.day_cap(e, kept, at, zone), caps.day_cap(e, whole, at, zone)
            assert (a is None) == (b is None)
            if a is not None and b is not None:
                assert (a.capped, a.said, min(a.count, e.max_per_day)) == (b.capped, b.said, min(b.count, b.limit))
        assert caps.reopens(e, kept, now, zone) == caps.reopens(e, whole, now, zone)


@pytest.mark.shell
def test_the_tick_logs_the_day_caps_one_line_then_is_silent_until_midnight(tmp_path, tmux_server):
    env = dict(make_env(tmp_path, RK_NOW=str(T0)), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"], TZ="UTC")
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    srv = ["-L", tmux_server.name]
    add = ["cron", "add", "once a day", "--every", "1m", "--pane", pane, "--any-program", "--max-per-day", "1"]
    eid = run_in([*add, "--json", *srv], env).json()["result"]["id"]
    midnight = T0 - T0 % 86400 + 86400  # T0 is 08:00 UTC
    for at in (T0 + 60, T0 + 120, T0 + 180, T0 + 3600, midnight):
        ticked = run_rk(["cron", "tick", *srv, "--json"], dict(env, RK_NOW=str(at)), check=True)
        decisions = [d["outcome"] for d in json.loads(ticked.stdout)["result"]["decisions"]]
        assert decisions == {T0 + 60: ["delivered"], T0 + 120: ["skipped-cap: day"], midnight: ["delivered"]}.get(
            at, []
        )
    wait_for(
        lambda: [line.rstrip() for line in tmux_server.capture(pane).splitlines()].count("once a day") == 4,
        message="typed twice: today's one and after midnight",
    )
    lines = logfile.read_live(Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.log")
    assert [(line.ts, line.outcome) for line in lines if line.entry == eid] == [
        (T0 + 60, "delivered"),
        (T0 + 120, "skipped-cap: day"),
        (midnight, "delivered"),
    ]

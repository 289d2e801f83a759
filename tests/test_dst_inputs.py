"""Issue 16 item 6: one DST rule for every wall-clock input.

`--at HH:MM` reads a time of day by cron's fixed-time rule (a time in a
spring-forward gap fires at the first instant after the jump; a repeated time
fires on its first pass still ahead), messages print instants in the entry's
zone, and a `--catch-up-within` inside the 2-minute grace is refused.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from cli_helpers import make_env, one_line_error, run_in
from ruamel.yaml import YAML

from rk.cli.flags import at_instant
from rk.core.log.delivery import LogView
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule.due import due
from rk.core.schedule.entry import CreatedBy, Cron, Entry, Target
from rk.core.schedule.health import why_not
from rk.core.schedule.hours import ActiveHours

NEW_YORK = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def state_of(env) -> Path:
    return Path(env["RK_STATE_DIR"])


def load_yaml(path: Path):
    return YAML(typ="safe").load(Path(path).read_text())


def ts(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


# (zone, now, --at, the instant booked): both DST days in two zones.
CASES = [
    # New York, spring forward 2026-03-08 02:00 EST -> 03:00 EDT: 02:30 does not exist
    (NEW_YORK, "2026-03-08T01:00:00-05:00", "02:30", "2026-03-08T03:00:00-04:00"),
    (NEW_YORK, "2026-03-08T01:00:00-05:00", "03:30", "2026-03-08T03:30:00-04:00"),
    (NEW_YORK, "2026-03-07T23:00:00-05:00", "02:30", "2026-03-08T03:00:00-04:00"),  # tomorrow's gap
    # New York, fall back 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 comes twice
    (NEW_YORK, "2026-11-01T00:30:00-04:00", "01:30", "2026-11-01T01:30:00-04:00"),  # first pass
    (NEW_YORK, "2026-11-01T01:45:00-04:00", "01:30", "2026-11-01T01:30:00-05:00"),  # second pass, 45 min on
    (NEW_YORK, "2026-11-01T01:45:00-05:00", "01:30", "2026-11-02T01:30:00-05:00"),  # both passed: tomorrow
    # Berlin, spring forward 2026-03-29 02:00 CET -> 03:00 CEST
    (BERLIN, "2026-03-29T01:00:00+01:00", "02:30", "2026-03-29T03:00:00+02:00"),
    (BERLIN, "2026-03-29T01:00:00+01:00", "02:00", "2026-03-29T03:00:00+02:00"),
    # Berlin, fall back 2026-10-25 03:00 CEST -> 02:00 CET
    (BERLIN, "2026-10-25T01:00:00+02:00", "02:30", "2026-10-25T02:30:00+02:00"),
    (BERLIN, "2026-10-25T02:45:00+02:00", "02:30", "2026-10-25T02:30:00+01:00"),
    (BERLIN, "2026-10-25T02:45:00+01:00", "02:30", "2026-10-26T02:30:00+01:00"),
    # an ordinary day is untouched
    (BERLIN, "2026-06-01T10:00:00+02:00", "09:00", "2026-06-02T09:00:00+02:00"),
]


@pytest.mark.parametrize("zone, now, at, booked", CASES)
def test_at_reads_a_time_of_day_by_crons_dst_rule(zone, now, at, booked):
    assert at_instant(at, ts(now), zone) == ts(booked)


@pytest.mark.parametrize(
    "tz, now, at, utc",
    [
        ("America/New_York", "2026-03-08T06:00:00Z", "02:30", "2026-03-08T07:00:00Z"),
        ("America/New_York", "2026-11-01T05:45:00Z", "01:30", "2026-11-01T06:30:00Z"),
        ("Europe/Berlin", "2026-03-29T00:00:00Z", "02:30", "2026-03-29T01:00:00Z"),
        ("Europe/Berlin", "2026-10-25T00:45:00Z", "02:30", "2026-10-25T01:30:00Z"),
    ],
)
def test_add_at_on_a_dst_day_books_cron_s_instant(tmp_path, tz, now, at, utc):
    env = make_env(tmp_path, RK_NOW=str(ts(now)), TZ=tz)
    res = run_in(["cron", "add", "x", "--at", at, "--role", "op"], env)
    assert res.code == 0, res
    (raw,) = load_yaml(state_of(env) / "default.yaml")["entries"]
    assert raw["schedule"]["at"] == ts(utc), raw


# --------------------------------------------------------------------------- the message zone

PANES = [PaneFact("%1", state="idle", epoch=1)]


def _berlin_entry(**kw) -> Entry:
    return Entry(
        id="bz01",
        schedule=Cron(expr="0 * * * *", tz="Europe/Berlin"),
        target=Target("pane", "%1"),
        created_by=CreatedBy(at=ts("2026-01-01T10:30:00Z")),
        **kw,
    )


def test_the_quiet_hours_message_prints_the_opening_in_the_entry_s_zone():
    entry = _berlin_entry(active_hours=ActiveHours.parse("08:00-12:00"))
    now = ts("2026-01-01T12:00:30Z")  # 13:00:30 in Berlin: outside; the ticker runs in New York
    ev = due([entry], LogView(), PANES, {entry.id: TargetFact("%1", state="idle", epoch=1)}, {}, now, zone=NEW_YORK)
    assert ev.diagnostics == (
        Diagnostic("bz01", Diag.QUIET_HOURS, "outside 08:00-12:00 (next opens 2026-01-02 08:00:00 CET)"),
    )


def test_the_muted_messages_print_the_lease_in_the_entry_s_zone():
    until = ts("2026-01-01T15:00:00Z")
    entry = _berlin_entry(muted_until=until)
    now = ts("2026-01-01T12:00:00Z")
    ev = due([entry], LogView(), PANES, {}, {}, now, zone=NEW_YORK)
    assert ev.diagnostics == (Diagnostic("bz01", Diag.MUTED, "entry is muted until 2026-01-01 16:00:00 CET"),)
    target = TargetFact("%1", state="idle", epoch=1)
    assert why_not(entry, 0, target, now, NEW_YORK, max_entries=10) == "muted until 2026-01-01 16:00:00 CET"


# --------------------------------------------------------------------------- the catch-up window


@pytest.mark.parametrize("within", ["30s", "2m", "120s"])
@pytest.mark.parametrize("schedule", [("--cron", "0 9 * * *"), ("--in", "1h")])
def test_a_catch_up_window_within_the_grace_is_refused(tmp_path, within, schedule):
    env = make_env(tmp_path, RK_NOW=str(ts("2026-01-01T00:00:00Z")))
    res = run_in(
        ["cron", "add", "x", *schedule, "--catch-up", "once", "--catch-up-within", within, "--role", "op"], env
    )
    assert res.code == 2, res
    assert one_line_error(res) == f"--catch-up-within {within} is within the 2-minute grace, so it would do nothing"
    assert not (state_of(env) / "default.yaml").exists()


def test_a_catch_up_window_just_past_the_grace_is_kept(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(ts("2026-01-01T00:00:00Z")))
    res = run_in(
        ["cron", "add", "x", "--cron", "0 9 * * *", "--catch-up", "once", "--catch-up-within", "121s", "--role", "op"],
        env,
    )
    assert res.code == 0, res


HAND_EDITED = """\
entries:
- id: cw01
  name: too short a window
  schedule: {kind: cron, expr: '0 9 * * *', catch_up: once, catch_up_within: 30s}
  target: {kind: role, role: op}
  payload: hi
  created_by: {at: 1767225600}
- id: cw02
  name: a fine one
  schedule: {kind: cron, expr: '0 9 * * *', catch_up: once, catch_up_within: 5m}
  target: {kind: role, role: op}
  payload: hi
  created_by: {at: 1767225600}
"""


def test_a_hand_edited_catch_up_window_within_the_grace_refuses_that_entry_only():
    from rk.store.entries import parse_entries_text

    loaded = parse_entries_text(HAND_EDITED)
    assert [e.id for e in loaded.entries] == ["cw02"]
    (diag,) = loaded.diagnostics
    assert diag.reason == Diag.ENTRY_INVALID and "cw01" in diag.detail
    assert "catch_up_within 30s is within the 2-minute grace" in diag.detail
    at_grace = parse_entries_text(HAND_EDITED.replace("catch_up_within: 30s", "catch_up_within: 2m"))
    assert [e.id for e in at_grace.entries] == ["cw02"]  # the grace itself does nothing either
    past = parse_entries_text(HAND_EDITED.replace("catch_up_within: 30s", "catch_up_within: 121s"))
    assert [e.id for e in past.entries] == ["cw01", "cw02"] and not past.diagnostics


def test_list_says_the_refused_window_in_one_line_and_shows_the_rest(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(ts("2026-01-01T00:00:00Z")))
    state_of(env).mkdir(parents=True, exist_ok=True)
    (state_of(env) / "default.yaml").write_text(HAND_EDITED)
    res = run_in(["cron", "list", "--json"], env)
    assert res.code == 0, res
    assert [r["id"] for r in res.json()["result"]] == ["cw02"]
    said = [line for line in res.err.splitlines() if "cw01" in line]
    assert len(said) == 1 and "entry-invalid" in said[0] and "grace" in said[0], res.err


@pytest.mark.parametrize(
    "tz, now, at, said",
    [
        ("America/New_York", "2026-03-08T06:00:00Z", "02:30", "at 2026-03-08 03:00:00 EDT"),
        ("America/New_York", "2026-11-01T05:45:00Z", "01:30", "at 2026-11-01 01:30:00 EST"),  # the second pass
        ("Europe/Berlin", "2026-03-29T00:00:00Z", "02:30", "at 2026-03-29 03:00:00 CEST"),
        ("Europe/Berlin", "2026-10-25T00:45:00Z", "02:30", "at 2026-10-25 02:30:00 CET"),
    ],
)
def test_the_at_receipt_prints_its_instant_in_the_entry_s_zone(tmp_path, tz, now, at, said):
    env = make_env(tmp_path, RK_NOW=str(ts(now)), TZ=tz)
    res = run_in(["cron", "add", "x", "--at", at, "--role", "op"], env)
    assert res.code == 0, res
    assert f"[{said} -> role:op]" in res.out, res.out
    assert "Z " not in res.out and "+00:00" not in res.out
    entry = res.out.split()[0]
    edited = run_in(["cron", "edit", entry, "--name", "y"], env)
    assert f"[{said} -> role:op]" in edited.out, edited.out
    listed = run_in(["cron", "list"], env).out
    assert said.rsplit(" ", 1)[0] in listed and f"NEXT ({tz})" in listed, listed
    receipt = run_in(["cron", "add", "x", "--at", at, "--role", "op", "--json"], env).json()["result"]
    assert receipt["schedule"].endswith("Z")  # the JSON form stays the machine's (UTC)


# --------------------------------------------------------------------------- when-idle's 2-hour hold


def test_a_when_idle_catch_up_window_within_its_2_hour_hold_is_refused(tmp_path):
    """Under when-idle a due fire is kept 2 hours, not 2 minutes: a window up to that does nothing."""
    env = make_env(tmp_path, RK_NOW=str(ts("2026-01-01T00:00:00Z")))
    base = ["cron", "add", "x", "--cron", "0 9 * * *", "--catch-up", "once", "--role", "op"]
    res = run_in([*base, "--catch-up-within", "1h", "--deliver", "when-idle"], env)
    assert res.code == 2, res
    assert one_line_error(res) == "--catch-up-within 1h is within when-idle's 2-hour hold, so it would do nothing"
    assert not (state_of(env) / "default.yaml").exists()
    kept = run_in([*base, "--catch-up-within", "3h", "--deliver", "when-idle", "--json"], env)
    assert kept.code == 0, kept
    immediate = run_in([*base, "--catch-up-within", "1h", "--json"], env)  # the grace is 2 minutes there
    assert immediate.code == 0, immediate
    refused = run_in(["cron", "edit", immediate.json()["result"]["id"], "--deliver", "when-idle"], env)
    assert refused.code == 2 and "2-hour hold" in refused.err, refused
    hand = HAND_EDITED.replace("catch_up_within: 30s", "catch_up_within: 1h").replace(
        "  payload: hi\n", "  payload: hi\n  deliver: when-idle\n", 1
    )
    from rk.store.entries import parse_entries_text

    loaded = parse_entries_text(hand)
    assert [e.id for e in loaded.entries] == ["cw02"]
    assert "within when-idle's 2-hour hold" in loaded.diagnostics[0].detail

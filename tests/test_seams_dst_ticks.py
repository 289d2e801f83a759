"""Ticks in zones other than UTC, on daylight-saving days, through the CLI on a
private tmux server: `rk cron tick` with `RK_NOW` and `TZ` (or an entry's
`--tz`), driven tick by tick across spring-forward and fall-back.

The rule (DECISIONS.md, "Time zones"; Debian cron's): a fixed-time job in a
skipped hour fires once, right after the jump; one in a repeated hour fires once,
on the first pass; a job whose hour field is `*` or a step follows the clock in
both passes. Never two fires for one occurrence, never one at a time that does
not exist. Each case ticks at every expected fire, a minute after it, at the
instants a wrong rule would fire (decoys), and on a coarse grid between; the log
must hold exactly the expected fires and no `missed` line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from cli_helpers import run_in
from conftest import run_rk, wait_for

from rk.store.delivery_log import read_live

pytestmark = pytest.mark.shell

MIN = 60


def ts(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


@dataclass(frozen=True)
class Case:
    name: str
    tz_env: str  #: the ticker's local zone
    expr: str
    start: str  #: the entry is added then
    end: str  #: the last tick
    fires: tuple[str, ...]  #: exactly these instants, once each
    decoys: tuple[str, ...] = ()  #: where a wrong DST rule would fire
    tz: str = ""  #: the entry's own zone (`--tz`), which wins over TZ
    grid: int = 30 * MIN

    def __str__(self) -> str:
        return self.name


CASES = [
    # New York: spring forward 2026-03-08 02:00 EST (07:00Z) -> 03:00 EDT
    Case(
        "new-york-spring-fixed-in-the-gap",
        "America/New_York",
        "30 2 * * *",
        "2026-03-08T05:00:00Z",
        "2026-03-08T09:00:00Z",
        ("2026-03-08T07:00:00Z",),  # 03:00 EDT, right after the jump
        ("2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z"),
    ),
    Case(
        "new-york-spring-hourly-skips-the-missing-hour",
        "America/New_York",
        "30 * * * *",
        "2026-03-08T05:00:00Z",
        "2026-03-08T09:00:00Z",
        ("2026-03-08T05:30:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:30:00Z"),
        ("2026-03-08T07:00:00Z",),
    ),
    # New York: fall back 2026-11-01 02:00 EDT (06:00Z) -> 01:00 EST
    Case(
        "new-york-fall-fixed-in-the-repeat",
        "America/New_York",
        "30 1 * * *",
        "2026-11-01T04:00:00Z",
        "2026-11-01T08:00:00Z",
        ("2026-11-01T05:30:00Z",),  # 01:30 EDT, the first pass only
        ("2026-11-01T06:30:00Z",),
    ),
    Case(
        "new-york-fall-hourly-fires-in-both-passes",
        "America/New_York",
        "30 * * * *",
        "2026-11-01T04:00:00Z",
        "2026-11-01T08:00:00Z",
        ("2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"),
    ),
    # Berlin, by the entry's --tz while the ticker runs in Kolkata
    Case(
        "berlin-spring-fixed-in-the-gap",
        "Asia/Kolkata",
        "30 2 * * *",
        "2026-03-28T23:00:00Z",
        "2026-03-29T03:00:00Z",
        ("2026-03-29T01:00:00Z",),  # 03:00 CEST
        ("2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"),
        tz="Europe/Berlin",
    ),
    Case(
        "berlin-fall-fixed-in-the-repeat",
        "Asia/Kolkata",
        "30 2 * * *",
        "2026-10-24T23:00:00Z",
        "2026-10-25T03:00:00Z",
        ("2026-10-25T00:30:00Z",),  # 02:30 CEST, not 02:30 CET
        ("2026-10-25T01:30:00Z",),
        tz="Europe/Berlin",
    ),
    # Lord Howe: a 30-minute shift. Fall back 2026-04-05 02:00 (+11, 15:00Z) -> 01:30 (+10:30)
    Case(
        "lord-howe-fall-fixed-in-the-half-hour-repeat",
        "Australia/Lord_Howe",
        "45 1 * * *",
        "2026-04-04T13:00:00Z",
        "2026-04-04T16:00:00Z",
        ("2026-04-04T14:45:00Z",),  # 01:45 +11, the first pass
        ("2026-04-04T15:15:00Z",),  # 01:45 +10:30
    ),
    Case(
        "lord-howe-fall-step-fires-in-both-passes",
        "Australia/Lord_Howe",
        "*/15 * * * *",
        "2026-04-04T13:50:00Z",
        "2026-04-04T15:50:00Z",
        tuple(f"2026-04-04T{h:02}:{m:02}:00Z" for h in (14, 15) for m in (0, 15, 30, 45)),
    ),
    # Lord Howe: spring forward 2026-10-04 02:00 (+10:30, 15:30Z) -> 02:30 (+11)
    Case(
        "lord-howe-spring-fixed-in-the-half-hour-gap",
        "Australia/Lord_Howe",
        "15 2 * * *",
        "2026-10-03T14:00:00Z",
        "2026-10-03T17:00:00Z",
        ("2026-10-03T15:30:00Z",),  # 02:30 +11, right after the jump
        ("2026-10-03T15:15:00Z", "2026-10-03T15:45:00Z"),
    ),
    # Kolkata: +05:30 all year, no DST: two ordinary days
    Case(
        "kolkata-daily-at-a-half-hour-offset",
        "Asia/Kolkata",
        "30 9 * * *",
        "2026-03-07T00:00:00Z",
        "2026-03-09T00:00:00Z",
        ("2026-03-07T04:00:00Z", "2026-03-08T04:00:00Z"),
        ("2026-03-07T03:30:00Z", "2026-03-07T04:30:00Z", "2026-03-08T09:30:00Z"),
        grid=6 * 3600,
    ),
]


def tick_instants(case: Case) -> list[int]:
    fires = [ts(f) for f in case.fires]
    points = {*fires, *(f + MIN for f in fires), *(ts(d) for d in case.decoys), ts(case.end)}
    points |= set(range(ts(case.start) + case.grid, ts(case.end), case.grid))
    return sorted(points)


def log_of(env, server) -> list:
    return read_live(Path(env["RK_STATE_DIR"]) / f"{server.name}.log")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_cron_entry_fires_once_per_occurrence_across_the_dst_day(env, tmux_server, case):
    tenv = dict(env, TZ=case.tz_env)
    add = ["cron", "add", "x", "--cron", case.expr, "--pane", "%999", "--any-program", "-L", tmux_server.name]
    res = run_in([*add, *(["--tz", case.tz] if case.tz else []), "--json"], dict(tenv, RK_NOW=str(ts(case.start))))
    assert res.code == 0, res
    for now in tick_instants(case):
        tick = run_in(["cron", "tick", "-L", tmux_server.name], dict(tenv, RK_NOW=str(now)))
        assert tick.code == 0, tick
    lines = log_of(env, tmux_server)
    assert [(line.ts, line.outcome) for line in lines] == [(ts(f), "skipped-absent") for f in case.fires], [
        datetime.fromtimestamp(line.ts).isoformat() + " " + line.outcome for line in lines
    ]


def test_cron_next_lists_the_same_instants_as_the_ticks(env, tmux_server):
    """`rk cron next` (the forecast) and the ticks agree on a fall-back day in New York."""
    case = CASES[3]
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    tenv = dict(env, TZ=case.tz_env, RK_NOW=str(ts(case.start)))
    add = ["cron", "add", "x", "--cron", case.expr, "--pane", pane, "--any-program", "-L", tmux_server.name, "--json"]
    entry = run_in(add, tenv).json()["result"]["id"]
    nxt = run_in(["cron", "next", entry, "-n", str(len(case.fires)), "-L", tmux_server.name, "--json"], tenv)
    assert [f["ts"] for f in nxt.json()["result"]["fires"]] == [ts(f) for f in case.fires]
    locals_ = [f["local"] for f in nxt.json()["result"]["fires"]]
    assert locals_ == [
        "2026-11-01T00:30:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:30:00-05:00",
        "2026-11-01T02:30:00-05:00",
    ]


def test_a_fall_back_fixed_time_is_typed_once_into_a_live_pane(env, tmux_server):
    """The same rule with a real delivery (a subprocess tick each time): 01:30 New York
    time comes twice on 2026-11-01; the pane gets the prompt once."""
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    tenv = dict(env, TZ="America/New_York")
    add = ["cron", "add", "once at half past one", "--cron", "30 1 * * *", "--pane", pane, "--any-program"]
    run_rk([*add, "-L", tmux_server.name], dict(tenv, RK_NOW=str(ts("2026-11-01T05:00:00Z"))), check=True)
    outcomes = []
    for at in ("2026-11-01T05:30:00Z", "2026-11-01T05:31:00Z", "2026-11-01T06:30:00Z", "2026-11-01T06:31:00Z"):
        res = run_rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(tenv, RK_NOW=str(ts(at))), check=True)
        outcomes.append([d["outcome"] for d in json.loads(res.stdout)["result"]["decisions"]])
    assert outcomes == [["delivered"], [], [], []]

    def typed() -> int:
        return sum(1 for line in tmux_server.capture(pane).splitlines() if line.rstrip() == "once at half past one")

    wait_for(lambda: typed() == 2, message="the typed echo and cat's copy, once")
    assert [(line.ts, line.outcome) for line in log_of(env, tmux_server)] == [(ts("2026-11-01T05:30:00Z"), "delivered")]

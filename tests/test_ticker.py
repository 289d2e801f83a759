"""The ticker loop: ticks at once, keeps going after a failing tick, stops
cleanly on SIGTERM, wakes early for a due instant and for a nudge, survives
clock jumps without bursts, and manages its background copy by pid + start time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC
from pathlib import Path

import pytest
from conftest import wait_for

from rk.core.log.delivery import Outcome
from rk.core.schedule.entry import CreatedBy, Entry, Every, Target
from rk.engine.runtime import Runtime
from rk.engine.ticker import PID_NAME, Clocks, PidRecord, Ticker, read_pid
from rk.host import nudge
from rk.store.config import Settings
from rk.store.delivery_log import read_live

#: The shell (the CLI, files, processes, tmux): `make test`, not `make test-fast`.
pytestmark = pytest.mark.shell


class FakeDelivery:
    def __init__(self, outcome="delivered", fail_first=0):
        self.calls = []
        self.outcome = outcome
        self.fail_first = fail_first

    def __call__(self, server, pane, payload, guard=None, intent=None):
        self.calls.append((pane, payload, time.time()))
        if len(self.calls) <= self.fail_first:
            raise RuntimeError("boom")
        from rk.act.deliver import DeliveryResult

        return DeliveryResult(ok=True, outcome=Outcome.parse(self.outcome))


def write_entries(state: Path, slug: str, entries: list[Entry]) -> None:
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    (state / f"{slug}.yaml").write_text(json.dumps({"entries": [e.to_yaml() for e in entries]}))  # JSON is YAML


def entry(eid: str, pane: str, interval: int, at: int) -> Entry:
    """An entry for the fixture's `cat` pane (a program, hence any_program)."""
    return Entry(
        id=eid,
        schedule=Every(interval=interval),
        target=Target("pane", pane),
        payload=f"p-{eid}",
        any_program=True,
        created_by=CreatedBy(at=at),
    )


def make_ticker(state: Path, tmux_server, wall, deliver, interval: float) -> Ticker:
    """A ticker on `wall` (the injected wall clock; the monotonic one is real)."""
    runtime = Runtime(
        state_dir=state,
        settings=Settings(),
        environ=dict(tmux_server.env),
        zone=UTC,
        clock=lambda: 0,  # the ticker replaces it with its wall clock
        deliver=deliver,
    )
    return Ticker(runtime, interval=interval, clocks=Clocks(wall=wall, mono=time.monotonic))


def pane_of(server) -> str:
    return server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]


def run_in_thread(loop: Ticker) -> threading.Thread:
    t = threading.Thread(target=loop.run, daemon=True)
    t.start()
    return t


def test_ticks_at_start_and_goes_on_after_a_failing_tick(tmp_path, tmux_server):
    state = tmp_path / "state"
    pane = pane_of(tmux_server)
    write_entries(state, tmux_server.name, [entry("e001", pane, 1, 0)])
    deliver = FakeDelivery(fail_first=1)
    loop = make_ticker(state, tmux_server, time.time, deliver, 0.3)
    thread = run_in_thread(loop)
    try:
        wait_for(lambda: len(deliver.calls) >= 3, timeout=20, message="deliveries after a failed tick")
    finally:
        loop.stop()
        thread.join(10)
    assert not thread.is_alive()
    assert loop.errors == 1
    lines = read_live(state / f"{tmux_server.name}.log")
    assert lines and all(line.outcome == "delivered" for line in lines)


def test_sleeps_less_than_the_interval_when_something_is_due_sooner(tmp_path, tmux_server):
    state = tmp_path / "state"
    pane = pane_of(tmux_server)
    now = int(time.time())
    write_entries(state, tmux_server.name, [entry("e002", pane, 2, now)])
    deliver = FakeDelivery()
    loop = make_ticker(state, tmux_server, time.time, deliver, 30)
    thread = run_in_thread(loop)
    try:
        wait_for(lambda: len(deliver.calls) >= 2, timeout=15, message="two fires 2 s apart with a 30 s interval")
    finally:
        loop.stop()
        thread.join(10)
    first, second = deliver.calls[0][2], deliver.calls[1][2]
    assert 1.0 <= second - first <= 6.0


def test_a_nudge_ticks_the_server_at_once(tmp_path, tmux_server):
    state = tmp_path / "state"
    pane = pane_of(tmux_server)
    # due in the far future: only a nudge-triggered tick after the clock moves can fire it
    clock = {"now": 1_000}
    write_entries(state, tmux_server.name, [entry("e003", pane, 600, 1_000)])
    deliver = FakeDelivery()
    loop = make_ticker(state, tmux_server, lambda: clock["now"], deliver, 3600)
    thread = run_in_thread(loop)
    try:
        wait_for(lambda: loop.ticks >= 1, message="first tick")
        assert deliver.calls == []
        clock["now"] = 1_600
        env = {"RK_STATE_DIR": str(state)}
        wait_for(
            lambda: (nudge.send(tmux_server.name, env) and False) or loop.ticks >= 2, timeout=5, message="nudged tick"
        )
        wait_for(lambda: len(deliver.calls) == 1, timeout=5, message="delivery after the nudge")
    finally:
        loop.stop()
        thread.join(10)


def test_clock_jumps_give_at_most_one_fire_per_entry(tmp_path, tmux_server):
    state = tmp_path / "state"
    pane = pane_of(tmux_server)
    clock = {"now": 10_000}
    write_entries(state, tmux_server.name, [entry("e004", pane, 60, 10_000), entry("e005", pane, 300, 10_000)])
    deliver = FakeDelivery()
    loop = make_ticker(state, tmux_server, lambda: clock["now"], deliver, 3600)
    loop.tick()
    assert deliver.calls == []
    clock["now"] += 10 * 3600  # laptop slept ten hours
    loop.tick()
    loop.tick()
    assert sorted(p for p, _, _ in deliver.calls) == [pane, pane]  # one fire per entry, no burst
    clock["now"] -= 2 * 3600  # NTP steps back two hours
    loop.tick()
    loop.tick()
    assert len(deliver.calls) == 2
    lines = read_live(state / f"{tmux_server.name}.log")
    assert sorted(line.entry for line in lines if line.outcome == "delivered") == ["e004", "e005"]
    # the step back put both newest lines two hours ahead: each is anchored again at now, once
    assert sorted((line.entry, line.reason) for line in lines if line.outcome == "rescheduled") == [
        ("e004", "clock"),
        ("e005", "clock"),
    ]


def rk_env(tmp_path, tmux_server) -> dict:
    env = dict(tmux_server.env)
    env.update(RK_STATE_DIR=str(tmp_path / "state"), HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def test_foreground_ticker_stops_cleanly_on_sigterm(tmp_path, tmux_server):
    env = rk_env(tmp_path, tmux_server)
    pane = pane_of(tmux_server)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rk",
            "cron",
            "add",
            "hello from the ticker",
            "--every",
            "1h",
            "--pane",
            pane,
            "--any-program",
            "-L",
            tmux_server.name,
        ],
        env=dict(env, RK_NOW="1000"),
        check=True,
        capture_output=True,
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "ticker", "--interval", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    state = Path(env["RK_STATE_DIR"])
    try:
        wait_for(
            lambda: any(line.outcome == "delivered" for line in read_live(state / f"{tmux_server.name}.log")),
            timeout=20,
            message="the first tick delivers the overdue entry",
        )
        record = read_pid(state)
        assert record is not None and record.pid == proc.pid and record.alive()
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "ticker stopped" in err
    assert not (state / PID_NAME).exists()


def test_background_start_status_stop(tmp_path, tmux_server):
    env = rk_env(tmp_path, tmux_server)

    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "rk", "cron", "ticker", *a, "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )

    started = run("start", "--interval", "1")
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["result"]["pid"]
    try:
        again = run("start")  # the README's tmux.conf line runs this at every server start: a no-op
        assert again.returncode == 0, again
        assert json.loads(again.stdout)["result"] == {"running": True, "pid": pid, "started": False}
        status = run("status")
        assert status.returncode == 0 and json.loads(status.stdout)["result"]["running"] is True
        assert json.loads(status.stdout)["result"]["pid"] == pid
    finally:
        stopped = run("stop")
    assert json.loads(stopped.stdout)["result"] == {"stopped": True, "pid": pid}
    wait_for(
        lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2],
        message="ticker process gone",
    )
    gone = run("status")
    assert gone.returncode == 3, "systemctl's convention: 3 when nothing runs"
    assert json.loads(gone.stdout)["result"] == {"running": False}


def test_a_reused_pid_is_not_mistaken_for_the_ticker(tmp_path):
    # our own pid, but a start time that is not ours: a different process
    record = PidRecord(pid=os.getpid(), start_time="1", started_at=0)
    assert record.alive() is False
    from rk.engine.ticker import process_start_time

    assert PidRecord(pid=os.getpid(), start_time=process_start_time(os.getpid()), started_at=0).alive() is True


def test_with_rk_now_in_the_past_the_ticker_keeps_the_pace_of_a_real_one(tmp_path, tmux_server):
    """One clock: RK_NOW starts the wall clock in the past and it runs on the monotonic
    one; due instants are compared with it, never with the system clock (which made a
    ticker with an old RK_NOW tick 205 times in 4.4 s)."""
    state = tmp_path / "state"
    pane = pane_of(tmux_server)
    past = 1_000_000
    write_entries(state, tmux_server.name, [entry("e006", pane, 60, past - 60)])  # due at once, then every 60 s
    deliver = FakeDelivery()
    runtime = Runtime(
        state_dir=state,
        settings=Settings(),
        environ=dict(tmux_server.env, RK_NOW=str(past)),
        zone=UTC,
        clock=lambda: 0,
        deliver=deliver,
    )
    loop = Ticker(runtime, interval=30)
    thread = run_in_thread(loop)
    started = time.monotonic()
    try:
        wait_for(lambda: len(deliver.calls) == 1, timeout=10, message="the first tick fires the due entry")
        deadline = started + 3
        while time.monotonic() < deadline:  # watch three seconds of the loop
            assert loop.ticks <= 2, f"{loop.ticks} ticks in {time.monotonic() - started:.1f} s"
            time.sleep(0.1)
    finally:
        loop.stop()
        thread.join(10)
    assert len(deliver.calls) == 1
    (line,) = read_live(state / f"{tmux_server.name}.log")
    assert past <= line.ts <= past + 5, "the tick's now is RK_NOW, advanced by the time since the start"

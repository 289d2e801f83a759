"""The operator's view: `rk --version`, `rk agent list`, and `rk cron log`'s
header, names, filters and `--follow` across a rotation."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import make_env, run_in, run_in_pty, write_private
from conftest import default_sigint, run_rk, wait_for

from rk import __version__
from rk.core.log.delivery import LogLine
from rk.store import delivery_log as logfile

T0 = 1_800_000_000


def test_version_prints_the_package_version():
    res = run_in(["--version"], {"PATH": os.environ["PATH"]})
    assert (res.code, res.out) == (0, f"rk {__version__}\n")


@pytest.mark.shell
def test_agent_list_shows_state_since_source_and_hooks(tmp_path, tmux_server):
    env = dict(make_env(tmp_path), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"], TZ="UTC")
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    hookless = tmp_path / "claude"  # an agent without hooks (its state is the screen's): a process named claude
    hookless.symlink_to(shutil.which("cat"))
    second = tmux_server.run("split-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", str(hookless)).strip()
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_session", "claude:abc123")
    tmux_server.set_pane_option(pane, "@rk_pane_turn_end", f"interrupted:{T0}")
    tmux_server.set_pane_option(second, "@rk_pane_agent_state", f"waiting:{T0 + 5}")
    tmux_server.set_pane_option(second, "@rk_pane_agent_source", f"screen:{T0 + 5}")

    rows = run_in(["agent", "list", "-L", tmux_server.name, "--json"], env).json()["result"]
    by_pane = {r["pane"]: r for r in rows}
    assert by_pane[pane] == {
        "server": tmux_server.name,
        "pane": pane,
        "program": "claude",
        "kind": by_pane[pane]["kind"],
        "state": "idle",
        "since": T0,
        "source": "hook",
        "hooks_seen": True,
        "process": "cat",
        "process_pid": int(tmux_server.display(pane, "#{pane_pid}")),
        "turn_end": "interrupted",
        "turn_end_at": T0,
    }
    assert (by_pane[second]["state"], by_pane[second]["source"], by_pane[second]["hooks_seen"]) == (
        "waiting",
        "screen",
        False,
    )
    human = run_in(["agent", "list", "-L", tmux_server.name], env)
    assert human.code == 0
    assert human.out.splitlines()[0].split() == [
        "SERVER",
        "PANE",
        "KIND",
        "PROGRAM",
        "STATE",
        "SINCE",
        "(UTC)",
        "FROM",
        "HOOKS",
        "TURN",
        "END",
        "(UTC)",
        "PROCESS",
    ]
    assert f"{pane}" in human.out and "2027-01-15 08:00:00" in human.out and "never" in human.out
    assert "interrupted 2027-01-15 08:00:00" in human.out
    everywhere = run_in(["agent", "list", "--all", "--json"], env).json()["result"]
    assert {r["pane"] for r in everywhere if r["server"] == tmux_server.name} == {pane, second}


@pytest.mark.shell
def test_agent_list_on_a_server_that_is_not_running_is_one_line_exit_1(tmp_path, monkeypatch):
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    res = run_in(["agent", "list", "-L", "nosuchserver"], dict(make_env(tmp_path), TMUX_TMPDIR=str(tmp_path)))
    assert (
        res.code == 1 and res.err.startswith("rk: agent list: server nosuchserver:") and len(res.err.splitlines()) == 1
    )


def _seed(tmp_path: Path) -> tuple[dict[str, str], Path]:
    env = make_env(tmp_path, TZ="UTC")
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700, exist_ok=True)
    write_private(
        state / "s.yaml",
        "entries:\n"
        "  - {id: aaaa, name: morning digest, schedule: {kind: every, interval: 1h},"
        " target: {kind: pane, pane: '%1'}, payload: p}\n",
    )
    lines = [
        LogLine(T0, "aaaa", "%1", "schedule", "delivered"),
        LogLine(T0 + 3600, "aaaa", "%1", "schedule", "skipped-busy: active"),
        LogLine(T0 + 7200, "gone", "%2", "wake", "failed: paste: no such pane"),
    ]
    logfile.append_lines(state / "s.log", lines)
    return env, state / "s.log"


@pytest.mark.shell
def test_log_has_a_header_names_and_filters(tmp_path):
    env, _ = _seed(tmp_path)
    out = run_in(["cron", "log", "-L", "s"], env)
    rows = out.out.splitlines()
    assert rows[0].split() == ["TIME", "(UTC)", "ENTRY", "NAME", "TARGET", "REASON", "OUTCOME"]
    assert rows[1].split()[:5] == ["2027-01-15", "08:00:00", "aaaa", "morning", "digest"]
    assert rows[3].split()[2:4] == ["gone", "-"]  # an entry since removed has no name
    skipped = run_in(["cron", "log", "-L", "s", "--outcome", "skipped", "--json"], env).json()["result"]
    assert [line["outcome"] for line in skipped] == ["skipped-busy: active"]
    recent = run_in(["cron", "log", "-L", "s", "--since", "90m", "--json"], dict(env, RK_NOW=str(T0 + 7200))).json()
    assert [line["ts"] for line in recent["result"]] == [T0 + 3600, T0 + 7200]
    since_time = run_in(["cron", "log", "-L", "s", "--since", "2027-01-15T10:00:00Z", "--json"], env).json()
    assert [line["entry"] for line in since_time["result"]] == ["gone"]
    bad = run_in(["cron", "log", "-L", "s", "--since", "yesterday"], env)
    assert bad.code == 2 and "--since" in bad.err
    assert run_in(["cron", "log", "-L", "s", "-f", "--json"], env).code == 2


@pytest.fixture
def long_running():
    """Start `rk ARGS` that runs until stopped (`log -f`, `status --watch`); whatever the
    test does, it is SIGKILLed and reaped at the end, so none outlives its test."""
    started: list[subprocess.Popen] = []

    def start(args: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rk", *args], env=env, preexec_fn=default_sigint, text=True, **kw
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


@pytest.mark.shell
def test_follow_prints_appended_lines_once_across_a_rotation(tmp_path, long_running):
    env, log = _seed(tmp_path)
    proc = long_running(
        ["cron", "log", "-f", "-n", "1", "-L", "s"], env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    seen: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for row in proc.stdout:
            seen.append(row.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: len(seen) == 2, timeout=20, message="the header and the newest line")
        assert "failed: paste: no such pane" in seen[1]
        logfile.append_lines(log, [LogLine(T0 + 7300, "aaaa", "%1", "schedule", "delivered")])
        wait_for(lambda: len(seen) == 3, timeout=10, message="the appended line")
        # a rotation: the live segment moves to .1 and starts again with the lines queries need
        assert logfile.rotate_if_needed(log, T0 + 7400, (), 64, 0, live={"aaaa"})
        assert log.with_name("s.log.1").exists()
        logfile.append_lines(log, [LogLine(T0 + 7500, "aaaa", "%1", "schedule", "missed")])
        wait_for(lambda: any("missed" in row for row in seen), timeout=10, message="the line after the rotation")
        wait_for(lambda: len(seen) >= 4, timeout=5, message="four rows")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    reader.join(5)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert len(seen) == 4, seen  # the kept lines re-written by the rotation were not shown again
    assert "missed" in seen[3] and seen.count(seen[2]) == 1


@pytest.mark.shell
def test_follow_through_a_real_process_honours_the_filters(tmp_path, long_running):
    env, log = _seed(tmp_path)
    proc = long_running(["cron", "log", "aaaa", "-f", "--outcome", "delivered", "-L", "s"], env, stdout=subprocess.PIPE)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(r.rstrip() for r in proc.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_for(lambda: len(seen) == 2, timeout=20, message="the header and the one delivered line")
        logfile.append_lines(
            log,
            [
                LogLine(T0 + 7300, "aaaa", "%1", "schedule", "failed: x"),
                LogLine(T0 + 7301, "bbbb", "%1", "schedule", "delivered"),
                LogLine(T0 + 7302, "aaaa", "%1", "schedule", "delivered"),
            ],
        )
        wait_for(lambda: len(seen) == 3, timeout=10, message="only the matching line")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    reader.join(5)
    assert proc.returncode == 0
    assert len(seen) == 3 and "2027-01-15 10:01:42" in seen[2]


def test_follow_starts_at_the_mark_taken_when_the_shown_lines_were_read(tmp_path):
    """A line appended between reading what `-f` shows and following is not lost."""
    log = tmp_path / "s.log"
    logfile.append_lines(log, [LogLine(T0, "aaaa", "%1", "schedule", "delivered")])
    shown_up_to = logfile.mark(log)
    logfile.append_lines(log, [LogLine(T0 + 1, "aaaa", "%1", "schedule", "failed: x")])
    follower = logfile.follow(log, LogLine(T0, "aaaa", "%1", "schedule", "delivered"), poll=0.01, start=shown_up_to)
    assert _first_followed(follower) == "failed: x"


def test_follow_of_a_log_not_there_yet_shows_its_first_line(tmp_path):
    log = tmp_path / "s.log"
    follower = logfile.follow(log, None, poll=0.01, start=(0, 0))
    logfile.append_lines(log, [LogLine(T0, "aaaa", "%1", "schedule", "delivered")])
    assert _first_followed(follower) == "delivered"


def _first_followed(follower) -> str | None:
    """The first followed line's outcome, or None if none comes in 5 s (a lost line)."""
    got: list[str] = []
    threading.Thread(target=lambda: got.append(next(follower).outcome), daemon=True).start()
    return wait_for(lambda: got, timeout=5, message="a followed line")[0]


@pytest.mark.shell
def test_rk_cron_log_follow_with_no_log_yet_waits(tmp_path, long_running):
    env = make_env(tmp_path, TZ="UTC")
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700, exist_ok=True)
    proc = long_running(["cron", "log", "-f", "-L", "s"], env, stdout=subprocess.PIPE)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(r.rstrip() for r in proc.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_for(lambda: len(seen) == 1, timeout=20, message="the header")
        logfile.append_lines(state / "s.log", [LogLine(T0, "aaaa", "%1", "schedule", "delivered")])
        wait_for(lambda: len(seen) == 2, timeout=10, message="the first line of a new log")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    assert proc.returncode == 0 and "delivered" in seen[1]
    assert run_rk(["cron", "log", "-L", "s", "-n", "0"], env).returncode == 0


def _live_env(tmp_path) -> dict[str, str]:
    return dict(make_env(tmp_path, RK_NOW=str(T0)), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"], TZ="UTC")


@pytest.mark.shell
def test_list_sorts_by_next_and_says_why_an_entry_cannot_fire(tmp_path, tmux_server):
    env = _live_env(tmp_path)
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0 - 600}")
    srv = ["-L", tmux_server.name, "--any-program", "--json"]
    later = run_in(["cron", "add", "later", "--every", "1h", "--pane", pane, *srv], env).json()["result"]["id"]
    sooner = run_in(["cron", "add", "sooner", "--every", "5m", "--pane", pane, *srv], env).json()["result"]["id"]
    gone = run_in(["cron", "add", "gone", "--every", "1m", "--pane", "%99", *srv], env).json()["result"]["id"]
    muted = run_in(["cron", "add", "muted", "--every", "1m", "--pane", pane, *srv], env).json()["result"]["id"]
    run_in(["cron", "mute", muted, "-L", tmux_server.name], env)
    logfile.append_lines(
        Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.log", [LogLine(T0 + 10, later, pane, "schedule", "delivered")]
    )
    now = dict(env, RK_NOW=str(T0 + 60))
    records = {r["id"]: r for r in run_in(["cron", "list", "-L", tmux_server.name, "--json"], now).json()["result"]}
    assert records[sooner]["next"] == T0 + 300 and records[sooner]["why_not"] is None
    assert records[later]["next"] == T0 + 10 + 3600
    assert records[later]["last"] == {"ts": T0 + 10, "outcome": "delivered"}
    assert records[sooner]["last"] is None
    assert records[gone]["next"] is None and records[gone]["why_not"].startswith("target missing")
    assert records[muted]["why_not"] == "muted"
    human = run_in(["cron", "list", "-L", tmux_server.name], now).out.splitlines()
    assert human[0].split() == ["ID", "NAME", "SCHEDULE", "NEXT", "(UTC)", "LEFT", "LAST", "TARGET", "FLAGS"]
    order = [line.split()[0] for line in human[1:]]
    assert order[:2] == [sooner, later] and set(order[2:]) == {gone, muted}
    row = next(line for line in human if line.startswith(sooner))
    assert "2027-01-15 08:05:00" in row and "4m" in row and f"pane:{pane} (idle)" in row
    shown = run_in(["cron", "show", gone, "-L", tmux_server.name, "--json"], now).json()["result"]
    assert shown == records[gone]


@pytest.mark.shell
def test_status_shows_the_ticker_entries_and_panes_and_exits_1_when_something_is_wrong(tmp_path, tmux_server):
    env = _live_env(tmp_path)
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}")
    entry = run_in(
        ["cron", "add", "ping", "--every", "5m", "--pane", pane, "--any-program", "-L", tmux_server.name, "--json"],
        env,
    ).json()["result"]["id"]
    down = run_in(["status", "--json"], env)
    assert down.code == 1
    state = down.json()["result"]
    assert state["ok"] is False and state["ticker"]["running"] is False and state["failed"] == []
    (served,) = [s for s in state["servers"] if s["server"] == tmux_server.name]
    assert [e["id"] for e in served["entries"]] == [entry]
    assert [(p["pane"], p["state"]) for p in served["panes"]] == [(pane, "idle")]
    human = run_in(["status"], env)
    assert human.code == 1 and human.out.startswith("ticker: NOT RUNNING")
    assert f"server {tmux_server.name}" in human.out and entry in human.out
    assert any(line.split()[:3] == [pane, "cat", "idle"] for line in human.out.splitlines()), human.out

    ticker = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "ticker", "--interval", "1"],
        env={k: v for k, v in env.items() if k != "RK_NOW"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        plain = {k: v for k, v in env.items() if k != "RK_NOW"}
        wait_for(
            lambda: run_in(["status", "--json"], plain).json()["result"]["ticker"]["servers"] == [tmux_server.name],
            timeout=20,
            message="the ticker's heartbeat naming the server",
        )
        well = run_in(["status", "--json"], plain)
        assert well.code == 0 and well.json()["result"]["ticker"]["pid"] == ticker.pid
        logfile.append_lines(
            Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.log",
            [LogLine(int(time.time()), entry, pane, "schedule", "failed: paste: gone")],
        )
        failing = run_in(["status", "--json"], plain)
        assert failing.code == 1 and failing.json()["result"]["failed"] == [
            f"{tmux_server.name} {entry}: failed: paste: gone"
        ]
    finally:
        ticker.send_signal(signal.SIGTERM)
        ticker.wait(timeout=20)


def _shim(bindir: Path, name: str, code: int, log: Path) -> None:
    bindir.mkdir(exist_ok=True)
    script = bindir / name
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{log}'\nexit {code}\n")
    script.chmod(0o755)


@pytest.mark.shell
def test_ticker_install_writes_the_unit_and_enables_it(tmp_path):
    calls = tmp_path / "systemctl.log"
    _shim(tmp_path / "bin", "systemctl", 0, calls)
    env = dict(make_env(tmp_path), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", TMUX_TMPDIR="/run/my-tmux")
    env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/run/user/bus"  # a user bus to reach the (fake) systemd by
    dry = run_in(["cron", "ticker", "install", "--dry-run", "--json"], env).json()["result"]
    assert dry["enabled"] is False and not Path(dry["path"]).exists() and not calls.exists()
    assert "Environment=TMUX_TMPDIR=/run/my-tmux" in dry["unit"]
    assert f"Environment=RK_STATE_DIR={env['RK_STATE_DIR']}" in dry["unit"]
    exec_line = next(line for line in dry["unit"].splitlines() if line.startswith("ExecStart="))
    assert exec_line.endswith(" cron ticker") and "-m rk" in exec_line  # this interpreter, this rk
    done = run_in(["cron", "ticker", "install"], env)
    assert done.code == 0 and done.out.startswith("installed and started rk-ticker.service"), done
    unit = Path(dry["path"])
    assert unit.read_text() == dry["unit"] and unit.parent == Path(env["XDG_CONFIG_HOME"]) / "systemd" / "user"
    assert calls.read_text().splitlines() == ["--user daemon-reload", "--user enable --now rk-ticker.service"]


@pytest.mark.shell
def test_ticker_install_says_what_failed_when_systemctl_does(tmp_path):
    _shim(tmp_path / "bin", "systemctl", 1, tmp_path / "calls.log")
    env = dict(make_env(tmp_path), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", DBUS_SESSION_BUS_ADDRESS="unix:x")
    try:
        res = run_in(["cron", "ticker", "install"], env)
        assert res.code == 0 and "systemctl --user daemon-reload failed" in res.err and len(res.err.splitlines()) == 1
        assert "tmux starts the ticker" in res.out and "ticker started" in res.out  # the fallback: tmux's line
    finally:
        run_rk(["cron", "ticker", "stop"], env)


@pytest.mark.shell
def test_a_second_ticker_exits_0_beside_a_running_one(tmp_path):
    env = make_env(tmp_path)
    started = run_rk(["cron", "ticker", "start", "--interval", "1"], env)
    try:
        assert started.returncode == 0, started.stderr
        second = run_rk(["cron", "ticker", "--interval", "1"], env, timeout=30)
        assert second.returncode == 0 and "already running" in second.stdout
    finally:
        run_rk(["cron", "ticker", "stop"], env)


@pytest.mark.shell
def test_doctor_names_each_problem_with_its_fix_and_exits_1(tmp_path):
    env = dict(make_env(tmp_path), PATH="/usr/bin:/bin")
    res = run_in(["doctor", "--json"], env)
    assert res.code == 1
    checks = {c["name"]: c for c in res.json()["result"]}
    assert checks["ticker"]["level"] == "fail" and "rk cron ticker install" in checks["ticker"]["fix"]
    assert checks["rk on PATH"]["level"] == "warn" and checks["rk on PATH"]["fix"].startswith('export PATH="')
    assert checks["tmux"]["level"] == "ok" and checks["tmux"]["detail"].startswith("tmux ")
    human = run_in(["doctor"], env)
    assert human.code == 1 and any(line.startswith("fail  ticker:") for line in human.out.splitlines())


@pytest.mark.shell
def test_send_types_once_through_the_guarded_delivery_and_logs_manual(tmp_path, tmux_server):
    env = _live_env(tmp_path)
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    refused = run_rk(["send", "hello cat", "--pane", pane, "-L", tmux_server.name], env)
    assert refused.returncode == 1 and "skipped-absent: no agent in pane (cat)" in refused.stdout
    sent = run_rk(["send", "hello cat", "--pane", pane, "--any-program", "-L", tmux_server.name, "--json"], env)
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["result"] == {
        "id": "(send)",
        "pane": pane,
        "reason": "manual",
        "outcome": "delivered",
        "logged": True,
    }
    wait_for(
        lambda: [line.rstrip() for line in tmux_server.capture(pane).splitlines()].count("hello cat") == 2,
        message="the typed echo and cat's copy, once",
    )
    lines = logfile.read_live(Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.log")
    assert [(line.entry, line.reason, line.outcome) for line in lines] == [
        ("(send)", "manual", "skipped-absent: no agent in pane (cat)"),
        ("(send)", "manual", "delivered"),
    ]
    usage_error = run_in(["send", "   ", "--pane", pane, "-L", tmux_server.name], env)
    assert usage_error.code == 2 and "must not be empty" in usage_error.err


@pytest.mark.shell
def test_add_says_what_would_keep_the_entry_from_firing(tmp_path, tmux_server):
    env = _live_env(tmp_path)
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    srv = ["-L", tmux_server.name]
    quiet = run_in(["cron", "add", "status?", "--idle-every", "3m", "--pane", pane, "--any-program", *srv], env)
    assert quiet.code == 0 and quiet.out.endswith(
        f"[backoff 3m→3m -> pane:{pane}]\nnext: - (no state reported (no hooks?))\n"
    )
    warnings = quiet.err.splitlines()
    assert warnings == [
        f"rk: warning: wrote to server {tmux_server.name} (outside tmux; -L names another)",
        f"rk: warning: pane {pane} never reported an agent state: backoff 3m→3m will not fire until it does"
        " (rk agent setup, then restart the agent)",
        "rk: warning: no ticker is running: nothing fires until one does (rk cron ticker install, or ticker start)",
    ]
    missing = run_in(["cron", "add", "hi", "--every", "5m", "--pane", "%99", *srv], env)
    assert missing.code == 0 and "rk: warning: pane:%99 does not exist now" in missing.err
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}")
    fine = run_in(["cron", "add", "ok", "--idle-every", "3m", "--pane", pane, "--any-program", *srv], env)
    assert "never reported" not in fine.err and "does not exist" not in fine.err
    nowhere = run_in(["cron", "add", "x", "--every", "5m", "--pane", "%1", "-L", "nosuchserver"], env)
    assert nowhere.code == 0 and "rk: warning: tmux server nosuchserver is not running" in nowhere.err
    scripted = run_in(["cron", "add", "x", "--every", "5m", "--pane", "%99", *srv, "--json"], env)
    assert scripted.code == 0 and scripted.err == ""  # --json: one document, no remarks


@pytest.mark.shell
def test_a_one_shot_fires_once_and_retires(tmp_path, tmux_server):
    env = _live_env(tmp_path)
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    srv = ["-L", tmux_server.name]
    added = run_in(["cron", "add", "one shot", "--in", "1m", "--pane", pane, "--any-program", *srv, "--json"], env)
    entry = added.json()["result"]["id"]
    assert added.json()["result"]["schedule"] == "at 2027-01-15T08:01:00Z"
    listed = run_in(["cron", "list", *srv, "--json"], dict(env, RK_NOW=str(T0 + 30))).json()["result"]
    assert [(r["id"], r["next"], r["schedule"]) for r in listed] == [(entry, T0 + 60, {"kind": "at", "at": T0 + 60})]
    early = run_rk(["cron", "tick", *srv], dict(env, RK_NOW=str(T0 + 59)), check=True)
    assert "0 fires" in early.stdout
    run_rk(["cron", "tick", *srv], dict(env, RK_NOW=str(T0 + 60)), check=True)
    wait_for(
        lambda: [line.rstrip() for line in tmux_server.capture(pane).splitlines()].count("one shot") == 2,
        message="typed once",
    )
    assert run_in(["cron", "list", *srv, "--json"], dict(env, RK_NOW=str(T0 + 61))).json()["result"] == []
    run_rk(["cron", "tick", *srv], dict(env, RK_NOW=str(T0 + 3600)), check=True)
    lines = logfile.read_live(Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.log")
    assert [(line.entry, line.outcome) for line in lines] == [(entry, "delivered")]


@pytest.mark.shell
def test_at_reads_a_time_of_day_an_instant_and_refuses_the_past(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0), TZ="UTC")  # 08:00 UTC
    flags = ["--pane", "%1", "--json"]
    later = run_in(["cron", "add", "p", "--at", "14:00", *flags], env).json()["result"]["schedule"]
    assert later == "at 2027-01-15T14:00:00Z"
    tomorrow = run_in(["cron", "add", "p", "--at", "07:30", *flags], env).json()["result"]["schedule"]
    assert tomorrow == "at 2027-01-16T07:30:00Z"
    iso = run_in(["cron", "add", "p", "--at", "2027-01-20T09:00:00+01:00", *flags], env).json()["result"]
    assert iso["schedule"] == "at 2027-01-20T08:00:00Z"
    caught = run_in(["cron", "add", "p", "--in", "2h", "--catch-up", "once", "--catch-up-within", "1h", *flags], env)
    assert caught.json()["result"]["schedule"] == "at 2027-01-15T10:00:00Z (catch-up once within 1h)"
    for bad, message in (
        (["--at", "2020-01-01T00:00:00Z"], "is in the past"),
        (["--at", "25:00"], "not a time of day"),
        (["--at", "noon"], "--at"),
        (["--in", "-5m"], "--in"),
        (["--in", "5m", "--every", "1h"], "exactly one schedule flag"),
    ):
        res = run_in(["cron", "add", "p", *bad, "--pane", "%1"], env)
        assert res.code == 2 and message in res.err, (bad, res)


@pytest.mark.shell
def test_output_is_plain_when_piped_and_colourless_under_no_color(tmp_path):
    env = make_env(tmp_path, TZ="UTC")
    sim = ["cron", "simulate", "--every", "5m", "--for", "30m", "--start", "2026-01-01T00:00:00Z"]
    piped = run_rk(sim, env)
    assert piped.returncode == 0 and "\x1b" not in piped.stdout and "delivered" in piped.stdout
    coloured = run_in_pty(sim, dict(env, TERM="xterm-256color"))
    assert "\x1b[" in coloured and re.search(r"\x1b\[[0-9;]*3[0-9]", coloured), "colours in a terminal"
    plain = run_in_pty(sim, dict(env, TERM="xterm-256color", NO_COLOR="1"))
    assert "delivered" in plain and not re.search(r"\x1b\[[0-9;]*(3[0-9]|9[0-7])(;|m)", plain), "no colour codes"


def _complete(env: dict[str, str], words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (typer's protocol)."""
    done = subprocess.run(
        [sys.executable, "-m", "rk"],
        env=dict(env, _RK_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(len(words.split(" ")) - 1)),
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout.split()


@pytest.mark.shell
def test_completion_offers_entry_ids_and_enum_values(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    ids = sorted(
        run_in(["cron", "add", name, "--every", "5m", "--pane", "%1", "--json"], env).json()["result"]["id"]
        for name in ("one", "two")
    )
    assert sorted(_complete(env, "rk cron show ")) == ids
    assert _complete(env, "rk cron add x --deliver ") == ["immediate", "when-idle", "skip-if-busy", "replace"]
    assert _complete(env, "rk cron add x --wake-on l") == ["limit-reset"]


@pytest.mark.shell
def test_edit_changes_the_prompt_without_restarting_the_schedule(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    entry = run_in(["cron", "add", "old words", "--every", "5m", "--pane", "%1", "--json"], env).json()["result"]["id"]
    edited = run_in(["cron", "edit", entry, "--prompt", "new words, {now}", "--json"], env)
    assert edited.code == 0, edited
    shown = run_in(["cron", "show", entry, "--json"], env).json()["result"]
    assert shown["name"] == "old words"  # the name stays; only the prompt changed
    text = (Path(env["RK_STATE_DIR"]) / "default.yaml").read_text()
    assert "payload: new words, {now}" in text and "old words" in text
    assert not (Path(env["RK_STATE_DIR"]) / "default.log").exists()  # no rescheduled line
    assert run_in(["cron", "edit", entry, "--prompt", "  "], env).code == 2
    assert run_in(["cron", "edit", entry, "--prompt", "a {bogus} one"], env).code == 2


@pytest.mark.shell
def test_status_watch_redraws_in_place_until_interrupted(tmp_path, long_running):
    import pty

    env = make_env(tmp_path, TZ="UTC")
    master, slave = pty.openpty()
    proc = long_running(["status", "--watch"], env, stdout=slave, stderr=slave)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while seen.count(b"\x1b[H\x1b[2K") < 2 and time.monotonic() < deadline:
            seen += os.read(master, 65536)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        os.close(master)
    assert seen.count(b"\x1b[H\x1b[2K") >= 2, seen[-500:]  # drawn over from the top, twice
    assert b"\x1b[2J" not in seen  # never a clear-screen, which pushes each frame into the scrollback
    assert b"ticker: NOT RUNNING" in seen
    assert proc.returncode == 1  # the ticker is down: the last state decides the exit status

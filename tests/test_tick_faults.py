"""Faults a tick or the ticker must say (specs/cron.md, "The tick"): a tick that
could not do its work exits 1 with the reason, malformed log lines are counted
in one diagnostic, and the ticker stops when its state directory goes away
while `ticker status` still finds it without its pid file."""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.log.delivery import LogLine
from rk.store.delivery_log import LiveLogCache, append_lines, read_live

T0 = 1_800_000_000


def first_pane(server) -> str:
    return server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]


def add(env, server, payload: str, pane: str) -> str:
    out = run_rk(
        ["cron", "add", payload, "--every", "1m", "--pane", pane, "--any-program", "--json", "-L", server.name],
        dict(env, RK_NOW=str(T0)),
        check=True,
    )
    return json.loads(out.stdout)["result"]["id"]


def submitted(server, pane: str, payload: str) -> int:
    """Submissions into `cat`: each shows twice (the tty's echo, then cat's output)."""
    return sum(1 for line in server.capture(pane).splitlines() if line.rstrip() == payload) // 2


def tick_on_a_full_disk(args, env, size: int) -> subprocess.CompletedProcess:
    """`rk ARGS` unable to grow any file past `size` bytes (the log among them), as on a full disk."""

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return subprocess.run(
        [sys.executable, "-m", "rk", *args], env=env, capture_output=True, text=True, timeout=60, preexec_fn=limit
    )


@pytest.mark.shell
def test_a_log_that_refuses_the_line_exits_1_and_the_prompt_is_never_typed_again(env, tmux_server):
    slug, pane = tmux_server.name, first_pane(tmux_server)
    entry = add(env, tmux_server, "the only copy", pane)
    log = Path(env["RK_STATE_DIR"]) / f"{slug}.log"
    append_lines(log, [LogLine(T0 + i, "other", "", "schedule", "missed") for i in range(60)])
    full = log.stat().st_size  # the journal (smaller) still fits; the outcome's line does not
    run_env = dict(env, RK_NOW=str(T0 + 60))
    first = tick_on_a_full_disk(["cron", "tick", "-L", slug], run_env, full)
    assert first.returncode == 1
    assert first.stderr.startswith(f"rk: tick could not do its work: {slug}: log-append-failed: ")
    assert len(first.stderr.splitlines()) == 1
    wait_for(lambda: submitted(tmux_server, pane, "the only copy") == 1, message="one submission")
    again = tick_on_a_full_disk(["cron", "tick", "-L", slug], dict(env, RK_NOW=str(T0 + 70)), full)  # still full
    assert again.returncode == 1, again.stdout
    healed = run_rk(["cron", "tick", "-L", slug], dict(env, RK_NOW=str(T0 + 80)))
    assert healed.returncode == 0, healed.stderr
    assert [(line.entry, line.outcome) for line in read_live(log) if line.entry == entry] == [(entry, "delivered")]
    assert submitted(tmux_server, pane, "the only copy") == 1  # the journal kept it from being fired again


@pytest.mark.shell
def test_a_symlinked_log_makes_the_tick_exit_1_and_type_nothing(env, tmux_server, tmp_path):
    slug, pane = tmux_server.name, first_pane(tmux_server)
    add(env, tmux_server, "never through a link", pane)
    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_text("")
    (Path(env["RK_STATE_DIR"]) / f"{slug}.log").symlink_to(elsewhere)
    res = run_rk(["cron", "tick", "-L", slug, "--json"], dict(env, RK_NOW=str(T0 + 60)))
    assert res.returncode == 1
    reasons = [d["reason"] for d in json.loads(res.stdout)["result"]["diagnostics"]]
    assert "tick-failed" in reasons
    assert submitted(tmux_server, pane, "never through a link") == 0
    assert elsewhere.read_text() == ""


@pytest.mark.shell
def test_a_dead_server_asked_for_by_name_exits_1(env, tmux_server):
    sockdir = Path(os.environ["TMUX_TMPDIR"]) / f"tmux-{os.getuid()}"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(sockdir / "ghost"))
    s.close()
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700, exist_ok=True)
    (state / "ghost.yaml").write_text(
        "entries:\n  - {id: gh01, schedule: {kind: every, interval: 1m},"
        " target: {kind: pane, pane: '%1'}, payload: boo}\n"
    )
    named = run_rk(["cron", "tick", "-L", "ghost"], dict(env, RK_NOW=str(T0 + 60)))
    assert named.returncode == 1
    why = "server-not-live: no live tmux server on socket ghost"
    assert named.stderr.strip() == f"rk: tick could not do its work: ghost: {why}"
    swept = run_rk(["cron", "tick"], dict(env, RK_NOW=str(T0 + 60)))  # no live server had an entries file
    assert swept.returncode == 1 and "ghost: server-not-live" in swept.stderr
    pane = first_pane(tmux_server)
    add(env, tmux_server, "alive", pane)
    beside = run_rk(["cron", "tick"], dict(env, RK_NOW=str(T0 + 30)))  # a leftover file beside a live server: no fault
    assert beside.returncode == 0, beside.stderr


@pytest.mark.shell
def test_malformed_log_lines_are_counted_in_one_diagnostic(env, tmux_server):
    slug, pane = tmux_server.name, first_pane(tmux_server)
    entry = add(env, tmux_server, "counted", pane)
    log = Path(env["RK_STATE_DIR"]) / f"{slug}.log"
    append_lines(log, [LogLine(T0 + 10, entry, pane, "schedule", "delivered")])
    with log.open("a") as fh:
        fh.write('{"ts": "soon"}\nnot json at all\n')
    res = run_rk(["cron", "tick", "-L", slug, "--json"], dict(env, RK_NOW=str(T0 + 30)), check=True)
    diags = json.loads(res.stdout)["result"]["diagnostics"]
    assert [d["detail"] for d in diags if d["reason"] == "log-malformed"] == [f"{log}: 2 malformed line(s) skipped"]


def test_the_ticker_cache_counts_malformed_lines_once_each(tmp_path):
    log = tmp_path / "s.log"
    append_lines(log, [LogLine(T0, "a", "%1", "schedule", "delivered")])
    with log.open("a") as fh:
        fh.write("garbage\n")
    cache = LiveLogCache()
    assert len(cache.read(log)) == 1 and cache.malformed[str(log)] == 1
    with log.open("a") as fh:
        fh.write("more garbage\n")
    append_lines(log, [LogLine(T0 + 1, "a", "%1", "schedule", "delivered")])
    assert len(cache.read(log)) == 2 and cache.malformed[str(log)] == 2  # read where it grew
    assert len(cache.read(log)) == 2 and cache.malformed[str(log)] == 2


@pytest.mark.shell
def test_the_ticker_stops_when_its_state_dir_vanishes_and_status_finds_it_without_its_pid_file(tmp_path):
    state = tmp_path / "state"
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
    env.update(RK_STATE_DIR=str(state), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), TZ="UTC")
    env["TMUX_TMPDIR"] = str(tmp_path / "no-tmux")
    first = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "ticker", "--interval", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: (state / "ticker.pid").exists(), timeout=20, message="the ticker's pid file")
        (state / "ticker.pid").unlink()  # a pid file lost: the lock still tells
        status = run_rk(["cron", "ticker", "status", "--json"], env)
        assert status.returncode == 0, status.stdout
        assert json.loads(status.stdout)["result"]["pid"] == first.pid
        second = run_rk(["cron", "ticker"], env)  # no second one beside it
        assert second.returncode == 0 and "already running" in second.stdout, (second.stdout, second.stderr)
        shutil.rmtree(state)
        _, err = first.communicate(timeout=30)
        assert first.returncode == 1
        assert err.splitlines()[-1] == f"rk: state directory {state} was removed or replaced; the ticker stops"
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()

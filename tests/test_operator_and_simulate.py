"""`rk role`, `rk operator`, `rk cron run` and `rk cron simulate` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import wait_for

#: The shell (the CLI, files, processes, tmux): `make test`, not `make test-fast`.
pytestmark = pytest.mark.shell


def rk(args, env, check=False):
    proc = subprocess.run([sys.executable, "-m", "rk", *args], env=env, capture_output=True, text=True, timeout=60)
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def base_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
    env.update(RK_STATE_DIR=str(tmp_path / "state"), HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def in_pane(env, server, pane):
    return dict(env, TMUX=f"{server.path},1,0", TMUX_PANE=pane)


def roles(server):
    out = server.run("list-windows", "-a", "-F", "#{window_id} #{@rk_win_role}")
    return dict((line.split(" ") + [""])[:2] for line in out.splitlines())


def test_role_tags_the_window_and_operator_is_a_server_wide_radio(tmp_path, tmux_server):
    env = base_env(tmp_path)
    first = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    second = tmux_server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", "cat").strip()
    w1 = tmux_server.display(first, "#{window_id}")
    w2 = tmux_server.display(second, "#{window_id}")
    rk(["role", "operator"], in_pane(env, tmux_server, first), check=True)
    assert roles(tmux_server) == {w1: "operator", w2: ""}
    out = rk(["role", "operator", "--json"], in_pane(env, tmux_server, second), check=True)
    assert json.loads(out.stdout)["result"] == {"window": w2, "role": "operator"}
    assert roles(tmux_server) == {w1: "", w2: "operator"}  # moved, not duplicated
    rk(["role", "reviewer"], in_pane(env, tmux_server, first), check=True)
    rk(["role", "clear"], in_pane(env, tmux_server, second), check=True)
    assert roles(tmux_server) == {w1: "reviewer", w2: ""}
    outside = rk(["role", "operator"], env)
    assert outside.returncode == 2 and "not inside a tmux pane" in outside.stderr


def test_operator_creates_one_window_running_the_command_and_then_reports_it(tmp_path, tmux_server):
    env = base_env(tmp_path)
    marker = tmp_path / "operator-started"
    command = f"{sys.executable} -c \"open('{marker}', 'w').write('up'); import time; time.sleep(300)\""
    first = rk(["operator", "-L", tmux_server.name, "--command", command, "--json"], env, check=True)
    result = json.loads(first.stdout)["result"]
    assert result["created"] is True
    wait_for(marker.exists, timeout=10, message="the operator command ran")
    assert roles(tmux_server)[result["window"]] == "operator"
    again = rk(["operator", "-L", tmux_server.name, "--command", command], env, check=True)
    assert again.stdout.strip() == "Operator tab already present."
    assert list(roles(tmux_server).values()).count("operator") == 1
    missing = rk(["operator", "-L", tmux_server.name, "--command", "no-such-agent-cli"], dict(env, HOME=str(tmp_path)))
    assert missing.returncode == 0  # an operator exists already: nothing to start
    dead = rk(["operator", "-L", "rk-no-such-server", "--command", command], env)
    assert dead.returncode == 1 and "no tmux server" in dead.stderr


def test_operator_refuses_a_command_that_does_not_exist(tmp_path, tmux_server):
    env = base_env(tmp_path)
    out = rk(["operator", "-L", tmux_server.name, "--command", "no-such-agent-cli --flag"], env)
    assert out.returncode == 1 and "operator command not found: no-such-agent-cli" in out.stderr
    assert "operator" not in roles(tmux_server).values()


def test_run_fires_now_through_the_deliver_policy_and_logs_manual(tmp_path, tmux_server):
    env = base_env(tmp_path)
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    added = rk(
        [
            "cron",
            "add",
            "run me now",
            "--every",
            "24h",
            "--pane",
            pane,
            "--any-program",
            "-L",
            tmux_server.name,
            "--json",
        ],
        dict(env, RK_NOW="1800000000"),
        check=True,
    )
    entry = json.loads(added.stdout)["result"]["id"]
    out = rk(["cron", "run", entry, "-L", tmux_server.name, "--json"], dict(env, RK_NOW="1800000100"), check=True)
    assert json.loads(out.stdout)["result"] == {
        "id": entry,
        "pane": pane,
        "reason": "manual",
        "outcome": "delivered",
        "logged": True,
    }
    wait_for(lambda: tmux_server.capture(pane).count("run me now") == 2, message="typed and submitted")
    log = rk(["cron", "log", entry, "-L", tmux_server.name, "--json"], env, check=True)
    assert json.loads(log.stdout)["result"] == [
        {"ts": 1800000100, "entry": entry, "target": pane, "reason": "manual", "outcome": "delivered"}
    ]
    # skip-if-busy on a busy pane: logged skip, exit 0
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", "active:1800000150")
    rk(
        ["cron", "edit", entry, "--deliver", "skip-if-busy", "-L", tmux_server.name],
        dict(env, RK_NOW="1800000160"),
        check=True,
    )
    busy = rk(["cron", "run", entry, "-L", tmux_server.name], dict(env, RK_NOW="1800000200"), check=True)
    assert busy.stdout.strip() == f"{entry} -> {pane}: skipped-busy: active"


def test_simulate_draws_the_explainers_panels_and_emits_raw_events(tmp_path):
    env = dict(base_env(tmp_path), COLUMNS="100")
    args = [
        "cron",
        "simulate",
        "--every",
        "5m",
        "--deliver",
        "skip-if-busy",
        "--states",
        "0 idle; 10m active; 25m idle",
        "--busy",
        "0s",
        "--for",
        "40m",
        "--start",
        "2026-11-29T09:00:00Z",
        "--width",
        "100",
    ]
    drawing = rk(args, env, check=True).stdout
    assert "every 5m  deliver skip-if-busy" in drawing
    assert "+10m  09:10:00  schedule skipped-busy: active" in drawing
    assert "+25m  09:25:00  schedule delivered" in drawing
    assert "7 log lines (4 delivered, 3 skipped-busy), 0 holds" in drawing
    raw = json.loads(rk([*args, "--json"], env, check=True).stdout)["result"]
    assert raw["start"] == 1795942800 and raw["end"] == 1795942800 + 2400 and raw["tick"] == 30
    assert [(e["at"] - raw["start"], e["outcome"]) for e in raw["events"] if e["kind"] == "line"] == [
        (300, "delivered"),
        (600, "skipped-busy: active"),
        (900, "skipped-busy: active"),
        (1200, "skipped-busy: active"),
        (1500, "delivered"),
        (1800, "delivered"),
        (2100, "delivered"),
    ]
    assert raw["states"] == [
        {"at": 1795942800, "pane": "%1", "state": "idle"},
        {"at": 1795943400, "pane": "%1", "state": "active"},
        {"at": 1795944300, "pane": "%1", "state": "idle"},
    ]


def test_simulate_replays_a_stored_entry_with_wake_edges_from_other_panes(tmp_path):
    env = base_env(tmp_path)
    added = rk(
        [
            "cron",
            "add",
            "check workers",
            "--every",
            "24h",
            "--wake-on",
            "agent-state-change",
            "--wake-debounce",
            "0s",
            "--pane",
            "%5",
            "--json",
        ],
        dict(env, RK_NOW="0"),
        check=True,
    )
    entry = json.loads(added.stdout)["result"]["id"]
    raw = json.loads(
        rk(
            [
                "cron",
                "simulate",
                entry,
                "--states",
                "0 idle",
                "--other",
                "0 active; 10m idle; 20m waiting",
                "--other",
                "0 active; 30m gone",
                "--for",
                "40m",
                "--start",
                "0",
                "--json",
            ],
            env,
            check=True,
        ).stdout
    )
    wakes = [(e["at"], e["reason"], e["outcome"]) for e in raw["result"]["events"] if e["kind"] == "line"]
    assert wakes == [(600, "wake", "delivered"), (1200, "wake", "delivered"), (1800, "wake", "delivered")]

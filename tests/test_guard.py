"""Type only into an agent: on a real tmux server, a shell never receives a
payload under any deliver policy, a program rk does not know as an agent gets
one only with `any_program`, and a recorded agent pid counts only while it owns
the pane's foreground."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.store.delivery_log import read_live

pytestmark = [pytest.mark.tmux, pytest.mark.shell]

T0 = 1_800_000_000


def rk(args, env, check=False, timeout=60):
    return run_rk(args, env, check=check, timeout=timeout)


def new_pane(server, command: str) -> str:
    return server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip()


def interactive_bash(server, tmp_path: Path) -> str:
    """A real interactive bash at its prompt (no rc files; a marked prompt to poll for)."""
    rc = tmp_path / "bashrc"
    rc.write_text("PS1='READY$ '\n")
    pane = new_pane(server, f"env -i HOME={tmp_path} PATH=/usr/bin:/bin TERM=screen bash --noprofile --rcfile {rc} -i")
    wait_for(lambda: "READY$" in server.capture(pane), message="the bash prompt")
    return pane


def command_of(server, pane: str) -> str:
    return server.display(pane, "#{pane_current_command}")


def add(env, server, *args) -> str:
    out = rk(["cron", "add", *args, "--json", "-L", server.name], dict(env, RK_NOW=str(T0)), check=True)
    return json.loads(out.stdout)["result"]["id"]


def tick(env, server, at: int) -> list[dict]:
    out = rk(["cron", "tick", "-L", server.name, "--json"], dict(env, RK_NOW=str(at)), check=True)
    return json.loads(out.stdout)["result"]["decisions"]


def outcomes(env, server) -> dict[str, str]:
    lines = read_live(Path(env["RK_STATE_DIR"]) / f"{server.name}.log")
    return {line.entry: line.outcome for line in lines}


def test_a_shell_never_receives_a_payload_under_any_policy(env, tmux_server, tmp_path):
    pane = interactive_bash(tmux_server, tmp_path)
    assert command_of(tmux_server, pane) == "bash"
    marker = tmp_path / "executed"
    payload = f"touch {marker}"
    ids = {
        policy: add(env, tmux_server, payload, "--every", "30s", "--pane", pane, "--deliver", policy)
        for policy in ("immediate", "when-idle", "skip-if-busy")
    }
    opted = add(
        env, tmux_server, payload, "--every", "30s", "--pane", pane, "--any-program"
    )  # the opt-in never covers a shell
    notify = add(env, tmux_server, payload, "--every", "30s", "--pane", pane, "--if-absent", "notify")
    decisions = tick(env, tmux_server, T0 + 30)
    assert {d["entry"]: d["outcome"] for d in decisions} == {
        **{i: "skipped-absent: shell in pane" for i in ids.values()},
        opted: "skipped-absent: shell in pane",
        notify: "notified-absent: shell in pane",
    }
    assert all(d["pane"] == "" for d in decisions)
    assert outcomes(env, tmux_server)[ids["immediate"]] == "skipped-absent: shell in pane"
    assert payload not in tmux_server.capture(pane) and not marker.exists()
    # The control: the same text typed by hand does run in this shell.
    tmux_server.send_keys(pane, "-l", payload)
    tmux_server.send_keys(pane, "Enter")
    wait_for(marker.exists, message="the shell runs what is typed into it")


def test_rk_cron_run_refuses_a_shell_too(env, tmux_server, tmp_path):
    pane = interactive_bash(tmux_server, tmp_path)
    entry = add(env, tmux_server, "echo hi", "--every", "24h", "--pane", pane)
    out = rk(["cron", "run", entry, "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 5)), check=True)
    assert json.loads(out.stdout)["result"]["outcome"] == "skipped-absent: shell in pane"
    assert "echo hi" not in tmux_server.capture(pane)


def test_a_program_that_is_not_an_agent_needs_the_opt_in(env, tmux_server, tmp_path):
    pane = new_pane(tmux_server, f"exec {sys.executable} -q -i")
    wait_for(lambda: ">>>" in tmux_server.capture(pane), message="the python prompt")
    program = command_of(tmux_server, pane)
    plain = add(env, tmux_server, "print('plain')", "--every", "30s", "--pane", pane)
    opted = add(env, tmux_server, "print(6 * 7)", "--every", "30s", "--pane", pane, "--any-program")
    shown = rk(["cron", "show", opted, "-L", tmux_server.name, "--json"], env, check=True)
    assert json.loads(shown.stdout)["result"]["any_program"] is True
    listed = rk(["cron", "list", "-L", tmux_server.name], env, check=True)
    assert "any-program" in listed.stdout
    decisions = {d["entry"]: d["outcome"] for d in tick(env, tmux_server, T0 + 30)}
    assert decisions == {plain: f"skipped-absent: no agent in pane ({program})", opted: "delivered"}
    wait_for(lambda: "42" in tmux_server.capture(pane).splitlines(), message="the REPL ran the opted-in payload")
    assert "print('plain')" not in tmux_server.capture(pane)


def test_a_wrapped_agent_counts_while_its_pid_owns_the_foreground(env, tmux_server, tmp_path):
    """A wrapper script shows `bash` as the pane's command; the agent pid the hook
    recorded vouches for the pane while it is in front."""
    received = tmp_path / "received"
    pane = new_pane(tmux_server, f"bash -c 'cat > {received}; true'")
    cat_pid = wait_for(lambda: _child_named(tmux_server, pane, "cat"), message="the wrapped cat")
    assert command_of(tmux_server, pane) == "bash"
    entry = add(env, tmux_server, "wrapped hello", "--every", "30s", "--pane", pane)
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}:{cat_pid}")
    assert {d["entry"]: d["outcome"] for d in tick(env, tmux_server, T0 + 30)} == {entry: "delivered"}
    wait_for(lambda: received.read_text() == "wrapped hello\n", message="the wrapped program got it once")


def test_an_agent_suspended_behind_its_shell_is_refused(env, tmux_server, tmp_path):
    """Ctrl-Z puts the agent in the background and the shell prompt back in front:
    the recorded pid is alive, but the keyboard reaches the shell."""
    pane = interactive_bash(tmux_server, tmp_path)
    received = tmp_path / "received"
    tmux_server.send_keys(pane, "-l", f"cat > {received}")
    tmux_server.send_keys(pane, "Enter")
    cat_pid = wait_for(lambda: _child_named(tmux_server, pane, "cat"), message="cat started from the shell")
    wait_for(lambda: command_of(tmux_server, pane) == "cat", message="cat in front")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}:{cat_pid}")
    entry = add(env, tmux_server, "first", "--every", "30s", "--pane", pane)
    assert {d["entry"]: d["outcome"] for d in tick(env, tmux_server, T0 + 30)} == {entry: "delivered"}
    wait_for(lambda: received.read_text() == "first\n", message="delivered while the agent was in front")
    tmux_server.send_keys(pane, "C-z")
    wait_for(
        lambda: command_of(tmux_server, pane) == "bash" and "Stopped" in tmux_server.capture(pane),
        message="the shell prompt back after Ctrl-Z",
    )
    assert {d["entry"]: d["outcome"] for d in tick(env, tmux_server, T0 + 60)} == {
        entry: "skipped-absent: shell in pane"
    }
    assert received.read_text() == "first\n"
    assert "first" in tmux_server.capture(pane) and tmux_server.capture(pane).count("first") == 1


def _child_named(server, pane: str, name: str) -> int:
    """The pid of a process called `name` on the pane's tty (0 when none yet)."""
    tty = server.display(pane, "#{pane_tty}").removeprefix("/dev/")
    out = subprocess.run(["ps", "-t", tty, "-o", "pid=,comm="], capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid, _, comm = line.strip().partition(" ")
        if comm.strip() == name:
            return int(pid)
    return 0

"""Which program is in the pane, with the real Claude Code offline: after Claude
exits and leaves its last frame, a `python3` REPL started in that pane gets
nothing (a fire, `rk send`); Claude launched through a wrapper (a shell script,
`env`, `npx`) is judged an agent from its processes and delivered to."""

from __future__ import annotations

import shlex
import time
from datetime import timezone
from pathlib import Path

import harness
import pytest

from agents.rkclient import listed
from rk.core.pane.facts import PaneFact
from rk.tmux.observe import read_screen

pytestmark = pytest.mark.agents


def screen_reads(r):
    title = r.run.tmux.run("display", "-p", "-t", r.pane, "#{pane_title}").rstrip("\n")
    styled = r.run.capture(ansi=True)
    return read_screen(PaneFact(r.pane), styled, title, int(time.time()), timezone.utc)


def _at_shell(r) -> bool:
    return r.run.capture().rstrip().endswith("$") and r.run.pane_info()["pane_current_command"] == "bash"


def _poll(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def exit_claude(r) -> None:
    """Ctrl-C twice, as a user leaves Claude (the second once it says so): its last
    frame stays above the shell prompt. A first Ctrl-C may only interrupt; then again."""
    for _ in range(5):
        r.run.keys("C-c")
        if not _poll(lambda: "again to exit" in r.run.capture() or _at_shell(r), 3):
            continue
        if not _at_shell(r):
            r.run.keys("C-c")
        if _poll(lambda: _at_shell(r), 5):
            return
    raise AssertionError(f"Claude did not exit on Ctrl-C twice:\n{r.run.capture()}")


@pytest.mark.parametrize("version", [pytest.param(v, id=f"claude-{v}") for v in harness.CLAUDE_VERSIONS])
def test_a_python_repl_after_claude_exited_is_never_typed_into(rig, tmp_path, version):
    r = rig("claude", version=version)
    entry = r.add("say hello", "--every", "1m")
    assert r.tick() == {entry: "delivered"}
    r.wait_state("idle", timeout=20)
    assert r.prompts() == ["say hello"]
    exit_claude(r)
    r.run.keys_literal("python3 -q")
    r.run.enter()
    r.run.wait_screen(lambda s: s.rstrip().endswith(">>>"), timeout=20)
    seen = screen_reads(r)
    if version == harness.CLAUDE_VERSION:
        assert (seen.agent, seen.state) == ("claude", "idle")  # Claude's last frame alone would pass for an idle Claude
    else:  # the newest draws on the alternate screen: its last frame goes when it exits
        assert (seen.agent, seen.state) == ("", ""), r.run.capture()
        print(f"\nclaude {version} exited, python3 started:\n{r.run.capture().rstrip()}")
    marker = tmp_path / "executed"
    payload = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    refused = "no agent in pane (python3)"
    row = listed(r)
    assert (row["kind"], row["program"], row["state"]) == ("program", "python3", "")
    for _ in range(2):
        fire = r.add(payload, "--every", "1m")
        outcomes = r.tick(int(time.time()) + 120)
        assert outcomes[fire] == f"skipped-absent: {refused}" and set(outcomes.values()) == {
            f"skipped-absent: {refused}"
        }
        sent = r.rk("send", "--pane", r.pane, payload, check=False)
        assert sent.returncode == 1 and refused in sent.stdout + sent.stderr
    r.run.keys("C-l")  # the frame is cleared: the verdict was never the screen's
    r.run.wait_screen(lambda s: "Claude Code" not in s, timeout=10)
    assert set(r.tick(int(time.time()) + 240).values()) == {f"skipped-absent: {refused}"}
    assert (listed(r)["kind"], listed(r)["program"]) == ("program", "python3")
    assert payload not in r.run.capture() and not marker.exists()  # 0 prompts into the REPL
    assert r.prompts() == ["say hello"]
    # the control: typed by hand, the same text runs in the REPL
    r.run.keys_literal(payload)
    r.run.enter()
    r.run.wait_screen(lambda _: marker.exists(), timeout=10)


def _relaunch(r, command: str) -> None:
    exit_claude(r)
    r.run.keys_literal(f"clear; {command}")  # cleared: the composer waited for is the new Claude's
    r.run.enter()
    # the old Claude's last frame stays on screen until the shell runs `clear`: wait for the
    # command to start (the clear is done by then), or a loaded shell shows the old composer
    assert _poll(lambda: r.run.pane_info()["pane_current_command"] != "bash", 30), r.run.capture()
    r.run.wait_ready(timeout=30)


WRAPPERS = {
    "script": "sh {script}",
    "env": "env RK_WRAPPED=1 claude",
    "npx": "npx --offline --no --prefix {prefix} claude",
}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_claude_launched_through_a_wrapper_is_an_agent_and_delivered_to(rig, tmp_path, wrapper):
    r = rig("claude")
    script = tmp_path / "start-claude.sh"
    script.write_text("#!/bin/sh\necho starting claude\nclaude\necho claude is done\n")
    prefix = Path(r.run.bin_dir).parent.parent  # the directory whose node_modules holds the CLI
    command = WRAPPERS[wrapper].format(script=shlex.quote(str(script)), prefix=shlex.quote(str(prefix)))
    _relaunch(r, command)
    row = listed(r)
    assert (row["kind"], row["program"]) == ("agent", "claude")
    # the process column is the tty's foreground process as read: for a moment after its start,
    # the ripgrep Claude runs to index the files (a CI run listed `rg --no-config --files …`)
    rows = [row]

    def names_claude() -> bool:
        rows.append(listed(r))
        return "claude" in rows[-1]["process"]

    assert "claude" in row["process"] or _poll(names_claude, 20), rows[-1]
    assert rows[-1]["process_pid"] > 0 and (rows[-1]["kind"], rows[-1]["program"]) == ("agent", "claude")
    if wrapper != "env":
        assert r.run.pane_info()["pane_current_command"] != "claude"  # tmux alone names the wrapper
    entry = r.add("say hello", "--every", "1m")
    assert r.tick() == {entry: "delivered"}
    r.wait_state("idle", timeout=20)
    assert r.prompts() == ["say hello"]
    # the kind stands on the processes alone: with no hook state at all it is still an agent
    r.run.tmux.run("set-option", "-p", "-u", "-t", r.pane, "@rk_pane_agent_state")
    r.run.tmux.run("set-option", "-p", "-u", "-t", r.pane, "@rk_agent_state")
    assert listed(r)["kind"] == "agent"


def test_codex_from_npm_is_an_agent_and_a_node_repl_after_it_is_not(rig, tmp_path):
    """Codex runs as `node …/codex.js`, which spawns the native binary: an agent by its
    processes even with no hook state; once it quit, a `node` REPL over its last
    frame gets nothing."""
    r = rig("codex")
    row = listed(r)
    assert (row["kind"], row["program"]) == ("agent", "codex")
    assert r.run.pane_info()["pane_current_command"] == "node"  # what tmux alone would go by
    r.run.tmux.run("set-option", "-p", "-u", "-t", r.pane, "@rk_pane_agent_state")
    r.run.tmux.run("set-option", "-p", "-u", "-t", r.pane, "@rk_agent_state")
    assert listed(r)["kind"] == "agent"
    r.run.keys_literal("/quit")
    time.sleep(0.3)
    r.run.enter()
    assert _poll(lambda: _at_shell(r), 20), r.run.capture()
    r.run.keys_literal("node")
    r.run.enter()
    r.run.wait_screen(lambda s: s.rstrip().endswith(">"), timeout=20)
    marker = tmp_path / "executed"
    payload = f"require('fs').writeFileSync({str(marker)!r}, '')"
    fire = r.add(payload, "--every", "1m")
    assert r.tick() == {fire: "skipped-absent: no agent in pane (node)"}
    sent = r.rk("send", "--pane", r.pane, payload, check=False)
    assert sent.returncode == 1 and "no agent in pane (node)" in sent.stdout + sent.stderr
    assert (listed(r)["kind"], listed(r)["program"]) == ("program", "node")
    assert payload not in r.run.capture() and not marker.exists() and r.prompts() == []

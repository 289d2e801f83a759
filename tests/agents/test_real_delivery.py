"""Delivery into a real agent CLI, offline (`make test-agents`). A human's tmux mode: the
fires are held (or skipped) while the pane is in copy-mode, the mode stays on
with its scroll position and selection, nothing reaches the agent, and the held
fires go out once the human leaves the mode. And the first delivery right after a launch,
while the CLI still redraws its startup screen."""

from __future__ import annotations

import time

import harness
import pytest

pytestmark = pytest.mark.agents

AGENTS = ("claude", "codex")
#: Claude Code in both versions the suite runs (the pinned one and the newest), and Codex.
VERSIONED = [pytest.param("claude", v, id=f"claude-{v}") for v in harness.CLAUDE_VERSIONS] + [
    pytest.param("codex", "", id="codex")
]


@pytest.mark.parametrize(("agent", "version"), VERSIONED)
def test_copy_mode_over_an_idle_agent_is_kept_and_the_fires_wait_for_it(rig, agent, version):
    r = rig(agent, version=version)
    r.run.mock.set_mode("ok")
    tmux, pane = r.run.tmux, r.pane
    ids = {
        p: r.add(f"sent by {p}", "--every", "1m", "--deliver", p) for p in ("when-idle", "immediate", "skip-if-busy")
    }
    tmux.run("copy-mode", "-t", pane)
    tmux.run("send-keys", "-t", pane, "-X", "-N", "5", "cursor-up")
    tmux.run("send-keys", "-t", pane, "-X", "begin-selection")
    tmux.run("send-keys", "-t", pane, "-X", "cursor-up")
    before = tmux.run("display-message", "-p", "-t", pane, "#{pane_in_mode}:#{pane_mode}:#{selection_present}")
    assert before.strip() == "1:copy-mode:1"

    assert r.tick() == {
        ids["when-idle"]: "held-busy: copy-mode",
        ids["immediate"]: "held-busy: copy-mode",
        ids["skip-if-busy"]: "skipped-busy: copy-mode",
    }
    assert tmux.run("display-message", "-p", "-t", pane, "#{pane_in_mode}:#{pane_mode}:#{selection_present}") == before
    assert r.prompts() == []

    tmux.run("copy-mode", "-q", "-t", pane)  # the human is done reading
    typed_at = int(time.time())
    first = r.tick()  # the held fires go out, one per tick: the other meets the turn the first started
    assert sorted(first.values()) == ["delivered", "held-busy: active"], first
    assert set(first) == {ids["when-idle"], ids["immediate"]}, first
    r.wait_state("idle", timeout=20, since=typed_at)  # that turn over (not the idle from before it)
    rest = {e for e, outcome in first.items() if outcome != "delivered"}
    assert {e: o for e, o in r.tick().items() if e in rest} == dict.fromkeys(rest, "delivered")
    r.wait_state("idle", timeout=20)
    assert sorted(r.prompts()) == ["sent by immediate", "sent by when-idle"]


@pytest.mark.parametrize("agent", AGENTS)
def test_the_first_delivery_right_after_launch_goes_in(rig, agent):
    """`rk send` as soon as the composer shows. Codex 0.171 then still redraws its
    startup screen (the logo goes, its composer moves a row) between rk's look and
    its paste; that redraw once read as a key a human typed beside rk's text
    (`failed: a key was typed into the composer…`, every time)."""
    r = rig(agent, mcp=True)  # its MCP servers start as it launches: the startup screen settles later
    r.run.mock.set_mode("ok")
    sent = r.rk("send", "--pane", r.pane, "--json", "--", "right after the launch", check=False)
    assert sent.returncode == 0, f"{sent.stdout}\n{r.run.capture()}"
    deadline = time.monotonic() + 60
    while not r.prompts() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert r.prompts() == ["right after the launch"], r.run.capture()

"""Drafts typed while a hook-only agent works (issue 26, "Drafts in every agent").

A human may type while the agent is busy: the keys show where the agent's output is,
and at its prompt once the turn ends. rk reads a draft in a pane no layout reads by
its idle line (`rk.core.pane.idle_line`): text at the prompt that the pane did not
show when rk last saw it at rest. Text that appeared during the turn is such text,
and an idle stamped over it never makes it part of the prompt (`learned`). The
demo's fake agent stands in for a hook-only CLI: its hooks are `rk agent state`
calls and its screen is its own."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.pane.idle_line import IdleLine, is_draft, learned
from rk.store.delivery_log import read_live

FAKE_AGENT = Path(__file__).resolve().parent.parent / "demo" / "fake_agent.py"
DRAFT = "half-typed thought"


# -- the rule, pure


def test_text_that_appeared_during_the_turn_is_no_part_of_the_next_idle_line():
    before = IdleLine(1, "demo> ", "")
    at_idle = ("demo> " + DRAFT, "")  # the prompt is back with what was typed while it worked
    kept = learned(before, 2, at_idle)
    assert kept == IdleLine(2, "demo> ", "")
    assert is_draft(kept, at_idle)
    assert not is_draft(kept, ("demo> ", ""))  # once sent (or erased), the prompt is at rest again


# -- on a real tmux server, with the demo's fake agent


def _rk(env, *args: str, at: int | None = None, check: bool = True):
    e = dict(env, RK_NOW=str(at)) if at is not None else env
    return run_rk([*args, "-L", env["RK_SERVER"]], e, check=check)


def _state(server, pane: str) -> str:
    return server.run("show-options", "-pqv", "-t", pane, "@rk_pane_agent_state").strip()


def _idle_marker(server, pane: str) -> str:
    value = server.run("show-options", "-pqv", "-t", pane, "@rk_pane_idle_line").strip()
    return json.loads(value)[1].rstrip() if value else ""


def _log(env) -> list[str]:
    return [line.outcome for line in read_live(Path(env["RK_STATE_DIR"]) / f"{env['RK_SERVER']}.log")]


def _agent(server, env, work: float) -> str:
    """The demo's fake agent in a pane of its own, at its prompt, idle by its own hook."""
    command = (
        f"env RK_STATE_DIR={env['RK_STATE_DIR']} HOME={env['HOME']} "
        f"{sys.executable} {FAKE_AGENT} worker --work {work} {work} --seed 1"
    )
    pane = server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip()
    wait_for(lambda: _state(server, pane).startswith("idle:"), timeout=15, message="the agent's idle hook")
    wait_for(lambda: "demo> " in server.capture(pane), message="its prompt")
    return pane


def _draft_typed_during_a_turn(server, pane: str) -> None:
    """The human submits a prompt, and types the next while the agent works on it."""
    server.run("send-keys", "-t", pane, "-l", "FIRST")
    server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: _state(server, pane).startswith("active:"), timeout=10, message="the turn")
    wait_for(lambda: "working (" in server.capture(pane), message="the agent working")
    server.run("send-keys", "-t", pane, "-l", DRAFT)
    assert _state(server, pane).startswith("active:")  # typed while it worked
    wait_for(lambda: _state(server, pane).startswith("idle:"), timeout=15, message="the turn's end")
    wait_for(lambda: f"demo> {DRAFT}" in server.capture(pane), message="the draft at the prompt")


@pytest.fixture
def agent_env(env, tmux_server):
    return dict(env, RK_SERVER=tmux_server.name)


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.parametrize(("policy", "outcome"), [("skip-if-busy", "skipped-busy: draft"), ("when-idle", None)])
def test_a_draft_typed_while_the_agent_works_is_held(agent_env, tmux_server, policy, outcome):
    pane = _agent(tmux_server, agent_env, work=2.0)
    t0 = int(time.time())
    out = _rk(
        agent_env, "cron", "add", "status?", "--every", "30s", "--pane", pane, "--deliver", policy, "--json", at=t0
    )
    entry = json.loads(out.stdout)["result"]["id"]
    assert _rk(agent_env, "cron", "tick", at=t0 + 1).returncode == 0  # nothing due: the idle line is learnt
    wait_for(lambda: _idle_marker(tmux_server, pane) == "demo>", message="the idle line")

    _draft_typed_during_a_turn(tmux_server, pane)
    decisions = json.loads(_rk(agent_env, "cron", "tick", "--json", at=t0 + 30).stdout)["result"]["decisions"]
    assert {d["entry"]: d["outcome"] for d in decisions} == {entry: outcome or "held-busy: draft"}
    assert _log(agent_env) == ([outcome] if outcome else [])
    assert _idle_marker(tmux_server, pane) == "demo>"  # the turn's text did not become the prompt

    sent = _rk(agent_env, "send", "SECOND", "--pane", pane, check=False)  # a one-off send is held too
    assert sent.returncode == 1, sent.stdout + sent.stderr
    assert "draft" in sent.stdout + sent.stderr
    screen = tmux_server.capture(pane)
    assert f"demo> {DRAFT}\n" in screen + "\n"  # neither sent nor cleared
    assert "status?" not in screen and "SECOND" not in screen

    # the human sends it: it goes alone, and rk's next fire after it
    tmux_server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: f"[worker] got: {DRAFT}\n" in tmux_server.capture(pane) + "\n", message="the draft, alone")
    wait_for(lambda: "handled prompt #2" in tmux_server.capture(pane), timeout=10, message="its turn")
    wait_for(lambda: _state(tmux_server, pane).startswith("idle:"), timeout=10, message="idle again")
    wait_for(lambda: tmux_server.capture(pane).rstrip().endswith("demo>") or "enter sends" in tmux_server.capture(pane))
    late = json.loads(_rk(agent_env, "cron", "tick", "--json", at=t0 + 60).stdout)["result"]["decisions"]
    assert {d["entry"]: d["outcome"] for d in late} == {entry: "delivered"}
    wait_for(lambda: "[worker] got: status?\n" in tmux_server.capture(pane) + "\n", message="rk's prompt, alone")
    assert f"{DRAFT}status?" not in tmux_server.capture(pane)


@pytest.mark.tmux
@pytest.mark.shell
def test_a_send_into_a_pane_no_entry_targets_is_held_by_the_prompt_the_tick_saw(agent_env, tmux_server):
    """The tick learns the idle line of every pane, not only its targets': a later
    `rk send` (an operator's, over MCP) compares with the prompt from before the
    turn, not with a first look that would take the draft for part of the prompt."""
    pane = _agent(tmux_server, agent_env, work=2.0)
    other = tmux_server.run("display-message", "-p", "-t", "main:0", "#{pane_id}").strip()
    t0 = int(time.time())
    _rk(agent_env, "cron", "add", "elsewhere", "--every", "1h", "--pane", other, "--any-program", at=t0)
    _rk(agent_env, "cron", "tick", at=t0 + 1)  # nothing due: a look at the server, as the ticker's after a hook

    _draft_typed_during_a_turn(tmux_server, pane)
    sent = _rk(agent_env, "send", "SECOND", "--pane", pane, check=False)
    assert sent.returncode == 1 and "held-busy: draft" in sent.stdout, sent.stdout + sent.stderr
    assert f"demo> {DRAFT}\n" in tmux_server.capture(pane) + "\n"
    assert "SECOND" not in tmux_server.capture(pane)
    assert _idle_marker(tmux_server, pane) == "demo>"

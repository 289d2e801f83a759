"""Drafts for any agent: a pane whose screen no layout reads (a hook-only agent, the
demo's fake agent) gets a human's half-typed text held, by the idle line rk
learnt when the pane was last idle (`rk.core.pane.idle_line`), not fused with rk's prompt."""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.pane.idle_line import IdleLine, cursor_line, is_draft, learned, parse
from rk.core.pane.screen import LAYOUTS, classify
from rk.store.delivery_log import read_live

FAKE_AGENT = Path(__file__).resolve().parent.parent / "demo" / "fake_agent.py"
DRAFT = "half-typed thought, not sent yet"


# -- the rule, pure


def test_the_idle_line_itself_and_a_cleared_line_are_no_draft():
    idle = IdleLine(1, "demo> ", "")
    assert not is_draft(idle, ("demo> ", ""))
    assert not is_draft(idle, ("demo>", ""))  # the trailing blank of the marker is not text
    assert not is_draft(idle, ("", ""))  # a blank line under the cursor


def test_text_after_the_marker_or_on_another_line_is_a_draft():
    idle = IdleLine(1, "demo> ", "")
    assert is_draft(idle, ("demo> " + DRAFT, ""))
    assert is_draft(idle, ("demo> half", "-typed"))  # the cursor moved back into it
    assert is_draft(idle, ("  second line of it", ""))  # a cursor on another line with text


def test_a_placeholder_shown_at_idle_is_no_draft_but_text_over_it_is():
    idle = IdleLine(1, "> ", "Type a message")
    assert not is_draft(idle, ("> ", "Type a message"))
    assert is_draft(idle, ("> hello", ""))


def test_unsure_is_a_draft():
    assert is_draft(None, ("demo> ", ""))  # nothing learnt
    assert is_draft(IdleLine(1, "demo> ", ""), None)  # the cursor could not be read


def test_an_idle_restamped_over_a_draft_keeps_the_old_marker():
    old = IdleLine(1, "demo> ", "")
    assert learned(old, 2, ("demo> " + DRAFT, "")) == IdleLine(2, "demo> ", "")
    assert learned(old, 2, ("[2] > ", "")) == IdleLine(2, "[2] > ", "")  # a prompt that changed is learnt anew
    assert learned(None, 2, ("demo> ", "")) == IdleLine(2, "demo> ", "")
    assert learned(IdleLine(1, "", ""), 2, ("> ", "")) == IdleLine(2, "> ", "")  # no marker: nothing to keep


def test_the_option_round_trips_and_a_bad_value_is_unknown():
    line = IdleLine(1_800_000_000, "› \t", "x\"'")
    assert parse(line.render()) == line
    for bad in ("", "idle", "[1, 2]", '["1", "a", "b"]', "[1, 2, 3]", "{}"):
        assert parse(bad) is None


def test_the_cursor_line_is_split_at_the_cursor_in_cells():
    rows = "first\n漢字> abc\n"
    assert cursor_line(rows, "6,1") == ("漢字> ", "abc")
    assert cursor_line(rows, "0,5") is None
    assert cursor_line(rows, "x,1") is None


# -- on a real tmux server, with the demo's fake agent (hooks only, a screen no layout reads)


def _rk(env, at: int, *args: str, check: bool = True):
    return run_rk([*args, "-L", env["RK_SERVER"]], dict(env, RK_NOW=str(at)), check=check)


def _agent(tmux_server, env) -> str:
    """The demo's fake agent in a pane of its own, at its prompt, idle by its own hook."""
    command = (
        f"env RK_STATE_DIR={env['RK_STATE_DIR']} HOME={env['HOME']} "
        f"{sys.executable} {FAKE_AGENT} worker --work 0.2 0.2 --seed 1"
    )
    pane = tmux_server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip()
    wait_for(lambda: _state(tmux_server, pane).startswith("idle:"), timeout=15, message="the agent's idle hook")
    wait_for(lambda: "demo> " in tmux_server.capture(pane), message="its prompt")
    return pane


def _state(server, pane: str) -> str:
    return server.run("show-options", "-pqv", "-t", pane, "@rk_pane_agent_state").strip()


def _idle_line(server, pane: str) -> str:
    return server.run("show-options", "-pqv", "-t", pane, "@rk_pane_idle_line").strip()


def _add(env, at: int, pane: str, policy: str) -> str:
    out = _rk(env, at, "cron", "add", "status?", "--every", "30s", "--pane", pane, "--deliver", policy, "--json")
    return json.loads(out.stdout)["result"]["id"]


def _decisions(env, at: int) -> dict[str, str]:
    out = _rk(env, at, "cron", "tick", "--json")
    return {d["entry"]: d["outcome"] for d in json.loads(out.stdout)["result"]["decisions"]}


def _log(env) -> list[str]:
    return [line.outcome for line in read_live(Path(env["RK_STATE_DIR"]) / f"{env['RK_SERVER']}.log")]


@pytest.fixture
def agent_env(env, tmux_server):
    return dict(env, RK_SERVER=tmux_server.name)


@pytest.mark.tmux
@pytest.mark.shell
def test_no_draft_at_the_prompt_rk_delivers(agent_env, tmux_server):
    pane = _agent(tmux_server, agent_env)
    t0 = int(time.time())
    entry = _add(agent_env, t0, pane, "skip-if-busy")
    assert _decisions(agent_env, t0 + 30) == {entry: "delivered"}
    wait_for(lambda: "[worker] got: status?" in tmux_server.capture(pane), message="the agent got the prompt")
    assert json.loads(_idle_line(tmux_server, pane))[1].rstrip() == "demo>"  # learnt at the idle, before typing


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.parametrize(("policy", "outcome"), [("skip-if-busy", "skipped-busy: draft"), ("when-idle", None)])
def test_a_humans_draft_at_the_prompt_is_held_by_the_idle_line(agent_env, tmux_server, policy, outcome):
    pane = _agent(tmux_server, agent_env)
    t0 = int(time.time())
    entry = _add(agent_env, t0, pane, policy)
    assert _decisions(agent_env, t0 + 1) == {}  # nothing due yet: the tick learns the idle line
    wait_for(lambda: _idle_line(tmux_server, pane), message="the idle line")
    tmux_server.run("send-keys", "-t", pane, "-l", DRAFT)
    wait_for(lambda: f"demo> {DRAFT}" in tmux_server.capture(pane), message="the human's draft")
    styled = tmux_server.look(pane)[1]
    assert classify(styled, LAYOUTS, now=t0, zone=UTC).agent == ""  # no layout reads this screen

    decisions = _decisions(agent_env, t0 + 30)
    assert decisions == {entry: outcome or "held-busy: draft"}
    assert _log(agent_env) == ([outcome] if outcome else [])
    screen = tmux_server.capture(pane)
    assert "status?" not in screen and f"demo> {DRAFT}\n" in screen + "\n"

    # its hook re-stamps idle while the draft sits there: the draft does not become the idle line
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", _state(tmux_server, pane).replace("idle:", "idle:9", 1))
    _decisions(agent_env, t0 + 31)
    assert json.loads(_idle_line(tmux_server, pane))[1].rstrip() == "demo>"
    assert "status?" not in tmux_server.capture(pane)

    # the human sends it: the next fire goes out alone, after the draft
    tmux_server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: f"[worker] got: {DRAFT}" in tmux_server.capture(pane), message="the draft sent")
    wait_for(lambda: "done: handled prompt #1" in tmux_server.capture(pane), timeout=10, message="its turn")
    wait_for(lambda: _state(tmux_server, pane).startswith("idle:"), timeout=10, message="idle again")
    # the held fire (when-idle) goes out once the pane is idle again; skip-if-busy's next fire does
    if _decisions(agent_env, t0 + 32) != {entry: "delivered"}:
        assert _decisions(agent_env, t0 + 60) == {entry: "delivered"}
    assert _log(agent_env) == ([outcome] if outcome else []) + ["delivered"]
    wait_for(lambda: "[worker] got: status?" in tmux_server.capture(pane), message="rk's prompt, alone")
    assert f"got: {DRAFT}status?" not in tmux_server.capture(pane)


@pytest.mark.tmux
@pytest.mark.shell
def test_rk_cron_run_learns_the_idle_line_as_a_tick_does(agent_env, tmux_server):
    """No ticker ran yet: the manual run learns the idle line before its guard reads it
    (nothing learnt would be unsure, and held as a draft)."""
    pane = _agent(tmux_server, agent_env)
    t0 = int(time.time())
    entry = _add(agent_env, t0, pane, "skip-if-busy")
    assert not _idle_line(tmux_server, pane)
    _rk(agent_env, t0 + 5, "cron", "run", entry)
    assert _log(agent_env) == ["delivered"]
    wait_for(lambda: "[worker] got: status?" in tmux_server.capture(pane), message="the agent got the prompt")

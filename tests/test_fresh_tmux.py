"""`--fresh` against a real tmux server: the stand-in `claude` (tests/fixtures/fake_claude.py)
with rk's hooks installed by the real `rk agent setup`, running Claude Code's `/clear`
(a new session, SessionStart source clear) and `/compact` (PreCompact, a `Compacted`
notice, no Stop). A tick types the command, waits until it is done, then the payload;
a human's turn since the entry's last delivery withholds the command (unless -always);
a program that is no agent refuses it, nothing typed."""

from __future__ import annotations

import json
import time
from datetime import UTC
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.schedule.entry import At
from rk.core.schedule.fresh import FreshMode
from rk.engine.runtime import Runtime
from rk.engine.tick import tick_server
from rk.store import delivery_log as logfile
from rk.store.config import Settings
from tests.standin import option, stand_in_window, write_entry

pytestmark = [pytest.mark.tmux, pytest.mark.shell]


def setup_hooks(env) -> None:
    run_rk(["agent", "setup", "claude", "--yes"], env, check=True)


def stand_in(env, server, tmp_path: Path, name: str = "claude", **extra: str) -> tuple[str, Path]:
    """A pane running the stand-in as `name`, at rest, rk's hooks loaded; (pane, its prompts log)."""
    prompts = tmp_path / f"prompts-{name}"
    environ = {"HOME": env["HOME"], "RK_STATE_DIR": env["RK_STATE_DIR"], "FAKE_CLAUDE_LOG": str(prompts), **extra}
    pane = stand_in_window(server, environ, name)
    if name == "claude":
        wait_for(lambda: option(server, pane, "@rk_pane_agent_state").startswith("idle:"), message="its first stamp")
    return pane, prompts


def human_types(server, pane: str, prompts: Path, text: str) -> None:
    """A human's prompt, and its turn to the end (the Stop hook wrote `idle`)."""
    server.run("send-keys", "-t", pane, "-l", text)
    server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: prompts.exists() and text in prompts.read_text().split("\n"), message="the human's prompt taken")
    wait_for(lambda: "? for shortcuts" in server.capture(pane), timeout=20, message="its turn over")
    wait_for(lambda: option(server, pane, "@rk_pane_agent_state").startswith("idle:"), message="the Stop hook")


def fire_once(env, server, pane: str, fresh: FreshMode, created: int, any_program: bool = False) -> str:
    """One due --at entry with `fresh`, made at `created`, ticked: its log line's outcome."""
    state = Path(env["RK_STATE_DIR"])
    now = int(time.time())
    fields = {"schedule": At(at=now - 1), "payload": "status?", "fresh": fresh, "any_program": any_program}
    write_entry(state, server.name, pane, created, **fields)
    runtime = Runtime(state_dir=state, settings=Settings(), environ=env, zone=UTC, clock=lambda: int(time.time()))
    log = state / f"{server.name}.log"
    before = len(logfile.read_live(log)) if log.exists() else 0
    tick_server(runtime, server.name)
    lines = [line for line in logfile.read_live(log)[before:] if line.entry == "e1"]
    assert len(lines) == 1, lines
    return lines[0].outcome


def typed(prompts: Path) -> list[str]:
    return prompts.read_text().splitlines() if prompts.exists() else []


def test_clear_runs_before_the_payload_and_the_payload_lands_in_a_new_session(env, tmux_server, tmp_path):
    setup_hooks(env)
    pane, prompts = stand_in(env, tmux_server, tmp_path)
    human_types(tmux_server, pane, prompts, "hello")
    session = option(tmux_server, pane, "@rk_pane_agent_session")
    created = int(time.time()) + 1  # the human's turn was before the entry: not "since the last fire"
    wait_for(lambda: time.time() >= created + 1, message="a second after the entry")
    outcome = fire_once(env, tmux_server, pane, FreshMode.CLEAR, created)
    assert outcome == "delivered (after /clear)"
    assert typed(prompts) == ["hello", "/clear", "status?"]
    assert option(tmux_server, pane, "@rk_pane_agent_session") not in ("", session)  # /clear started a new one
    wait_for(lambda: "❯ status?" in tmux_server.capture(pane), message="the payload on the cleared screen")
    assert "❯ hello" not in tmux_server.capture(pane)


def test_a_human_turn_since_the_last_fire_withholds_the_command_but_not_the_payload(env, tmux_server, tmp_path):
    setup_hooks(env)
    pane, prompts = stand_in(env, tmux_server, tmp_path)
    created = int(time.time()) - 5
    human_types(tmux_server, pane, prompts, "my own work")
    outcome = fire_once(env, tmux_server, pane, FreshMode.CLEAR, created)
    assert outcome == "delivered (fresh withheld: a human typed since the last fire)"
    assert typed(prompts) == ["my own work", "status?"]  # no /clear: the human's context is theirs


def test_always_sends_the_command_after_a_human_turn_too(env, tmux_server, tmp_path):
    setup_hooks(env)
    pane, prompts = stand_in(env, tmux_server, tmp_path)
    created = int(time.time()) - 5
    human_types(tmux_server, pane, prompts, "my own work")
    outcome = fire_once(env, tmux_server, pane, FreshMode.CLEAR_ALWAYS, created)
    assert outcome == "delivered (after /clear)"
    assert typed(prompts) == ["my own work", "/clear", "status?"]


def test_compact_is_waited_out_before_the_payload(env, tmux_server, tmp_path):
    setup_hooks(env)
    pane, prompts = stand_in(env, tmux_server, tmp_path, FAKE_CLAUDE_COMPACT="4")
    human_types(tmux_server, pane, prompts, "hello")
    created = int(time.time()) + 1
    wait_for(lambda: time.time() >= created + 1, message="a second after the entry")
    began = time.monotonic()
    outcome = fire_once(env, tmux_server, pane, FreshMode.COMPACT, created)
    assert outcome == "delivered (after /compact)"
    assert time.monotonic() - began >= 4  # the compaction's four seconds were waited out
    assert typed(prompts) == ["hello", "/compact", "status?"]
    screen = tmux_server.capture(pane)
    assert "Conversation compacted" in screen or "❯ status?" in screen


def test_a_program_that_is_no_agent_refuses_fresh_and_nothing_is_typed(env, tmux_server, tmp_path):
    pane, prompts = stand_in(env, tmux_server, tmp_path, name="myrepl")
    outcome = fire_once(env, tmux_server, pane, FreshMode.CLEAR, int(time.time()) - 5, any_program=True)
    assert outcome == "failed: --fresh clear: the pane runs no agent rk knows; nothing typed"
    assert typed(prompts) == []
    added = run_rk(
        [
            "cron",
            "add",
            "status?",
            "--every",
            "1h",
            "--pane",
            pane,
            "--any-program",
            "--fresh",
            "clear",
            "-L",
            tmux_server.name,
        ],
        {**env, "RK_NOW": str(int(time.time()))},
        check=False,
    )
    assert added.returncode == 2, added.stdout + added.stderr
    assert "--fresh clear: the pane runs no agent rk knows" in added.stderr


def test_the_command_line_adds_edits_and_removes_fresh(env, tmux_server):
    now = str(int(time.time()))
    rk = {**env, "RK_NOW": now}
    base = ["-L", tmux_server.name]
    bad = run_rk(["cron", "add", "status?", "--every", "1h", "--pane", "%0", "--fresh", "wipe", *base], rk)
    assert bad.returncode == 2 and "--fresh must be one of clear, compact, clear-always, compact-always" in bad.stderr
    added = run_rk(["cron", "add", "status?", "--every", "1h", "--pane", "%0", "--fresh", "clear-always", *base], rk)
    assert added.returncode == 0, added.stderr
    listed = json.loads(run_rk(["cron", "list", "--json", *base], rk, check=True).stdout)["result"]
    assert [e.get("fresh") for e in listed] == ["clear-always"]
    entry_id = listed[0]["id"]
    run_rk(["cron", "edit", entry_id, "--fresh", "compact", *base], rk, check=True)
    assert json.loads(run_rk(["cron", "list", "--json", *base], rk).stdout)["result"][0]["fresh"] == "compact"
    run_rk(["cron", "edit", entry_id, "--fresh", "off", *base], rk, check=True)
    assert "fresh" not in json.loads(run_rk(["cron", "list", "--json", *base], rk).stdout)["result"][0]


def test_a_busy_agent_gets_no_command_and_the_payload_goes_alone(tmux_server, tmp_path):
    """An agent mid-turn (Claude Code's busy screen): the command would wait in its queue,
    so nothing is typed and the fire goes on with the payload alone, saying so."""
    from test_turn_timeout_tmux import fake_claude

    from rk.act.fresh import BUSY, freshen

    pane, pid, _ = fake_claude(tmux_server, tmp_path, "working_1")
    now = int(time.time())
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{now}:{pid}")
    typed_in: list[str] = []

    def type_in(server, pane, payload, /, *, guard=None):
        typed_in.append(payload)
        raise AssertionError("nothing may be typed into a busy agent")

    result = freshen(tmux_server, pane, "/clear", "clear", guard=None, zone=UTC, clock=lambda: now, type_in=type_in)
    assert result is BUSY
    assert typed_in == []

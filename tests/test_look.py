"""The screen as a second source of truth, on a real tmux server.

A pane replays a screen captured from the real Claude Code (tests/fixtures/
screens/claude) and then runs `cat` under the name `claude`
(`exec -a claude cat`), so tmux reports `claude` as its command and the pane
looks to rk exactly as that agent's did. The real CLIs are driven by the
agents suite (`make test-agents`); this one shows, in the default suite, that
the tick looks when it should, writes what the screen says back with its
source, and never types over a draft, into a dialog or into a limit.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN
from rk.store.delivery_log import read_live

pytestmark = [pytest.mark.tmux, pytest.mark.shell]

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "screens"
NOW = int(datetime(2026, 12, 1, 12, 0, tzinfo=UTC).timestamp())


def rk(args, env, check=True, timeout=60):
    return run_rk(args, env, check=check, timeout=timeout)


def replay(server, fixture: str, received: Path | None = None) -> tuple[str, int]:
    """A pane showing `fixture` (a Claude screen) with a `cat` named claude in front;
    (pane id, the pid of that cat)."""
    screen = FIXTURES / f"{fixture}.ansi"
    sink = f" > {received}" if received else ""
    pane = server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", f"bash -c 'cat {screen}; exec -a claude cat{sink}'"
    ).strip()
    wait_for(lambda: server.display(pane, "#{pane_current_command}") == "claude", message="the replayed agent in front")
    pid = int(server.display(pane, "#{pane_pid}"))
    return pane, pid


def option(server, pane: str, name: str) -> str:
    return server.run("show-options", "-pqv", "-t", pane, name).strip()


def add(env, server, *args) -> str:
    out = rk(["cron", "add", *args, "--json", "-L", server.name], {**env, "RK_NOW": str(NOW - 600)})
    return json.loads(out.stdout)["result"]["id"]


def tick(env, server, at: int) -> dict[str, str]:
    out = rk(["cron", "tick", "-L", server.name, "--json"], {**env, "RK_NOW": str(at)})
    return {d["entry"]: d["outcome"] for d in json.loads(out.stdout)["result"]["decisions"]}


def logged(env, server) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in read_live(Path(env["RK_STATE_DIR"]) / f"{server.name}.log"):
        out.setdefault(line.entry, []).append(line.outcome)
    return out


def test_a_humans_draft_is_never_typed_over_under_any_policy(env, tmux_server):
    pane, pid = replay(tmux_server, "claude/draft")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{NOW - 300}:{pid}")
    before = tmux_server.capture(pane)
    imm = add(env, tmux_server, "status?", "--every", "5m", "--pane", pane)
    idle = add(env, tmux_server, "status?", "--every", "5m", "--pane", pane, "--deliver", "when-idle")
    skip = add(env, tmux_server, "status?", "--every", "5m", "--pane", pane, "--deliver", "skip-if-busy")
    assert tick(env, tmux_server, NOW) == {
        imm: "held-busy: draft",
        idle: "held-busy: draft",
        skip: "skipped-busy: draft",
    }
    assert logged(env, tmux_server) == {skip: ["skipped-busy: draft"]}  # holds are not logged
    assert tmux_server.capture(pane) == before  # nothing typed, nothing cleared
    assert "a draft a human typed but did not send" in before


def test_a_hookless_agent_gets_its_state_from_the_screen(env, tmux_server):
    pane, _ = replay(tmux_server, "claude/idle_after_turn")
    assert option(tmux_server, pane, "@rk_pane_agent_state") == ""
    entry = add(env, tmux_server, "anything?", "--idle-every", "3m", "--pane", pane)
    assert tick(env, tmux_server, NOW) == {}
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{NOW}"
    assert option(tmux_server, pane, "@rk_pane_agent_source") == f"screen:{NOW}"
    # the idle-every ladder now has an anchor: due 3 min after the screen saw the agent at rest
    upcoming = json.loads(
        rk(["cron", "next", entry, "-n", "1", "-L", tmux_server.name, "--json"], {**env, "RK_NOW": str(NOW + 1)}).stdout
    )["result"]["fires"]
    assert [f["ts"] for f in upcoming] == [NOW + 180]
    assert tick(env, tmux_server, NOW + 120) == {}


def test_a_stuck_active_state_is_corrected_on_a_settled_screen_and_the_hold_ends(env, tmux_server, tmp_path):
    """An Esc in Claude fires no hook: the pane reads active for good. Past the
    staleness bound the tick looks, sees an idle composer twice, writes idle
    (marked as the screen's), and a when-idle fire goes through."""
    received = tmp_path / "received"
    pane, pid = replay(tmux_server, "claude/interrupted", received)
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{NOW - 600}:{pid}")
    entry = add(env, tmux_server, "still there?", "--every", "5m", "--pane", pane, "--deliver", "when-idle")
    assert tick(env, tmux_server, NOW) == {entry: "delivered"}
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{NOW}:{pid}"
    assert option(tmux_server, pane, "@rk_pane_agent_source") == f"screen:{NOW}"
    wait_for(lambda: received.exists() and received.read_text() == "still there?\n", message="submitted once")


def test_a_fresh_busy_state_costs_no_look(env, tmux_server):
    pane, pid = replay(tmux_server, "claude/interrupted")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{NOW - 5}:{pid}")
    entry = add(env, tmux_server, "busy?", "--every", "5m", "--pane", pane, "--deliver", "when-idle")
    assert tick(env, tmux_server, NOW) == {entry: "held-busy: active"}
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"active:{NOW - 5}:{pid}"  # untouched
    assert option(tmux_server, pane, "@rk_pane_agent_source") == ""


def test_a_dialog_is_never_typed_into(env, tmux_server):
    pane, pid = replay(tmux_server, "claude/permission_dialog")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{NOW - 120}:{pid}")  # Notification not yet in
    before = tmux_server.capture(pane)
    imm = add(env, tmux_server, "1", "--every", "5m", "--pane", pane)
    skip = add(env, tmux_server, "y", "--every", "5m", "--pane", pane, "--deliver", "skip-if-busy")
    assert tick(env, tmux_server, NOW) == {imm: "held-busy: waiting", skip: "skipped-busy: waiting"}
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"waiting:{NOW}:{pid}"  # the look saw the dialog
    assert tmux_server.capture(pane) == before


def test_a_limited_agent_is_not_prompted_and_the_reset_is_learnt(env, tmux_server):
    pane, pid = replay(tmux_server, "claude/limit_reached")
    hit = NOW - 60
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"limited:{hit}:{pid}")  # StopFailure rate_limit
    entry = add(env, tmux_server, "continue", "--every", "5m", "--pane", pane)
    waker = add(env, tmux_server, "continue", "--wake-on", "limit-reset", "--wake-debounce", "0s", "--pane", pane)
    screen = (FIXTURES / "claude/limit_reached.txt").read_text(encoding="utf-8")
    printed = next(line for line in screen.splitlines() if "You've hit your" in line).split("resets ")[1].split(" ")[0]
    minute = int(datetime.strptime(f"2026-12-01 {printed}", "%Y-%m-%d %I:%M%p").replace(tzinfo=UTC).timestamp())
    reset = minute + MINUTE + RESET_MARGIN  # the printed minute may last to its last second
    stamp = datetime.fromtimestamp(reset, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert tick(env, tmux_server, NOW) == {entry: f"skipped-limited: resets {stamp}"}
    assert option(tmux_server, pane, "@rk_pane_agent_source") == f"screen:{hit}:{reset}"
    assert tick(env, tmux_server, reset - 60) == {entry: f"skipped-limited: resets {stamp}"}  # not over: no waker
    after = tick(env, tmux_server, reset + 30)  # over, and the screen is at rest: limit-reset fires once
    assert after[waker] == "delivered" and after.get(entry, "delivered") == "delivered"
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{reset + 30}:{pid}"
    assert waker not in tick(env, tmux_server, reset + 400)

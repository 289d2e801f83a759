"""Claude Code's session registry on a real tmux server: a stand-in `claude`
(tests/fixtures/fake_claude.py) keeps its registry file as 2.1.332 does, and an Esc
ends its turn with no hook. A tick that would not yet look at the fresh `active`
state reads the registry, looks, and corrects the state; the screen still decides."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.store.claude_sessions import Sessions, config_home
from tests.standin import option, stand_in_window

pytestmark = [pytest.mark.tmux, pytest.mark.shell]


def stand_in(env, server, registry: bool) -> tuple[str, int]:
    """A pane whose process is the stand-in `claude`, mid-turn (a minute long); (pane, pid)."""
    environ = {"HOME": env["HOME"], "FAKE_CLAUDE_TURN": "60"}
    if registry:
        environ["FAKE_CLAUDE_REGISTRY"] = "1"
    pane = stand_in_window(server, environ)
    pid = int(server.display(pane, "#{pane_pid}"))
    server.run("send-keys", "-t", pane, "-l", "hello")
    server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: "esc to interrupt" in server.capture(pane), message="its turn running")
    return pane, pid


def watch(env, server, pane: str, now: int) -> None:
    """An entry on the pane (not due), so that the tick's look covers it."""
    run_rk(["cron", "add", "later?", "--every", "1h", "--pane", pane, "-L", server.name], {**env, "RK_NOW": str(now)})


def tick(env, server, at: int) -> None:
    run_rk(["cron", "tick", "-L", server.name, "--json"], {**env, "RK_NOW": str(at)})


def registry_status(env, pane: str, pid: int) -> str:
    found = Sessions().status_for(pid, pane, config_home(env))
    return found.status if found else ""


def test_an_esc_the_registry_saw_is_corrected_by_the_next_tick(env, tmux_server, tmp_path):
    pane, pid = stand_in(env, tmux_server, registry=True)
    now = int(time.time())
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{now}:{pid}")
    watch(env, tmux_server, pane, now)
    assert registry_status(env, pane, pid) == "busy"
    tmux_server.run("send-keys", "-t", pane, "Escape")
    wait_for(lambda: registry_status(env, pane, pid) == "idle", message="the registry idle after the Esc")
    tick(env, tmux_server, now + 2)  # well inside STALE_AFTER: only the registry makes it look
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"idle:{now + 2}:{pid}"
    assert option(tmux_server, pane, "@rk_pane_agent_source") == f"screen:{now + 2}"
    assert option(tmux_server, pane, "@rk_pane_turn_end").startswith("interrupted:")


def test_without_a_registry_the_fresh_state_waits_for_staleness(env, tmux_server, tmp_path):
    """The control: the same Esc with no registry file is not seen by that tick."""
    pane, pid = stand_in(env, tmux_server, registry=False)
    now = int(time.time())
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{now}:{pid}")
    watch(env, tmux_server, pane, now)
    tmux_server.run("send-keys", "-t", pane, "Escape")
    wait_for(lambda: "Interrupted" in tmux_server.capture(pane), message="the interrupted screen")
    tick(env, tmux_server, now + 2)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"active:{now}:{pid}"


def test_the_registry_alone_never_ends_a_turn_the_screen_shows_running(env, tmux_server, tmp_path):
    pane, pid = stand_in(env, tmux_server, registry=True)
    now = int(time.time())
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{now}:{pid}")
    watch(env, tmux_server, pane, now)
    path = Path(config_home(env)) / "sessions" / f"{pid}.json"
    doc = json.loads(path.read_text()) | {"status": "idle", "statusUpdatedAt": (now + 1) * 1000}
    path.write_text(json.dumps(doc))  # a registry that says idle while the turn still runs
    assert registry_status(env, pane, pid) == "idle"
    tick(env, tmux_server, now + 2)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == f"active:{now}:{pid}"
    assert "esc to interrupt" in tmux_server.capture(pane)

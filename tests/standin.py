"""The stand-in Claude Code (tests/fixtures/fake_claude.py) in a window of a private tmux
server, and the one entry a tmux test ticks: what the stand-in tests set up alike."""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC
from pathlib import Path

from conftest import wait_for

from rk.core.schedule.entry import CreatedBy, Entry, Target
from rk.engine.runtime import Runtime
from rk.store.config import Settings

FAKE_CLAUDE = Path(__file__).resolve().parent / "fixtures" / "fake_claude.py"


def program_window(server, argv: str, environ: dict[str, str] | None = None, name: str = "claude") -> str:
    """A new window of `server` whose process is the Python script `argv` (its path and
    arguments) run as `name` with `environ`, once in front; its pane id."""
    flags = [x for key, value in (environ or {}).items() for x in ("-e", f"{key}={value}")]
    pane = server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", *flags, f"exec -a {name} {sys.executable} {argv}"
    ).strip()
    wait_for(lambda: server.display(pane, "#{pane_current_command}") == name, message=f"{name} in front")
    return pane


def stand_in_window(server, environ: dict[str, str], name: str = "claude") -> str:
    """A window running the stand-in as `name` with `environ` (its HOME, FAKE_CLAUDE_*
    knobs), its composer drawn; its pane id."""
    pane = program_window(server, str(FAKE_CLAUDE), environ, name)
    wait_for(lambda: "? for shortcuts" in server.capture(pane), timeout=20, message="its composer")
    return pane


def option(server, pane: str, name: str) -> str:
    """The pane's option `name` ("" when unset)."""
    return server.run("show-options", "-pqv", "-t", pane, name).strip()


def write_entry(state: Path, server_name: str, pane: str, created: int, **fields) -> Entry:
    """The server's one entry, `e1` on `pane` made at `created` (the rest `fields`), written
    to its entries file in `state` (made private when missing)."""
    state.mkdir(mode=0o700, exist_ok=True)
    entry = Entry(id="e1", target=Target("pane", pane), created_by=CreatedBy(at=created), **fields)
    (state / f"{server_name}.yaml").write_text(json.dumps({"entries": [entry.to_yaml()]}))  # JSON is YAML
    return entry


def tick_runtime(server, state: Path) -> Runtime:
    """A tick's runtime on `server` with its state in `state`, on the wall clock (UTC), notifying no one."""
    return Runtime(
        state_dir=state,
        settings=Settings(),
        environ=dict(server.env) | {"RK_STATE_DIR": str(state)},
        zone=UTC,
        clock=lambda: int(time.time()),
        notify=lambda *a: "",
    )

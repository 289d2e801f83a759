"""Roles and the operator window.

A role is the window option `@rk_win_role`; entries can target it and it
re-resolves to whatever window carries it, so a role target never orphans.
`operator` is a server-wide radio: setting it on one window clears it from
the others. `rk operator` makes sure one window per server carries it, running
an agent command (started as argv, not through a shell, with the variables it
is given: the command line carries what the operator is allowed, see
rk.agent.setup.permissions).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence

from rk.core.environ import ROLE_OPTION
from rk.tmux.server import Server, TmuxError, literal

OPERATOR = "operator"


def windows(server: Server) -> list[tuple[str, str, str]]:
    """(window id, role, name) of every window."""
    fields = ("window_id", ROLE_OPTION, "window_name")
    return [(r["window_id"], r[ROLE_OPTION], r["window_name"]) for r in server.listing("list-windows", fields)]


def set_role(server: Server, pane: str, role: str | None) -> str:
    """Set (or, with None, clear) the role of the window holding `pane`; returns the window id."""
    window = server.display(pane, "#{window_id}").strip()
    if not window:
        raise TmuxError(f"no window for pane {pane}")
    if role is None:
        server.set_window_option(window, ROLE_OPTION, None)
        return window
    if role == OPERATOR:
        for other, other_role, _ in windows(server):
            if other != window and other_role == OPERATOR:
                server.set_window_option(other, ROLE_OPTION, None)
    server.set_window_option(window, ROLE_OPTION, role)
    return window


def find_operator(server: Server) -> str | None:
    """The window carrying role operator, else one named exactly `operator`."""
    rows = windows(server)
    for window, role, _ in rows:
        if role == OPERATOR:
            return window
    for window, _, name in rows:
        if name == OPERATOR:
            return window
    return None


def ensure_operator(
    server: Server, argv: Sequence[str], home: str, env: Mapping[str, str] | None = None
) -> tuple[bool, str]:
    """Return (created, window id); create the operator window, running `argv` with `env`
    on top of the server's environment, only if none exists."""
    existing = find_operator(server)
    if existing:
        server.set_window_option(existing, ROLE_OPTION, OPERATOR)
        return False, existing
    if not argv:
        raise ValueError("the operator command is empty")
    if shutil.which(argv[0], path=(server.env or {}).get("PATH")) is None and "/" not in argv[0]:
        raise ValueError(
            f"operator command not found: {argv[0]} (set operator_command in the config or pass --command)"
        )
    sessions = [s for s in server.run("list-sessions", "-F", "#{session_name}").splitlines() if s]
    if sessions:
        window = server.run(
            "new-window",
            "-d",
            "-t",
            f"={sessions[0]}:",
            "-n",
            OPERATOR,
            "-c",
            literal(home),  # tmux expands -c as a format
            *_env_flags(env),
            "-P",
            "-F",
            "#{window_id}",
            "--",
            *argv,
        ).strip()
    else:  # pragma: no cover - a live server always has a session
        window = server.run(
            "new-session",
            "-d",
            "-s",
            OPERATOR,
            "-n",
            OPERATOR,
            "-c",
            literal(home),
            *_env_flags(env),
            "-P",
            "-F",
            "#{window_id}",
            "--",
            *argv,
        ).strip()
    server.set_window_option(window, ROLE_OPTION, OPERATOR)
    return True, window


def _env_flags(env: Mapping[str, str] | None) -> list[str]:
    """`-e NAME=VALUE` for each variable the new window gets."""
    return [flag for name, value in (env or {}).items() for flag in ("-e", f"{name}={value}")]

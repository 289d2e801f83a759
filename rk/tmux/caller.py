"""Placing a caller: the tmux server above a process, its socket, and the pane.

The decision is `rk.core.pane.caller.place`; this module reads what it needs:
the process's ancestors (`rk.host.process.ancestors`), the socket of the first
tmux server among them and, from that socket, the server's panes (one
`list-panes -a`, which also says the server's pid, so a socket counts only
when the server answering on it is the ancestor itself).

The socket is looked for, cheapest first, among: `$TMUX`'s (a hint: it counts
only if its server is the ancestor); the `$TMUX` tmux gave the pane's process
(its initial environment in /proc; Codex starts its MCP servers with no tmux
variables at all); the `-S`/`-L` of the server's own command line; then the
sockets of the socket directories, at most MAX_SOCKETS asked in all, each
given a short timeout. Before tmux is run on a socket, the kernel is asked who
listens on it (`SO_PEERCRED`, or `LOCAL_PEERPID` on macOS): only the ancestor
itself counts, so a socket of another server, or of a program that speaks tmux's
protocol to forge its answers, is never asked; a dead socket costs no process.
"""

from __future__ import annotations

import os
import socket as sockets
import struct
import sys
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from rk.core.environ import ROLE_OPTION
from rk.core.pane import caller as decide
from rk.core.pane.caller import Hints, PaneRow, Placed, hints, server_index, socket_of_argv
from rk.core.pane.program import Proc
from rk.host.process import ancestors, environ_of, tty_device
from rk.tmux.server import Server, TmuxError, format_number, parse_records, record_format

#: At most this many sockets are asked for the server's pid.
MAX_SOCKETS = 16
#: Seconds each socket is given to answer.
PROBE_TIMEOUT = 2.0
#: The fields of a pane the placing reads (the server's pid with each).
FIELDS = ("pid", "pane_id", "pane_pid", "pane_tty", "session_name", ROLE_OPTION)


#: macOS's `getsockopt(SOL_LOCAL, LOCAL_PEERPID)` (not in Python's socket module).
_SOL_LOCAL, _LOCAL_PEERPID = 0, 0x002


def listener(socket: str, timeout: float = 0.5) -> int | None:
    """The pid of the process listening on the unix socket `socket` as the kernel says
    (0: nobody answers, or another user's; None: this system cannot tell)."""
    sock = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(socket)
        if hasattr(sockets, "SO_PEERCRED"):
            pid, uid, _ = struct.unpack("3i", sock.getsockopt(sockets.SOL_SOCKET, sockets.SO_PEERCRED, 12))
            return pid if uid == os.getuid() else 0
        if sys.platform == "darwin":
            return int(struct.unpack("i", sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, 4))[0])
        return None
    except OSError:
        return 0
    finally:
        sock.close()


def _rows(socket: str, server_pid: int, environ: Mapping[str, str]) -> list[PaneRow] | None:
    """The panes of the server on `socket` if that server is `server_pid` (the listener
    the kernel names and the `#{pid}` tmux prints); None otherwise."""
    if listener(socket) not in (server_pid, None):
        return None
    mark = os.urandom(6).hex()
    server = Server(socket_path=socket, env=environ)
    try:
        out = server.run("list-panes", "-a", "-F", record_format(FIELDS, mark), timeout=PROBE_TIMEOUT)
        records = parse_records(out, FIELDS, mark)
    except TmuxError:
        return None
    if not records or any(format_number(r["pid"]) != server_pid for r in records):
        return None
    return [
        PaneRow(
            r["pane_id"], format_number(r["pane_pid"]), tty_device(r["pane_tty"]), r["session_name"], r[ROLE_OPTION]
        )
        for r in records
    ]


def _socket_dirs(environ: Mapping[str, str], server_env: Mapping[str, str]) -> list[Path]:
    """`<TMUX_TMPDIR or /tmp>/tmux-<uid>` as the server saw it, as we see it, and the default."""
    tmpdirs = [server_env.get("TMUX_TMPDIR", ""), environ.get("TMUX_TMPDIR", ""), "/tmp"]
    return list(dict.fromkeys(Path(t or "/tmp") / f"tmux-{os.getuid()}" for t in tmpdirs))


def _listed(directory: Path) -> list[str]:
    try:
        names = sorted(os.listdir(directory))[: MAX_SOCKETS * 4]
    except OSError:
        return []
    return [str(directory / name) for name in names]


def candidates(claims: Hints, server: Proc, pane_process: Proc, environ: Mapping[str, str]) -> Iterator[str]:
    """The sockets that may be `server`'s, cheapest and likeliest first (repeats included)."""
    yield claims.socket
    yield hints(environ_of(pane_process.pid)).socket
    path, name = socket_of_argv(server.argv)
    yield path
    server_env = environ_of(server.pid)
    dirs = _socket_dirs(environ, server_env)
    for directory in dirs:
        yield str(directory / name)
    for directory in dirs:
        yield from _listed(directory)


def find_server(
    claims: Hints, server: Proc, pane_process: Proc, environ: Mapping[str, str]
) -> tuple[str, list[PaneRow] | None]:
    """(the socket `server` answers on, its panes), or ("", None) when none of the
    first MAX_SOCKETS absolute candidate sockets is that server's."""
    asked: set[str] = set()
    for socket in candidates(claims, server, pane_process, environ):
        if not socket.startswith("/") or socket in asked:
            continue
        if len(asked) >= MAX_SOCKETS:
            break
        asked.add(socket)
        rows = _rows(socket, server.pid, environ)
        if rows is not None:
            return socket, rows
    return "", None


def place(environ: Mapping[str, str], pid: int | None = None) -> Placed:
    """Where the process `pid` (by default this one) runs, proven from its ancestors;
    `environ`'s TMUX/TMUX_PANE are hints only (`rk.core.pane.caller`)."""
    chain = ancestors(os.getpid() if pid is None else pid)
    claims = hints(environ)
    index = server_index(chain)
    if index is None:
        return decide.place(chain, "", None, claims)
    socket, rows = find_server(claims, chain[index], chain[index - 1], environ)
    return decide.place(chain, socket, rows, claims)


def refresh(placed: Placed, environ: Mapping[str, str]) -> Placed:
    """`placed` with its session and role read again (one tmux process): a role can change
    between two tool calls. Unknown when the pane or its server is gone or replaced."""
    if not placed.proven:
        return placed
    fields = ("pid", "pane_id", "pane_pid", "session_name", ROLE_OPTION)
    mark = os.urandom(6).hex()
    try:
        if listener(placed.socket) not in (placed.server_pid, None):
            raise TmuxError("another listener")
        out = Server(socket_path=placed.socket, env=environ).run(
            "display-message", "-p", "-t", placed.pane, record_format(fields, mark), timeout=PROBE_TIMEOUT
        )
        rows = parse_records(out, fields, mark)
    except TmuxError:
        rows = []
    now = rows[0] if len(rows) == 1 else {}
    if (now.get("pane_id"), format_number(now.get("pid", "")), format_number(now.get("pane_pid", ""))) != (
        placed.pane,
        placed.server_pid,
        placed.pane_pid,
    ):
        return Placed(
            socket=placed.socket, server_pid=placed.server_pid, note=f"pane {placed.pane} is gone or replaced"
        )
    return replace(placed, session=now["session_name"], role=now[ROLE_OPTION])

"""The official MCP SDK client for tests, talking to `rk mcp` started where an agent
would start it: below a pane's process on a private tmux server.

`rk mcp` places its caller from the process tree, so a test must start it as a
descendant of a pane's process. `RelayPane` makes a pane whose program is
`tests/pane_relay.py`; each session then runs `python -m rk mcp` below it, and
the SDK's `stdio_client` runs `tests/pane_connect.py`, which carries its stdin and
stdout to the relay. A session may set or unset environment variables for `rk mcp`
(`hints`: a spoofed TMUX_PANE, another server's TMUX, or none at all, as Codex).

    relay = RelayPane.start(tmux_server, role="operator")   # a new window of `main`
    relay.serve(env, lambda s: s.call("cron_list"), hints={"TMUX_PANE": "%0"})
    relay.run([sys.executable, "-m", "rk", "mcp"], env, input=raw_json_rpc_lines)
    mcp_session_in_pane(tmux_server, env, body, session="other")   # start, serve, stop
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from conftest import wait_for

from rk.tmux.server import Server, TmuxError, child_env

HERE = Path(__file__).resolve().parent
RELAY = HERE / "pane_relay.py"
CONNECT = HERE / "pane_connect.py"
#: The variables a relayed command gets from the pane unless a test says otherwise.
TMUX_VARIABLES = ("TMUX", "TMUX_PANE")


class Reply:
    def __init__(self, result) -> None:
        self.error = bool(result.is_error)
        self.text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")

    def doc(self):
        assert not self.error, self.text
        return json.loads(self.text)

    def result(self):
        doc = self.doc()
        assert doc["ok"] is True, doc
        return doc["result"]

    def __repr__(self) -> str:
        return f"Reply(error={self.error}, text={self.text!r})"


class Session:
    """A synchronous face on an SDK ClientSession running in its own event loop."""

    def __init__(self, loop, session) -> None:
        self.loop, self.session = loop, session

    def call(self, tool: str, /, **arguments) -> Reply:  # positional-only: `name` may be an input
        future = asyncio.run_coroutine_threadsafe(self.session.call_tool(tool, arguments), self.loop)
        return Reply(future.result(timeout=60))

    def tools(self):
        return asyncio.run_coroutine_threadsafe(self.session.list_tools(), self.loop).result(timeout=60).tools


def serve_params(params, body):
    """Start the server `params` describe, hand `body` a Session, return what it returns."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def run():
        with open(os.devnull, "w") as errlog:  # the server's own log lines; the replies are what is tested
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await asyncio.to_thread(body, Session(loop, session))

    try:
        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=300)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)


def serve(env, body):
    """`python -m rk mcp` as a child of this process (outside tmux), with `env`."""
    from mcp import StdioServerParameters

    return serve_params(StdioServerParameters(command=sys.executable, args=["-m", "rk", "mcp"], env=dict(env)), body)


def header(argv: list[str], env: Mapping[str, str], hints: Mapping[str, str | None] | None = None) -> dict:
    """The relay's opening line: `argv` with `env` (its TMUX variables left out: the
    pane's own count), then `hints` applied (a value sets a variable, None unsets it)."""
    out = {k: v for k, v in env.items() if k not in TMUX_VARIABLES}
    unset = []
    for name, value in (hints or {}).items():
        if value is None:
            unset.append(name)
        else:
            out[name] = value
    return {"argv": argv, "env": out, "unset": unset, "cwd": os.getcwd()}


@dataclass
class RelayPane:
    """A pane of `server` whose program is the relay (or a shell running it, `under_shell`):
    a new window of `session`, or the first of a new session of that name."""

    server: Server
    pane: str
    window: str
    socket: str
    directory: str

    @classmethod
    def start(
        cls, server: Server, *, session: str = "main", under_shell: bool = False, role: str | None = None
    ) -> RelayPane:
        directory = tempfile.mkdtemp(prefix="relay")  # short: a unix socket's path has ~107 bytes
        socket = os.path.join(directory, "s")
        argv = [sys.executable, str(RELAY), socket]
        if under_shell:  # the relay as a child of the pane's shell (`; true`: no exec)
            argv = ["/bin/sh", "-c", " ".join(f"'{a}'" for a in argv) + "; true"]
        fmt = ("-P", "-F", "#{pane_id} #{window_id}")
        try:
            server.run("has-session", "-t", f"={session}")
            out = server.run("new-window", "-d", "-t", f"={session}:", *fmt, *argv)
        except TmuxError:  # a session of its own
            out = server.run("new-session", "-d", "-s", session, "-x", "200", "-y", "50", *fmt, *argv)
        pane, window = out.split()
        if role is not None:
            server.set_window_option(window, "@rk_win_role", role)
        wait_for(lambda: os.path.exists(socket), timeout=10, message="the relay's socket")
        return cls(server, pane, window, socket, directory)

    @classmethod
    def adopt(cls, server: Server, pane: str) -> RelayPane:
        """Make an existing pane a relay: its program is replaced (`respawn-pane -k`), its id,
        window, session and role stay. The relay's directory is under the test's TMUX_TMPDIR,
        which the tmux fixture removes."""
        directory = tempfile.mkdtemp(prefix="relay", dir=os.environ.get("TMUX_TMPDIR") or None)
        socket = os.path.join(directory, "s")
        server.run("respawn-pane", "-k", "-t", pane, sys.executable, str(RELAY), socket)
        window = server.display(pane, "#{window_id}").strip()
        wait_for(lambda: os.path.exists(socket), timeout=10, message="the relay's socket")
        return cls(server, pane, window, socket, directory)

    def stop(self) -> None:
        subprocess.run(
            self.server.argv("kill-pane", "-t", self.pane), capture_output=True, env=child_env(self.server.env)
        )
        shutil.rmtree(self.directory, ignore_errors=True)

    def run(
        self, argv: list[str], env: Mapping[str, str], hints=None, input: bytes = b"", timeout: float = 30
    ) -> bytes:
        """Run `argv` below the pane; its stdout (after `input` on its stdin)."""
        import socket as sockets

        conn = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        conn.settimeout(timeout)
        with conn:
            conn.connect(self.socket)
            conn.sendall(json.dumps(header(argv, env, hints)).encode() + b"\n" + input)
            conn.shutdown(sockets.SHUT_WR)
            chunks = []
            while data := conn.recv(65536):
                chunks.append(data)
        return b"".join(chunks)

    def serve(self, env: Mapping[str, str], body: Callable, hints: Mapping[str, str | None] | None = None):
        """`python -m rk mcp` below the pane, driven by the SDK client: `body(Session)`'s result."""
        from mcp import StdioServerParameters

        line = json.dumps(header([sys.executable, "-m", "rk", "mcp"], env, hints))
        params = StdioServerParameters(command=sys.executable, args=[str(CONNECT), self.socket, line], env=dict(env))
        return serve_params(params, body)


def mcp_session_in_pane(server: Server, env: Mapping[str, str], body: Callable, *, hints=None, **start):
    """`body(Session)` against `rk mcp` below a new relay pane of `server` (see `RelayPane.start`)."""
    relay = RelayPane.start(server, **start)
    try:
        return relay.serve(env, body, hints)
    finally:
        relay.stop()

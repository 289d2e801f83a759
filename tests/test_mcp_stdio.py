"""`rk mcp`'s stdio (rk.channels.mcp_stdio, rk.core.channels.jsonrpc): every malformed
JSON-RPC message is answered with the error the specification names and the server
stays up; a client that closes stdin ends the process within a second, its
`agent_await`s cancelled. Raw bytes over a real `python -m rk mcp`."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import wait_for
from mcp_client import CONNECT, RelayPane, header

from rk.channels.mcp_stdio import OverLong, client_lines
from rk.core.channels import jsonrpc
from rk.core.channels.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR

PING = b'{"jsonrpc":"2.0","id":"p","method":"ping"}'
#: (what, line, error code, the id answered): every kind of malformed message.
MALFORMED = [
    ("not JSON", b"{bad json", PARSE_ERROR, None),
    ("trailing garbage", PING + b" trailing", PARSE_ERROR, None),
    ("invalid UTF-8", b"\xff\xfe" + PING, PARSE_ERROR, None),
    ("NaN is not JSON", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', PARSE_ERROR, None),
    ("a batch", b"[" + PING + b"]", INVALID_REQUEST, None),
    ("an empty batch", b"[]", INVALID_REQUEST, None),
    ("a string", b'"ping"', INVALID_REQUEST, None),
    ("a number", b"42", INVALID_REQUEST, None),
    ("null", b"null", INVALID_REQUEST, None),
    ("no method", b'{"jsonrpc":"2.0","id":6}', INVALID_REQUEST, 6),
    ("method not a string", b'{"jsonrpc":"2.0","id":7,"method":5}', INVALID_REQUEST, 7),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":8,"method":"ping"}', INVALID_REQUEST, 8),
    ("no jsonrpc", b'{"id":"nine","method":"ping"}', INVALID_REQUEST, "nine"),
    ("id an array", b'{"jsonrpc":"2.0","id":[9],"method":"ping"}', INVALID_REQUEST, None),
    ("id a fraction", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST, None),
    ("id a boolean", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST, None),
    ("id null", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, None),
    ("params an array", b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":[1]}', INVALID_PARAMS, 10),
    ("params a string", b'{"jsonrpc":"2.0","id":11,"method":"ping","params":"x"}', INVALID_PARAMS, 11),
    ("a response and an error at once", b'{"jsonrpc":"2.0","id":12,"result":{},"error":{}}', INVALID_REQUEST, 12),
    ("unknown method", b'{"jsonrpc":"2.0","id":13,"method":"no/such"}', METHOD_NOT_FOUND, 13),
    # too long: answered with the id written before the parameters, so the call fails at once
    ("huge", b'{"jsonrpc":"2.0","id":14,"method":"ping","x":"' + b"a" * (jsonrpc.MAX_LINE + 10) + b'"}', -32600, 14),
    (
        "huge, its only id inside the parameters",
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"id":"x","a":"' + b"a" * (jsonrpc.MAX_LINE + 10) + b'"}}',
        -32600,
        None,
    ),
]

#: Never answered: a notification (even a malformed one), a response, a blank line.
SILENT = [
    b'{"jsonrpc":"2.0","method":"notifications/whatever","params":[1]}',
    b'{"jsonrpc":"2.0","id":99,"result":5}',
    b"   ",
]


# -- the verdict, pure ---------------------------------------------------------------------


@pytest.mark.parametrize(("what", "line", "code", "request_id"), [m for m in MALFORMED if m[2] != METHOD_NOT_FOUND])
def test_a_malformed_line_gets_its_error(what, line, code, request_id):
    verdict = jsonrpc.too_long(line[: jsonrpc.HEAD]) if len(line) > jsonrpc.MAX_LINE else jsonrpc.judge(line)
    assert not verdict.passes, what
    reply = json.loads(verdict.reply)
    assert (reply["jsonrpc"], reply["id"], reply["error"]["code"]) == ("2.0", request_id, code), what
    assert len(verdict.reply) < 200 and verdict.reply.endswith(b"\n"), "one short line, never the message echoed"


@pytest.mark.parametrize(
    "line",
    [
        PING,
        b'{"jsonrpc":"2.0","id":-3,"method":"tools/list","params":{}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":1,"result":{}}',  # a response to a request of the server's
        b'{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"no"}}',
        b'{"jsonrpc":"2.0","id":2,"method":"no/such"}',  # the SDK answers -32601
    ],
)
def test_a_well_formed_line_passes(line):
    assert jsonrpc.judge(line).passes


def test_a_notification_is_never_answered():
    verdict = jsonrpc.judge(b'{"jsonrpc":"2.0","method":"notifications/x","params":[1]}')
    assert (verdict.passes, verdict.reply) == (False, b"")
    assert jsonrpc.after_sdk_refusal(b'{"jsonrpc":"2.0","id":1,"result":5}').reply == b"", "nor a response"


def _lines_of(path: Path, data: bytes, limit: int = jsonrpc.MAX_LINE) -> list[bytes | OverLong]:
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return list(client_lines(fd, limit))
    finally:
        os.close(fd)


def test_client_lines_are_bounded(tmp_path):
    huge = b"x" * (3 * jsonrpc.MAX_LINE)
    data = b"one\n\n" + huge + b"\ntwo\n" + huge  # the last, unterminated, is too long too
    head = OverLong(b"x" * jsonrpc.HEAD)  # a too-long line keeps only its head, for its id
    assert _lines_of(tmp_path / "in", data) == [b"one", b"", head, b"two", head]


def test_a_line_of_exactly_the_limit_is_read_whole(tmp_path):
    line = b"y" * 1000
    got = _lines_of(tmp_path / "in", line + b"\n" + line + b"y\n" + line, limit=1000)
    assert got == [line, OverLong(line + b"y"), line]


# -- a real rk mcp, raw bytes --------------------------------------------------------------


class Raw:
    """`python -m rk mcp`, spoken to in bytes: a child of this process, or (`relay`) started
    below a pane's process through the connector, as an agent in that pane would start it."""

    def __init__(self, env: dict[str, str], relay: RelayPane | None = None) -> None:
        argv = [sys.executable, "-m", "rk", "mcp"]
        if relay is not None:
            argv = [sys.executable, str(CONNECT), relay.socket, json.dumps(header(argv, env))]
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.pending = b""

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 30.0) -> dict:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self.proc.stdout], [], [], left)[0], "no reply"
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            assert chunk, "rk mcp closed its stdout"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def initialize(self) -> None:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode())
        assert self.reply()["id"] == 0
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def test_every_malformed_request_is_answered_and_the_server_stays_up(env):
    raw = Raw(env)
    try:
        raw.initialize()
        for what, line, code, request_id in MALFORMED:
            raw.send(line)
            reply = raw.reply()
            assert (reply.get("id"), reply.get("error", {}).get("code")) == (request_id, code), what
            raw.send(PING)
            assert raw.reply() == {"jsonrpc": "2.0", "id": "p", "result": {}}, f"after {what}"
        for unanswered in SILENT:
            raw.send(unanswered)
            raw.send(PING)
            assert raw.reply() == {"jsonrpc": "2.0", "id": "p", "result": {}}, f"no reply to {unanswered!r}"
    finally:
        raw.close()


def _caller(tmux_server, env) -> tuple[RelayPane, str]:
    """A relay pane to start rk mcp below, and the pane it awaits (busy)."""
    pane = tmux_server.display("main:", "#{pane_id}").strip()
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", "active:1")
    return RelayPane.start(tmux_server), pane


def test_closing_stdin_during_agent_await_ends_rk_mcp_within_a_second(tmux_server, env):
    relay, pane = _caller(tmux_server, env)
    wakes = Path(env["RK_STATE_DIR"]) / "await"
    raw = Raw(env, relay)
    try:
        raw.initialize()
        for n in (1, 2):  # two waits at once, each in its own worker thread
            args = {"until": ["idle"], "pane": pane, "timeout": "10m"}
            call = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "agent_await", "arguments": args},
            }
            raw.send(json.dumps(call).encode())
        wait_for(lambda: wakes.exists() and len(list(wakes.iterdir())) == 2, timeout=30, message="both waits")
        begun = time.monotonic()
        assert raw.proc.stdin is not None
        raw.proc.stdin.close()
        raw.proc.wait(timeout=30)
        took = time.monotonic() - begun
        assert took < 1.0, f"rk mcp lived {took:.2f} s after its client's stdin closed"
        assert raw.proc.returncode == 0
        assert not list(wakes.iterdir()), "each wait ended (its socket removed)"
    finally:
        raw.close()

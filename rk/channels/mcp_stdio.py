"""`rk mcp`'s stdio: a filter in front of the SDK's, and the run's end when the client goes.

The SDK serves on fds 0 and 1 (`MCPServer.run("stdio")`, its public way). Here
fds 0 and 1 become two pipes, and two threads stand between them and the client:

- the reader takes the client's lines, each at most `jsonrpc.MAX_LINE` bytes
  (a longer one is answered and skipped unread, so no line grows the process),
  and judges each (`rk.core.channels.jsonrpc`, then the SDK's message model): a
  good line goes on to the SDK, a malformed one gets its JSON-RPC error reply,
  which the SDK would never send. At the end of the client's input it sets the
  run's cancel switch (`rk.host.cancel`: every `agent_await` returns at once)
  and ends the SDK's input, so the SDK returns and `rk mcp` exits;
- the writer copies the SDK's lines to the client. It and the reader's replies
  write whole lines under one lock, so no two replies ever interleave.

When the SDK returns, every tool call's thread has finished (a call cancelled
at the end of input waits for its thread), so `exit_now` ends the process at
once, without the interpreter's teardown: a fifth of a second of CPU per
process, seconds when ten clients leave at once on a small machine.
"""

from __future__ import annotations

import logging
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rk.core.channels import jsonrpc
from rk.host import cancel

CHUNK = 65536
#: How long the end of a run waits for the SDK's last lines to reach the client.
DRAIN = 5.0


class Wire:
    """The client's stdout: whole lines, one writer at a time; a client gone is no error."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.broken = False

    def send(self, line: bytes) -> None:
        with self.lock:
            if not self.broken:
                self.broken = not write_all(self.fd, line)


def write_all(fd: int, data: bytes) -> bool:
    """Write every byte (False when the other end is gone)."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        return False
    return True


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, CHUNK)
    except OSError:
        return b""  # the client's end broke: the end of its input


@dataclass(frozen=True)
class OverLong:
    """A line over the limit: only its first bytes were kept (to answer its id)."""

    head: bytes


def _head(pending: bytearray, chunk: bytes, start: int, end: int) -> bytes:
    """The first `jsonrpc.HEAD` bytes of the line held in `pending` and `chunk[start:end]`."""
    room = max(jsonrpc.HEAD - len(pending), 0)
    return bytes(pending[: jsonrpc.HEAD]) + chunk[start : min(end, start + room)]


def client_lines(fd: int, limit: int = jsonrpc.MAX_LINE) -> Iterator[bytes | OverLong]:
    """Each line of `fd` without its newline; `OverLong` for a line over `limit` bytes, whose
    bytes past its head are dropped as they come (never held)."""
    pending = bytearray()
    head = b""
    over = False
    while chunk := _read(fd):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if not over and len(pending) + end - start > limit:
                over, head = True, _head(pending, chunk, start, end)
            yield OverLong(head) if over else bytes(pending + chunk[start:end])
            pending.clear()
            over = False
            start = end + 1
        if not over and len(pending) + len(chunk) - start > limit:
            over, head = True, _head(pending, chunk, start, len(chunk))
            pending.clear()
        if not over:
            pending += chunk[start:]
    if over:
        yield OverLong(head)
    elif pending.strip():
        yield bytes(pending)


def verdict(line: bytes | OverLong) -> jsonrpc.Verdict:
    """`jsonrpc.judge`, then the SDK's own message model (what it would drop unanswered)."""
    if isinstance(line, OverLong):
        return jsonrpc.too_long(line.head)
    found = jsonrpc.judge(line)
    if found.passes:
        from mcp.types import jsonrpc_message_adapter
        from pydantic import ValidationError

        try:
            jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError:
            return jsonrpc.after_sdk_refusal(line)
    return found


def from_client(wire_in: int, to_sdk: int, wire: Wire, switch: cancel.Cancel) -> None:
    """The reader: judged lines to the SDK or answered; at the end, cancel and close."""
    try:
        for line in client_lines(wire_in):
            judged = verdict(line)
            if judged.passes and isinstance(line, bytes):
                if not write_all(to_sdk, line + b"\n"):
                    break
            else:
                if judged.reply:
                    wire.send(judged.reply)
                print(f"rk mcp: dropped a message: {judged.why}", file=sys.stderr, flush=True)
    finally:
        switch.set()
        os.close(to_sdk)


def to_client(from_sdk: int, stop: int, wire: Wire) -> None:
    """The writer: the SDK's output, line by line, until `stop` is readable and the pipe is empty."""
    pending = b""
    while True:
        ready = select.select([from_sdk, stop], [], [])[0]
        if from_sdk not in ready:
            os.set_blocking(from_sdk, False)  # stopping: the SDK is done; take what is left
            try:
                chunk = os.read(from_sdk, CHUNK)
            except BlockingIOError:
                chunk = b""
            if not chunk:
                break
        else:
            chunk = _read(from_sdk)
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            wire.send(line + b"\n")
    if pending:
        wire.send(pending)


def serve_stdio(run: Callable[[], None]) -> None:
    """Serve with `run` (the SDK's stdio server) behind the filter, until the client's input ends."""
    switch = cancel.Cancel()
    token = cancel.CURRENT.set(switch)  # before the SDK starts its tasks: they and their threads inherit it
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    sdk_in, to_sdk = os.pipe()
    from_sdk, sdk_out = os.pipe()
    stop_r, stop_w = os.pipe()
    os.dup2(sdk_in, 0)
    os.dup2(sdk_out, 1)
    os.close(sdk_in)
    os.close(sdk_out)
    wire = Wire(wire_out)
    reader = threading.Thread(target=from_client, args=(wire_in, to_sdk, wire, switch), daemon=True)
    writer = threading.Thread(target=to_client, args=(from_sdk, stop_r, wire), daemon=True)
    reader.start()
    writer.start()
    try:
        run()
    finally:
        switch.set()
        os.write(stop_w, b".")
        writer.join(DRAIN)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        cancel.CURRENT.reset(token)


def exit_now(code: int = 0) -> None:
    """End the process now: the streams flushed, the interpreter's teardown skipped."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)

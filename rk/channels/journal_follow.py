"""The far end of a journal follow: this host's state changes, streamed to another
host's ticker over ssh as they are written.

One JSON object a line: `{"line": {...journal line...}, "at": [inode, checksum,
offset]}` for each state change (`at`: the mark to resume after it; the line
stamped with `by`, `role` and `window`, and a pane that vanished journaled `gone`
first: `rk.channels.far_end`); `{"alive": ts}`
at the start (the follower knows the link came up) and after `HEARTBEAT` quiet
seconds (a dead link is found by the write that fails); and first `{"gap": true}`
when the mark asked for is gone (the journal rotated twice since): lines were
lost there, and the follower says so.
State writers ping the await sockets (`rk.store.state_journal.wake`); this end
listens on one, so a change goes out within milliseconds, with a look at the
file every `POLL` seconds besides.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import time
from collections.abc import Mapping
from typing import BinaryIO

from rk.channels.far_end import FarEnd
from rk.core.environ import AWAIT_DIR
from rk.host import private
from rk.host.nudge import Listener
from rk.store.journal_feed import Mark, feed_of

HEARTBEAT = 5.0
POLL = 1.0
#: Seconds between looks at the delivery log while a line waits for it (`rk.channels.far_end`).
HOLD = 0.2


def serve(state_dir: str, slug: str, start: Mark, out: BinaryIO, env: Mapping[str, str]) -> int:
    """Stream until the reader goes away (a write fails); 0."""
    directory = private.private_dir(os.path.join(state_dir, AWAIT_DIR))
    listener = Listener(os.path.join(directory, f"follow-{os.getpid()}-{secrets.token_hex(4)}.sock"))
    feed = feed_of(state_dir, slug, start)
    far = FarEnd(state_dir, slug, start, env)
    try:
        _write(out, {"alive": int(time.time())})  # at once: the follower knows the link is up
        last_write = time.monotonic()
        if feed.gap:
            _write(out, {"gap": True})
        far.look(int(time.time()))  # the panes as they are: the first lines' roles
        while True:
            lines = far.stamp(feed.poll_marked(), int(time.time()))
            for fields, at in lines:
                _write(out, {"line": fields, "at": list(at)})
            far.look(int(time.time()))  # after the lines (out of their way): a pane gone is journaled, and read next
            now = time.monotonic()
            if lines:
                last_write = now
            elif now - last_write >= HEARTBEAT:
                _write(out, {"alive": int(time.time())})
                last_write = now
            ready, _, _ = select.select([listener], [], [], HOLD if far.holding else min(POLL, HEARTBEAT))
            if ready:
                listener.drain()
    except (BrokenPipeError, ConnectionResetError, OSError):
        return 0
    finally:
        listener.close()


def _write(out: BinaryIO, message: dict[str, object]) -> None:
    out.write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
    out.flush()

"""The far end of `rk events -f --host`: this host's events streamed to another host's rk
over ssh, as `rk events -f --json` would print them, with heartbeats.

The request (on `rk remote`'s stdin) is `{"follow": "events", "server": NAME, "since":
unix seconds or null, "panes": ["%3", ...]}`. One JSON object a line goes back:
`{"alive": ts}` at once (the link is up) and after `HEARTBEAT` quiet seconds (a link
that died is found by the write that fails, and the reader drops a link that stays
silent past its own bound), and `{"event": {...}}` for each event: first those of
the history (`since` on), then each as it happens (`rk.channels.event_stream`);
`{"problem": "..."}` when its files cannot be read (the reader stops asking).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rk.core.environ import is_pane_id
from rk.core.errors import ExitStatus, RkError
from rk.core.log.events import MAX_PANES, Event

HEARTBEAT = 5.0
FOLLOW = "events"


class RequestError(RkError, ValueError, status=ExitStatus.USAGE):
    """A follow request rk refuses; the message says why."""


@dataclass(frozen=True)
class EventsQuery:
    """Which events to stream: of which server, since when, of which panes (none: all)."""

    server: str = "default"
    since: int | None = None
    panes: frozenset[str] = frozenset()

    def request(self) -> dict[str, object]:
        return {"follow": FOLLOW, "server": self.server, "since": self.since, "panes": sorted(self.panes)}


def query_of(request: dict[str, object]) -> EventsQuery:
    """The query of a follow request (RequestError naming what is wrong)."""
    from rk.store.config import ConfigError, check_slug

    server, since, panes = request.get("server", "default"), request.get("since"), request.get("panes", [])
    try:
        check_slug(server if isinstance(server, str) else "")
    except ConfigError as exc:
        raise RequestError(f"rk remote: {exc}") from None
    if since is not None and not (type(since) is int and 0 <= since < 1 << 63):
        raise RequestError("rk remote: an events follow's since is unix seconds, or null")
    if (
        not isinstance(panes, list)
        or len(panes) > MAX_PANES
        or not all(isinstance(p, str) and is_pane_id(p) for p in panes)
    ):
        raise RequestError(f"rk remote: an events follow's panes are at most {MAX_PANES} pane ids like %3")
    assert isinstance(server, str)
    return EventsQuery(server, since, frozenset(panes))


def serve(state_dir: str, query: EventsQuery, out: BinaryIO) -> int:
    """Stream until the reader goes away (a write fails); 0."""
    from rk.channels import event_stream
    from rk.store.config import ServerFiles

    files = ServerFiles(Path(state_dir), query.server)
    found: queue.Queue[Event] = queue.Queue()
    try:
        _write(out, {"alive": int(time.time())})
        try:
            snap = event_stream.read(files.dir, files.slug, files.log, query.since, query.panes)
        except OSError as exc:  # said, and the reader stops asking: it would only fail again
            _write(out, {"problem": f"cannot read its events: {exc.strerror or exc}"})
            return 0
        for event in snap.events:
            _write(out, {"event": event.to_dict()})

        def pump() -> None:
            for event in event_stream.follow(files.dir, files.slug, files.log, snap, query.panes):
                found.put(event)

        threading.Thread(target=pump, name="rk-events-serve", daemon=True).start()
        while True:
            try:
                _write(out, {"event": found.get(timeout=HEARTBEAT).to_dict()})
            except queue.Empty:
                _write(out, {"alive": int(time.time())})
    except (BrokenPipeError, ConnectionResetError, OSError):
        return 0


def _write(out: BinaryIO, message: dict[str, object]) -> None:
    out.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n")
    out.flush()

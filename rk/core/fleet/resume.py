"""Another host's events followed across dropped links: nothing lost, nothing twice.

`rk events -f --host NAME` reads the host's events over ssh; when the link drops it
connects again and asks for the events since `MARGIN` seconds before the newest one
it showed (the far end's events are not strictly in time order: a delivery's log line
can come after a later state change). What comes again is what was shown already:
each event shown in that window is remembered (`key`, counted, since two events can
be alike), and on a new connection as many of each as were shown are passed over
before anything is shown. `by` and `from` are left out of the key: the far end works
them out again from its history, and a delivery that reached its log late can change
`by` on the second telling.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Seconds before the newest event shown that a reconnection asks from.
MARGIN = 300

Key = tuple[object, ...]
#: The fields that make an event itself (not `from` and `by`: worked out, see above).
KEY_FIELDS = ("kind", "pane", "to", "turn_end", "source", "agent", "entry", "reason", "outcome")


def key(event: Mapping[str, object]) -> Key:
    return (event.get("ts"), *(event.get(name) for name in KEY_FIELDS))


class Seen:
    """The events shown of one host, over however many connections."""

    def __init__(self, since: int | None = None) -> None:
        self.since = since  #: the user's `--since` (None: every event there)
        self.newest: int | None = None  #: the newest event's time shown
        self.window: dict[Key, int] = {}  #: the events shown since `newest - MARGIN`, counted
        self.pending: dict[Key, int] = {}  #: of those, not told again yet on this connection

    def connect(self) -> int | None:
        """A new connection begins: the `since` to ask it for."""
        self.pending = dict(self.window)
        if self.newest is None:
            return self.since
        start = self.newest - MARGIN
        return start if self.since is None else max(start, self.since)

    def admit(self, event: Mapping[str, object]) -> bool:
        """Whether to show the event (False: shown already, told again after a reconnection)."""
        k = key(event)
        if self.pending.get(k, 0) > 0:
            self.pending[k] -= 1
            return False
        self.window[k] = self.window.get(k, 0) + 1
        ts = event.get("ts")
        if type(ts) is int and (self.newest is None or ts > self.newest):
            self.newest = ts
            floor = ts - MARGIN
            for old in [k for k in self.window if not (type(k[0]) is int and k[0] >= floor)]:
                del self.window[old]
        return True

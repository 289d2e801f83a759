"""The ticker's watch of active agent panes, between its polls (`rk.tmux.watch` per server).

Every server the ticker serves is glimpsed every LOOK_EVERY seconds while it has an
`active` pane. A server with none is quiet: glimpsed again after a tick of it (a
hook's state write nudges one, so a turn that begins is watched at once) or after
QUIET_EVERY seconds (a state written with no nudge). The 30 s poll, the nudges and
the due instants are the ticker's as before: the watch only shortens its sleeps.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from rk.core.log.diagnostics import first_line
from rk.core.pane.watch import LOOK_EVERY
from rk.engine.runtime import Runtime
from rk.tmux.watch import Watch

#: Seconds between two glimpses of a server that had no active pane.
QUIET_EVERY = 5.0

log = logging.getLogger("rk.engine.watch")


class Watcher:
    """The watches of the served servers, and when each is next glimpsed (monotonic s)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.watches: dict[str, Watch] = {}
        self.next_at: dict[str, float] = {}  #: server → its next glimpse (absent: at once)

    def wake(self, slug: str | None) -> None:
        """A tick of `slug` (None: of every server) ran: glimpse it at the next step."""
        if slug is None:
            self.next_at.clear()
        else:
            self.next_at.pop(slug, None)

    def wait(self, served: Collection[str], mono: float) -> float:
        """Seconds until the next server is due a glimpse (<= 0: step now)."""
        return min((self.next_at.get(slug, mono) - mono for slug in served), default=QUIET_EVERY)

    def step(self, served: Collection[str], mono: float) -> None:
        """Glimpse every served server that is due; errors are logged, never raised."""
        for slug in set(self.watches) - set(served):
            del self.watches[slug]
            self.next_at.pop(slug, None)
        for slug in sorted(served):
            if self.next_at.get(slug, mono) > mono:
                continue
            watch = self.watches.get(slug)
            if watch is None:
                watch = self.watches[slug] = Watch(self.runtime.server(slug), self.runtime.zone)
            try:
                report = watch.step(self.runtime.clock())
            except Exception as exc:  # one server's trouble never stops the ticker
                log.error("watch failed for %s: %s: %s", slug, type(exc).__name__, first_line(exc))
                self.next_at[slug] = mono + QUIET_EVERY
                continue
            self.next_at[slug] = mono + (LOOK_EVERY if report.active else QUIET_EVERY)
            for pane, state in report.corrected:
                log.info("%s - watch %s %s", slug, pane, state)
            for error in report.errors:
                log.debug("%s - watch %s", slug, error)

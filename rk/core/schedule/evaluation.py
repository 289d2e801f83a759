"""What one `due()` call found (`rk.core.schedule.due`): the fires, the missed
occurrences, the quiet and held entries, and the lines the caller writes for them
(`Evaluation.ledger`). Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rk.core.cost import caps
from rk.core.log.delivery import LogLine, Reason, Status
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.log.wake_mark import marked
from rk.core.schedule.wake import (
    Observation,
)


@dataclass(frozen=True)
class Fire:
    """A fire: `pane` is "" for an absent fire. `rung` is the backoff rung (0 otherwise).
    `refused` says why an absent fire's pane, though present, is not typed into.

    `occurrence` is the cron occurrence a schedule fire is for (also for a catch-up
    fire, whose `due_at` is now; 0 for every other fire). A wake fire names the pane
    whose change fired it (`wake.trigger`; for `limit-reset`, the target), that pane's
    new state (`gone` when it vanished), its window's name ("" once the pane is gone)
    and who started the turn whose change it was (`rk.core.log.cause`: `rk` or `human`;
    "" for `limit-reset`); all are "" for any other fire. The placeholders read them."""

    entry: str
    reason: str
    pane: str
    rung: int
    due_at: int
    at: int
    refused: str = ""
    occurrence: int = 0
    wake_pane: str = ""
    wake_state: str = ""
    wake_window: str = ""
    wake_by: str = ""
    #: a wake on the world (`world.WorldEdge.fire`): `{signal}`, `{signal_data}`, its line's mark
    signal: str = ""
    signal_data: str = ""
    mark: str = ""


@dataclass(frozen=True)
class Missed:
    """A cron occurrence seen too late to fire, logged once per gap."""

    entry: str
    occurrence: int


@dataclass(frozen=True)
class Quiet:
    """A fire that came due outside the entry's active hours: logged `skipped-quiet`."""

    entry: str
    reason: str
    pane: str


@dataclass(frozen=True)
class Evaluation:
    fires: tuple[Fire, ...]
    absent: tuple[Fire, ...]
    missed: tuple[Missed, ...]
    diagnostics: tuple[Diagnostic, ...]
    next_cursor: Mapping[str, Observation]
    #: entries whose anchor lies beyond now: the caller logs `clock` `rescheduled` at now for each
    clock_back: tuple[str, ...] = ()
    #: fires due outside their active hours: the caller logs `skipped-quiet` for each
    quiet: tuple[Quiet, ...] = ()
    #: occurrences (cron, at) that came due while the server is paused: the caller logs
    #: `skipped-paused` for each, which drops them (never caught up, never `missed` later)
    paused: tuple[Quiet, ...] = ()
    #: cron catch-ups that begin to wait for their active hours: the caller logs `held-quiet` for each
    waiting: tuple[Quiet, ...] = ()
    #: the first capped fire of an entry's local day: the caller logs `skipped-cap: day` for each
    capped: tuple[Quiet, ...] = ()
    #: fires of entries whose day's tokens reached their budget: the caller logs `skipped-budget` for each
    budget: tuple[Quiet, ...] = ()
    #: wakes on the world that fire: the mark each of their `wake` lines carries (`rk.core.log.wake_mark`)
    marks: Mapping[str, str] = field(default_factory=dict)
    #: the `dormant` lines of entries that go dormant now (`rk.core.schedule.dormant`): the caller logs each
    dormant: tuple[LogLine, ...] = ()

    def ledger(self, now: int) -> list[tuple[LogLine, int]]:
        """The lines the caller writes at `now` before any fire, in the tick's order, each
        with the instant it is for (a `missed` line: its occurrence): `clock` `rescheduled`,
        `missed`, `skipped-quiet`, `skipped-paused`, `held-quiet`, `skipped-budget`,
        `skipped-cap`, `dormant`. The tick, the simulator and the forecast write exactly these."""
        out = [(LogLine(now, e, "", Reason.CLOCK, Status.RESCHEDULED), now) for e in self.clock_back]
        out += [(LogLine(now, m.entry, "", Reason.SCHEDULE, Status.MISSED), m.occurrence) for m in self.missed]
        for status, skips in (
            (Status.SKIPPED_QUIET, self.quiet),
            (Status.SKIPPED_PAUSED, self.paused),
            (Status.HELD_QUIET, self.waiting),
            (Status.SKIPPED_BUDGET, self.budget),
        ):
            out += [(LogLine(now, q.entry, q.pane, q.reason, status), now) for q in skips]
        out += [(caps.skipped_line(q.entry, q.pane, q.reason, now), now) for q in self.capped]
        out += [(line, now) for line in self.dormant]
        return [(self.marked(line), at) for line, at in out]

    def marked(self, line: LogLine) -> LogLine:
        """A wake on the world's `wake` line (held, capped, quiet…) names what it consumed."""
        mark = self.marks.get(line.entry, "") if line.reason == Reason.WAKE else ""
        return replace(line, outcome=marked(line.outcome, mark)) if mark else line

    @property
    def in_typing_order(self) -> tuple[Fire, ...]:
        """The resolved fires in the order they are carried out, then the absent ones: the
        longest-waiting first (by `due_at`; ties in `due()`'s order). A tick types one
        prompt per agent pane (`rk.core.schedule.dispose.Seen.typed`), so a fire held
        behind another's goes before the next fresh one instead of losing to it each tick
        (two entries due every poll into one pane alternate, neither starves)."""
        return (*sorted(self.fires, key=lambda fire: fire.due_at), *self.absent)

    @property
    def debounced(self) -> tuple[str, ...]:
        """Entries whose wake edge is pending behind its debounce."""
        return tuple(d.entry for d in self.diagnostics if d.reason == Diag.WAKE_DEBOUNCED)

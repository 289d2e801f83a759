"""Per-entry caps: at most N deliveries a local day (`max_per_day`), at most N in all (`max_total`).

Both count the entry's own `delivered` lines in the log (a manual `rk cron run` that
delivered counts too), so like every other anchor they are derived, never stored.

The day is the local day in the entry's zone (`due.entry_zone`: its cron `tz`, else
local time), from one local midnight to the next, so a DST day is 23 h or 25 h long
(`day_bounds`). A fire belongs to the day of its occurrence (a cron or `at` schedule
fire) or else to the day it fires. When that day already holds N deliveries the fire
is capped: the first capped fire of the day logs `skipped-cap: day`, later ones are
silent (no line a poll), and a capped occurrence is never `missed` nor caught up; the
next local midnight lifts it. After its N-th delivery in all, a `max_total` entry
retires: the tick removes it from the file and logs `retired: max-total`.

Pure: no clock, no I/O. `due()` composes `day_cap` and `spent`; `next_due()` and the
forecast read `reopens`; the log's rotation keeps `kept_deliveries` lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

from rk.core.log.delivery import LogLine, LogView, Reason, Status, status_of
from rk.core.schedule.entry import At, Entry

#: The detail of a day cap's line: `skipped-cap: day`.
DAY = "day"
#: The detail of a total cap's retirement line: `retired: max-total`.
MAX_TOTAL = "max-total"


def _midnight(day: date, zone: tzinfo) -> int:
    """The first instant of `day` in `zone`: its 00:00, or where a DST gap swallows
    00:00, the end of the gap (the earlier offset read for a missing wall time)."""
    return int(datetime.combine(day, time(0), tzinfo=zone).timestamp())


def day_bounds(ts: int, zone: tzinfo) -> tuple[int, int]:
    """The local day of `ts` in `zone` as unix seconds `[start, end)`: from its midnight
    to the next, 23 h on a spring-forward day and 25 h on a fall-back day."""
    day = datetime.fromtimestamp(ts, zone).date()
    start, end = _midnight(day, zone), _midnight(day + timedelta(days=1), zone)
    return min(start, ts), max(end, ts + 1)  # a zone whose clock steps back over midnight


def _own(log: LogView, entry_id: str, status: Status) -> list[LogLine]:
    return [line for line in log.own(entry_id) if status_of(line.outcome) == status]


def delivered_between(log: LogView, entry_id: str, start: int, end: int) -> int:
    """The entry's `delivered` lines stamped in `[start, end)`."""
    return sum(1 for t in log.delivered_stamps(entry_id) if start <= t < end)


def delivered(log: LogView, entry_id: str) -> int:
    """The entry's `delivered` lines, all of them (what `max_total` counts)."""
    return len(log.delivered_stamps(entry_id))


@dataclass(frozen=True)
class DayCap:
    """The day cap as it stands for one fire: the day's bounds, its count and limit."""

    limit: int
    count: int
    start: int
    end: int
    said: bool = False  #: the day's `skipped-cap` line is already written

    @property
    def capped(self) -> bool:
        return self.count >= self.limit

    @property
    def words(self) -> str:
        """`capped: 3/3 today` (the forecast's why_not, the diagnostic)."""
        return f"capped: {self.count}/{self.limit} today"


def day_cap(entry: Entry, log: LogView, at: int, zone: tzinfo) -> DayCap | None:
    """The day cap of a fire that belongs to instant `at` (its occurrence, else now), in
    the entry's `zone`; None without `max_per_day`."""
    if not entry.max_per_day:
        return None
    start, end = day_bounds(at, zone)
    count = delivered_between(log, entry.id, start, end)
    said = count >= entry.max_per_day and any(start <= line.ts for line in _own(log, entry.id, Status.SKIPPED_CAP))
    return DayCap(entry.max_per_day, count, start, end, said)


def reopens(entry: Entry, log: LogView, now: int, zone: tzinfo) -> int:
    """When a day-capped entry may fire again: the next local midnight, if today is
    capped (0 when it is not)."""
    cap = day_cap(entry, log, now, zone)
    return cap.end if cap is not None and cap.capped else 0


def spent(entry: Entry, log: LogView) -> bool:
    """The entry has had its `max_total` deliveries: it fires no more and retires."""
    return bool(entry.max_total) and delivered(log, entry.id) >= entry.max_total


def left(entry: Entry, log: LogView) -> int | None:
    """Deliveries left before a `max_total` entry retires (None without one)."""
    if not entry.max_total:
        return None
    return max(0, entry.max_total - delivered(log, entry.id))


def retiring(entries: Sequence[Entry], log: LogView) -> list[Entry]:
    """The entries whose total cap is spent: the tick (and the simulator) removes them.
    A one-shot (`at`) is not among them: it retires after its line anyway."""
    return [e for e in entries if not isinstance(e.schedule, At) and spent(e, log)]


def retired_line(entry: Entry, now: int) -> LogLine:
    """The line a retirement logs: `retired: max-total`."""
    return LogLine(now, entry.id, "", Reason.GC, f"{Status.RETIRED}: {MAX_TOTAL}")


def skipped_line(entry_id: str, pane: str, reason: str, now: int) -> LogLine:
    """The one line a capped day logs: `skipped-cap: day`."""
    return LogLine(now, entry_id, pane, reason, f"{Status.SKIPPED_CAP}: {DAY}")


def kept_deliveries(entry: Entry) -> int:
    """How many of the entry's newest `delivered` lines a rotation must keep so the
    caps count the same afterwards (a count saturates at its limit), and dormancy
    (`rk.core.schedule.dormant`) counts its unanswered ones the same."""
    return max(entry.max_per_day, entry.max_total, entry.dormant_after)


def capping(entry: Entry, log: LogView, now: int, occurrence: int, zone: tzinfo) -> DayCap | None:
    """The full day that caps a fire at `now` (for cron/at `occurrence`, 0: none): the
    day it fires in, else the occurrence's own day (a capped day's occurrence is not
    caught up later); None when neither is full."""
    for at in (now, occurrence) if occurrence else (now,):
        cap = day_cap(entry, log, at, zone)
        if cap is not None and cap.capped:
            return cap
    return None

"""Quiet hours: `active_hours: "08:00-19:00"`, the times of day an entry may fire.

Ranges are `HH:MM-HH:MM` in the entry's zone (its cron `tz`, else local time),
separated by commas; a range whose end is before its start wraps midnight
(`22:00-06:00`), and `00:00-24:00` is the whole day. A start is inclusive, an
end exclusive. A fire that comes due outside every range is logged
`skipped-quiet` (see `rk.core.schedule.due`), except a cron occurrence with
`catch_up: once`, which waits and fires at the start of the next range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from rk.core.bounds import quote
from rk.core.errors import ExitStatus, RkError

_RANGE = re.compile(r"([0-9]{2}):([0-9]{2})-([0-9]{2}):([0-9]{2})")
_DAY = 24 * 60


class HoursError(RkError, ValueError, status=ExitStatus.USAGE):
    """An `active_hours` value that does not read; the message is the user-facing gist."""


@dataclass(frozen=True)
class ActiveHours:
    """Ranges of minutes of the day, `[start, end)`; `end` may be below `start` (wraps)."""

    ranges: tuple[tuple[int, int], ...]

    @staticmethod
    def parse(text: str) -> ActiveHours:
        ranges = []
        for part in text.split(","):
            m = _RANGE.fullmatch(part.strip())
            if not m:
                raise HoursError(f"active hours {quote(text.strip())}: want HH:MM-HH:MM[,HH:MM-HH:MM…]")
            h1, m1, h2, m2 = (int(g) for g in m.groups())
            if h1 > 23 or m1 > 59 or m2 > 59 or h2 > 24 or (h2 == 24 and m2):
                raise HoursError(f"active hours {quote(part.strip())}: not a time of day")
            start, end = h1 * 60 + m1, h2 * 60 + m2
            if start == end:
                raise HoursError(f"active hours {quote(part.strip())}: an empty range (for all day write 00:00-24:00)")
            ranges.append((start, end))
        return ActiveHours(tuple(ranges))

    @property
    def text(self) -> str:
        return ",".join(f"{_hhmm(a)}-{_hhmm(b)}" for a, b in self.ranges)

    def contains_minute(self, minute: int) -> bool:
        for start, end in self.ranges:
            if start < end and start <= minute < end:
                return True
            if start > end and (minute >= start or minute < end):
                return True
        return False

    def active_at(self, ts: int, zone: tzinfo) -> bool:
        """Whether unix second `ts` falls inside a range, read on the zone's wall clock."""
        wall = datetime.fromtimestamp(ts, zone)
        return self.contains_minute(wall.hour * 60 + wall.minute)

    def next_start(self, ts: int, zone: tzinfo) -> int:
        """The first instant after `ts` at which a range begins (a wall minute a
        daylight-saving jump skips counts at the instant after the jump)."""
        base = datetime.fromtimestamp(ts, zone).replace(second=0, microsecond=0)
        best: int | None = None
        for day in range(0, 3):
            midnight = (base + timedelta(days=day)).replace(hour=0, minute=0)
            for start, _ in self.ranges:
                instant = _first_instant_at(midnight.replace(tzinfo=None) + timedelta(minutes=start), zone)
                if instant > ts and (best is None or instant < best):
                    best = instant
            if best is not None:
                return best
        return ts + _DAY * 60  # pragma: no cover - every range starts within a day


def _first_instant_at(wall: datetime, zone: tzinfo) -> int:
    """The first instant whose wall clock reads `wall` or later: the wall time itself
    (its first pass when it repeats), or, when a jump skips it, the jump."""
    guess = int(wall.replace(tzinfo=zone, fold=0).timestamp())
    if datetime.fromtimestamp(guess, zone).replace(tzinfo=None) == wall:
        return guess
    lo, hi = guess - 4 * 3600, guess  # the wall clock jumped over `wall` within the hours before `guess`
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).replace(tzinfo=None) >= wall:
            hi = mid
        else:
            lo = mid
    return hi


def _hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"

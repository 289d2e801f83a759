"""Quiet hours: `active_hours: "08:00-19:00"`, the times of day an entry may fire.

Ranges are `HH:MM-HH:MM` in the entry's zone (its cron `tz`, else local time),
separated by commas; a range whose end is before its start wraps midnight
(`22:00-06:00`), and `00:00-24:00` is the whole day. A start is inclusive, an
end exclusive. A fire that comes due outside every range is logged
`skipped-quiet` (see `rk.core.schedule.due`), except a cron occurrence with
`catch_up: once`, which waits and fires at the start of the next range.
"""

from __future__ import annotations

import functools
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
        """The first instant after `ts` at which a range opens: the wall clock reaches a
        range's start (on either pass of a repeated hour), a daylight-saving jump skips
        over a start, or a jump back lands inside a range. Only an instant at which the
        entry is active counts: a gap's end that lands outside every range opens nothing.
        (From inside a range, its next start: the next midnight for `00:00-24:00`.)"""
        starts = self._starts(ts, zone)
        for instant in sorted({*starts, *_jumps_after(ts, zone)}):
            if instant > ts and self._opens(instant, starts, zone):
                return instant
        return ts + _DAY * 60  # pragma: no cover - a range opens within days

    def _starts(self, ts: int, zone: tzinfo) -> set[int]:
        """Each range's start on the day before the day of `ts`, that day and the three
        after: every pass of it, or the jump over it."""
        today = datetime.fromtimestamp(ts, zone).replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
        out: set[int] = set()
        for day in range(-1, _DAYS_AHEAD):
            midnight = today + timedelta(days=day)
            for start, _ in self.ranges:
                out.update(_instants_at(midnight + timedelta(minutes=start), zone))
        return out

    def _opens(self, instant: int, starts: set[int], zone: tzinfo) -> bool:
        """Active at `instant`, which is a range's start or ends a quiet stretch (a jump
        that lands outside every range opens nothing)."""
        return self.active_at(instant, zone) and (instant in starts or not self.active_at(instant - 1, zone))


#: How many days after `ts` `next_start` looks (a range that lies in a gap one day opens the next).
_DAYS_AHEAD = 3


@functools.lru_cache(maxsize=4096)
def _instants_at(wall: datetime, zone: tzinfo) -> tuple[int, ...]:
    """Every instant whose wall clock reads `wall` (two when the hour repeats), or, when
    a jump skips it, the instant of the jump (the first whose wall clock reads later)."""
    found = []
    for fold in (0, 1):
        instant = int(wall.replace(tzinfo=zone, fold=fold).timestamp())
        if datetime.fromtimestamp(instant, zone).replace(tzinfo=None) == wall and instant not in found:
            found.append(instant)
    return tuple(found) or (_jump_over(wall, zone),)


def _jump_over(wall: datetime, zone: tzinfo) -> int:
    """The first instant whose wall clock reads later than `wall`, a time a jump skips
    (read with the offset before the jump, `wall` names an instant just after it)."""
    lo, hi = int(wall.replace(tzinfo=zone, fold=0).timestamp()) - 4 * 3600, int(wall.replace(tzinfo=zone).timestamp())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).replace(tzinfo=None) >= wall:
            hi = mid
        else:
            lo = mid
    return hi


def _offset(ts: int, zone: tzinfo) -> timedelta | None:
    return datetime.fromtimestamp(ts, zone).utcoffset()


_UTC_DAY = 86400


def _jumps_after(ts: int, zone: tzinfo) -> list[int]:
    """The instants at which the zone's clock jumps, from the UTC day of `ts` to the days
    `next_start` looks at."""
    first = ts // _UTC_DAY
    return [jump for day in range(first, first + _DAYS_AHEAD + 2) for jump in _jumps_on(day, zone)]


@functools.lru_cache(maxsize=4096)
def _jumps_on(day: int, zone: tzinfo) -> tuple[int, ...]:
    """The instants of UTC day number `day` at which the zone's offset changes (its clock
    jumps): at most one (no zone changes its offset twice in a day)."""
    lo, hi = day * _UTC_DAY, (day + 1) * _UTC_DAY
    if _offset(lo, zone) == _offset(hi, zone):
        return ()
    before = _offset(lo, zone)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _offset(mid, zone) == before:
            lo = mid
        else:
            hi = mid
    return (hi,)


def _hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"

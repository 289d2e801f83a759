"""Cron expressions and their occurrences in a time zone, with Debian's DST rule.

We parse the five fields ourselves and find occurrences on the UTC instant
line. croniter was the plan, and it was dropped for three measured reasons:
it fires a daily 01:30 job twice on the fall-back day (we need Debian's rule,
below); one `get_next` costs ~100 µs, ten times the budget of a 1,000-entry
`due()`; and its field expansion is wrong for equal-bound ranges (`5-5` means
every minute, `5-5/2` every even minute; found by the differential test
against cronsim). The grammar is small and fully checked here.

The daylight-saving rule:

* A *fixed-time* expression (neither the minute nor the hour field starts
  with `*`) whose time falls in a skipped hour fires once, at the first instant
  after the jump; whose time falls in a repeated hour fires once, on the first
  pass.
* Any other expression follows the clock: a wall time that does not exist is
  skipped, a repeated wall time fires in both passes.
* Never two fires for one instant, never a fire at a time that does not exist.

That is Debian cron's rule and the cronsim library's (our differential test
compares against cronsim). Everything is returned as integer unix seconds, so
callers compare instants, never aware datetimes of one zone (which ignores
`fold`).

Zone data is read through `zoneinfo`, which treats the tz database as static
data; no other I/O happens here.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rk.core.bounds import quote
from rk.core.errors import RkError

#: Largest repeated-hour width we look around (Debian cron assumes clock
#: changes of less than 3 hours).
FOLD_MARGIN_MIN = 180
#: Give up looking for an occurrence after this many years (cronsim does 50).
SEARCH_YEARS = 50

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_NAIVE_EPOCH = datetime(1970, 1, 1)
_DAY_MIN = 1440

_NAMES = {
    3: "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec",
    4: "sun|mon|tue|wed|thu|fri|sat",
}
_BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
_FIELD_NAMES = ["minute", "hour", "day-of-month", "month", "day-of-week"]
_MAX_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


class CronError(RkError, ValueError):
    """An expression or zone we cannot use; the message says why."""


def _term_pattern(index: int) -> re.Pattern[str]:
    value = r"[0-9]+"
    if index in _NAMES:
        value = rf"(?:[0-9]+|{_NAMES[index]})"
    return re.compile(rf"^(?:\*|{value}(?:-{value})?)(?:/[0-9]+)?$", re.IGNORECASE)


_TERMS = [_term_pattern(i) for i in range(5)]


def _name_value(index: int, token: str) -> int:
    if token.isascii() and token.isdigit():
        return int(token)
    names = _NAMES[index].split("|")
    return names.index(token.lower()) + (1 if index == 3 else 0)


def _check_field(index: int, text: str) -> None:
    """Reject what standard cron does not accept (reversed ranges, `L`, `W`, `#`, `?`)."""
    lo, hi = _BOUNDS[index]
    for term in text.split(","):
        if not _TERMS[index].match(term):
            raise CronError(f"bad {_FIELD_NAMES[index]} field {quote(text)}")
        base, _, step = term.partition("/")
        if step and len(step) <= 4 and int(step) == 0:
            raise CronError(f"bad {_FIELD_NAMES[index]} field {quote(text)}: step must be positive")
        if step and len(step) > 4:
            raise CronError(f"bad {_FIELD_NAMES[index]} field {quote(text)}: step too large")
        if any(len(part) > 4 for part in base.split("-")):
            raise CronError(f"bad {_FIELD_NAMES[index]} field {quote(text)}: out of range {lo}-{hi}")
        if base == "*":
            continue
        start, _, end = base.partition("-")
        a = _name_value(index, start)
        b = _name_value(index, end) if end else a
        if not (lo <= a <= hi and lo <= b <= hi):
            raise CronError(f"bad {_FIELD_NAMES[index]} field {quote(text)}: out of range {lo}-{hi}")
        if b < a:
            raise CronError(f"bad {_FIELD_NAMES[index]} field {quote(text)}: range end before start")


def _expand(index: int, text: str) -> frozenset[int]:
    """The values of one (already checked) field. `a-b/s` steps from a to b;
    `a/s` from a to the field's end; `*/s` over the whole range (Vixie cron)."""
    lo, hi = _BOUNDS[index]
    values: set[int] = set()
    for term in text.split(","):
        base, _, step_text = term.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            start, end = lo, hi
        else:
            first, _, last = base.partition("-")
            start = _name_value(index, first)
            end = _name_value(index, last) if last else (hi if step_text else start)
        values.update(range(start, end + 1, step))
    if index == 4:
        values = {v % 7 for v in values}  # 7 is Sunday too
    return frozenset(values)


@dataclass(frozen=True)
class CronExpr:
    """A parsed 5-field expression. Build with `CronExpr.parse` (cached)."""

    text: str
    times: tuple[int, ...]  #: sorted minutes of the day (hour*60 + minute)
    doms: frozenset[int]
    months: frozenset[int]
    dows: frozenset[int]  #: 0 = Sunday
    day_and: bool  #: either day field starts with `*`: both must match (else either)
    fixed_time: bool  #: neither minute nor hour starts with `*` (the DST rule above)

    @staticmethod
    @lru_cache(maxsize=4096)
    def parse(text: str) -> CronExpr:
        """Parse exactly five whitespace-separated fields; names allowed for month/day."""
        if not isinstance(text, str) or not text.strip():
            raise CronError("empty cron expression")
        fields = text.split()
        if len(fields) != 5:
            raise CronError(f"want 5 fields (minute hour day-of-month month day-of-week), got {len(fields)}")
        for i, f in enumerate(fields):
            _check_field(i, f)
        minutes, hours, doms, months, dows = (_expand(i, f) for i, f in enumerate(fields))
        day_and = fields[2].startswith("*") or fields[4].startswith("*")
        if day_and and not fields[2].startswith("*"):
            if not any(d <= _MAX_DAYS[m - 1] for m in months for d in doms):
                raise CronError(f"{quote(text)} never matches a real date")
        return CronExpr(
            text=" ".join(fields),
            times=tuple(sorted(h * 60 + m for h in hours for m in minutes)),
            doms=doms,
            months=months,
            dows=dows,
            day_and=day_and,
            fixed_time=not fields[0].startswith("*") and not fields[1].startswith("*"),
        )

    # ------------------------------------------------------------ naive calendar

    def _day_matches(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        dom_ok = d.day in self.doms
        dow_ok = (d.weekday() + 1) % 7 in self.dows
        return (dom_ok and dow_ok) if self.day_and else (dom_ok or dow_ok)

    def _next_day(self, ordinal: int) -> int | None:
        """First matching day ordinal >= `ordinal`."""
        d = date.fromordinal(ordinal)
        limit = d.year + SEARCH_YEARS
        while d.year <= limit:
            if d.month not in self.months:
                y, m = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
                if y > 9999:
                    return None
                d = date(y, m, 1)
                continue
            if self._day_matches(d):
                return d.toordinal()
            if d == date.max:
                return None
            d += timedelta(days=1)
        return None

    def _prev_day(self, ordinal: int) -> int | None:
        """Last matching day ordinal <= `ordinal`."""
        d = date.fromordinal(ordinal)
        limit = d.year - SEARCH_YEARS
        while d.year >= limit:
            if d.month not in self.months:
                first = d.replace(day=1)
                if first == date.min:
                    return None
                d = first - timedelta(days=1)
                continue
            if self._day_matches(d):
                return d.toordinal()
            if d == date.min:
                return None
            d -= timedelta(days=1)
        return None

    def naive_after(self, n: int) -> int | None:
        """First matching naive minute strictly after naive minute `n`."""
        day, mod = divmod(n, _DAY_MIN)
        ordinal = day + _EPOCH_ORDINAL
        if self._day_matches(date.fromordinal(ordinal)):
            i = bisect.bisect_right(self.times, mod)
            if i < len(self.times):
                return day * _DAY_MIN + self.times[i]
        nxt = self._next_day(ordinal + 1)
        if nxt is None:
            return None
        return (nxt - _EPOCH_ORDINAL) * _DAY_MIN + self.times[0]

    def naive_at_or_before(self, n: int) -> int | None:
        """Last matching naive minute at or before naive minute `n`."""
        day, mod = divmod(n, _DAY_MIN)
        ordinal = day + _EPOCH_ORDINAL
        if self._day_matches(date.fromordinal(ordinal)):
            i = bisect.bisect_right(self.times, mod)
            if i > 0:
                return day * _DAY_MIN + self.times[i - 1]
        prv = self._prev_day(ordinal - 1)
        if prv is None:
            return None
        return (prv - _EPOCH_ORDINAL) * _DAY_MIN + self.times[-1]

    # ------------------------------------------------------------ instants

    def instants_of(self, n: int, zone: tzinfo) -> tuple[int, ...]:
        """The unix seconds at which naive minute `n` fires in `zone` (0, 1 or 2)."""
        naive = _NAIVE_EPOCH + timedelta(minutes=n)
        if self.fixed_time:
            return wall_instants(naive, zone)[:1]  # a gap's end, or a repeated time's first pass
        if _offset(naive.replace(tzinfo=zone, fold=0)) < _offset(naive.replace(tzinfo=zone, fold=1)):
            return ()  # skipped wall time: a clock-following expression skips it
        return wall_instants(naive, zone)

    def next_after(self, t: int, zone: tzinfo) -> int | None:
        """The first occurrence strictly after unix second `t`."""
        n = _wall_minute(t, zone) - _fold_margin(t, zone) - 1
        best: int | None = None
        best_n = 0
        while True:
            following = self.naive_after(n)
            if following is None:
                return best
            n = following
            if best is not None and n > best_n + _fold_margin(best, zone):
                return best
            for inst in self.instants_of(n, zone):
                if inst > t and (best is None or inst < best):
                    best, best_n = inst, n

    def latest_in(self, lo: int, hi: int, zone: tzinfo) -> int | None:
        """The latest occurrence `x` with `lo < x <= hi` (unix seconds), or None."""
        if hi <= lo:
            return None
        n = _wall_minute(hi, zone) + _fold_margin(hi, zone)
        floor_n = _wall_minute(lo, zone) - _fold_margin(lo, zone)
        best: int | None = None
        best_n = 0
        while True:
            earlier = self.naive_at_or_before(n)
            if earlier is None or earlier < floor_n:
                return best
            n = earlier
            if best is not None and n < best_n - _fold_margin(best, zone):
                return best
            for inst in self.instants_of(n, zone):
                if lo < inst <= hi and (best is None or inst > best):
                    best, best_n = inst, n
            n -= 1


def wall_instants(naive: datetime, zone: tzinfo) -> tuple[int, ...]:
    """The instants wall time `naive` (whole minutes) names in `zone`, earliest first:
    one; both passes of a repeated time; or, for a time in a gap, the first instant
    after the jump (the fixed-time rule; `--at` reads a time of day by it too)."""
    base = int((naive - _NAIVE_EPOCH).total_seconds())
    off0 = _offset(naive.replace(tzinfo=zone, fold=0))
    off1 = _offset(naive.replace(tzinfo=zone, fold=1))
    if off0 == off1:
        return (base - off0,)
    if off0 > off1:  # repeated wall time: first pass (fold 0) is earlier
        return (base - off0, base - off1)
    return (_gap_end(naive, zone),)


def _offset(dt: datetime) -> int:
    off = dt.utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def _wall_minute(t: int, zone: tzinfo) -> int:
    """The naive local minute (minutes since 1970-01-01 00:00 wall time) of instant `t`."""
    off = _offset(datetime.fromtimestamp(t, zone))
    return (t + off) // 60


def _fold_margin(t: int, zone: tzinfo) -> int:
    """Minutes to look around instant `t` for a repeated wall time: the size of a
    fall-back transition within FOLD_MARGIN of `t`, else 0. A spring-forward gap
    needs no margin (walls map to instants in order there)."""
    span = FOLD_MARGIN_MIN * 60
    before = _offset(datetime.fromtimestamp(t - span, zone))
    at = _offset(datetime.fromtimestamp(t, zone))
    after = _offset(datetime.fromtimestamp(t + span, zone))
    if before <= at <= after:
        return 0  # no transition, or only forward jumps
    if before > at >= after or before >= at > after:
        return min(FOLD_MARGIN_MIN, (before - after) // 60 + 1)
    return FOLD_MARGIN_MIN  # two transitions within hours: look the whole way


def _gap_end(naive: datetime, zone: tzinfo) -> int:
    """The first instant after the jump that skipped wall time `naive`."""
    step = timedelta(minutes=1)
    probe = naive
    for _ in range(FOLD_MARGIN_MIN * 8):
        probe += step
        aware = probe.replace(tzinfo=zone, fold=0)
        if _offset(aware) == _offset(probe.replace(tzinfo=zone, fold=1)):
            return int(aware.timestamp())
    return int(naive.replace(tzinfo=zone, fold=1).timestamp())  # pragma: no cover - absurd zone


@lru_cache(maxsize=256)
def zone_for(name: str) -> tzinfo:
    """The IANA zone `name`, or CronError naming it."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {quote(name)} (use an IANA name like Europe/Berlin)") from None

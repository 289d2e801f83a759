"""What a schedule implies beyond its next fire: the daylight-saving rule `rk cron next`
states, and the busiest hour `add`/`edit` compare with the rate cap. (The fires
themselves are `rk.core.schedule.forecast`'s: the tick's own rules, run forward.)
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from rk.core.log.delivery import RATE_WINDOW as RATE_HOUR
from rk.core.schedule.cronexpr import CronError, CronExpr
from rk.core.schedule.due import cron_zone
from rk.core.schedule.entry import Backoff, Cron, Every, Schedule


def dst_note(sched: Cron, times: list[int], now: int, zone: tzinfo) -> str:
    """One line stating Debian's daylight-saving rule, when `times` (after `now`)
    cross a change of the zone's UTC offset; "" otherwise."""
    offsets = {datetime.fromtimestamp(t, zone).utcoffset() for t in [now, *times]}
    if len(offsets) < 2:
        return ""
    minute, hour = sched.expr.split()[:2]
    if not minute.startswith("*") and not hour.startswith("*"):
        return (
            "daylight saving changes in between: a fixed time that does not exist that day fires once,"
            " right after the jump, and one that repeats fires once, on its first pass"
        )
    return (
        "daylight saving changes in between: wall times that do not exist that day are skipped,"
        " and wall times that repeat fire in both passes"
    )


#: How far ahead `peak_per_hour` looks at a cron expression (its busiest hour within a week).
PEAK_HORIZON = 7 * 86400


def peak_per_hour(sched: Schedule, now: int, zone: tzinfo) -> int:
    """The most fires the schedule alone would make in one hour (0 for a one-shot or
    wake-only entry): what `add`/`edit` compare with the rate cap, so a schedule that
    the cap would halve is said up front. A backoff counts its fastest rung."""
    if isinstance(sched, Every):
        return RATE_HOUR // max(sched.interval, 1)
    if isinstance(sched, Backoff):
        return RATE_HOUR // max(sched.min, 1)
    if not isinstance(sched, Cron):
        return 0
    try:
        expr = CronExpr.parse(sched.expr)
    except CronError:
        return 0
    times: list[int] = []
    t = now
    while len(times) < PEAK_HORIZON // 60:
        nxt = expr.next_after(t, cron_zone(sched, zone))
        if nxt is None or nxt > now + PEAK_HORIZON:
            break
        times.append(nxt)
        t = nxt
    peak, lo = 0, 0
    for hi, ts in enumerate(times):
        while ts - times[lo] >= RATE_HOUR:
            lo += 1
        peak = max(peak, hi - lo + 1)
    return peak

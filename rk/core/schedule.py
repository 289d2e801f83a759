"""Upcoming fire times of one entry (`rk cron next`), from the same rules as `due()`.

every and cron need only the log; backoff needs the target's agent-state epoch
and assumes the target stays quiet (each fire attributed, so the ladder climbs).
A schedule that is due already is listed first with its due time ("due now").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from rk.core import ladder
from rk.core.cronexpr import CronError, CronExpr
from rk.core.due import anchor_of, at_done, cron_verdict, cron_zone, entry_zone, is_paused, waits_for_active_hours
from rk.core.entry import At, Backoff, Cron, Entry, Every, Schedule
from rk.core.facts import TargetFact
from rk.core.log import RATE_WINDOW as RATE_HOUR
from rk.core.log import LogView


@dataclass(frozen=True)
class Upcoming:
    ts: int
    rung: int = 0
    occurrence: int = 0  #: cron: the occurrence this fire is for (`ts` is now for a catch-up)


@dataclass
class Plan:
    fires: list[Upcoming] = field(default_factory=list)
    note: str = ""


def upcoming(
    entry: Entry,
    log: LogView,
    now: int,
    n: int,
    *,
    zone: tzinfo,
    target: TargetFact | None = None,
    poll: int = ladder.POLL,
) -> Plan:
    plan = Plan()
    sched = entry.schedule
    if isinstance(sched, Every):
        t = anchor_of(entry, log) + sched.interval
        if t <= now:
            plan.fires.append(Upcoming(t))
            t = now + sched.interval
        while len(plan.fires) < n:
            plan.fires.append(Upcoming(t))
            t += sched.interval
        return plan
    if isinstance(sched, Cron):
        try:
            expr = CronExpr.parse(sched.expr)
        except CronError as exc:
            plan.note = str(exc)
            return plan
        verdict = cron_verdict(entry, sched, log, now, zone)
        if verdict.due:
            plan.fires.append(Upcoming(verdict.due_at, occurrence=verdict.occurrence))
        t = now
        while len(plan.fires) < n:
            nxt = expr.next_after(t, cron_zone(sched, zone))
            if nxt is None:
                plan.note = "the expression has no further occurrences"
                break
            plan.fires.append(Upcoming(nxt, occurrence=nxt))
            t = nxt
        return plan
    if isinstance(sched, At):
        if not at_done(entry, log):
            plan.fires.append(Upcoming(sched.at))
        else:
            plan.note = "done: it fired (or was missed) and retires"
        return plan
    if isinstance(sched, Backoff):
        if target is None or not target.resolved:
            plan.note = f"next fire depends on the target's agent state: {target.why if target else 'target unknown'}"
            return plan
        if target.epoch <= 0:
            plan.note = "next fire depends on the target's agent state: the pane reports none (no hooks?)"
            return plan
        lo, hi = sched.min, sched.max
        history = log.schedule_history(entry.id)
        for _ in range(n):
            position = ladder.join_anchor(target.epoch, history, lo, hi, poll)
            t = position.next_fire(lo, hi, poll)
            plan.fires.append(Upcoming(t, position.rung + 1))
            history = [*history, max(t, now)]
        plan.note = "assuming the target stays quiet (activity restarts the ladder)"
        return plan
    event = entry.wake_on.event if entry.wake_on else "its wake event"
    plan.note = f"no time of its own: it fires on {event} only"
    return plan


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


def kept_fires(entry: Entry, fires: list[Upcoming], zone: tzinfo, paused_until: int | None = None) -> list[Upcoming]:
    """The fires `upcoming` lists that the tick would carry out, as `due()` rules: one
    due while the server is paused is dropped (`skipped-paused`), one due outside the
    active hours is dropped (`skipped-quiet`), or, a `catch_up: once` cron occurrence,
    moves to the hours' next opening (`held-quiet`, then fired)."""
    hours = entry.active_hours
    out: list[Upcoming] = []
    for item in fires:
        if is_paused(paused_until, item.ts):
            continue
        if hours is not None and not hours.active_at(item.ts, entry_zone(entry, zone)):
            if not waits_for_active_hours(entry):
                continue
            item = Upcoming(hours.next_start(item.ts, entry_zone(entry, zone)), item.rung, item.occurrence)
            if out and out[-1].ts == item.ts:
                continue
        out.append(item)
    return out

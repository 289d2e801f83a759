"""`next_due()`: when the ticker has something to do next, so it sleeps no longer
than it must. Pure, as `due()` is: the same entries, log, targets and now always
give the same instant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, tzinfo

from rk.core.cost import caps
from rk.core.log.delivery import LogView
from rk.core.pane.facts import TargetFact
from rk.core.schedule import retry
from rk.core.schedule.budget import budget_reopens
from rk.core.schedule.cronexpr import CronError, CronExpr
from rk.core.schedule.entry import At, Backoff, Cron, Entry, Every
from rk.core.schedule.ladder import POLL
from rk.core.schedule.verdict import anchor_of, at_done, backoff_verdict, cron_zone, entry_zone
from rk.core.settings import Settings

_NO_TARGET = TargetFact(why="no facts for this entry")


def is_paused(paused_until: int | None, now: int) -> bool:
    """A server pause: None is none, 0 lasts until `resume`, else it lapses at that instant."""
    return paused_until is not None and (paused_until == 0 or now < paused_until)


def next_due(
    entries: Sequence[Entry],
    log: LogView,
    targets: Mapping[str, TargetFact],
    now: int,
    *,
    zone: tzinfo = UTC,
    max_entries: int = Settings.max_entries,
    debounced: Sequence[str] = (),
    poll: int = POLL,
    paused_until: int | None = None,
) -> int | None:
    """The earliest instant after `now` at which some schedule comes due, assuming
    nothing changes meanwhile (the ticker sleeps less than its period for it).

    A wake edge held by its debounce (`debounced`: `Evaluation.debounced`) is
    due when the debounce ends: newest own line + debounce. New wake edges are
    not predictable; they arrive as nudges or on the next poll. While the server
    is paused, what comes due is its lapse and each cron or `at` occurrence (the
    pause drops it with a line at its instant); an entry outside its active hours
    has something to do when they open, a day-capped or budget-stopped one at the
    next midnight in its zone.
    """
    paused = is_paused(paused_until, now)
    best: int | None = None

    def consider(t: int | None, floor: int = 0) -> None:
        """`floor`: a day-capped or budget-stopped entry's next midnight, before which nothing of it is due."""
        nonlocal best
        t = max(t, floor) if t is not None else None
        if t is not None and t > now and (best is None or t < best):
            best = t

    if paused:
        consider(paused_until)
    for entry in entries[:max_entries]:
        if caps.spent(entry, log):
            continue
        if entry.is_muted(now):
            if not entry.muted:
                consider(entry.muted_until)
            continue
        if paused and not isinstance(entry.schedule, (Cron, At)):
            continue
        own = entry_zone(entry, zone)
        floor = 0 if paused else max(caps.reopens(entry, log, now, own), budget_reopens(entry, log, now, own))
        hours = entry.active_hours
        if not paused and hours is not None and not hours.active_at(now, own):
            consider(hours.next_start(now, own), floor)
        consider(retry.retry_at(entry, log), floor)  # a failed delivery's next try (rk.core.schedule.retry)
        sched = entry.schedule
        if isinstance(sched, Every):
            consider(anchor_of(entry, log) + sched.interval, floor)
        elif isinstance(sched, Cron):
            try:
                consider(CronExpr.parse(sched.expr).next_after(now, cron_zone(sched, zone)), floor)
            except CronError:
                continue
        elif isinstance(sched, At):
            if not at_done(entry, log):
                consider(sched.at, floor)
        elif isinstance(sched, Backoff):
            target = targets.get(entry.id, _NO_TARGET)
            if target.resolved and target.epoch > 0:
                verdict = backoff_verdict(entry, sched, log, target, now, poll)
                consider(verdict.due_at, floor)
    held = set(debounced)
    for entry in entries[:max_entries]:
        newest = log.newest(entry.id) if entry.id in held and entry.wake_on else None
        if newest is not None and entry.wake_on is not None:
            consider(newest.ts + entry.wake_on.debounce)
    return best

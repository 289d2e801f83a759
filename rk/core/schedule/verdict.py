"""What each schedule kind says of an entry at now: its `ScheduleVerdict`.

`every`, `cron`, `at` and `backoff` each read the entry's own log lines (its
anchor) and now; backoff reads its target pane's facts too. Pure, as `due()`
is, which composes these with the holds and caps; `next_due()` and the
forecast read the same anchors and zones.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo

from rk.core.log.delivery import LogView, Status, status_of
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import TargetFact
from rk.core.pane.state import AgentState
from rk.core.schedule import ladder
from rk.core.schedule.cronexpr import CronError, CronExpr, zone_for
from rk.core.schedule.entry import CATCH_UP_ONCE, At, Backoff, Cron, Entry, Every
from rk.core.schedule.grace import late_window
from rk.core.schedule.ladder import POLL
from rk.core.schedule.replace import waits_when_busy


@dataclass(frozen=True)
class ScheduleVerdict:
    due: bool = False
    missed: bool = False
    due_at: int = 0
    rung: int = 0
    occurrence: int = 0
    diagnostic: Diagnostic | None = None


def anchor_of(entry: Entry, log: LogView) -> int:
    """every/cron anchor: the newest own line of any outcome but `held-quiet`, else created_by.at."""
    newest = log.anchor(entry.id)
    return newest.ts if newest is not None else entry.created_by.at


def clock_went_back(entry: Entry, log: LogView, now: int, poll: int = POLL) -> bool:
    """The entry's anchor (its newest own line, else its creation) lies beyond now by
    more than a poll: the clock was set back. Left alone, every schedule kind would be
    silent until the clock caught up again (an hour for an hour); instead the tick
    logs a `clock` `rescheduled` line at now, which anchors everything there. One
    poll of skew is allowed: an anchor up to that far in the future is taken as it is."""
    return anchor_of(entry, log) > now + poll


def cron_zone(sched: Cron, local_zone: tzinfo) -> tzinfo:
    return zone_for(sched.tz) if sched.tz else local_zone


def entry_zone(entry: Entry, local_zone: tzinfo) -> tzinfo:
    """The zone an entry's times of day are read and its instants shown in: its cron
    `tz`, else local time (also for a `tz` that is not known: its verdict says so)."""
    if isinstance(entry.schedule, Cron):
        try:
            return cron_zone(entry.schedule, local_zone)
        except CronError:
            return local_zone
    return local_zone


def every_verdict(entry: Entry, sched: Every, log: LogView, now: int) -> ScheduleVerdict:
    due_at = anchor_of(entry, log) + sched.interval
    return ScheduleVerdict(due=now >= due_at, due_at=due_at)


def cron_verdict(entry: Entry, sched: Cron, log: LogView, now: int, local_zone: tzinfo) -> ScheduleVerdict:
    try:
        expr = CronExpr.parse(sched.expr)
        zone = cron_zone(sched, local_zone)
    except CronError as exc:
        return ScheduleVerdict(diagnostic=Diagnostic(entry.id, Diag.UNKNOWN_SCHEDULE_KIND, str(exc)))
    occurrence = expr.latest_in(anchor_of(entry, log), now, zone)
    if occurrence is None:
        return ScheduleVerdict()
    window = late_window(waits_when_busy(entry.policy))
    if now - occurrence <= window:
        return ScheduleVerdict(due=True, due_at=occurrence, occurrence=occurrence)
    if sched.catch_up == CATCH_UP_ONCE and (not sched.catch_up_within or now - occurrence <= sched.catch_up_within):
        return ScheduleVerdict(due=True, due_at=now, occurrence=occurrence)
    return ScheduleVerdict(missed=True, occurrence=occurrence)


def at_done(entry: Entry, log: LogView) -> bool:
    """A one-shot entry has had its one line (a fire's outcome, or missed): it retires.
    A `rescheduled` line (an edit, the clock set back) is not it."""
    return any(status_of(line.outcome) != Status.RESCHEDULED for line in log.own(entry.id))


def at_verdict(entry: Entry, sched: At, log: LogView, now: int) -> ScheduleVerdict:
    """Once at `sched.at`, with cron's grace (2 h under when-idle); later, with
    `catch_up: once` (within its window), it fires late, else it is missed."""
    if at_done(entry, log):
        return ScheduleVerdict()
    if now < sched.at:
        return ScheduleVerdict(due_at=sched.at)
    late = now - sched.at
    window = late_window(waits_when_busy(entry.policy))
    if late <= window:
        return ScheduleVerdict(due=True, due_at=sched.at, occurrence=sched.at)
    if sched.catch_up == CATCH_UP_ONCE and (not sched.catch_up_within or late <= sched.catch_up_within):
        return ScheduleVerdict(due=True, due_at=now, occurrence=sched.at)
    return ScheduleVerdict(missed=True, occurrence=sched.at)


def backoff_verdict(
    entry: Entry, sched: Backoff, log: LogView, target: TargetFact, now: int, poll: int = POLL
) -> ScheduleVerdict:
    if not target.resolved:
        why = target.why or "no facts"
        return ScheduleVerdict(
            diagnostic=Diagnostic(entry.id, Diag.ANCHOR_UNAVAILABLE, f"backoff target unresolved: {why}")
        )
    if target.epoch <= 0:
        return ScheduleVerdict(
            diagnostic=Diagnostic(entry.id, Diag.ANCHOR_UNAVAILABLE, "target pane carries no agent-state epoch")
        )
    if target.state == AgentState.ACTIVE:  # quiet means quiet: a working agent is not nudged
        return ScheduleVerdict(
            diagnostic=Diagnostic(entry.id, Diag.TARGET_ACTIVE, "target is working; the ladder waits")
        )
    lo, hi = sched.min, sched.max
    epoch = target.epoch if target.epoch <= now + poll else anchor_of(entry, log)  # an epoch from before a clock-back
    position = ladder.join_anchor(epoch, log.schedule_history(entry.id), lo, hi, poll)
    next_fire = position.next_fire(lo, hi, poll)
    return ScheduleVerdict(due=now >= next_fire, due_at=next_fire, rung=position.rung + 1)


def schedule_verdict(
    entry: Entry, log: LogView, target: TargetFact, now: int, local_zone: tzinfo, poll: int = POLL
) -> ScheduleVerdict:
    sched = entry.schedule
    if isinstance(sched, Every):
        return every_verdict(entry, sched, log, now)
    if isinstance(sched, Cron):
        return cron_verdict(entry, sched, log, now, local_zone)
    if isinstance(sched, Backoff):
        return backoff_verdict(entry, sched, log, target, now, poll)
    if isinstance(sched, At):
        return at_verdict(entry, sched, log, now)
    return ScheduleVerdict()  # wake only: it fires on its wake event

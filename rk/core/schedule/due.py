"""`due()`: the pure decision of what fires now.

Given the entries, the delivery log, the panes' facts, each entry's resolved
target, the wake cursor and now, return the fires (resolved and absent), the
cron occurrences that went stale (`missed`), diagnostics, and the next
cursor. No I/O, no clock, no mutation of the inputs: the same inputs always
give the same outputs, which is what lets a restart lose nothing and lets
`rk cron simulate` replay a day in a second.

Composition per entry, in order: entry cap → total cap (`max_total` spent: it
fires no more, the tick retires it) → mute → pause → clock set back → schedule
predicate → wake predicate → day cap (`max_per_day`, `rk.core.cost.caps`: one
`skipped-cap` line a local day, a capped occurrence never `missed`) → budget
(`spent`: a fire of an entry whose day's tokens reached its budget is
`skipped-budget`, once per local day, then silent, missed occurrences included)
→ missed → active hours → target-unresolved diagnostic → fire (reason `schedule` wins over
`wake`; one fire per entry per tick).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo

from rk.core.cost import caps
from rk.core.cost.usage import Spent, format_tokens, over_budget
from rk.core.log.delivery import LogLine, LogView, Reason, Status, status_of
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule import ladder
from rk.core.schedule.cronexpr import CronError, CronExpr, zone_for
from rk.core.schedule.entry import CATCH_UP_ONCE, At, Backoff, Cron, Deliver, Entry, Every, WakeEvent
from rk.core.schedule.grace import late_window
from rk.core.schedule.ladder import POLL
from rk.core.schedule.wake import Fingerprints, Observation, WakeVerdict, limit_edge, trigger, wake_edge
from rk.core.settings import Settings
from rk.core.wallclock import moment

#: Default entries evaluated per server; the rest get `entry-cap-exceeded`.


@dataclass(frozen=True)
class Fire:
    """A fire: `pane` is "" for an absent fire. `rung` is the backoff rung (0 otherwise).
    `refused` says why an absent fire's pane, though present, is not typed into.

    `occurrence` is the cron occurrence a schedule fire is for (also for a catch-up
    fire, whose `due_at` is now; 0 for every other fire). A wake fire names the pane
    whose change fired it (`wake.trigger`; for `limit-reset`, the target), that pane's
    new state (`gone` when it vanished) and its window's name ("" once the pane is gone);
    all three are "" for any other fire. The placeholders read them."""

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

    def ledger(self, now: int) -> list[tuple[LogLine, int]]:
        """The lines the caller writes at `now` before any fire, in the tick's order, each
        with the instant it is for (a `missed` line: its occurrence): `clock` `rescheduled`,
        `missed`, `skipped-quiet`, `skipped-paused`, `held-quiet`, `skipped-budget`,
        `skipped-cap`. The tick, the simulator and the forecast write exactly these."""
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
        return out

    @property
    def debounced(self) -> tuple[str, ...]:
        """Entries whose wake edge is pending behind its debounce."""
        return tuple(d.entry for d in self.diagnostics if d.reason == Diag.WAKE_DEBOUNCED)


@dataclass(frozen=True)
class ScheduleVerdict:
    due: bool = False
    missed: bool = False
    due_at: int = 0
    rung: int = 0
    occurrence: int = 0
    diagnostic: Diagnostic | None = None


def _stamp(ts: int, zone: tzinfo) -> str:
    return moment(ts, zone)


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
    window = late_window(entry.policy == Deliver.WHEN_IDLE)
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
    window = late_window(entry.policy == Deliver.WHEN_IDLE)
    if late <= window:
        return ScheduleVerdict(due=True, due_at=sched.at, occurrence=sched.at)
    if sched.catch_up == CATCH_UP_ONCE and (not sched.catch_up_within or late <= sched.catch_up_within):
        return ScheduleVerdict(due=True, due_at=now, occurrence=sched.at)
    return ScheduleVerdict(missed=True, occurrence=sched.at)


def entry_zone(entry: Entry, local_zone: tzinfo) -> tzinfo:
    """The zone an entry's times of day are read and its instants shown in: its cron
    `tz`, else local time (also for a `tz` that is not known: its verdict says so)."""
    if isinstance(entry.schedule, Cron):
        try:
            return cron_zone(entry.schedule, local_zone)
        except CronError:
            return local_zone
    return local_zone


def is_paused(paused_until: int | None, now: int) -> bool:
    """A server pause: None is none, 0 lasts until `resume`, else it lapses at that instant."""
    return paused_until is not None and (paused_until == 0 or now < paused_until)


def waits_for_active_hours(entry: Entry) -> bool:
    """A cron occurrence with `catch_up: once` is not dropped in quiet hours: it
    stays pending and fires as a catch-up at the start of the next active range."""
    return isinstance(entry.schedule, Cron) and entry.schedule.catch_up == CATCH_UP_ONCE


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
    if target.state == "active":  # quiet means quiet: a working agent is not nudged
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


def wake_states(panes: Mapping[str, PaneFact] | Sequence[PaneFact]) -> dict[str, str]:
    """The server's state map: every pane with a known agent state."""
    values = panes.values() if isinstance(panes, Mapping) else panes
    return {p.pane_id: p.state for p in values if p.state}


_NO_TARGET = TargetFact(why="no facts for this entry")


def due(
    entries: Sequence[Entry],
    log: LogView,
    panes: Mapping[str, PaneFact] | Sequence[PaneFact],
    targets: Mapping[str, TargetFact],
    cursor: Mapping[str, Observation],
    now: int,
    *,
    zone: tzinfo = UTC,
    max_entries: int = Settings.max_entries,
    poll: int = POLL,
    paused_until: int | None = None,
    spent: Mapping[str, Spent] | None = None,
) -> Evaluation:
    """Evaluate every entry at `now` (unix seconds).

    `targets` maps entry id → TargetFact (a missing fact counts as unresolved);
    `zone` is the local zone for cron entries without their own `tz`;
    `paused_until` is the server's pause (`is_paused`): while it lasts every entry
    is silent as if muted. `spent` maps each entry with a budget to its tokens so
    far on its local day (`rk.store.transcripts.spent_today`); a budgeted entry missing
    from it, or whose usage is unknown, fires with a `budget-unknown` diagnostic.
    """
    paused = is_paused(paused_until, now)
    spent = spent or {}
    over: list[Quiet] = []
    quiet: list[Quiet] = []
    dropped: list[Quiet] = []
    waiting: list[Quiet] = []
    capped: list[Quiet] = []
    fires: list[Fire] = []
    absent: list[Fire] = []
    missed: list[Missed] = []
    clock_back: list[str] = []
    diags: list[Diagnostic] = []
    next_cursor: dict[str, Observation] = dict(cursor)
    prints: Fingerprints | None = None  #: the server's states, built for the first wake entry that reads them

    for index, entry in enumerate(entries):
        if index >= max_entries:
            diags.append(
                Diagnostic(entry.id, Diag.ENTRY_CAP_EXCEEDED, f"entry #{index + 1} is past the cap of {max_entries}")
            )
            continue
        if caps.spent(entry, log):
            diags.append(Diagnostic(entry.id, Diag.RETIRED, f"made its {entry.max_total} deliveries (max_total)"))
            continue
        if entry.is_muted(now):
            detail = (
                "entry is muted"
                if entry.muted
                else f"entry is muted until {_stamp(entry.muted_until, entry_zone(entry, zone))}"
            )
            diags.append(Diagnostic(entry.id, Diag.MUTED, detail))
            continue
        if paused:
            until = f"until {_stamp(paused_until or 0, entry_zone(entry, zone))}" if paused_until else "until resumed"
            diags.append(Diagnostic(entry.id, Diag.PAUSED, f"the server is paused {until}"))
            if isinstance(entry.schedule, (Cron, At)):
                verdict = schedule_verdict(entry, log, targets.get(entry.id, _NO_TARGET), now, zone, poll)
                if verdict.due or verdict.missed:  # an occurrence inside the pause: dropped, with its line
                    dropped.append(Quiet(entry.id, Reason.SCHEDULE, targets.get(entry.id, _NO_TARGET).pane))
            continue
        target = targets.get(entry.id, _NO_TARGET)
        if clock_went_back(entry, log, now, poll):
            clock_back.append(entry.id)
            diags.append(
                Diagnostic(
                    entry.id,
                    Diag.CLOCK_BACK,
                    f"its newest line ({_stamp(anchor_of(entry, log), entry_zone(entry, zone))}) is later than now: "
                    "anchored at now",
                )
            )
            continue

        verdict = schedule_verdict(entry, log, target, now, zone, poll)
        if verdict.diagnostic is not None:
            diags.append(verdict.diagnostic)

        wake_due = False
        if entry.wake_on is not None:
            event = entry.wake_on.event
            if event not in WakeEvent.__members__.values():
                diags.append(Diagnostic(entry.id, Diag.UNKNOWN_WAKE_EVENT, f"unknown wake event {event!r}"))
            else:
                newest = log.newest(entry.id)
                newest_ts = newest.ts if newest else None
                if event == WakeEvent.LIMIT_RESET:
                    state = target.state if target.resolved else None
                    edge, observation = limit_edge(cursor.get(entry.id), state, newest_ts, entry.wake_on.debounce, now)
                else:
                    if prints is None:
                        prints = Fingerprints(wake_states(panes))
                    current = prints.without(target.pane)
                    edge, observation = wake_edge(
                        cursor.get(entry.id), current, newest_ts, entry.wake_on.debounce, now, parse=prints.parsed
                    )
                next_cursor[entry.id] = observation
                if edge == WakeVerdict.FIRE:
                    wake_due = True
                elif edge != WakeVerdict.UNCHANGED:
                    diags.append(
                        Diagnostic(
                            entry.id, Diag(edge.value), _wake_detail(edge, entry, newest.ts if newest else None, now)
                        )
                    )

        if not (verdict.due or wake_due or verdict.missed):
            continue
        cap = caps.capping(entry, log, now, verdict.occurrence, entry_zone(entry, zone))
        if cap is not None:
            diags.append(Diagnostic(entry.id, Diag.CAPPED, _cap_detail(cap, now, entry_zone(entry, zone))))
            if not cap.said and (verdict.due or wake_due):  # once a day; a capped occurrence is never missed
                capped.append(Quiet(entry.id, Reason.SCHEDULE if verdict.due else Reason.WAKE, target.pane))
            continue
        if entry.budget is not None and (verdict.due or wake_due):
            stop = budget_stop(entry, log, spent.get(entry.id), now, entry_zone(entry, zone))
            if stop is not None:
                diags.append(stop.diagnostic)
                if stop.diagnostic.reason == Diag.BUDGET_SPENT:  # missed occurrences too: nothing goes until midnight
                    if not stop.said:
                        over.append(Quiet(entry.id, Reason.SCHEDULE if verdict.due else Reason.WAKE, target.pane))
                    continue
        if verdict.missed:
            missed.append(Missed(entry.id, verdict.occurrence))
        if not (verdict.due or wake_due):
            continue
        hours = entry.active_hours
        if hours is not None and not hours.active_at(now, entry_zone(entry, zone)):
            shown = entry_zone(entry, zone)  # its instants are printed in its own zone
            opens = _stamp(hours.next_start(now, shown), shown)
            if verdict.due and waits_for_active_hours(entry):
                diags.append(Diagnostic(entry.id, Diag.QUIET_HOURS, f"outside {hours.text}: fires at {opens}"))
                newest = log.newest(entry.id)
                said = newest is not None and newest.ts >= verdict.occurrence and newest.outcome == Status.HELD_QUIET
                if not said:  # one line per occurrence says it waits (--gaps, the log), and anchors nothing
                    waiting.append(Quiet(entry.id, Reason.SCHEDULE, target.pane))
                continue
            quiet.append(Quiet(entry.id, Reason.SCHEDULE if verdict.due else Reason.WAKE, target.pane))
            diags.append(Diagnostic(entry.id, Diag.QUIET_HOURS, f"outside {hours.text} (next opens {opens})"))
            continue
        if not target.resolved:
            diags.append(Diagnostic(entry.id, Diag.TARGET_UNRESOLVED, target.why))
        if verdict.due:
            fire = _schedule_fire(entry, target, verdict, now)
        else:
            fire = _wake_fire(entry, target, cursor.get(entry.id), prints, panes, now)
        (fires if target.resolved else absent).append(fire)

    return Evaluation(
        tuple(fires),
        tuple(absent),
        tuple(missed),
        tuple(diags),
        next_cursor,
        tuple(clock_back),
        tuple(quiet),
        tuple(dropped),
        tuple(waiting),
        tuple(capped),
        tuple(over),
    )


def _cap_detail(cap: caps.DayCap, now: int, zone: tzinfo) -> str:
    """`capped: 3/3 today: fires again from <midnight>` (the occurrence's day when not today)."""
    day = "today" if cap.start <= now < cap.end else f"on {_stamp(cap.start, zone)[:10]}"
    return f"capped: {cap.count}/{cap.limit} {day}: fires again from {_stamp(max(cap.end, now), zone)}"


@dataclass(frozen=True)
class BudgetStop:
    """What a budget says of a due fire: `budget-spent` (it does not go; `said` once
    today's `skipped-budget` line is written, so one line a day), or `budget-unknown`
    (it goes: an unknown usage is never taken for 0)."""

    diagnostic: Diagnostic
    said: bool = False


def budget_stop(entry: Entry, log: LogView, spent: Spent | None, now: int, zone: tzinfo) -> BudgetStop | None:
    """The budget's word on a due fire of `entry`, or None when it has nothing to say."""
    if entry.budget is None:
        return None
    if spent is None or spent.tokens is None:
        why = spent.why if spent is not None and spent.why else "no usage was read for it"
        detail = f"usage unknown ({why}): the budget cannot be enforced"
        return BudgetStop(Diagnostic(entry.id, Diag.BUDGET_UNKNOWN, detail))
    if not over_budget(entry.budget, spent):
        return None
    start, end = caps.day_bounds(now, zone)
    opens = _stamp(end, zone)
    used = f"{format_tokens(spent.tokens)} of {entry.budget.text} spent"
    if _budget_said(entry, log, start):
        detail = f"already skipped today: {used}; fires again from {opens}"
        return BudgetStop(Diagnostic(entry.id, Diag.BUDGET_SPENT, detail), said=True)
    return BudgetStop(Diagnostic(entry.id, Diag.BUDGET_SPENT, f"{used}; skipped until {opens}"))


def _budget_said(entry: Entry, log: LogView, start: int) -> bool:
    """The entry's `skipped-budget` line of the day that began at `start` is written."""
    return any(line.ts >= start and status_of(line.outcome) == Status.SKIPPED_BUDGET for line in log.own(entry.id))


def budget_reopens(entry: Entry, log: LogView, now: int, zone: tzinfo) -> int:
    """When a budget-stopped entry may fire again: the next local midnight once its
    day's `skipped-budget` line is written (0 otherwise). A day's spend only grows,
    so the line holds for the rest of its day; `next_due()` and the forecast read
    it from the log alone, without the agents' records."""
    if entry.budget is None:
        return 0
    start, end = caps.day_bounds(now, zone)
    return end if _budget_said(entry, log, start) else 0


def _schedule_fire(entry: Entry, target: TargetFact, verdict: ScheduleVerdict, now: int) -> Fire:
    """A schedule fire; a cron one carries the occurrence it is for."""
    return Fire(
        entry.id,
        Reason.SCHEDULE,
        target.pane,
        verdict.rung,
        verdict.due_at,
        now,
        target.refused,
        occurrence=verdict.occurrence,
    )


#: The start of `{wake_pane}`, `{wake_state}` and `{wake_window}` (rk.core.schedule.placeholders).
_WAKE_FIELD = "{wake_"


def uses_wake_fields(payload: str) -> bool:
    """Whether a payload may read a wake fire's provenance: any `{wake_` in it (a
    superset of the placeholders, so a fire never lacks what its payload types)."""
    return _WAKE_FIELD in payload


def _wake_fire(
    entry: Entry,
    target: TargetFact,
    previous: Observation | None,
    prints: Fingerprints | None,
    panes: Mapping[str, PaneFact] | Sequence[PaneFact],
    now: int,
) -> Fire:
    """A wake fire, naming the pane whose change fired it: for `limit-reset` the
    target itself (now idle), else the pane `wake.trigger` picks from the entry's
    previous observation and the server now (own target excluded, as the edge was).
    Only a payload that may read them (`uses_wake_fields`) gets them worked out: for
    a thousand entries that was most of `due()`'s cost."""
    if not uses_wake_fields(entry.payload):
        pane, state = "", ""
    elif entry.wake_on is not None and entry.wake_on.event == WakeEvent.LIMIT_RESET:
        pane, state = target.pane, target.state
    elif previous is not None and prints is not None:
        pane, state = trigger(prints.parsed(previous.fingerprint), prints.parsed(prints.without(target.pane)))
    else:
        pane, state = "", ""
    values = panes.values() if isinstance(panes, Mapping) else panes
    window = next((p.window_name for p in values if p.pane_id == pane), "") if pane else ""
    return Fire(
        entry.id,
        Reason.WAKE,
        target.pane,
        0,
        now,
        now,
        target.refused,
        wake_pane=pane,
        wake_state=state,
        wake_window=window,
    )


def _wake_detail(edge: WakeVerdict, entry: Entry, newest_ts: int | None, now: int) -> str:
    if edge == WakeVerdict.COLD_START:
        return "first observation of the server; no edge yet"
    if edge == WakeVerdict.IGNORED:
        if entry.wake_on is not None and entry.wake_on.event == WakeEvent.LIMIT_RESET:
            return "the target changed, but not from a limit to rest"
        return "panes changed, none became idle or waiting or vanished"
    held = entry.wake_on.debounce - (now - (newest_ts or now)) if entry.wake_on else 0
    return f"edge held {held}s more (debounce from the newest own line)"


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

"""`due()`: the pure decision of what fires now.

Given the entries, the delivery log, the panes' facts, each entry's resolved
target, the wake cursor and now, return the fires (resolved and absent), the
cron occurrences that went stale (`missed`), diagnostics, and the next
cursor. No I/O, no clock, no mutation of the inputs: the same inputs always
give the same outputs, which is what lets a restart lose nothing and lets
`rk cron simulate` replay a day in a second.

Composition per entry, in order: entry cap → total cap (`max_total` spent: it
fires no more, the tick retires it) → mute → pause → clock set back → dormant
(`rk.core.schedule.dormant`: held silently once told) → schedule
predicate (an occurrence a lapsed pause covered, unseen, dropped) → wake
predicate → day cap (`max_per_day`, `rk.core.cost.caps`: one `skipped-cap` line
a local day, a capped occurrence never `missed`) → budget (`spent`: a fire of an
entry whose day's tokens reached its budget is `skipped-budget`, once per local
day, then silent, missed occurrences included) → missed → active hours →
dormant (a fire that would type after N unanswered deliveries is the one
`dormant` line instead) → target-unresolved diagnostic → fire (reason
`schedule` wins over `wake`; one fire per entry per tick).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, tzinfo
from typing import TYPE_CHECKING, TypedDict, Unpack

from rk.core.cost import caps
from rk.core.cost.budget import Spent
from rk.core.cost.turn_timeout import StateLine
from rk.core.log.cause import Causes
from rk.core.log.delivery import LogLine, LogView, Reason, Status
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.pane.state import AgentState
from rk.core.schedule import retry, world
from rk.core.schedule.budget import budget_reopens as budget_reopens  # re-exported: health, forecast
from rk.core.schedule.budget import budget_stop
from rk.core.schedule.dormant import Dormancy, dormancy, dormant_line
from rk.core.schedule.entry import CATCH_UP_ONCE, WAKE_SCOPE, At, Cron, Entry, WakeEvent
from rk.core.schedule.evaluation import Evaluation as Evaluation  # re-exported: due()'s one door
from rk.core.schedule.evaluation import Fire as Fire
from rk.core.schedule.evaluation import Missed as Missed
from rk.core.schedule.evaluation import Quiet as Quiet
from rk.core.schedule.ladder import POLL
from rk.core.schedule.next_due import is_paused as is_paused  # re-exported, as next_due: the callers' one door
from rk.core.schedule.next_due import next_due as next_due
from rk.core.schedule.verdict import ScheduleVerdict, anchor_of, schedule_verdict
from rk.core.schedule.verdict import at_done as at_done  # re-exported, as the ones below: the callers' one door
from rk.core.schedule.verdict import backoff_verdict as backoff_verdict
from rk.core.schedule.verdict import clock_went_back as clock_went_back
from rk.core.schedule.verdict import cron_verdict as cron_verdict
from rk.core.schedule.verdict import cron_zone as cron_zone
from rk.core.schedule.verdict import entry_zone as entry_zone
from rk.core.schedule.wake import (
    RESUMING,
    Fingerprints,
    Observation,
    WakeVerdict,
    journaled_since,
    limit_edge,
    rk_turn_ended,
    trigger,
    wake_edge,
)
from rk.core.schedule.world import World, WorldEdge
from rk.core.settings import Settings
from rk.core.wallclock import moment

if TYPE_CHECKING:  # a wake on another host's panes imports its rules when one is judged: the views go without
    from rk.core.fleet.watch import MirrorLine, RemoteEdge


def waits_for_active_hours(entry: Entry) -> bool:
    """A cron occurrence with `catch_up: once` is not dropped in quiet hours: it
    stays pending and fires as a catch-up at the start of the next active range."""
    return isinstance(entry.schedule, Cron) and entry.schedule.catch_up == CATCH_UP_ONCE


def wake_states(panes: Mapping[str, PaneFact] | Sequence[PaneFact]) -> dict[str, str]:
    """The server's state map: every pane with a known agent state."""
    values = panes.values() if isinstance(panes, Mapping) else panes
    return {p.pane_id: p.state for p in values if p.state}


_NO_TARGET = TargetFact(why="no facts for this entry")


class DueOptions(TypedDict, total=False):
    """`due()`'s keyword options, each with its default when left out."""

    #: the local zone, for cron entries without their own `tz` (UTC)
    zone: tzinfo
    #: entries evaluated; the rest get `entry-cap-exceeded` and nothing else (`Settings.max_entries`)
    max_entries: int
    #: the ticker's poll, the backoff ladder's and the clock's tolerance (`ladder.POLL`)
    poll: int
    #: the server's pause (`is_paused`): while it lasts every entry is silent as if muted (None)
    paused_until: int | None
    #: the server's last pause with an end, `(since, until)` (`rk.store.pause.pause_span`): a cron or `at`
    #: occurrence it covered that no tick saw (a laptop asleep) is dropped all the same once it is over (None)
    paused_span: tuple[int, int] | None
    #: each entry with a budget → its tokens so far on its local day
    #: (`rk.store.transcripts.spent_today`); a budgeted entry missing from it, or whose
    #: usage is unknown, fires with a `budget-unknown` diagnostic (None: none read)
    spent: Mapping[str, Spent] | None
    #: each pane's state-journal lines, oldest first: a `wake_from: human` entry reads them to
    #: tell the turns rk started (`rk.core.log.cause`); a pane missing from it: a human's ({})
    journal: Mapping[str, Sequence[StateLine]]
    #: the server's signals and watched files as the ticker read them (`rk.core.schedule.world`; None: none)
    world: World | None
    #: other hosts' journals as mirrored here, by `host/server`, oldest first: what a wake
    #: scoped to another host's panes reads (`rk.core.fleet.watch`) ({})
    remote: Mapping[str, Sequence[MirrorLine]]


def due(
    entries: Sequence[Entry],
    log: LogView,
    panes: Mapping[str, PaneFact] | Sequence[PaneFact],
    targets: Mapping[str, TargetFact],
    cursor: Mapping[str, Observation],
    now: int,
    **options: Unpack[DueOptions],
) -> Evaluation:
    """Evaluate every entry at `now` (unix seconds). `targets` maps entry id →
    TargetFact (a missing fact counts as unresolved); `options`: `DueOptions`."""
    unknown = options.keys() - DueOptions.__optional_keys__
    if unknown:
        raise TypeError(f"due() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    max_entries = options.get("max_entries", Settings.max_entries)
    sweep = _Sweep(
        log,
        panes,
        targets,
        cursor,
        now,
        options.get("zone", UTC),
        options.get("poll", POLL),
        options.get("paused_until"),
        options.get("spent") or {},
        dict(cursor),
        Causes(log, options.get("journal") or {}),
        options.get("journal") or {},
        options.get("paused_span"),
        world=options.get("world") or World(),
        remote=options.get("remote") or {},
    )
    for index, entry in enumerate(entries):
        if index >= max_entries:
            sweep.diags.append(
                Diagnostic(entry.id, Diag.ENTRY_CAP_EXCEEDED, f"entry #{index + 1} is past the cap of {max_entries}")
            )
            continue
        _evaluate(entry, sweep)
    return sweep.evaluation()


@dataclass(slots=True, eq=False)
class _Sweep:
    """One `due()` call: its inputs, and what it found so far, in the order found
    (each list becomes one field of the `Evaluation`)."""

    log: LogView
    panes: Mapping[str, PaneFact] | Sequence[PaneFact]
    targets: Mapping[str, TargetFact]
    cursor: Mapping[str, Observation]
    now: int
    zone: tzinfo
    poll: int
    paused_until: int | None
    spent: Mapping[str, Spent]
    next_cursor: dict[str, Observation]
    causes: Causes  #: who started each pane's newest turn (`wake_from: human`, `{wake_by}`)
    journal: Mapping[str, Sequence[StateLine]]  #: each pane's state-journal lines (`DueOptions.journal`)
    paused_span: tuple[int, int] | None = None
    world: World = field(default_factory=World)
    #: the wakes on the world decided this sweep, by entry
    worlds: dict[str, WorldEdge] = field(default_factory=dict)
    remote: Mapping[str, Sequence[MirrorLine]] = field(default_factory=dict)
    #: entry → the other host's edge that fired its wake (its pane named with its host)
    remote_fired: dict[str, RemoteEdge] = field(default_factory=dict)
    fires: list[Fire] = field(default_factory=list)
    absent: list[Fire] = field(default_factory=list)
    missed: list[Missed] = field(default_factory=list)
    diags: list[Diagnostic] = field(default_factory=list)
    clock_back: list[str] = field(default_factory=list)
    quiet: list[Quiet] = field(default_factory=list)
    dropped: list[Quiet] = field(default_factory=list)
    waiting: list[Quiet] = field(default_factory=list)
    capped: list[Quiet] = field(default_factory=list)
    over: list[Quiet] = field(default_factory=list)
    dormant: list[LogLine] = field(default_factory=list)
    #: the server's states, built for the first wake entry that reads them
    prints: Fingerprints | None = None
    paused: bool = field(init=False)

    def __post_init__(self) -> None:
        self.paused = is_paused(self.paused_until, self.now)

    def zone_of(self, entry: Entry) -> tzinfo:
        return entry_zone(entry, self.zone)

    def fingerprints(self) -> Fingerprints:
        if self.prints is None:
            self.prints = Fingerprints(wake_states(self.panes))
        return self.prints

    def evaluation(self) -> Evaluation:
        return Evaluation(
            fires=tuple(self.fires),
            absent=tuple(self.absent),
            missed=tuple(self.missed),
            diagnostics=tuple(self.diags),
            next_cursor=self.next_cursor,
            clock_back=tuple(self.clock_back),
            quiet=tuple(self.quiet),
            paused=tuple(self.dropped),
            waiting=tuple(self.waiting),
            capped=tuple(self.capped),
            budget=tuple(self.over),
            marks={k: e.mark for k, e in self.worlds.items() if e.mark},
            dormant=tuple(self.dormant),
        )


def _evaluate(entry: Entry, sweep: _Sweep) -> None:
    """One entry, rule by rule in the order the module's docstring gives. A hold
    ends the entry's turn with its diagnostic (and its line, if any); a due fire
    then passes the caps, the budget and the active hours, or stops at one."""
    log, now = sweep.log, sweep.now
    if caps.spent(entry, log):
        _report_retired(entry, sweep)
        return
    if entry.is_muted(now):
        _report_muted(entry, sweep)
        return
    if sweep.paused:
        _report_paused(entry, sweep)
        return
    if clock_went_back(entry, log, now, sweep.poll):
        _report_clock_back(entry, sweep)
        return
    target = sweep.targets.get(entry.id, _NO_TARGET)
    rest = dormancy(entry, log, target)
    if rest.held:
        _report_dormant(entry, rest, sweep)
        return
    verdict = schedule_verdict(entry, log, target, now, sweep.zone, sweep.poll)
    if verdict.diagnostic is not None:
        sweep.diags.append(verdict.diagnostic)
    if _paused_unseen(entry, verdict, sweep):
        sweep.dropped.append(Quiet(entry.id, Reason.SCHEDULE, target.pane))
        return
    wake_due = entry.wake_on is not None and _wake_due(entry, target, sweep)
    if not (verdict.due or wake_due or verdict.missed):
        _retry(entry, target, sweep)  # a failed delivery owed another try (rk.core.schedule.retry)
        return
    if _capped(entry, target, verdict, wake_due, sweep) or _over_budget(entry, target, verdict, wake_due, sweep):
        return
    if verdict.missed:
        sweep.missed.append(Missed(entry.id, verdict.occurrence))
    if not (verdict.due or wake_due):
        return
    if entry.active_hours is not None and _outside_hours(entry, target, verdict, sweep):
        return
    if rest.dormant:  # the fire that would type one prompt too many: told, not typed
        sweep.dormant.append(dormant_line(entry, target.pane, _reason(verdict), now))
        _report_dormant(entry, rest, sweep)
        return
    _fire(entry, target, verdict, sweep)


# -- holds: what silences an entry before its schedule is read --------------------------------------


def _report_retired(entry: Entry, sweep: _Sweep) -> None:
    """Total cap: an entry that made its `max_total` deliveries fires no more (the tick retires it)."""
    sweep.diags.append(Diagnostic(entry.id, Diag.RETIRED, f"made its {entry.max_total} deliveries (max_total)"))


def _report_muted(entry: Entry, sweep: _Sweep) -> None:
    detail = (
        "entry is muted" if entry.muted else f"entry is muted until {moment(entry.muted_until, sweep.zone_of(entry))}"
    )
    sweep.diags.append(Diagnostic(entry.id, Diag.MUTED, detail))


def _report_paused(entry: Entry, sweep: _Sweep) -> None:
    """A server pause silences every entry as if muted; a cron or `at` occurrence that
    comes due meanwhile is dropped with its `skipped-paused` line."""
    until = f"until {moment(sweep.paused_until or 0, sweep.zone_of(entry))}" if sweep.paused_until else "until resumed"
    sweep.diags.append(Diagnostic(entry.id, Diag.PAUSED, f"the server is paused {until}"))
    if isinstance(entry.schedule, (Cron, At)):
        target = sweep.targets.get(entry.id, _NO_TARGET)
        verdict = schedule_verdict(entry, sweep.log, target, sweep.now, sweep.zone, sweep.poll)
        if verdict.due or verdict.missed:  # an occurrence inside the pause: dropped, with its line
            sweep.dropped.append(Quiet(entry.id, Reason.SCHEDULE, target.pane))


def _report_dormant(entry: Entry, rest: Dormancy, sweep: _Sweep) -> None:
    """Dormant: its last N deliveries started no turn; it fires again once the pane shows life."""
    since = moment(rest.since, sweep.zone_of(entry))
    detail = f"no answer to its last {rest.limit} deliveries (since {since}): silent until the pane shows life"
    sweep.diags.append(Diagnostic(entry.id, Diag.DORMANT, detail))


def _paused_unseen(entry: Entry, verdict: ScheduleVerdict, sweep: _Sweep) -> bool:
    """A cron or `at` occurrence due in a lapsed pause that no tick saw: dropped all the same."""
    span = sweep.paused_span
    covered = span is not None and span[0] <= verdict.occurrence < span[1]
    return covered and isinstance(entry.schedule, (Cron, At)) and (verdict.due or verdict.missed)


def _report_clock_back(entry: Entry, sweep: _Sweep) -> None:
    """The clock was set back past the entry's anchor: the tick anchors it at now instead."""
    sweep.clock_back.append(entry.id)
    newest = moment(anchor_of(entry, sweep.log), sweep.zone_of(entry))
    sweep.diags.append(
        Diagnostic(entry.id, Diag.CLOCK_BACK, f"its newest line ({newest}) is later than now: anchored at now")
    )


# -- wakes -------------------------------------------------------------------------------------------


def _wake_due(entry: Entry, target: TargetFact, sweep: _Sweep) -> bool:
    """The wake predicate: whether the entry's wake event fires now. Its new observation
    goes into the next cursor; an edge that does not fire says why."""
    if entry.wake_on is None:
        return False
    event = entry.wake_on.event
    if (source := world.source_of(event)) is not None:
        return _world_due(entry, source, entry.wake_on.debounce, sweep)
    if event not in WakeEvent.__members__.values():
        sweep.diags.append(Diagnostic(entry.id, Diag.UNKNOWN_WAKE_EVENT, f"unknown wake event {event!r}"))
        return False
    newest = sweep.log.newest(entry.id)
    newest_ts = newest.ts if newest else None
    previous = sweep.cursor.get(entry.id)
    if event == WakeEvent.LIMIT_RESET:
        state = target.state if target.resolved else None
        journaled = ""  # the journal is read only while a resume typed is not yet seen to take
        if previous is not None and previous.fingerprint == RESUMING and state == AgentState.IDLE:
            journaled = journaled_since(sweep.journal.get(target.pane, ()), previous.observed_at)
        edge, observation = limit_edge(previous, state, newest_ts, entry.wake_on.debounce, sweep.now, journaled)
    elif entry.wake_on.scope not in ("", WAKE_SCOPE):
        edge, observation = _remote_wake(entry, previous, newest_ts, sweep)
    else:
        prints = sweep.fingerprints()
        current = prints.without(target.pane)
        ignore = rk_turn_ended(sweep.causes.of) if entry.wake_on.from_human else None
        edge, observation = wake_edge(
            previous, current, newest_ts, entry.wake_on.debounce, sweep.now, parse=prints.parsed, ignore=ignore
        )
    sweep.next_cursor[entry.id] = observation
    if edge == WakeVerdict.FIRE:
        return True
    if edge != WakeVerdict.UNCHANGED:
        sweep.diags.append(Diagnostic(entry.id, Diag(edge.value), _wake_detail(edge, entry, newest_ts, sweep.now)))
    return False


def _world_due(entry: Entry, source: world.Source, debounce: int, sweep: _Sweep) -> bool:
    """A wake on the world (`rk.core.schedule.world`): a signal, or a watched file."""
    own = sweep.log.own(entry.id)
    previous = sweep.cursor.get(entry.id)
    edge = world.world_edge(source, sweep.world, own, previous, entry.created_by.at, debounce, sweep.now)
    sweep.worlds[entry.id] = edge
    if edge.observation is not None:
        sweep.next_cursor[entry.id] = edge.observation
    if edge.verdict not in (WakeVerdict.FIRE, WakeVerdict.UNCHANGED):
        detail = world.detail(edge, source, own[-1].ts if own else None, debounce, sweep.now)
        sweep.diags.append(Diagnostic(entry.id, Diag(edge.verdict.value), detail))
    return edge.verdict == WakeVerdict.FIRE


def _remote_wake(
    entry: Entry, previous: Observation | None, newest_ts: int | None, sweep: _Sweep
) -> tuple[WakeVerdict, Observation]:
    """A wake on another host's panes, read from its mirrored journal (`rk.core.fleet.watch`)."""
    from rk.core.fleet.watch import MIRROR, ScopeError, parse_scope, remote_edge

    assert entry.wake_on is not None
    try:
        scope = parse_scope(entry.wake_on.scope)
    except ScopeError as exc:
        sweep.diags.append(Diagnostic(entry.id, Diag.UNKNOWN_WAKE_EVENT, str(exc)))
        return WakeVerdict.UNCHANGED, previous or Observation(MIRROR, sweep.now)
    assert scope is not None
    lines = sweep.remote.get(scope.source, ())
    found = remote_edge(previous, scope, lines, newest_ts, entry.wake_on.debounce, sweep.now, entry.wake_on.from_human)
    if found.pane:
        sweep.remote_fired[entry.id] = found
    return found.verdict, found.observation


def _wake_detail(edge: WakeVerdict, entry: Entry, newest_ts: int | None, now: int) -> str:
    if edge == WakeVerdict.COLD_START:
        return "first observation of the server; no edge yet"
    if edge == WakeVerdict.FROM_RK:
        return "panes went idle, each at the end of a turn rk started (wake_from human)"
    if edge == WakeVerdict.IGNORED:
        if entry.wake_on is not None and entry.wake_on.event == WakeEvent.LIMIT_RESET:
            return "the target changed, but not from a limit to rest"
        return "panes changed, none became idle or waiting or vanished"
    held = entry.wake_on.debounce - (now - (newest_ts or now)) if entry.wake_on else 0
    return f"edge held {held}s more (debounce from the newest own line)"


# -- what holds a due fire: the day cap, the budget, active hours ------------------------------------


def _reason(verdict: ScheduleVerdict) -> str:
    """A due fire's reason: `schedule` wins over `wake`."""
    return Reason.SCHEDULE if verdict.due else Reason.WAKE


def _capped(entry: Entry, target: TargetFact, verdict: ScheduleVerdict, wake_due: bool, sweep: _Sweep) -> bool:
    """Day cap (`max_per_day`): one `skipped-cap` line a local day."""
    zone = sweep.zone_of(entry)
    cap = caps.capping(entry, sweep.log, sweep.now, verdict.occurrence, zone)
    if cap is None:
        return False
    sweep.diags.append(Diagnostic(entry.id, Diag.CAPPED, _cap_detail(cap, sweep.now, zone)))
    if not cap.said and (verdict.due or wake_due):  # once a day; a capped occurrence is never missed
        sweep.capped.append(Quiet(entry.id, _reason(verdict), target.pane))
    return True


def _cap_detail(cap: caps.DayCap, now: int, zone: tzinfo) -> str:
    """`capped: 3/3 today: fires again from <midnight>` (the occurrence's day when not today)."""
    day = "today" if cap.start <= now < cap.end else f"on {moment(cap.start, zone)[:10]}"
    return f"capped: {cap.count}/{cap.limit} {day}: fires again from {moment(max(cap.end, now), zone)}"


def _over_budget(entry: Entry, target: TargetFact, verdict: ScheduleVerdict, wake_due: bool, sweep: _Sweep) -> bool:
    """Budget (`spent`): a spent day holds every fire until midnight, missed occurrences
    too, with one `skipped-budget` line; an unknown usage only says so, and the fire goes."""
    if entry.budget is None or not (verdict.due or wake_due):
        return False
    stop = budget_stop(entry, sweep.log, sweep.spent.get(entry.id), sweep.now, sweep.zone_of(entry))
    if stop is None:
        return False
    sweep.diags.append(stop.diagnostic)
    if stop.diagnostic.reason != Diag.BUDGET_SPENT:
        return False
    if not stop.said:
        sweep.over.append(Quiet(entry.id, _reason(verdict), target.pane))
    return True


def _outside_hours(entry: Entry, target: TargetFact, verdict: ScheduleVerdict, sweep: _Sweep) -> bool:
    """Active hours: a fire due outside them is `skipped-quiet`, except a cron catch-up
    (`waits_for_active_hours`), held until they open with one `held-quiet` line."""
    hours = entry.active_hours
    if hours is None or hours.active_at(sweep.now, sweep.zone_of(entry)):
        return False
    shown = sweep.zone_of(entry)  # its instants are printed in its own zone
    opens = moment(hours.next_start(sweep.now, shown), shown)
    if verdict.due and waits_for_active_hours(entry):
        sweep.diags.append(Diagnostic(entry.id, Diag.QUIET_HOURS, f"outside {hours.text}: fires at {opens}"))
        newest = sweep.log.newest(entry.id)
        said = newest is not None and newest.ts >= verdict.occurrence and newest.outcome == Status.HELD_QUIET
        if not said:  # one line per occurrence says it waits (--gaps, the log), and anchors nothing
            sweep.waiting.append(Quiet(entry.id, Reason.SCHEDULE, target.pane))
        return True
    sweep.quiet.append(Quiet(entry.id, _reason(verdict), target.pane))
    sweep.diags.append(Diagnostic(entry.id, Diag.QUIET_HOURS, f"outside {hours.text} (next opens {opens})"))
    return True


# -- the fire ----------------------------------------------------------------------------------------


def _retry(entry: Entry, target: TargetFact, sweep: _Sweep) -> None:
    """A retry due now (`retry.due_retry`) fires into a resolved target within its active hours;
    else it waits (the next regular fire wins over it)."""
    attempt = retry.due_retry(entry, sweep.log, sweep.now)
    hours = entry.active_hours
    if attempt is None or not target.resolved or (hours and not hours.active_at(sweep.now, sweep.zone_of(entry))):
        return
    sweep.fires.append(Fire(entry.id, attempt.reason, target.pane, 0, sweep.now, sweep.now, target.refused))


def _fire(entry: Entry, target: TargetFact, verdict: ScheduleVerdict, sweep: _Sweep) -> None:
    """One fire per entry per tick; absent, with a diagnostic, when the target is unresolved."""
    if not target.resolved:
        sweep.diags.append(Diagnostic(entry.id, Diag.TARGET_UNRESOLVED, target.why))
    if verdict.due:
        fire = _schedule_fire(entry, target, verdict, sweep.now)
    else:
        fire = _wake_fire(entry, target, sweep.cursor.get(entry.id), sweep)
    (sweep.fires if target.resolved else sweep.absent).append(fire)


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


def _wake_fire(entry: Entry, target: TargetFact, previous: Observation | None, sweep: _Sweep) -> Fire:
    """A wake fire, naming the pane whose change fired it: for `limit-reset` the
    target itself (now idle), else the pane `wake.trigger` picks from the entry's
    previous observation and the server now (own target excluded, as the edge was;
    under `wake_from: human` not a change it let pass), and who started that turn.
    Only a payload that may read them (`uses_wake_fields`) gets them worked out: for
    a thousand entries that was most of `due()`'s cost."""
    if (found := sweep.worlds.get(entry.id)) is not None:  # a wake on the world names no pane
        return replace(Fire(entry.id, Reason.WAKE, target.pane, 0, sweep.now, sweep.now, target.refused), **found.fire)
    if (far := sweep.remote_fired.get(entry.id)) is not None:  # another host's pane: as its far end said
        return replace(Fire(entry.id, Reason.WAKE, target.pane, 0, sweep.now, sweep.now, target.refused), **far.fire())
    pane = state = by = ""
    prints, wake = sweep.prints, entry.wake_on if uses_wake_fields(entry.payload) else None
    if wake is not None and wake.event == WakeEvent.LIMIT_RESET:
        pane, state = target.pane, target.state
    elif wake is not None and previous is not None and prints is not None:
        ignore = rk_turn_ended(sweep.causes.of) if wake.from_human else None
        old, new = prints.parsed(previous.fingerprint), prints.parsed(prints.without(target.pane))
        pane, state = trigger(old, new, ignore)
        by = sweep.causes.of(pane, state) if pane else ""
    values = sweep.panes.values() if isinstance(sweep.panes, Mapping) else sweep.panes
    window = next((p.window_name for p in values if p.pane_id == pane), "") if pane else ""
    return Fire(
        entry.id,
        Reason.WAKE,
        target.pane,
        0,
        sweep.now,
        sweep.now,
        target.refused,
        wake_pane=pane,
        wake_state=state,
        wake_window=window,
        wake_by=by,
    )

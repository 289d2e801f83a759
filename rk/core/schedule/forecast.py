"""What the tick will do with one entry, and when: the one forecast every view shows.

`list` (NEXT, LEFT), `show`, `next`, `status`, `doctor` and `add`'s receipt all
ask `forecast()`, which does not restate a rule: it runs the tick's own `due()`
and `dispose()` on the entry alone, from now, at each instant `next_due()` names,
writing into a scratch copy of the log the lines the tick would write (skipped-quiet,
skipped-paused, held-quiet, missed, rate-capped, a delivery), until it has the
deliveries asked for. So the rate cap, the entry's caps (a capped day's next fire
is after its midnight; a `max_total` entry has `left` fires), active hours, a pause,
a mute, the catch-up window and the target's facts as they stand now (missing, a shell, a program,
limited, no state) decide the forecast exactly as they decide the tick.

Assumed, because nothing can know it now: the target's facts stay as they are,
except that a working agent (`active`, `waiting`) comes to rest (a backoff: it
stays quiet, so the ladder climbs); no other entry types into the target
meanwhile; no wake edge comes; the agent answers each prompt (so only an entry
dormant now, or whose unanswered deliveries make it dormant at its next fire, shows
no further fires: `rk.core.schedule.dormant`); each line is written at the instant it is due (a
late ticker shifts an `every` chain by as much); a budgeted entry's turns stay
within its budget (a day whose `skipped-budget` line is written fires again at
its next midnight); an only-if-changed target changes between fires.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import TypedDict, Unpack

from rk.core.cost import caps
from rk.core.cost.budget import Spent
from rk.core.log.about import cut
from rk.core.log.delivery import LogLine, LogView, Status, status_of
from rk.core.pane.facts import BUSY_STATES, LIMITED, TargetFact
from rk.core.pane.state import AgentState
from rk.core.schedule.cronexpr import CronError, CronExpr
from rk.core.schedule.dispose import Act, Seen, dispose
from rk.core.schedule.due import at_done, budget_reopens, due, entry_zone, next_due
from rk.core.schedule.entry import At, Backoff, Cron, Entry, WakeOnly
from rk.core.schedule.health import DORMANT, needs_state, why_not
from rk.core.settings import Settings

#: How many instants the forecast evaluates before it gives up (an `every 1m` entry
#: through a night of quiet hours takes ~840; one held at the rate cap up to an hour's fires).
STEPS = 4000

#: How far ahead it looks (a leap day's cron comes within it).
HORIZON = 4 * 366 * 86400

#: Lines the forecast steps past: they defer or drop one fire, the next may still land.
PASSING = frozenset({Status.RATE_CAPPED, Status.SKIPPED_QUIET, Status.SKIPPED_PAUSED, Status.HELD_QUIET})


@dataclass(frozen=True, eq=False)
class Upcoming:
    """One delivery the tick would make: at `ts` (for one due already, its due time)."""

    ts: int
    rung: int = 0  #: backoff: the rung it climbs to
    occurrence: int = 0  #: cron: the occurrence it is for (a catch-up fires after it)


@dataclass(frozen=True, eq=False)
class Forecast:
    """`fires`: the deliveries the tick would make, oldest first (the first one is at or
    before now when the entry is due now: it fires on the next tick); `why_not`: what
    keeps it from firing, as `health.why_not` words it, or when no delivery comes at all
    as things stand, why (None: nothing); `note`: an assumption or a fact worth saying."""

    fires: tuple[Upcoming, ...] = ()
    why_not: str | None = None
    note: str = ""
    #: a `max_total` entry: the deliveries it has left before it retires (None: no such cap)
    left: int | None = None

    @property
    def next(self) -> int | None:
        return self.fires[0].ts if self.fires else None


class PauseOptions(TypedDict, total=False):
    """The server's pause, as `due()` takes it (None and None: none)."""

    paused_until: int | None  #: the pause in force
    paused_span: tuple[int, int] | None  #: the last pause with an end, lapsed or not


class ForecastOptions(PauseOptions, total=False):
    """`forecast()`'s keyword options, each with its default when left out."""

    index: int  #: the entry's place in its file, for the entry cap (0)
    n: int  #: how many deliveries to forecast (1)
    if_running: bool  #: forecast as if the server ran when its panes cannot be read (False)


def forecast(
    entry: Entry,
    log: LogView,
    target: TargetFact | None,
    now: int,
    *,
    zone: tzinfo,
    settings: Settings,
    **options: Unpack[ForecastOptions],
) -> Forecast:
    """The next `n` deliveries of `entry` (at `index` in its file), from `log` and its
    `target` resolved on the live server (None: the server's panes could not be read,
    so nothing fires; with `if_running`, the fires it would make if the server ran,
    its target there, at rest, as its last delivery found it)."""
    paused_until, index = options.get("paused_until"), options.get("index", 0)
    if_running = options.get("if_running", False)
    if target is None and if_running and needs_state(entry) and not isinstance(entry.schedule, WakeOnly):
        return Forecast((), None, "its fires depend on the target's agent state, and its server is not running")
    if target is None and if_running:
        newest = log.last_delivered(entry.id)
        target = TargetFact(pane=newest.target if newest and newest.target else "(not running)")
    why = why_not(
        entry,
        index,
        target,
        now,
        zone,
        max_entries=settings.max_entries,
        paused_until=paused_until,
        view=log,
        rate_per_hour=settings.rate_per_hour,
    )
    note = _note(entry, log)
    left = caps.left(entry, log)
    if left == 0:
        return Forecast((), why or f"retired: made its {entry.max_total} deliveries (max_total)", note, left)
    if isinstance(entry.schedule, Cron):
        try:
            CronExpr.parse(entry.schedule.expr)
        except CronError as exc:
            return Forecast((), why or str(exc), str(exc))
    if index >= settings.max_entries or target is None or isinstance(entry.schedule, WakeOnly):
        return Forecast((), why, note, left)
    if isinstance(entry.schedule, At) and at_done(entry, log):
        return Forecast((), why, note, left)
    if why is not None and why.startswith(DORMANT):  # silent until its pane shows life: no fire to foresee
        return Forecast((), why, note, left)
    n, span = options.get("n", 1), options.get("paused_span")
    fires, refusal = _run(entry, log, _at_rest(target), now, zone, settings, paused_until, n, span)
    if not fires and why is None:
        why = refusal
    return Forecast(tuple(fires), why, note, left)


def _run(
    entry: Entry,
    log: LogView,
    target: TargetFact,
    now: int,
    zone: tzinfo,
    settings: Settings,
    paused_until: int | None,
    n: int,
    paused_span: tuple[int, int] | None = None,
) -> tuple[list[Upcoming], str | None]:
    """Step the tick's rules from `now`; the deliveries, and why there are none (or None)."""
    view = cut(log, entry.id, target.pane)
    targets = {entry.id: target}
    poll = settings.tick_interval
    fires: list[Upcoming] = []
    t = now
    last = ""
    written: set[str] = set()  #: the statuses of the lines it wrote
    for _ in range(STEPS):
        ev = due(
            [entry],
            view,
            (),
            targets,
            {},
            t,
            zone=zone,
            max_entries=1,
            poll=poll,
            paused_until=paused_until,
            paused_span=paused_span,
            spent=_spent(entry, view, t, zone),
        )
        for line, _due in ev.ledger(t):
            view.add(line)
            last = line.outcome
            written.add(status_of(line.outcome))
        if ev.dormant:
            return fires, f"{ev.dormant[0].outcome}: it types no more until its pane shows life (or rk cron wake)"
        for fire in (*ev.fires, *ev.absent):
            disposition = dispose(fire, entry, view, t, settings.rate_per_hour, _seen(target) if fire.pane else None)
            if disposition.act == Act.SEND:
                fires.append(Upcoming(fire.due_at if t == now else t, fire.rung, fire.occurrence))
                outcome = str(Status.DELIVERED)
                targets = {entry.id: replace(target, epoch=max(target.epoch, t))}  # answered (assumed)
            elif disposition.act == Act.HOLD:  # only a limit holds a fire the facts alone decide
                return fires, f"target limited: its fires are held until the limit resets ({entry.policy})"
            else:
                outcome = disposition.text or str(Status.RESPAWNED)
                if status_of(outcome) == Status.SKIPPED_LIMITED:
                    return fires, "target limited: its fires are skipped-limited until the limit resets"
                if status_of(outcome) not in PASSING:
                    return fires, f"its fires would be {outcome} as things stand"
            view.add(LogLine(t, entry.id, fire.pane, fire.reason, outcome))
            last = outcome
            written.add(status_of(outcome))
        if len(fires) >= n:
            return fires, None
        nxt = next_due([entry], view, targets, t, zone=zone, max_entries=1, poll=poll, paused_until=paused_until)
        if nxt is None:
            break
        if nxt > now + HORIZON:
            return fires, _none_within(fires, written, "the next four years")
        t = nxt
    else:
        return fires, _none_within(fires, written, f"its next {STEPS} due times")
    if fires:
        return fires, None
    if isinstance(entry.schedule, At) and last:
        return fires, f"its one fire will be {status_of(last)}, then it retires"
    if isinstance(entry.schedule, Cron) and not last:
        return fires, "the expression has no further occurrences"
    return fires, None


def _none_within(fires: list[Upcoming], written: set[str], span: str) -> str | None:
    """Why the forecast stopped short of the deliveries asked for (None: it has some)."""
    if fires:
        return None
    if written == {Status.SKIPPED_QUIET}:
        return "every fire falls outside its active hours (skipped-quiet)"
    return f"no delivery within {span}"


def _spent(entry: Entry, view: LogView, t: int, zone: tzinfo) -> dict[str, Spent]:
    """The budget as the forecast reads it at `t`: reached for the rest of a day whose
    `skipped-budget` line is written, not reached otherwise (the tokens of turns not
    yet run cannot be known: the forecast assumes the budget holds)."""
    if entry.budget is None:
        return {}
    spent = entry.budget.tokens if budget_reopens(entry, view, t, entry_zone(entry, zone)) > t else 0
    return {entry.id: Spent(spent)}


def _at_rest(target: TargetFact) -> TargetFact:
    """The target as the forecast takes it: a working agent has come to rest."""
    return replace(target, state=AgentState.IDLE) if target.resolved and target.state in BUSY_STATES else target


def _seen(target: TargetFact) -> Seen:
    """The target as the look before typing would see it, from its facts alone."""
    return Seen(state=LIMITED) if target.state == LIMITED else Seen()


def _note(entry: Entry, log: LogView) -> str:
    sched = entry.schedule
    if isinstance(sched, Backoff):
        return "assuming the target stays quiet (activity restarts the ladder)"
    if isinstance(sched, At) and at_done(entry, log):
        return "done: it fired (or was missed) and retires"
    if isinstance(sched, WakeOnly):
        event = entry.wake_on.event if entry.wake_on else "its wake event"
        return f"no time of its own: it fires on {event} only"
    if entry.budget is not None:
        return f"assuming its turns stay within its budget ({entry.budget.text})"
    if entry.only_if_changed:
        return "assuming the target changes between fires (only-if-changed skips a fire when it did not)"
    return ""

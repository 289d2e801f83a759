"""Replay entries against a scripted pane-state timeline, tick by tick.

The same `due()` and the same policy decisions as the real tick, with tmux
replaced by a table of pane states and the log kept in memory. A pane can
have an agent model: a delivered payload makes it active at once and idle
`busy_for` seconds later, which is exactly the feedback the backoff
anchor-join exists for. Pure: used by `rk cron simulate`, by the timeline
scenarios in `specs/scenarios/`, and by property tests.

It sees no screens: an `only_if_changed` entry's fire is delivered as if its
panes changed. A fire that came with no new turn and no other state since the
last answer (where the real tick would compare screens) is marked
`if_unchanged`: it is `skipped-unchanged` on a pane whose screen shows nothing new.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, tzinfo
from typing import TypedDict, Unpack

from rk.core.cost import caps
from rk.core.cost.turn_timeout import StateLine
from rk.core.cost.unchanged import Mark, Print, Verdict, compared, verdict, wants_mark
from rk.core.log.delivery import LogLine, LogView, Reason, Status, is_aftermath
from rk.core.pane.facts import PaneFact, PaneKind, TargetFact, resolve_all
from rk.core.pane.state import BUSY_STATES, AgentState
from rk.core.schedule.dispose import Act, Seen, dispose, edge_kept
from rk.core.schedule.due import Fire, due
from rk.core.schedule.entry import Deliver, Entry, WakeEvent
from rk.core.schedule.placeholders import has_placeholders, typed
from rk.core.schedule.replace import turn_is_ours
from rk.core.schedule.wake import Observation
from rk.core.settings import Settings

GONE = "gone"  #: a scripted state meaning the pane no longer exists
UNKNOWN = "unknown"  #: a scripted state meaning the pane shows no agent state (an agent without hooks)
SHELL = "shell"  #: the pane's agent exited: a shell is in front (never typed into)
DRAFT = "draft"  #: idle, with a human's unsent text in the composer
DIALOG = "dialog"  #: waiting, with a permission or question dialog on screen
PAUSE = "pause"  #: a scripted step that pauses the server (`rk cron pause`), whatever the pane
RESUME = "resume"  #: a scripted step that ends the pause (`rk cron resume`)
#: Scripted states that stand for an agent state plus what the screen shows.
_SCREEN_STATES = {SHELL: "", DRAFT: AgentState.IDLE, DIALOG: AgentState.WAITING}


#: What a send and a respawn log in the simulator (a send always lands, a respawn always
#: succeeds); a log or a notification logs the disposition's own outcome.
_SIMULATED = {
    Act.SEND: Status.DELIVERED,
    Act.REPLACE: Status.DELIVERED,  #: its own turn interrupted at once (`deliver: replace`)
    Act.RESPAWN: Status.RESPAWNED,
}


@dataclass(frozen=True)
class StateChange:
    """At `at` (unix seconds) pane `pane` reports `state`
    (active|waiting|idle|limited|unknown|gone, or shell|draft|dialog)."""

    at: int
    pane: str
    state: str


@dataclass(frozen=True)
class AgentModel:
    """How a pane's agent answers a delivered payload: active now, idle after `busy_for`."""

    busy_for: int = 20


@dataclass(frozen=True)
class Event:
    """One thing the simulated ticker did (a log line, a hold, or a diagnostic)."""

    at: int
    entry: str
    kind: str  #: "line", "hold" or "diag"
    reason: str = ""
    outcome: str = ""
    pane: str = ""
    due_at: int = 0
    rung: int = 0
    typed: str = ""  #: a delivered line of a payload with placeholders: the text typed
    #: only_if_changed: a fire with no new turn since the last answer, delivered here; the real
    #: tick compares the screens and skips it (`skipped-unchanged`) when they show nothing new
    if_unchanged: bool = False


@dataclass
class Simulation:
    events: list[Event] = field(default_factory=list)
    lines: list[LogLine] = field(default_factory=list)
    #: per tick: (at, {pane: state}) as the tick saw it
    strip: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    #: the ticks at which the server was paused
    paused: set[int] = field(default_factory=set)

    def fires(self, entry: str | None = None) -> list[LogLine]:
        """Log lines that came from a fire (everything but missed/rescheduled and `AFTERMATH`: dormant…)."""
        return [
            line
            for line in self.lines
            if (entry is None or line.entry == entry)
            and line.outcome not in (Status.MISSED, Status.RESCHEDULED)
            and not is_aftermath(line.outcome)
        ]


@dataclass
class _Pane:
    state: str = UNKNOWN
    epoch: int = 0
    turn_end: int = 0  #: when it last went from busy to idle (a turn's end)


def _agent_state(scripted: str) -> str:
    return "" if scripted == UNKNOWN else _SCREEN_STATES.get(scripted, scripted)


def _fact(pane_id: str, pane: _Pane, role: str, session: str) -> PaneFact:
    """A scripted pane as the tick's enumeration would see it (a shell is a shell)."""
    state = _agent_state(pane.state)
    return PaneFact(
        pane_id=pane_id,
        state=state,
        epoch=pane.epoch if state else 0,
        window_id=f"@{pane_id.lstrip('%')}",
        role=role,
        session_ref=session,
        active=True,
        kind=PaneKind.SHELL if pane.state == SHELL else PaneKind.AGENT,
    )


def _seen(pane: _Pane) -> Seen:
    """A scripted pane as the look right before typing would see it."""
    return Seen(
        state=_agent_state(pane.state),
        draft=pane.state == DRAFT,
        dialog=pane.state == DIALOG,
        refused="shell in pane" if pane.state == SHELL else "",
    )


class SimOptions(TypedDict, total=False):
    """`simulate()`'s keyword options, each with its default when left out."""

    tick: int  #: seconds between ticks (`Settings.tick_interval`)
    phase: int  #: the first tick's offset from `start` (0)
    script: Iterable[StateChange]  #: the panes' state changes, in any order
    agents: Mapping[str, AgentModel] | None  #: pane → how its agent answers a prompt
    roles: Mapping[str, str] | None  #: role → pane id, so role targets resolve
    sessions: Mapping[str, str] | None  #: session ref → pane id, so session targets resolve
    zone: tzinfo  #: the local zone (UTC)
    log: Iterable[LogLine]  #: the log lines before `start`
    cursor: Mapping[str, Observation] | None  #: the wake cursor at `start`
    rate_per_hour: int  #: `Settings.rate_per_hour`
    max_entries: int  #: `Settings.max_entries`
    diagnostics: bool  #: record each tick's diagnostics as events (False)


def simulate(entries: Sequence[Entry], *, start: int, end: int, **options: Unpack[SimOptions]) -> Simulation:
    """Tick from `start + phase` every `tick` seconds while `< end` (`options`: `SimOptions`).

    `roles` maps role → pane id and `sessions` maps session ref → pane id, so
    role and session targets resolve as they would on a real server.
    """
    unknown = options.keys() - SimOptions.__optional_keys__
    if unknown:
        raise TypeError(f"simulate() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    replay = _Replay(list(entries), options)
    t = start + options.get("phase", 0)
    while t < end:
        replay.tick(t)
        t += replay.poll
    return replay.result


class _Replay:
    """One simulation's state between ticks: the panes, the log, the cursor, the marks."""

    def __init__(self, entries: list[Entry], options: SimOptions) -> None:
        self.entries = entries
        self.by_id = {e.id: e for e in entries}
        self.poll = options.get("tick", Settings.tick_interval)
        self.zone = options.get("zone", UTC)
        self.rate_per_hour = options.get("rate_per_hour", Settings.rate_per_hour)
        self.max_entries = options.get("max_entries", Settings.max_entries)
        self.diagnostics = options.get("diagnostics", False)
        self.agents = options.get("agents") or {}
        self.role_of = {pane: role for role, pane in (options.get("roles") or {}).items()}
        self.session_of = {pane: ref for ref, pane in (options.get("sessions") or {}).items()}
        self.queue: list[tuple[int, int, str, str]] = []
        self.seq = 0
        for change in options.get("script", ()):
            self.push(change.at, change.pane, change.state)
        self.panes: dict[str, _Pane] = {}
        self.view = LogView(options.get("log", ()))
        self.obs: dict[str, Observation] = dict(options.get("cursor") or {})
        self.result = Simulation(lines=list(self.view.lines))
        self.marks: dict[str, Mark] = {}
        self.paused = False
        self.journal: dict[str, list[StateLine]] = {}  #: as the hooks would write it (`rk.core.log.cause`)
        self.answers: set[int] = set()  #: the queue's sequence numbers of the models' answers (turn ends)

    def push(self, at: int, pane: str, state: str) -> None:
        heapq.heappush(self.queue, (at, self.seq, pane, state))
        self.seq += 1

    def emit(self, line: LogLine, *, due_at: int = 0, rung: int = 0, text: str = "", maybe: bool = False) -> None:
        self.view.add(line)
        self.result.lines.append(line)
        event = Event(line.ts, line.entry, "line", line.reason, line.outcome, line.target, due_at, rung, text, maybe)
        self.result.events.append(event)

    def _apply_script(self, t: int) -> None:
        """The scripted changes due by `t`."""
        while self.queue and self.queue[0][0] <= t:
            at, _, pane, state = heapq.heappop(self.queue)
            if state in (PAUSE, RESUME):
                self.paused = state == PAUSE
            elif state == GONE:
                self.panes.pop(pane, None)
            else:
                before = self.panes.get(pane, _Pane())
                ended = at if before.state in BUSY_STATES and state == AgentState.IDLE else before.turn_end
                self.panes[pane] = _Pane(state=state, epoch=at, turn_end=ended)
                self.record(at, pane, state)

    def record(self, at: int, pane: str, scripted: str) -> None:
        """A state change into the pane's journal (a scripted state with no agent state writes none)."""
        if state := _agent_state(scripted):
            self.journal.setdefault(pane, []).append(StateLine(at, state))

    def tick(self, t: int) -> None:
        """One tick at `t`: the script, `due()`, the ledger, each fire, retirements."""
        self._apply_script(t)
        if self.paused:
            self.result.paused.add(t)
        panes = self.panes
        facts = [_fact(p, s, self.role_of.get(p, ""), self.session_of.get(p, "")) for p, s in sorted(panes.items())]
        self.result.strip.append((t, {p: s.state for p, s in panes.items()}))
        targets = resolve_all(self.entries, facts)
        ev = due(
            self.entries,
            self.view,
            facts,
            targets,
            self.obs,
            t,
            zone=self.zone,
            max_entries=self.max_entries,
            poll=self.poll,
            paused_until=0 if self.paused else None,
            journal=self.journal,
        )
        for line, due_at in ev.ledger(t):
            self.emit(line, due_at=due_at)
        _take_marks(self.entries, self.view, panes, targets, self.marks, t)
        kept: dict[str, Observation] = {}
        typed_into: set[str] = set()  # agents' panes a fire of this instant typed into, as the tick keeps them
        for fire in ev.in_typing_order:
            self._fire(fire, t, kept, typed_into)
        for spent in caps.retiring(self.entries, self.view):  # its max_total made: it leaves, as the tick retires it
            self.emit(caps.retired_line(spent, t))
            self.entries = [e for e in self.entries if e.id != spent.id]
        if self.diagnostics:
            for d in ev.diagnostics:
                self.result.events.append(Event(t, d.entry, "diag", d.reason, d.detail))
        self.obs = {**ev.next_cursor, **kept}

    def _fire(self, fire: Fire, t: int, kept: dict[str, Observation], typed_into: set[str]) -> None:
        """One fire through the deliver policy, as the tick would dispose of it."""
        entry = self.by_id[fire.entry]
        current = self.panes.get(fire.pane)
        seen = _seen(current) if fire.pane and current is not None else None
        if seen is not None and fire.pane in typed_into:
            seen = replace(seen, typed=True)
        if current is not None and seen is not None and entry.policy == Deliver.REPLACE:
            ours = turn_is_ours(entry.id, self.view, fire.pane, self.journal.get(fire.pane, ()), current.turn_end)
            seen = replace(seen, ours=ours)
        disposition = dispose(fire, entry, self.view, t, self.rate_per_hour, seen)
        if edge_kept(entry, fire, disposition, fire.pane in typed_into) and fire.entry in self.obs:
            kept[fire.entry] = self.obs[fire.entry]
        if disposition.act == Act.HOLD:
            self.result.events.append(
                Event(t, fire.entry, "hold", fire.reason, disposition.text, fire.pane, fire.due_at)
            )
            return
        outcome = disposition.text if disposition.act in (Act.LOG, Act.NOTIFY) else str(_SIMULATED[disposition.act])
        if disposition.act == Act.REPLACE:
            self._interrupt(fire, t)
        sent = disposition.act == Act.SEND and has_placeholders(entry.payload)
        maybe = disposition.act == Act.SEND and _no_new_turn(entry, fire, self.view, self.panes, self.marks, self.poll)
        self.emit(
            LogLine(t, fire.entry, fire.pane, fire.reason, outcome),
            due_at=fire.due_at,
            rung=fire.rung if fire.pane else 0,
            text=typed(entry, fire, self.view, t, self.zone) if sent else "",
            maybe=maybe,
        )
        if disposition.act in (Act.SEND, Act.REPLACE) and fire.pane:
            typed_into.add(fire.pane)  # a scripted pane is an agent's (a shell's refuses before this)
        model = self.agents.get(fire.pane)
        if disposition.act in (Act.SEND, Act.REPLACE) and model is not None:
            self.panes[fire.pane] = _Pane(state=AgentState.ACTIVE, epoch=t)
            self.record(t, fire.pane, AgentState.ACTIVE)
            self.push(t + max(1, model.busy_for), fire.pane, AgentState.IDLE)
            self.answers.add(self.seq - 1)

    def _interrupt(self, fire: Fire, t: int) -> None:
        """`deliver: replace` interrupting its own turn: the pane rests at once (an
        `interrupted` aftermath line), and the model's pending answer to the old prompt is dropped."""
        self.emit(LogLine(t, fire.entry, fire.pane, fire.reason, f"{Status.INTERRUPTED}: replace: simulated"))
        self.queue = [q for q in self.queue if not (q[2] == fire.pane and q[1] in self.answers)]
        heapq.heapify(self.queue)
        ended = self.panes.get(fire.pane, _Pane())
        self.panes[fire.pane] = replace(ended, state=AgentState.IDLE, epoch=t, turn_end=t)
        self.record(t, fire.pane, AgentState.IDLE)


def _prints(entry: Entry, target: str, panes: Mapping[str, _Pane]) -> dict[str, Print]:
    """The compared panes' prints, without a screen (the simulator has none)."""
    others = entry.wake_on is not None and entry.wake_on.event == WakeEvent.AGENT_STATE_CHANGE
    states = {p: _agent_state(s.state) for p, s in panes.items()}
    ids = compared(entry.only_if_changed, others, target, states)
    return {p: Print(states[p], panes[p].turn_end) for p in ids if p in panes}


def _take_marks(
    entries: Sequence[Entry],
    view: LogView,
    panes: Mapping[str, _Pane],
    targets: Mapping[str, TargetFact],
    marks: dict[str, Mark],
    t: int,
) -> None:
    """As the tick does (`rk.engine.marks.take_marks`): a mark at the first sight of an answer."""
    for entry in entries:
        target = targets.get(entry.id)
        last = view.last_delivered(entry.id)
        if not entry.only_if_changed or target is None or not target.resolved or last is None:
            continue
        pane = panes.get(target.pane)
        if pane is not None and wants_mark(marks.get(entry.id), last.ts, _agent_state(pane.state), pane.turn_end):
            marks[entry.id] = Mark(last.ts, t, pane.turn_end, _prints(entry, target.pane, panes))


def _no_new_turn(
    entry: Entry, fire: Fire, view: LogView, panes: Mapping[str, _Pane], marks: Mapping[str, Mark], poll: int
) -> bool:
    """Whether the real tick would compare screens for this fire (and skip it if they match)."""
    if not entry.only_if_changed or not fire.pane or fire.reason == Reason.MANUAL:
        return False
    last = view.last_delivered(entry.id)
    seen = _prints(entry, fire.pane, panes)
    return verdict(marks.get(entry.id), last.ts if last else 0, seen, poll, fire.at) == Verdict.UNCHANGED

"""Turn timeouts: whether a turn this entry's delivery started has run too long.

`--turn-timeout 20m` watches the turn a delivery of the entry started; once it
is still busy that long after the delivery, the tick logs `turn-timeout` (once
per delivery), tells a human, and with `--on-timeout interrupt` presses the
agent's interrupt key once (`rk.act.interrupt` presses and verifies).

"Started by this delivery" is decided from the delivery's log line (its `ts`
and pane) and the pane's state history (the state journal, `rk.core.log.states`):
the pane's current busy run (a stretch of `active`/`waiting` lines) must have
begun at or after the delivery, within `START_WINDOW` of it, be the first run
to begin since, and the pane must have been at rest from before the delivery
until that run began. So a prompt
typed into an already-busy agent (`immediate`) started nothing, and a run that
began after our turn ended (a human's next prompt) is not ours. The pane's
turn-end option must not name an end after the run began (an end the journal
missed), and the journal must agree that the run goes on. Pure: the journal
lines, facts and clock come in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rk.core.durations import format_duration
from rk.core.log.delivery import LogLine, LogView, Status, status_of
from rk.core.pane.facts import BUSY_STATES, PaneFact
from rk.core.pane.state import AgentState
from rk.core.pane.state_words import LIMITED, TURN_ENDS

#: A delivery starts a turn only if the turn begins this soon after it (the
#: submit hook fires within a second; a loaded machine, a slow redraw).
START_WINDOW = 60


#: The key presses that interrupt a running turn, per agent CLI (verified offline,
#: tests/agents): one Esc for Claude Code, Codex and Gemini; OpenCode wants two
#: ("esc again to interrupt"), `KEY_GAP` apart. An agent not listed is never pressed.
INTERRUPT_KEYS: dict[str, tuple[str, ...]] = {
    "claude": ("Escape",),
    "codex": ("Escape",),
    "gemini": ("Escape",),
    "opencode": ("Escape", "Escape"),
    "kilo": ("Escape", "Escape"),  # OpenCode's TUI
    "copilot": ("Escape", "Escape"),  # the first arms ("esc again to interrupt"), a second within 500 ms fires
}
#: Seconds between two presses of one interrupt. OpenCode 1.18 takes two Escapes
#: that reach it within ~70 ms (one `send-keys Escape Escape`, or 50 ms apart) as
#: one key and does nothing; its first Esc is forgotten 4.5–6 s later (measured).
KEY_GAP = 0.5
#: Per agent, where `KEY_GAP` does not fit: Copilot CLI interrupts only when the second
#: Esc comes within 500 ms of the first, yet reads two that reach it together as one.
KEY_GAPS: dict[str, float] = {"copilot": 0.25}


def key_gap(agent: str) -> float:
    """Seconds between two presses of `agent`'s interrupt."""
    return KEY_GAPS.get(agent, KEY_GAP)


@dataclass(frozen=True)
class StateLine:
    """One state-journal line of the pane: when, where it went, how a turn ended."""

    ts: int
    to: str
    end: str = ""


@dataclass(frozen=True)
class Run:
    """A busy stretch of a pane: from its first busy line to the rest line after it
    (`end` 0 while it goes on); `rest_from` is when the rest before it began (0: not known)."""

    start: int
    end: int = 0
    rest_from: int = 0
    #: how it ended: its rest line's turn end, or `limited` for a rest at a limit ("" unknown)
    how: str = ""


def runs(journal: Sequence[StateLine]) -> list[Run]:
    """The pane's busy runs, oldest first."""
    out: list[Run] = []
    start = rest = 0
    busy = False
    for line in journal:
        if line.to in BUSY_STATES:
            if not busy:
                busy, start = True, line.ts
        elif busy:
            how = line.end if line.end in TURN_ENDS else LIMITED if line.to == LIMITED else ""
            out.append(Run(start, line.ts, rest, how))
            busy, rest = False, line.ts
        elif not rest:
            rest = line.ts
    if busy:
        out.append(Run(start, 0, rest))
    return out


@dataclass(frozen=True)
class Timeout:
    """A turn that timed out: the delivery that started it, and what the pane does."""

    delivery: LogLine
    run: Run
    state: str  #: active or waiting

    def detail(self, timeout: int) -> str:
        return f"still {self.state} {format_duration(timeout)} after the delivery"


def handled_since(view: LogView, entry_id: str) -> int:
    """The newest `turn-timeout` line's ts of the entry (-1: none): deliveries up to it are handled."""
    for line in reversed(view.aftermath(entry_id)):
        if status_of(line.outcome) == Status.TURN_TIMEOUT:
            return line.ts
    return -1


def candidates(entry_id: str, timeout: int, view: LogView, panes: Sequence[PaneFact], now: int) -> list[LogLine]:
    """The entry's deliveries (newest first) that may have started a turn that is
    now past its timeout: old enough, not handled, into a pane that is busy now.
    Cheap (no journal): the shell reads the journal only when there are some."""
    if timeout <= 0:
        return []
    busy = {p.pane_id for p in panes if p.state in BUSY_STATES and not p.dead}
    handled = handled_since(view, entry_id)
    out = []
    for line in reversed(view.own(entry_id)):
        if line.ts <= handled:
            break
        if status_of(line.outcome) == Status.DELIVERED and line.target in busy and now - line.ts >= timeout:
            out.append(line)
    return out


def started_by(deliveries: Sequence[LogLine], journal: Sequence[StateLine], turn_end_at: int) -> LogLine | None:
    """Which of the deliveries (into one pane) started the pane's ongoing busy run, if any:
    the run is the first to begin at or after the delivery (within `START_WINDOW`; the
    journal's order tells apart runs within one second), and the pane was at rest from
    before the delivery until it began."""
    found = runs(journal)
    if not found or found[-1].end:
        return None  # the journal says the pane is at rest (or knows nothing): not a turn we can call ours
    run = found[-1]
    if not run.rest_from or turn_end_at > run.start:
        return None  # never seen at rest before it, or a turn ended since it began that the journal lacks
    for line in deliveries:  # newest first: the newest that fits started it
        first = next(r for r in found if r.start >= line.ts) if run.start >= line.ts else None
        if first is run and run.rest_from <= line.ts and run.start <= line.ts + START_WINDOW:
            return line
    return None


def timed_out(
    entry_id: str,
    timeout: int,
    view: LogView,
    pane: PaneFact,
    turn_end_at: int,
    journal: Sequence[StateLine],
    now: int,
) -> Timeout | None:
    """The timeout to act on for `pane`, or None: no turn of this entry's is past
    `timeout` there (none started by its delivery, it ended, or it is handled)."""
    if pane.state not in BUSY_STATES or pane.dead:
        return None
    mine = [d for d in candidates(entry_id, timeout, view, [pane], now) if d.target == pane.pane_id]
    delivery = started_by(mine, journal, turn_end_at)
    if delivery is None:
        return None
    return Timeout(delivery, runs(journal)[-1], pane.state)


def why_not_press(seen_state: str, dialog: bool, draft: bool, mode: str, unreadable: bool, agent: str) -> str:
    """Why the interrupt key must not be pressed ("" when it may): a dialog is a
    human's to answer (Esc would deny it), a draft is theirs (Esc may clear it),
    a pane mode is theirs, an unreadable screen or an agent whose key rk does not
    know is not pressed blind, and a screen at rest has no turn to interrupt."""
    if mode:
        return f"the pane is in {mode}"
    if dialog or seen_state == AgentState.WAITING:
        return "a dialog is open"
    if draft:
        return "a draft is in the composer"
    if unreadable:
        return "the screen could not be read"
    if agent not in INTERRUPT_KEYS:
        return f"no interrupt key known for {agent or 'this program'}"
    if seen_state != AgentState.ACTIVE:
        return f"the screen shows the agent {seen_state or 'in no known state'}"
    return ""

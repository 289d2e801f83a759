"""Pane facts and target resolution, as plain values.

The tmux layer (`rk.tmux.server`) reads every pane of a server in one enumeration
and hands over `PaneFact`s; this module turns option text into agent states,
discards stale states (the reconciler), judges each pane's kind (from the
process tree `rk.core.pane.program` read, else the command), and resolves an
entry's target to a pane, or says why not. Pure: the outside facts (whether a
pid is alive and in front, the judged program) are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from rk.core.bounds import MAX_DIGITS, MAX_EPOCH, MAX_PID
from rk.core.pane.identity import REPLACED, ServerIdentity
from rk.core.pane.program import AGENT_COMMANDS as AGENT_COMMANDS  # re-exported: judged in rk.core.pane.program
from rk.core.pane.program import SHELLS as SHELLS
from rk.core.pane.program import PaneKind as PaneKind
from rk.core.pane.program import Program
from rk.core.pane.state import BUSY_STATES as BUSY_STATES
from rk.core.pane.state import AgentState

if TYPE_CHECKING:  # the callers have loaded the entries; `rk agent list` needs none
    from rk.core.schedule.entry import Entry, Target

AGENT_STATES = frozenset(AgentState)
#: A usage or rate limit: nothing is typed until it resets.
LIMITED = AgentState.LIMITED


@dataclass(frozen=True)
class ProcessInfo:
    """One pid as the kernel reports it; `alive` False means nothing else is known."""

    alive: bool = False
    tty: int = 0  #: device number of the controlling terminal (0: none)
    pgrp: int = 0
    tpgid: int = 0  #: the foreground process group of that terminal

    def fronts(self, tty: int) -> bool:
        """Whether this process owns the keyboard of terminal `tty` (0: any terminal)."""
        if not self.alive or self.tpgid <= 0 or self.pgrp != self.tpgid:
            return False
        return tty == 0 or self.tty == tty


@dataclass(frozen=True)
class StateOption:
    """A parsed `@rk_pane_agent_state` value; `state == ""` means unknown."""

    state: str = ""
    epoch: int = 0
    pid: int = 0

    def render(self) -> str:
        """The option value `<state>:<epoch>[:<pid>]`."""
        text = f"{self.state}:{self.epoch}"
        return f"{text}:{self.pid}" if self.pid else text


UNKNOWN = StateOption()


class Source(StrEnum):
    """Who wrote a pane's state."""

    HOOK = "hook"  #: an agent hook (no note, or a note for another epoch)
    SCREEN = "screen"  #: rk read the pane's screen and corrected the state
    MANUAL = "manual"  #: `rk agent state`


@dataclass(frozen=True)
class SourceNote:
    """`@rk_pane_agent_source` = `<source>:<state epoch>[:<reset epoch>]`: who wrote the
    state of that epoch, and for `limited` when it resets (0: not known)."""

    source: Source
    epoch: int
    reset_at: int = 0

    def render(self) -> str:
        text = f"{self.source}:{self.epoch}"
        return f"{text}:{self.reset_at}" if self.reset_at else text


def parse_source_option(value: str | None) -> SourceNote | None:
    """The note, or None when absent or malformed (then the state is a hook's)."""
    if not value:
        return None
    parts = value.strip().split(":")
    if len(parts) not in (2, 3) or parts[0] not in Source.__members__.values():
        return None
    if not all(_digits(p) and len(p) <= 12 for p in parts[1:]):
        return None
    return SourceNote(Source(parts[0]), int(parts[1]), int(parts[2]) if len(parts) == 3 else 0)


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS


def parse_state_option(value: str | None) -> StateOption:
    """`idle:1751790042` or `active:1751790100:48213` → StateOption; anything malformed
    (wrong segment count, unknown token, an epoch or pid out of range) is wholly unknown."""
    if not value:
        return UNKNOWN
    parts = value.strip().split(":")
    if len(parts) not in (2, 3):
        return UNKNOWN
    state, epoch = parts[0], parts[1]
    if state not in AGENT_STATES or not _digits(epoch) or int(epoch) > MAX_EPOCH:
        return UNKNOWN
    pid = 0
    if len(parts) == 3:
        if not _digits(parts[2]) or not 0 < int(parts[2]) <= MAX_PID:
            return UNKNOWN
        pid = int(parts[2])
    return StateOption(state=state, epoch=int(epoch), pid=pid)


def pane_kind(
    state: StateOption, command: str, agent_in_front: bool, program: Program | None = None, source: str = ""
) -> PaneKind:
    """What the pane's keyboard reaches.

    A recorded agent pid that is alive and owns the pane's foreground makes it
    an agent whatever else is seen. Otherwise the process tree decides
    (`program`, see `rk.core.pane.program`), and only when it could not be read the
    foreground command tmux names: a plain shell is a shell, a known agent CLI
    an agent. Any other program is an agent only if it reported a state of its
    own (a state without a pid, such as `rk agent state idle`); a state the
    screen wrote never counts as one (an agent's last frame over a REPL).
    """
    if agent_in_front:
        return PaneKind.AGENT
    if program is not None and program.kind != PaneKind.PROGRAM:
        return program.kind
    if program is None and command in SHELLS:
        return PaneKind.SHELL
    if program is None and command in AGENT_COMMANDS:
        return PaneKind.AGENT
    if state.state and not state.pid and source != Source.SCREEN:
        return PaneKind.AGENT
    return PaneKind.PROGRAM


def is_stale(state: StateOption, kind: PaneKind, agent_in_front: bool, source: str = "") -> bool:
    """The reconciler: a recorded pid that is not the pane's live foreground agent
    (dead, suspended, or behind another program), a pane that fell back to a
    plain shell, or a screen-written state on a pane that holds no agent, makes
    the pane's agent state and session stale."""
    if state.pid:
        return not agent_in_front
    return kind == PaneKind.SHELL or (source == Source.SCREEN and kind != PaneKind.AGENT)


@dataclass(frozen=True)
class PaneFact:
    """What one enumeration read about one pane (state and session already reconciled)."""

    pane_id: str
    state: str = ""
    epoch: int = 0
    pid: int = 0
    command: str = ""
    session_ref: str = ""
    window_id: str = ""
    role: str = ""  #: the window's @rk_win_role
    active: bool = False  #: the window's active pane
    in_mode: bool = False  #: copy-mode or another pane mode owns the keyboard
    mode: str = ""  #: that mode's name (`copy-mode`, `view-mode`, `clock-mode`, …)
    dead: bool = False  #: remain-on-exit pane whose process ended
    kind: PaneKind = PaneKind.AGENT  #: what its keyboard reaches (set by `reconcile`)
    tty: int = 0  #: device number of the pane's tty (0: unknown)
    source: str = ""  #: who wrote the state (a Source; "" when there is none)
    reset_at: int = 0  #: `limited`: when the limit resets (0: not known)
    title: str = ""  #: the pane's title (agents put a spinner there while they work)
    window_name: str = ""  #: the name of the pane's window (`{wake_window}`)
    unread: str = ""  #: the pane as a look last found no layout on its screen (`rk.tmux.observe.unread_memo`)
    pane_pid: int = 0  #: the pid tmux started in the pane (the root of its process tree)
    server_started: int = 0  #: the tmux server's start time (with the pane id, who the pane is)
    server_pid: int = 0  #: the tmux server's pid (the start time is whole seconds; a restart is quicker)
    program: str = ""  #: the name of the process the kind was judged by ("" when the tree was not read)
    program_pid: int = 0  #: that process's pid
    program_argv: str = ""  #: its short command line (`node …/claude-code/cli.js`)
    agent: str = ""  #: the agent CLI the process tree shows (`claude`, `codex`…)
    idle_line: str = ""  #: the @rk_pane_idle_line option as listed (`rk.core.pane.idle_line`)
    turn_end: int = 0  #: the epoch of its last turn end (`@rk_pane_turn_end`, `rk.core.pane.turn`; 0: none)

    @property
    def server(self) -> ServerIdentity:
        """The server this pane id belongs to (`rk.core.pane.identity`)."""
        return ServerIdentity(self.server_started, self.server_pid)

    @property
    def provider(self) -> str:
        """The agent CLI the pane runs, as far as its session stamp, process tree or command tells."""
        prefix, sep, _ = self.session_ref.partition(":")
        if sep and prefix:
            return prefix
        if self.agent:
            return self.agent
        return self.command if self.command in AGENT_COMMANDS and not self.program else ""

    @property
    def program_name(self) -> str:
        """The pane's program for messages: the judged process's name, else tmux's command."""
        return self.program or self.command


def reconcile(
    pane: PaneFact,
    raw_state: str,
    raw_legacy: str,
    raw_session: str,
    probe: Callable[[int], ProcessInfo],
    raw_source: str = "",
    program: Program | None = None,
) -> PaneFact:
    """Fill a pane's state, session, kind, source and program from its raw options
    (canonical first, then the legacy name) and its judged process tree
    (`program`; None when it could not be read), clearing state and session
    when the reconciler calls them stale. `probe` tells whether the recorded
    pid is alive and in front of the pane's tty (`pane.tty`). The source note
    counts only for the state epoch it names."""
    state = parse_state_option(raw_state) if raw_state else parse_state_option(raw_legacy)
    session = raw_session.strip()
    note = parse_source_option(raw_source)
    source, reset_at = "", 0
    if state.state:
        if note is not None and note.epoch == state.epoch:
            source, reset_at = str(note.source), note.reset_at if state.state == LIMITED else 0
        else:
            source = str(Source.HOOK)
    in_front = bool(state.pid) and probe(state.pid).fronts(pane.tty)
    kind = pane_kind(state, pane.command, in_front, program, source)
    if is_stale(state, kind, in_front, source):
        state, session, source, reset_at = UNKNOWN, "", "", 0
    judged = program or Program(kind)
    return replace(
        pane,
        state=state.state,
        epoch=state.epoch,
        pid=state.pid,
        session_ref=session,
        kind=kind,
        source=source,
        reset_at=reset_at,
        program=judged.name,
        program_pid=judged.pid,
        program_argv=judged.argv,
        agent=judged.agent,
    )


def session_ref_of(value: str) -> str:
    """The ref part of `<provider>:<ref>` (split at the first colon); the whole value
    when there is no provider prefix."""
    _, sep, ref = value.partition(":")
    return ref if sep else value


def short_session(ref: str) -> str:
    """A session ref for messages: `claude:565428b4` for `claude:565428b4-…` (a
    uuid's first group names it among a user's sessions)."""
    provider, sep, rest = ref.partition(":")
    if not sep:
        provider, rest = "", ref
    head = rest.split("-", 1)[0] if len(rest) > 12 else rest
    return f"{provider}:{head}" if sep else head


@dataclass(frozen=True)
class TargetFact:
    """An entry's target this tick: the pane it resolved to, or why it did not.

    `refused` is set when the pane is there but rk will not type into it (a
    shell, or a program the entry did not opt into); it then counts as absent.
    A session target whose session no pane runs sets it too (`session … ended`):
    it is the `skipped-absent: …` line's word, so the log says why."""

    pane: str = ""
    state: str = ""
    epoch: int = 0
    why: str = ""
    refused: str = ""

    @property
    def resolved(self) -> bool:
        return bool(self.pane)


def _agent_pane(panes: Sequence[PaneFact]) -> PaneFact:
    """A window's agent pane: one with a known state, the active one first; then an
    agent pane without a state, the active one first; else the active pane."""
    for group in ([p for p in panes if p.state], [p for p in panes if p.kind == PaneKind.AGENT]):
        for p in group:
            if p.active:
                return p
        if group:
            return group[0]
    for p in panes:
        if p.active:
            return p
    return panes[0]


#: The refusal of a pane at its shell prompt (a payload there would be executed).
SHELL_IN_PANE = "shell in pane"


def refusal(pane: PaneFact, any_program: bool = False) -> str:
    """Why rk will not type into this pane ("" when it will)."""
    if pane.kind == PaneKind.SHELL:
        return SHELL_IN_PANE
    if pane.kind == PaneKind.PROGRAM and not any_program:
        return f"no agent in pane ({pane.program_name or 'unknown program'})"
    return ""


def _fact(p: PaneFact, any_program: bool) -> TargetFact:
    refused = refusal(p, any_program)
    if refused:
        return TargetFact(why=f"{p.pane_id}: {refused}", refused=refused)
    return TargetFact(pane=p.pane_id, state=p.state, epoch=p.epoch)


def resolve_target(target: Target, panes: Sequence[PaneFact], any_program: bool = False) -> TargetFact:
    """Resolve a target against one server's panes (in enumeration order).

    A pane that is found but is a shell, or a program the entry did not opt
    into with `any_program`, is unresolved with `refused` set; so is a pane
    target whose id now belongs to another server (`pane replaced`)."""
    from rk.core.schedule.entry import TargetKind

    live = [p for p in panes if not p.dead]
    if target.kind == TargetKind.PANE:
        for p in live:
            if p.pane_id == target.value and target.server.differs(p.server):
                why = f"{p.pane_id}: {REPLACED} (the tmux server restarted since the entry was made; the id is reused)"
                return TargetFact(why=why, refused=REPLACED)
            if p.pane_id == target.value:
                return _fact(p, any_program)
        return TargetFact(why=f"pane {target.value} is dead")
    if target.kind == TargetKind.SESSION:
        for p in live:
            if p.session_ref and (p.session_ref == target.value or session_ref_of(p.session_ref) == target.value):
                return _fact(p, any_program)
        ended = f"session {short_session(target.value)} ended"
        return TargetFact(why=f"{ended} (no pane runs it now)", refused=ended)
    if target.kind == TargetKind.ROLE:
        window = next((p.window_id for p in live if p.role == target.value), None)
        if window is None:
            return TargetFact(why=f"no window carries role {target.value}")
        return _fact(_agent_pane([p for p in live if p.window_id == window]), any_program)
    return TargetFact(why=f"unknown target kind {target.kind}")


def resolve_all(entries: Iterable[Entry], panes: Sequence[PaneFact]) -> dict[str, TargetFact]:
    """`{entry id: TargetFact}` for every entry."""
    return {e.id: resolve_target(e.target, panes, e.any_program) for e in entries}


def panes_concerned(entries: Iterable[Entry], panes: Sequence[PaneFact]) -> set[str]:
    """The panes whose kind matters this tick: every entry's target (a pane, the
    panes carrying a session, every pane of a role's window) and, when an entry
    wakes on the server's states, every live pane. Only these are judged from
    their process tree (the rest keep the command's judgement until they matter)."""
    from rk.core.schedule.entry import TargetKind

    entries = list(entries)
    live = [p for p in panes if not p.dead]
    if any(e.wake_on is not None for e in entries):
        return {p.pane_id for p in live}
    ids: set[str] = set()
    for entry in entries:
        target = entry.target
        if target.kind == TargetKind.PANE:
            ids.add(target.value)
        elif target.kind == TargetKind.SESSION:
            ids |= {
                p.pane_id
                for p in live
                if p.session_ref and target.value in (p.session_ref, session_ref_of(p.session_ref))
            }
        elif target.kind == TargetKind.ROLE:
            windows = {p.window_id for p in live if p.role == target.value}
            ids |= {p.pane_id for p in live if p.window_id in windows}
    return ids

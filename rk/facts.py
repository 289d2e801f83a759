"""Pane facts and target resolution, as plain values.

The tmux layer (`rk.tmux`) reads every pane of a server in one enumeration
and hands over `PaneFact`s; this module turns option text into agent states,
discards stale states (the reconciler), and resolves an entry's target to a
pane, or says why not. Pure: the only outside fact, whether a pid is alive, is
passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from rk.entry import Target, TargetKind

AGENT_STATES = frozenset({"active", "waiting", "idle"})
BUSY_STATES = frozenset({"active", "waiting"})
#: A pane whose foreground command is one of these runs no agent.
SHELLS = frozenset({"bash", "zsh", "fish", "sh", "dash"})


@dataclass(frozen=True)
class AgentState:
    """A parsed `@rk_pane_agent_state` value; `state == ""` means unknown."""

    state: str = ""
    epoch: int = 0
    pid: int = 0

    def render(self) -> str:
        """The option value `<state>:<epoch>[:<pid>]`."""
        text = f"{self.state}:{self.epoch}"
        return f"{text}:{self.pid}" if self.pid else text


UNKNOWN = AgentState()


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_state_option(value: str | None) -> AgentState:
    """`idle:1751790042` or `active:1751790100:48213` → AgentState; anything malformed
    (wrong segment count, unknown token, bad epoch or pid) is wholly unknown."""
    if not value:
        return UNKNOWN
    parts = value.strip().split(":")
    if len(parts) not in (2, 3):
        return UNKNOWN
    state, epoch = parts[0], parts[1]
    if state not in AGENT_STATES or not _digits(epoch):
        return UNKNOWN
    pid = 0
    if len(parts) == 3:
        if not _digits(parts[2]) or int(parts[2]) <= 0:
            return UNKNOWN
        pid = int(parts[2])
    return AgentState(state=state, epoch=int(epoch), pid=pid)


def is_stale(state: AgentState, command: str, pid_alive: Callable[[int], bool]) -> bool:
    """The reconciler: a recorded pid that is dead, or (without a pid) a pane that
    fell back to a plain shell, makes the pane's agent state and session stale."""
    if state.pid:
        return not pid_alive(state.pid)
    return command in SHELLS


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
    dead: bool = False  #: remain-on-exit pane whose process ended


def reconcile(
    pane: PaneFact,
    raw_state: str,
    raw_legacy: str,
    raw_session: str,
    pid_alive: Callable[[int], bool],
) -> PaneFact:
    """Fill a pane's state and session from its raw options (canonical first, then
    the legacy name), clearing both when the reconciler calls them stale."""
    state = parse_state_option(raw_state) if raw_state else parse_state_option(raw_legacy)
    session = raw_session.strip()
    if is_stale(state, pane.command, pid_alive):
        state, session = UNKNOWN, ""
    return replace(pane, state=state.state, epoch=state.epoch, pid=state.pid, session_ref=session)


def session_ref_of(value: str) -> str:
    """The ref part of `<provider>:<ref>` (split at the first colon); the whole value
    when there is no provider prefix."""
    _, sep, ref = value.partition(":")
    return ref if sep else value


@dataclass(frozen=True)
class TargetFact:
    """An entry's target this tick: the pane it resolved to, or why it did not."""

    pane: str = ""
    state: str = ""
    epoch: int = 0
    why: str = ""

    @property
    def resolved(self) -> bool:
        return bool(self.pane)


def _agent_pane(panes: Sequence[PaneFact]) -> PaneFact:
    """A window's agent pane: one with a known state, the active one first; else the active pane."""
    known = [p for p in panes if p.state]
    for p in known:
        if p.active:
            return p
    if known:
        return known[0]
    for p in panes:
        if p.active:
            return p
    return panes[0]


def _fact(p: PaneFact) -> TargetFact:
    return TargetFact(pane=p.pane_id, state=p.state, epoch=p.epoch)


def resolve_target(target: Target, panes: Sequence[PaneFact]) -> TargetFact:
    """Resolve a target against one server's panes (in enumeration order)."""
    live = [p for p in panes if not p.dead]
    if target.kind == TargetKind.PANE:
        for p in live:
            if p.pane_id == target.value:
                return _fact(p)
        return TargetFact(why=f"pane {target.value} is dead")
    if target.kind == TargetKind.SESSION:
        for p in live:
            if p.session_ref and (p.session_ref == target.value or session_ref_of(p.session_ref) == target.value):
                return _fact(p)
        return TargetFact(why=f"no live pane carries session {target.value}")
    if target.kind == TargetKind.ROLE:
        window = next((p.window_id for p in live if p.role == target.value), None)
        if window is None:
            return TargetFact(why=f"no window carries role {target.value}")
        return _fact(_agent_pane([p for p in live if p.window_id == window]))
    return TargetFact(why=f"unknown target kind {target.kind}")


def resolve_all(entries: Iterable, panes: Sequence[PaneFact]) -> dict[str, TargetFact]:
    """`{entry id: TargetFact}` for every entry."""
    return {e.id: resolve_target(e.target, panes) for e in entries}

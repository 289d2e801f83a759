"""Waking on another host's panes: the scope that names them, and the edge rule.

A wake entry's scope is `server` (this server's panes, `rk.core.schedule.wake`) or
another host's: `%3@buildbox` (one pane), `role:worker@buildbox` (the panes of the
windows carrying that role there), `@buildbox` (every pane there), each with
`/SERVER` for a tmux server there other than `default`. That host's state journal
is mirrored here line by line (`rk.engine.follow`, `rk.store.mirror`), and the
edge is read from those lines, not from a snapshot of states: a turn that ended
while the link was down (idle, then busy again before it came back) still wakes,
once. The entry's observation is the mark of the last mirrored line it has judged
(`Observation.fingerprint` = `mirror:<mark>`), so a restart, a dropped link or a
burst judge each line once. Waking is as for this server: a line going anywhere
but `active` is actionable, `gone` included (the far end journals a pane that
vanished, `rk.core.fleet.roster`); the debounce holds the edge (the mark stays,
the lines wait); cold, the newest mark is taken, nothing fired.

The far end stamps each line with what only it knows: who started the turn the
line ends (`by`, `rk.core.log.cause` over its own delivery log) and the role and
name of the pane's window when it streamed the line (a role set after the entry
was made counts). `wake_from: human` then lets pass a line going idle at the end
of a turn rk started, as on this server; a line without `by` (the far end could
not tell) is a human's: a doubt wakes. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypedDict

from rk.core.bounds import quote
from rk.core.errors import ExitStatus, RkError
from rk.core.fleet.hosts import NAME as HOST_NAME
from rk.core.log.cause import HUMAN, RK
from rk.core.pane.state import AgentState
from rk.core.schedule.wake import Observation, WakeVerdict

WAKE_SCOPE_SERVER = "server"
#: `[%N | role:NAME]@HOST[/SERVER]` (a role name may hold `@`: the host is after the last one)
_SCOPE = re.compile(r"^(%[0-9]{1,9}|role:\S{1,200})?@([^/@\s]+)(?:/([A-Za-z0-9_-]{1,64}))?$")
ROLE_PREFIX = "role:"
MIRROR = "mirror:"


class ScopeError(RkError, ValueError, status=ExitStatus.USAGE):
    """A wake scope rk cannot read."""


@dataclass(frozen=True)
class RemoteScope:
    """The panes of another host a wake watches."""

    host: str
    server: str = "default"
    pane: str = ""  #: "" for every pane there (or the role's)
    role: str = ""  #: the panes of the windows carrying this role there ("" for any)

    @property
    def source(self) -> str:
        """The mirror it reads: `host/server`."""
        return f"{self.host}/{self.server}"

    def covers(self, line: MirrorLine) -> bool:
        """Whether the line is of a pane this scope watches (a role: the window's role
        when the far end streamed the line)."""
        if self.pane:
            return line.pane == self.pane
        return not self.role or line.role == self.role

    def name(self, pane: str) -> str:
        """A pane of it as a wake names it: `%3@buildbox` (`/server` when not default)."""
        return f"{pane}@{self.host}" + (f"/{self.server}" if self.server != "default" else "")


def parse_scope(text: str) -> RemoteScope | None:
    """None for `server` (this server's panes); the RemoteScope of `%N@HOST[/SERVER]`,
    `role:NAME@HOST[/SERVER]` or `@HOST[/SERVER]`; ScopeError naming the forms otherwise."""
    if text in ("", WAKE_SCOPE_SERVER):
        return None
    m = _SCOPE.match(text)
    if not m or not HOST_NAME.match(m.group(2)):
        raise ScopeError(
            f"wake scope {quote(text)}: server, or another host's panes: %N@HOST, role:NAME@HOST or @HOST "
            "(add /SERVER for a tmux server there other than default)"
        )
    which = m.group(1) or ""
    role = which.removeprefix(ROLE_PREFIX) if which.startswith(ROLE_PREFIX) else ""
    return RemoteScope(m.group(2), m.group(3) or "default", "" if role else which, role)


@dataclass(frozen=True)
class MirrorLine:
    """One line of another host's journal as mirrored here."""

    ts: int
    pane: str
    to: str
    at: tuple[int, int, int]
    by: str = ""  #: who started the turn the line is in or ends (`rk`, `human`; "": the far end did not say)
    role: str = ""  #: the role of the pane's window when the far end streamed the line
    window: str = ""  #: that window's name ("" once the pane is gone)


class WakeFields(TypedDict):
    """A wake fire's provenance (`rk.core.schedule.evaluation.Fire`'s `wake_*`)."""

    wake_pane: str
    wake_state: str
    wake_by: str
    wake_window: str


class RemoteEdge(NamedTuple):
    """One entry's edge over a host's mirrored lines."""

    verdict: WakeVerdict
    observation: Observation  #: what to keep
    pane: str = ""  #: the pane that fired it, named with its host ("" when none fired)
    state: str = ""
    by: str = ""
    window: str = ""

    def fire(self) -> WakeFields:
        """What the wake fire names."""
        return {"wake_pane": self.pane, "wake_state": self.state, "wake_by": self.by, "wake_window": self.window}


def _mark_text(at: tuple[int, int, int]) -> str:
    return f"{MIRROR}{at[0]}.{at[1]}.{at[2]}"


def rk_ended(line: MirrorLine) -> bool:
    """`wake_from: human` lets it pass: a pane going idle at the end of a turn rk started
    there. Waiting, limited and gone wake whoever started the turn; no `by`: a human's."""
    return line.to == AgentState.IDLE and line.by == RK


def remote_edge(
    previous: Observation | None,
    scope: RemoteScope,
    lines: Sequence[MirrorLine],
    newest_own_ts: int | None,
    debounce: int,
    now: int,
    from_human: bool = False,
) -> RemoteEdge:
    """One entry's edge over the mirrored lines of its scope's host (oldest first)."""
    newest = Observation(_mark_text(lines[-1].at), now) if lines else Observation(MIRROR, now)
    if previous is None:
        return RemoteEdge(WakeVerdict.COLD_START, newest)
    start = _after(previous.fingerprint, lines, previous.observed_at)
    fresh = lines[start:]
    if not fresh:
        return RemoteEdge(WakeVerdict.UNCHANGED, previous)
    ends = [line for line in fresh if scope.covers(line) and line.to != AgentState.ACTIVE]
    if not ends:
        return RemoteEdge(WakeVerdict.IGNORED, newest)
    trigger = next((line for line in ends if not (from_human and rk_ended(line))), None)
    if trigger is None:
        return RemoteEdge(WakeVerdict.FROM_RK, newest)
    if newest_own_ts is not None and now - newest_own_ts < debounce:
        return RemoteEdge(WakeVerdict.DEBOUNCED, previous)
    by = trigger.by or HUMAN
    return RemoteEdge(WakeVerdict.FIRE, newest, scope.name(trigger.pane), trigger.to, by, trigger.window)


def _after(fingerprint: str, lines: Sequence[MirrorLine], observed_at: int) -> int:
    """The index of the first line after the one the observation marks. A mark no longer
    mirrored (rotated out here), not a mirror mark (the scope changed) or none (nothing
    was mirrored yet: a host's journal before the entry was made wakes nothing): the
    lines written since the observation was made, by the far end's clock."""
    if fingerprint.startswith(MIRROR) and fingerprint != MIRROR:
        for i in range(len(lines) - 1, -1, -1):
            if _mark_text(lines[i].at) == fingerprint:
                return i + 1
    if fingerprint == MIRROR:  # nothing was mirrored when it looked: the lines written since (history is not news)
        return next((i for i, line in enumerate(lines) if line.ts >= observed_at), len(lines))
    return next((i for i, line in enumerate(lines) if line.ts > observed_at), len(lines))

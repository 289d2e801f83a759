"""Waking on another host's panes: the scope that names them, and the edge rule.

A wake entry's scope is `server` (this server's panes, `rk.core.schedule.wake`) or
another host's: `%3@buildbox` (one pane), `@buildbox` (every pane there), each
with `/SERVER` for a tmux server there other than `default`. That host's state
journal is mirrored here line by line (`rk.engine.follow`, `rk.store.mirror`),
and the edge is read from those lines, not from a snapshot of states: a turn
that ended while the link was down (idle, then busy again before it came back)
still wakes, once. The entry's observation is the mark of the last mirrored line
it has judged (`Observation.fingerprint` = `mirror:<mark>`), so a restart, a
dropped link or a burst judge each line once. Waking is as for this server:
a line going anywhere but `active` is actionable; the debounce holds the edge
(the mark stays, the lines wait); cold, the newest mark is taken, nothing fired.
A line's cause (rk's fire or a human's prompt there) is not known here, so
`wake_from: human` cannot tell an answer to a heartbeat from other ends: every
end wakes. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rk.core.bounds import quote
from rk.core.errors import ExitStatus, RkError
from rk.core.fleet.hosts import NAME as HOST_NAME
from rk.core.pane.state import AgentState
from rk.core.schedule.wake import Observation, WakeVerdict

WAKE_SCOPE_SERVER = "server"
#: `[%N]@HOST[/SERVER]`
_SCOPE = re.compile(r"^(%[0-9]{1,9})?@([^/\s]+)(?:/([A-Za-z0-9_-]{1,64}))?$")
MIRROR = "mirror:"


class ScopeError(RkError, ValueError, status=ExitStatus.USAGE):
    """A wake scope rk cannot read."""


@dataclass(frozen=True)
class RemoteScope:
    """The panes of another host a wake watches."""

    host: str
    server: str = "default"
    pane: str = ""  #: "" for every pane there

    @property
    def source(self) -> str:
        """The mirror it reads: `host/server`."""
        return f"{self.host}/{self.server}"

    def covers(self, pane: str) -> bool:
        return not self.pane or pane == self.pane

    def name(self, pane: str) -> str:
        """A pane of it as a wake names it: `%3@buildbox` (`/server` when not default)."""
        return f"{pane}@{self.host}" + (f"/{self.server}" if self.server != "default" else "")


def parse_scope(text: str) -> RemoteScope | None:
    """None for `server` (this server's panes); the RemoteScope of `%N@HOST[/SERVER]` or
    `@HOST[/SERVER]`; ScopeError naming the forms otherwise."""
    if text in ("", WAKE_SCOPE_SERVER):
        return None
    m = _SCOPE.match(text)
    if not m or not HOST_NAME.match(m.group(2)):
        raise ScopeError(
            f"wake scope {quote(text)}: server, or another host's panes: %N@HOST or @HOST (add /SERVER for a "
            "tmux server there other than default)"
        )
    return RemoteScope(m.group(2), m.group(3) or "default", m.group(1) or "")


@dataclass(frozen=True)
class MirrorLine:
    """One line of another host's journal as mirrored here."""

    ts: int
    pane: str
    to: str
    at: tuple[int, int, int]


def _mark_text(at: tuple[int, int, int]) -> str:
    return f"{MIRROR}{at[0]}.{at[1]}.{at[2]}"


def remote_edge(
    previous: Observation | None,
    scope: RemoteScope,
    lines: Sequence[MirrorLine],
    newest_own_ts: int | None,
    debounce: int,
    now: int,
) -> tuple[WakeVerdict, Observation, str, str]:
    """One entry's edge over the mirrored lines of its scope's host (oldest first):
    the verdict, the observation to keep, and the pane (named with its host) and state
    that fired it ("" when none)."""
    newest = Observation(_mark_text(lines[-1].at), now) if lines else Observation(MIRROR, now)
    if previous is None:
        return WakeVerdict.COLD_START, newest, "", ""
    start = _after(previous.fingerprint, lines, previous.observed_at)
    fresh = lines[start:]
    if not fresh:
        return WakeVerdict.UNCHANGED, previous, "", ""
    trigger = next((line for line in fresh if scope.covers(line.pane) and line.to != AgentState.ACTIVE), None)
    if trigger is None:
        return WakeVerdict.IGNORED, newest, "", ""
    if newest_own_ts is not None and now - newest_own_ts < debounce:
        return WakeVerdict.DEBOUNCED, previous, "", ""
    return WakeVerdict.FIRE, newest, scope.name(trigger.pane), trigger.to


def _after(fingerprint: str, lines: Sequence[MirrorLine], observed_at: int) -> int:
    """The index of the first line after the one the observation marks. A mark no longer
    mirrored (rotated out here) or not a mirror mark (the scope changed): the lines
    written since the observation was made."""
    if fingerprint.startswith(MIRROR) and fingerprint != MIRROR:
        for i in range(len(lines) - 1, -1, -1):
            if _mark_text(lines[i].at) == fingerprint:
                return i + 1
    if fingerprint == MIRROR:
        return 0  # nothing was mirrored when it looked: every line is new
    return next((i for i, line in enumerate(lines) if line.ts > observed_at), len(lines))

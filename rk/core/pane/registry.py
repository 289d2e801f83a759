"""Claude Code's live session registry as a further state source: what a record says,
and what it implies for a pane rk holds a state for.

Claude Code (since about 2.1.139) keeps `<config home>/sessions/<pid>.json` for each
running session, with a `status` (`busy`, `idle`, `waiting`, `shell`) rewritten within
milliseconds of every change of its screen, an Esc included, which fires no hook. The
file is undocumented and may be left behind by a crash, so a record is never trusted
alone: `rk.store.claude_sessions` checks that it belongs to the pane, and a verdict
that the turn ended only makes rk look at the screen, which confirms it before the
state changes. Pure: the parsed JSON comes in, plain values go out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rk.core.pane.state import BUSY_STATES, AgentState

#: The record's status → the agent state it implies. `shell` is at rest with a
#: background command running; anything else is unknown.
STATUS_STATES = {
    "busy": AgentState.ACTIVE,
    "idle": AgentState.IDLE,
    "waiting": AgentState.WAITING,
    "shell": AgentState.IDLE,
}
#: The only kind of session a pane's keyboard reaches (others: `bg`, `daemon`, …).
INTERACTIVE = "interactive"
#: A free-text field is kept up to this many characters.
MAX_TEXT = 200


@dataclass(frozen=True)
class Record:
    """One session file's fields that rk reads (the rest is ignored)."""

    pid: int
    proc_start: str  #: the process's start time as the kernel counts it (pid reuse guard)
    status: str
    updated_at: float  #: `statusUpdatedAt`, in seconds
    tmux: str = ""  #: `<session>:@<window>.%<pane>` of the pane it started in (2.1.332; absent before)
    waiting_for: str = ""  #: what a `waiting` session is blocked on (free text: `permission prompt`, …)
    session_id: str = ""


@dataclass(frozen=True)
class Verdict:
    """The agent state a fresh record implies, with what it waits for."""

    state: AgentState
    at: float  #: when the registry saw it (seconds)
    detail: str = ""


def _text(value: object) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def _number(value: object) -> float | None:
    """A finite JSON number as a float (JSON allows `Infinity`, `NaN` and ints past a float's range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def parse_record(doc: object, pid: int) -> Record | None:
    """The record in a parsed session file named `<pid>.json`, or None when it is not
    one rk can use: not an object, its `pid` not the file's, not an interactive
    session, or no status yet (before Claude's screen is up: a trust dialog)."""
    if not isinstance(doc, dict):
        return None
    own = doc.get("pid")
    if isinstance(own, bool) or own != pid or pid <= 0:
        return None
    if doc.get("kind") != INTERACTIVE:
        return None
    status, updated = doc.get("status"), _number(doc.get("statusUpdatedAt"))
    if not isinstance(status, str) or not status or updated is None or updated <= 0:
        return None
    start = doc.get("procStart")
    return Record(
        pid=pid,
        proc_start=start if isinstance(start, str) else "",
        status=status[:MAX_TEXT],
        updated_at=updated / 1000,
        tmux=_text(doc.get("tmux")),
        waiting_for=_text(doc.get("waitingFor")),
        session_id=_text(doc.get("sessionId")),
    )


def names_pane(tmux: str, pane_id: str) -> bool:
    """Whether a record's `tmux` field allows it to be `pane_id`'s: absent (older
    versions write none), or ending in `.<pane_id>`."""
    return not tmux or (bool(pane_id) and tmux.endswith(f".{pane_id}"))


def verdict(record: Record | None, state: str, epoch: int) -> Verdict | None:
    """The agent state `record` implies for a pane rk holds at `state` since `epoch`,
    or None: no record, a status rk does not know, or a stale one (seen before the
    second rk's state was written: the state rk holds is newer news). A usage limit
    leaves Claude `idle` while it waits to continue by itself, and its limit menu is
    a `waiting` dialog: the verdict never ends a `limited` pane's limit (only `busy`,
    the agent working again, does)."""
    if record is None or record.status not in STATUS_STATES:
        return None
    if int(record.updated_at) < epoch:
        return None
    implied = STATUS_STATES[record.status]
    if state == AgentState.LIMITED and implied != AgentState.ACTIVE:
        return None
    detail = record.waiting_for if implied == AgentState.WAITING else ""
    return Verdict(implied, record.updated_at, detail)


def ends_turn(found: Verdict | None, state: str) -> bool:
    """Whether the verdict says a busy pane's turn is over (what makes rk look at the
    screen before its state goes stale)."""
    return found is not None and state in BUSY_STATES and found.state == AgentState.IDLE

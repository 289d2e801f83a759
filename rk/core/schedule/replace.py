"""`deliver: replace`: only the latest answer matters, so the entry's own turn that
still runs at fire time is interrupted, and the new payload typed once the agent rests.

Whose turn it is decides everything. The turn is this entry's when its newest
`delivered` line (ts T, pane P) started P's ongoing busy run, as the turn
timeouts decide it (`rk.core.cost.turn_timeout.started_by`: the run began at or
after T, within `START_WINDOW`, is the first run since, and P rested from before
T until it began; P's turn end names no end after the run began). Anything else
(a human's prompt, another entry's, `rk send`'s, a journal that cannot tell) is
not ours: the fire waits for idle as `when-idle` does, and says so. So is a
dialog (the human's decision), a draft, a pane mode, an unreadable screen and a
limit, whoever started the turn. A pane at rest is a plain delivery. Pure: the
log view, the pane's journal and its turn end come in.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from rk.core.cost.turn_timeout import StateLine, started_by
from rk.core.log.delivery import LogView
from rk.core.pane.payload import normalise
from rk.core.pane.state import AgentState
from rk.core.schedule.entry import waits_when_busy as waits_when_busy  # re-exported: the policy's one door


class Replace(StrEnum):
    """What a `replace` fire does with the pane as seen right before typing."""

    DELIVER = "deliver"  #: nothing in the way: a plain delivery
    INTERRUPT = "interrupt"  #: this entry's turn runs: interrupt it, wait for rest, then deliver
    WAIT = "wait"  #: held as when-idle holds (not ours, a dialog, a draft, a mode, a limit)


#: The hold's name when the running turn is someone else's (the diagnostic and `held-expired` say it).
NOT_OURS = "replace: turn not ours, waiting for idle"
#: The fire's outcome when the interrupt was pressed and the turn went on: nothing is typed.
DID_NOT_STOP = "replace: agent did not stop"


def restored_prompt(draft: str, payload: str) -> bool:
    """Whether the composer, right after the interrupt, holds exactly the entry's own
    prompt: the agent put it back (Claude Code does so for a turn stopped before its
    reply began). It is rk's own text, cleared before the new payload is typed; any
    other text is a human's draft, and holds the fire as a draft does."""
    return bool(normalise(draft)) and normalise(draft) == normalise(payload)


def turn_is_ours(entry_id: str, view: LogView, pane_id: str, journal: Sequence[StateLine], turn_end_at: int) -> bool:
    """Whether `pane_id`'s ongoing busy run was started by this entry's newest delivery
    (into that pane: a newer delivery elsewhere means nothing of ours runs here)."""
    last = view.last_delivered(entry_id)
    if last is None or last.target != pane_id:
        return False
    return started_by([last], journal, turn_end_at) is not None


def action(blocker: str, ours: bool) -> Replace:
    """The step for a pane whose most binding blocker is `blocker` (`Seen.blocker`;
    "" when nothing is in the way): only a working turn of ours is interrupted."""
    if not blocker:
        return Replace.DELIVER
    if blocker == AgentState.ACTIVE and ours:
        return Replace.INTERRUPT
    return Replace.WAIT


def replace_action(
    entry_id: str,
    view: LogView,
    pane_id: str,
    blocker: str,
    journal: Sequence[StateLine],
    turn_end_at: int,
) -> Replace:
    """The whole decision for one fire: deliver, interrupt then deliver, or wait."""
    ours = blocker == AgentState.ACTIVE and turn_is_ours(entry_id, view, pane_id, journal, turn_end_at)
    return action(blocker, ours)

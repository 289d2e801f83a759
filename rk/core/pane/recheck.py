"""When a tick should look again within a second instead of at the next poll.

Two cases. A dialog: no hook of Claude Code or Codex fires when a human
answers a permission dialog (the next one, PostToolUse, comes when the
approved tool has finished), so `waiting` outlived the answer by ~20 s; while
a pane that matters waits on a dialog, its screen is looked at on every tick
and the server is ticked twice a second, so the answer is seen within a
second. A lagging screen: an agent's Stop hook runs before its screen has drawn the end of the turn
(Claude Code waits for its Stop hooks before it stops the spinner), so the
tick that the hook's nudge starts reads a fresh `idle` from the hook and a
running turn from the screen, and holds the fire as `active`. Nothing nudges
again, so without a recheck the fire waited for the next 30 s poll (2–29 s
late on Claude). Pure.
"""

from __future__ import annotations

from rk.core.pane.facts import PaneFact
from rk.core.pane.state import AgentState
from rk.core.schedule.dispose import Act, Disposition

#: Seconds until the recheck tick.
RECHECK_AFTER = 0.5
#: A dialog is watched this long after it opened (seconds); past it, a human
#: is not at the keyboard, and the look's staleness bound paces the looks.
DIALOG_WATCH = 300
#: A hook's `idle` younger than this still asks for rechecks (the look's
#: staleness bound: past it the screen's own verdict stands until the next poll).
RECHECK_WINDOW = 20


def wants_recheck(pane: PaneFact | None, disposition: Disposition, now: int, typed: bool = False) -> bool:
    """A fire held as `active` although the pane's hook said `idle` a moment ago:
    the screen is behind the hook, and will catch up within a second or two. Not
    when it is held behind a prompt this tick typed (`typed`): that turn is what
    the hook and the screen do not show yet, and a look half a second later could
    still miss it; the agent's own hook nudges the ticker when it reports it."""
    if pane is None or typed or disposition.act != Act.HOLD or disposition.held_by != AgentState.ACTIVE:
        return False
    return pane.state == AgentState.IDLE and 0 <= now - pane.epoch <= RECHECK_WINDOW


def watching_dialog(pane: PaneFact, now: int) -> bool:
    """A pane that waits on a dialog opened within DIALOG_WATCH: look at it every
    tick, and tick again soon, to see the moment the dialog is answered."""
    return pane.state == AgentState.WAITING and 0 <= now - pane.epoch <= DIALOG_WATCH

"""`deliver: replace` on a tmux server: whose turn runs, and interrupting it before the send.

The decision is `rk.core.schedule.replace`'s. Before the fire is disposed of, a
`replace` entry whose pane is busy reads that pane's turn end (one tmux call)
and the state journal, to tell whether the running turn is its own (`ours`).
When it is, the turn is interrupted as `--on-timeout interrupt` does it
(`rk.act.interrupt.interrupt`: the pane's delivery lock, the last look, the
agent's key, then the hooks and the screen watched for up to `VERIFY_FOR`);
once the agent rests the payload is typed through the delivery's own guard,
which looks again (a dialog, a draft or a human's new turn that came meanwhile
holds it). The key pressed and the turn going on: `failed: replace: agent did
not stop`, nothing typed. The fire's line is stamped when the interrupted turn
was seen to end, so the turn it starts is seen as this delivery's.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from rk.core.environ import TURN_END_OPTION
from rk.core.log.delivery import LogLine, Outcome, Status
from rk.core.pane.facts import BUSY_STATES
from rk.core.pane.payload import sanitize
from rk.core.pane.turn import parse_turn_end
from rk.core.schedule.entry import Deliver
from rk.core.schedule.placeholders import typed
from rk.core.schedule.replace import DID_NOT_STOP, restored_prompt, turn_is_ours
from rk.store.pane_history import journal_of
from rk.tmux.server import Command, TmuxError, in_mode_of

#: Seconds the composer is watched for the cleared prompt to go (a redraw under load).
CLEAR_WAIT = 3.0

if TYPE_CHECKING:
    from rk.core.log.delivery import LogView
    from rk.core.pane.facts import PaneFact
    from rk.core.schedule.due import Fire
    from rk.core.schedule.entry import Entry
    from rk.engine.result import ServerTick
    from rk.engine.runtime import Runtime
    from rk.tmux.server import Server


class Firing(Protocol):
    """What of a fire (`rk.engine.fire.Firing`, which calls in here) these steps read."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def server(self) -> Server: ...
    @property
    def entry(self) -> Entry: ...
    @property
    def fire(self) -> Fire: ...
    @property
    def out(self) -> ServerTick: ...
    @property
    def view(self) -> LogView: ...
    @property
    def pane(self) -> PaneFact | None: ...


def ours(firing: Firing) -> bool:
    """Whether the turn running in the fire's pane is this entry's own (only asked of a
    `replace` entry whose pane is busy; a read that fails says no: the fire waits)."""
    pane = firing.pane
    if firing.entry.policy != Deliver.REPLACE or pane is None or pane.state not in BUSY_STATES:
        return False
    try:
        _, end_at = parse_turn_end(firing.server.display(pane.pane_id, f"#{{{TURN_END_OPTION}}}"))
        journal = journal_of(str(firing.runtime.state_dir), firing.server.name).get(pane.pane_id, [])
    except (TmuxError, OSError):
        return False
    return turn_is_ours(firing.entry.id, firing.view, pane.pane_id, journal, end_at)


def interrupt_turn(firing: Firing) -> str | None:
    """Interrupt the entry's running turn; None once the agent rests (then the payload
    is typed), else the fire's outcome (nothing typed)."""
    from rk.act.interrupt import interrupt

    pane = firing.pane
    if pane is None:
        return f"failed: replace: {firing.fire.pane} not seen"
    pressed = interrupt(firing.server, pane, firing.runtime.clock, firing.runtime.zone)
    outcome = pressed.outcome
    if outcome.status == Status.INTERRUPTED:
        said = str(Outcome(Status.INTERRUPTED, f"replace: {outcome.detail}"))
        if _prompt_put_back(firing, pane.pane_id):
            said += "; the prompt it put back in the composer cleared"
        firing.out.replaced[firing.fire.entry] = (firing.runtime.clock(), said)
        return None
    if outcome.detail.startswith("still "):
        return str(Outcome(Status.FAILED, DID_NOT_STOP))
    if outcome.detail.startswith("not pressed: ") and "interrupt key" not in outcome.detail:
        # a turn that ended by itself, a dialog, a draft, a mode: the guard's look decides
        firing.out.replaced[firing.fire.entry] = (firing.runtime.clock(), "")
        return None
    return str(Outcome(Status.FAILED, f"replace: {outcome.detail}"))


def _prompt_put_back(firing: Firing, pane_id: str) -> bool:
    """Clear the entry's own prompt when the agent put it back in the composer (Claude
    Code does for a turn stopped before its reply began), and wait for the composer to
    show it gone. Under the pane's delivery lock, compared with the text this fire types:
    anything else (a human's text, placeholders that render differently now) is left
    to hold the fire as a draft. A clear not seen within `CLEAR_WAIT` leaves the pending
    marker, so the delivery clears the line again before it types."""
    from rk.act.intents import mark_pending, pending_path
    from rk.act.keys import pane_lock

    now, zone = firing.runtime.clock(), firing.runtime.zone
    own = sanitize(typed(firing.entry, firing.fire, firing.view, now, zone))
    try:
        with pane_lock(firing.server, pane_id):
            if not restored_prompt(_draft(firing, pane_id), own):
                return False
            mark_pending(pending_path(firing.server, pane_id))
            clear = [Command.send_keys(pane_id, "C-u"), Command.send_keys(pane_id, "C-u")]
            if in_mode_of(firing.server.run(*Command.unless_mode(pane_id, *clear))) is not None:
                return True  # a mode came up: nothing sent; the marker stays for the delivery
            deadline = time.monotonic() + CLEAR_WAIT
            while _draft(firing, pane_id) and time.monotonic() < deadline:
                time.sleep(0.1)
            return True
    except (TimeoutError, TmuxError, OSError):
        return False


def _draft(firing: Firing, pane_id: str) -> str:
    """The composer's text as the pane's layout reads it now."""
    from rk.act.keys import look_at
    from rk.tmux.observe import pane_of_frame, read_screen

    frame = look_at(firing.server, pane_id)
    fact = pane_of_frame(frame)
    return read_screen(fact, frame.styled, frame.field("pane_title"), firing.runtime.clock(), firing.runtime.zone).draft


def fire_lines(out: ServerTick, fire: Fire, now: int, outcome: str | None) -> tuple[list[LogLine], LogLine | None]:
    """The lines a fire is logged as: after a replace, the `interrupted: replace: …` line
    aside (aftermath: it anchors nothing; written even when the guard then held the fire),
    and the outcome's line (None for a hold), both stamped when the interrupted turn was
    seen to end; else only the outcome's line, at `now`."""
    ts, interrupted = out.replaced.pop(fire.entry, (now, ""))
    aside = [LogLine(ts, fire.entry, fire.pane, fire.reason, interrupted)] if interrupted else []
    line = None if outcome is None else LogLine(max(ts, now), fire.entry, fire.pane, fire.reason, outcome)
    return aside, line

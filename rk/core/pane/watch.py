"""Watching active agent panes between ticks: which to capture, and what a capture says.

An Esc in Claude Code (and any turn end no hook reports) leaves a pane `active`
until rk looks at its screen, and a tick looks only at the panes its entries
touch, and only after STALE_AFTER seconds. So the ticker (and `rk agent await`
when no ticker serves the server) glimpses every pane four times a second in
one `list-panes` listing: its state option and what moves when the pane draws
(the cursor, the history's size, the pane's size, and the window's last output,
in whole seconds). A pane is captured only when it is `active` and its frame may
have changed since its last capture; the capture is read with the pane's own
layout and, when it says the turn is over (at rest, interrupted, a dialog up, a
limit), the tick's own look (`rk.tmux.observe.look_now`: a settled second
capture before calling a busy pane at rest) writes the correction. Pure: the
listing and the clock come in, pane ids and verdicts go out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rk.core.environ import STATE_OPTION
from rk.core.pane.facts import PaneFact, parse_state_option
from rk.core.pane.look import correction
from rk.core.pane.screen import Screen
from rk.core.pane.state import AgentState

#: Seconds between two glimpses of the watched panes. An Esc is written this long after it
#: at most, plus the look's settling pause (0.3 s) and its captures: within a second (at 0.5 s,
#: Claude Code 2.1.332's Esc took up to 1.24 s to reach `rk agent await` on a loaded machine).
LOOK_EVERY = 0.25
#: An `active` this young (whole seconds) is not watched yet: the turn's first frame may
#: still show the composer at rest, and that must not end a turn that just began.
WATCH_AFTER = 2
#: What one `list-panes` reads of every pane: its state, and what moves when it draws.
FRAME_FIELDS = ("cursor_x", "cursor_y", "history_size", "pane_width", "pane_height", "pane_in_mode")
FIELDS = ("pane_id", "pane_pid", "pane_dead", STATE_OPTION, "window_activity", *FRAME_FIELDS)


@dataclass(frozen=True)
class Glimpse:
    """One pane as the watch's listing read it."""

    pane_id: str
    state: str  #: the raw `@rk_pane_agent_state` value
    frame: str  #: what moves when the pane draws (a redraw in place moves none of it)
    activity: int  #: the window's last output, unix seconds (tmux counts whole seconds)
    dead: bool = False
    pid: str = ""  #: the pane's process (a respawned pane is another agent)

    @property
    def who(self) -> str:
        """The pane's process and state: while these stay, so does what its facts say."""
        return f"{self.pid}|{self.state}"

    @property
    def active_since(self) -> int | None:
        """The epoch of its `active` state; None when it is in any other state."""
        option = parse_state_option(self.state)
        return option.epoch if option.state == AgentState.ACTIVE and not self.dead else None


def glimpse_of(row: Mapping[str, str]) -> Glimpse:
    """A listing row (FIELDS) as a glimpse; a number tmux printed badly counts as 0."""
    activity = row.get("window_activity", "")
    return Glimpse(
        row.get("pane_id", ""),
        row.get(STATE_OPTION, ""),
        ",".join(row.get(f, "") for f in FRAME_FIELDS),
        int(activity) if activity.isascii() and activity.isdigit() and len(activity) <= 12 else 0,
        row.get("pane_dead") == "1",
        row.get("pane_pid", ""),
    )


@dataclass(frozen=True)
class Seen:
    """A pane at its last capture: its state and frame then, and the wall second it was taken."""

    state: str
    frame: str
    at: int


def watched(glimpses: Iterable[Glimpse], now: int) -> list[Glimpse]:
    """The panes the watch is for: `active` for WATCH_AFTER seconds or more."""
    return [g for g in glimpses if (since := g.active_since) is not None and now - since >= WATCH_AFTER]


def any_active(glimpses: Iterable[Glimpse], others: Mapping[str, str] | None = None) -> bool:
    """Whether any pane is `active` (young or not), leaving out those `others` holds in
    the same state (found not an agent's): the watch goes on glimpsing at its pace."""
    others = others or {}
    return any(g.active_since is not None and others.get(g.pane_id) != g.state for g in glimpses)


def to_capture(glimpses: Sequence[Glimpse], seen: Mapping[str, Seen], now: int, wall: int) -> list[str]:
    """The watched panes whose frame may have changed since their last capture: never
    captured, its state rewritten, its frame moved, or output in its window at or after
    the second of that capture (tmux counts activity in whole seconds, so output later
    in that same second is only seen this way). A pane drawing nothing costs no capture.
    `now`: rk's clock (states' epochs); `wall`: the system's (tmux's activity)."""
    out = []
    for g in watched(glimpses, now):
        last = seen.get(g.pane_id)
        if last is None or last.state != g.state or last.frame != g.frame or g.activity >= last.at:
            out.append(g.pane_id)
    return out


def remembered(seen: Mapping[str, Seen], glimpses: Iterable[Glimpse]) -> dict[str, Seen]:
    """The memory kept for the next glimpse: only panes still `active` (a new turn is a new
    state value, so what was seen of an older one is never compared with it)."""
    keep = {g.pane_id for g in glimpses if g.active_since is not None}
    return {pane: s for pane, s in seen.items() if pane in keep}


def turn_over(pane: PaneFact, screen: Screen, now: int) -> bool:
    """Whether a capture of an `active` pane says its turn is over (at rest, interrupted, a
    dialog up, a limit): worth the tick's own look, which settles and writes it."""
    return pane.state == AgentState.ACTIVE and correction(pane, screen, now, settled=True) is not None

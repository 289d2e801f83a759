"""Skip when nothing changed (`only_if_changed`): is there anything new to prompt about?

A fire of an entry with `only_if_changed` is `skipped-unchanged` when, since its
last delivered prompt was answered, the panes it compares (`pane`: its target;
`scope`: the panes its wake watches) had no new turn and their screens did not
change beyond what the CLI draws by itself (a spinner, a clock, the status line,
the footer: `rk.core.pane.screen.rest`). How it knows:

* When a tick first sees the last delivery answered (the target at rest, its
  turn end — `@rk_pane_turn_end` — at or after the delivered line) and the
  compared panes `settled`, the shell records a `Mark`: that delivery's instant
  and, per compared pane, a `Print` (its state, its turn end, a hash of its
  compared frame, `normalised`).
* At the next fire the same prints are taken again; `verdict` compares them.

Everything here fails open: no mark (the first fire, a lost or corrupt state
file), a mark of an older delivery (the prompt is not answered yet), a mark
taken long after the answer (what happened in between is not known), another
set of panes, a new turn or any other state, a different screen: the fire
goes. Only prints equal in every pane skip. Pure: the captures come in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from rk.core.cost.only_if_changed import SCOPE
from rk.core.pane.state import BUSY_STATES, AgentState

_ANSI = re.compile(r"\x1b\[[0-9;:?]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]")
#: Braille dots (Gemini's and most TUIs' spinners) and the other spinner glyphs, wherever they are.
_SPINNER_ANYWHERE = re.compile("[\u2800-\u28ff\u25d0-\u25d3\u25f4-\u25f7\u2596-\u259f]")
#: A glyph that opens a line and is followed by a space (Claude's `✻ ✶ ✳ ✢ · *`, Codex's `•`):
#: a status line whose glyph blinks.
_SPINNER_LEAD = re.compile(r"^(\s*)[*·•✻✶✳✢✽✺❋✦✧∗⋆◦●○◉◎]\s")
#: A clock: 12:06, 7:15 AM, 10:18am, 12:06:59.
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp]\.?[Mm]\.?)?(?![\w:])")
#: An elapsed time or a countdown: 3s, <1s, 4.5s, 1m 20s, 2h05m, 350ms.
_ELAPSED = re.compile(r"<?\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|m|min|mins|h)\b(?:\s?\d+(?:\.\d+)?\s?(?:s|m|ms)\b)*")
#: A token counter: 1.2k tokens, ↑ 340 tokens, ↓ 5 tokens.
_TOKENS = re.compile(r"[↑↓]?\s?\b\d+(?:[.,]\d+)?\s?[kKmM]?\s?tokens?\b")


def normalised(screen: str) -> str:
    """The screen as compared: escapes stripped, spinner glyphs, clocks,
    elapsed times and token counters replaced by a fixed mark, trailing spaces
    and trailing blank lines dropped. What is left is the text an answer or a
    human changes; what is dropped is what blinks on a screen at rest."""
    lines = []
    for raw in _ANSI.sub("", screen).replace("\r", "").split("\n"):
        line = _SPINNER_LEAD.sub(r"\1◌ ", raw)
        line = _SPINNER_ANYWHERE.sub("◌", line)
        line = _TOKENS.sub("#tokens", line)
        line = _CLOCK.sub("#clock", line)
        line = _ELAPSED.sub("#time", line)
        lines.append(line.rstrip())
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def screen_hash(screen: str, agent: str = "") -> str:
    """A short digest of the normalised screen (the state file keeps no screen text):
    of the part of an `agent`'s frame where news shows (`rk.core.pane.screen.rest`)."""
    import hashlib  # as the parsers: the views start without it (OpenSSL's library)

    from rk.core.pane.screen.rest import compared_lines  # the screen parsers: not for the views, which never compare

    text = "\n".join(compared_lines(screen, agent))
    return hashlib.sha256(normalised(text).encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True)
class Print:
    """One compared pane as a look saw it."""

    state: str = ""  #: its agent state
    turn_end: int = 0  #: the epoch of its last turn end (0: none known)
    screen: str = ""  #: `screen_hash` of its screen ("" where no screen is read: the simulator)

    def to_json(self) -> dict[str, object]:
        return {"state": self.state, "turn_end": self.turn_end, "screen": self.screen}


@dataclass(frozen=True)
class Mark:
    """What an entry's last answered delivery left: when it was delivered, when the
    mark was taken, and the prints of the compared panes then."""

    delivered: int  #: ts of the `delivered` line it answers
    taken: int  #: when the tick took it
    answered: int  #: the target's turn end that answered it
    panes: Mapping[str, Print]

    def to_json(self) -> dict[str, object]:
        return {
            "delivered": self.delivered,
            "taken": self.taken,
            "answered": self.answered,
            "panes": {pane: p.to_json() for pane, p in sorted(self.panes.items())},
        }


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def mark_of(raw: object) -> Mark | None:
    """A mark read back from the state file; None for anything malformed (the fire goes)."""
    if not isinstance(raw, Mapping):
        return None
    numbers = [_count(raw.get(k)) for k in ("delivered", "taken", "answered")]
    panes = raw.get("panes")
    if any(n is None for n in numbers) or not isinstance(panes, Mapping) or not panes:
        return None
    prints: dict[str, Print] = {}
    for pane, p in panes.items():
        if not isinstance(p, Mapping):
            return None
        state, turn_end, screen = p.get("state"), _count(p.get("turn_end")), p.get("screen")
        if not isinstance(state, str) or turn_end is None or not isinstance(screen, str):
            return None
        prints[str(pane)] = Print(state, turn_end, screen)
    delivered, taken, answered = (int(n or 0) for n in numbers)
    return Mark(delivered, taken, answered, prints)


def answered(delivered: int, state: str, turn_end: int) -> bool:
    """The delivery at `delivered` is answered: the target is at rest and its last
    turn ended at or after the delivered line (whose ts is the tick's start, before typing)."""
    return delivered > 0 and state == AgentState.IDLE and turn_end >= delivered


def wants_mark(mark: Mark | None, delivered: int, state: str, turn_end: int) -> bool:
    """Whether the tick should take a mark now: the last delivery is answered and no
    mark of it is kept yet (a mark is taken once per delivery, at the first sight of its answer)."""
    return answered(delivered, state, turn_end) and (mark is None or mark.delivered != delivered)


#: A pane whose turn ended less than this ago may still be drawing its end (seconds):
#: Claude Code shows `running stop hooks… 1/2` and `esc to interrupt` until its Stop hooks
#: are done, after rk's own hook has said `idle` and its nudge has started a tick.
SETTLE_AFTER = 2
#: How long after a turn end a mark put off for an unsettled pane asks the ticker to look
#: again within a second (`rk.core.pane.recheck`); later, the next poll takes it.
SETTLE_WINDOW = 20


def settled(state: str, turn_end: int, screen_state: str, now: int) -> bool:
    """Whether a compared pane's print can stand for its rest: a pane at rest by its
    hooks needs its screen at rest too (`screen_state`: what its layout reads, "" none)
    and its turn ended SETTLE_AFTER ago. A pane at work is printed as it is."""
    if state != AgentState.IDLE:
        return True
    return screen_state not in BUSY_STATES and now - turn_end >= SETTLE_AFTER


def recheck_for_settling(turn_end: int, now: int) -> bool:
    """A mark put off for an unsettled pane: look again soon while the turn end is recent."""
    return 0 <= now - turn_end <= SETTLE_WINDOW


#: A mark taken later than this after the answer is not trusted (seconds; at least two polls).
TRUST_AFTER = 120


def trust_window(poll: int) -> int:
    """How long after the answer a mark may be taken and still speak for the time
    since: two polls, at least TRUST_AFTER (a `rk cron tick` from cron runs each minute)."""
    return max(2 * poll, TRUST_AFTER)


class Verdict(StrEnum):
    """What the comparison found; only UNCHANGED skips."""

    FIRST = "no delivery yet"
    UNANSWERED = "the last prompt is not known to be answered"
    LATE = "the mark was taken too long after the answer"
    FRESH = "the mark was taken by this tick"
    PANES = "other panes"
    TURN = "a new turn"
    STATE = "another state"
    SCREEN = "the screen changed"
    UNCHANGED = "unchanged"


def verdict(mark: Mark | None, delivered: int, now: Mapping[str, Print], poll: int, at: int) -> Verdict:
    """Compare the prints taken right before this fire at `at` (`now`) with the mark of
    the last delivery (at `delivered`; 0: none). A mark is not trusted when it was
    taken more than `trust_window` after the answer's turn end, or by this very tick (a
    lost file, a first tick after the answer): the screen may have changed before it."""
    if delivered <= 0:
        return Verdict.FIRST
    if mark is None or mark.delivered != delivered:
        return Verdict.UNANSWERED
    if mark.taken - mark.answered > trust_window(poll):
        return Verdict.LATE
    if mark.taken >= at:
        return Verdict.FRESH
    if set(now) != set(mark.panes):
        return Verdict.PANES
    for pane, then in mark.panes.items():
        seen = now[pane]
        if seen.turn_end != then.turn_end:
            return Verdict.TURN
        if seen.state != then.state:
            return Verdict.STATE
        if seen.screen != then.screen:
            return Verdict.SCREEN
    return Verdict.UNCHANGED


def compared(mode: str, watches_others: bool, target: str, states: Mapping[str, str]) -> tuple[str, ...]:
    """The panes a fire compares: `pane` its target; `scope` the panes its wake
    watches (`watches_others`, agent-state-change: every other pane with a known
    state, `states`; limit-reset watches its own target)."""
    if mode == SCOPE and watches_others:
        return tuple(sorted(p for p, state in states.items() if state and p != target))
    return (target,) if target else ()

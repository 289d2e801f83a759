"""How a turn ended: `ok`, `failed` (an API or tool error), `interrupted` (Esc),
`limited` — beside the scheduling state, which says only what the pane does now.

The hook imports this module, so it imports nothing.
"""

from __future__ import annotations

from rk.core.pane.state_words import ACTIVE, IDLE, WAITING
from rk.core.pane.state_words import FAILED as FAILED
from rk.core.pane.state_words import INTERRUPTED as INTERRUPTED
from rk.core.pane.state_words import LIMITED as LIMITED
from rk.core.pane.state_words import OK as OK
from rk.core.pane.state_words import TURN_ENDS as TURN_ENDS

#: Hook events that end a turn on an interrupt (Codex's Esc or denied dialog,
#: from an older install whose Interrupt wrote `idle`). rk's OpenCode plugin
#: (OpenCode 1.x) names no event: it sends the token `interrupted` itself.
INTERRUPT_EVENTS = frozenset({"Interrupt"})
#: Hook events that write `idle` without ending a turn (a session's end, a notice).
NOT_TURN_ENDS = frozenset({"SessionEnd", "Notification", "SessionStart"})

#: What a screen shows right after a turn was cut short, at the start of one of its
#: last lines (Claude "⎿  Interrupted · What should Claude do instead?", Codex
#: "■ Conversation interrupted - tell the model…", Gemini "Request cancelled.").
INTERRUPT_MARKS = ("interrupted", "conversation interrupted", "request cancelled", "operation cancelled")
SCREEN_TAIL = 12  #: the last non-blank lines searched for an interrupt mark

#: Gemini CLI's AfterAgent `prompt_response` when the turn gave no text: an API
#: error ended it, an Esc cut it short, or the reply was empty. No payload says
#: which, so the hook reads the screen then (`rk.core.pane.screen.gemini.turn_end_of`).
GEMINI_NO_RESPONSE = "[no response text]"


def reads_gemini_screen(provider: str, token: str, payload: object) -> bool:
    """Whether a hook must read the screen to tell how the turn ended: Gemini's
    AfterAgent (token `idle`) for a turn that gave no text."""
    return (
        provider == "gemini"
        and token == IDLE
        and isinstance(payload, dict)
        and payload.get("hook_event_name") == "AfterAgent"
        and payload.get("prompt_response") == GEMINI_NO_RESPONSE
    )


def hook_turn_end(token: str, state: str | None, event: object) -> str:
    """The turn end a hook reports, or "" when the hook ends no turn.

    `token` is the hook's token, `state` the state it writes (None: none),
    `event` the payload's `hook_event_name` (None when there is no payload)."""
    if state is None:
        return ""
    if token == INTERRUPTED or (token == IDLE and event in INTERRUPT_EVENTS):
        return INTERRUPTED
    if token == FAILED:
        return LIMITED if state == LIMITED else FAILED
    if token == LIMITED:
        return LIMITED
    if token == IDLE and event not in NOT_TURN_ENDS:
        return OK
    return ""


def screen_turn_end(before: str, after: str, text: str, failed: bool = False) -> str:
    """The turn end a screen correction reports: a busy pane (`before`) now at rest
    (`after`) ended its turn — interrupted when one of the screen's last lines says
    so, else failed when the screen's last entry is an error (`failed`, the screen
    reader's), else ok; a limit read on the screen is `limited`. "" otherwise."""
    if after == LIMITED and before != LIMITED:
        return LIMITED
    if after != IDLE or before not in (ACTIVE, WAITING):
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()][-SCREEN_TAIL:]
    for line in lines:
        word = line.lstrip("⎿⎣■•◦✕✗×!>-─│ \xa0").lower()  # Claude Code draws `⎿` + a no-break space, Vibe `⎣`
        if any(word.startswith(mark) for mark in INTERRUPT_MARKS):
            return INTERRUPTED
    return FAILED if failed else OK


def turn_end_value(end: str, epoch: int) -> str:
    """The `@rk_pane_turn_end` value."""
    return f"{end}:{epoch}"


def parse_turn_end(value: str) -> tuple[str, int]:
    """(end, epoch) of an `@rk_pane_turn_end` value; ("", 0) when unreadable."""
    end, _, epoch = value.strip().partition(":")
    if end not in TURN_ENDS or not (epoch.isascii() and epoch.isdigit()) or len(epoch) > 12:
        return "", 0
    return end, int(epoch)

"""Gemini CLI's screen (0.61), as captured from the real CLI (tests/fixtures/screens/gemini).

The composer is a ` > ` line in a band between a `▄▄▄` and a `▀▀▀` line;
past prompts above it are drawn the same way, so the live one is the lowest.
Its empty-state placeholder (`Type your message or @path/to/file`) is grey
(true colour 175,175,175, or 248 in 256 colours); typed text is white. A
running turn shows `⠸ Thinking... (esc to cancel, 3s)` above the rule. A tool
confirmation (`Allow execution of [Shell]?` / `● 1. Allow once`) and the quota
dialog (`Usage limit reached for all Pro models.` / `● 1. Keep trying`) replace
the composer; the quota dialog fires no hook.
"""

import re
from datetime import tzinfo

from rk.core.pane.screen.engine import (
    Dating,
    Layout,
    _composer,
    _dialog_region,
    _last_entry,
    _limit,
    _lowest,
    _turn_start,
    parse_screen,
)
from rk.core.pane.turn import FAILED, INTERRUPTED, LIMITED

LAYOUT = Layout(
    agent="gemini",
    identify=(
        r"Type your message or @path/to/file",
        r"Shift\+Tab to accept edits",
        r"workspace \(/directory\)",
        r"\(esc to cancel, \d+[smh]",
        r"Allow execution of \[",
        r"^│ ● \d+\. ",
    ),
    composer=r"^ > (?P<text>.*)$",
    composer_more=r"^   (?P<text>.*)$",
    composer_end=r"^(▀{10,})?$",  # a blank band in 256 colours
    turn_start=r"^ > \S",
    # the status line sits on the rule above the composer's band (blank when idle)
    status=(r"",),
    status_anchor=r"^─{10,}$",
    status_skip=r"(?!)",
    working=(r"\(esc to cancel, \d+", r"^ [\u2801-\u28ff] \S"),
    dialog=(
        r"Allow execution of",
        r"^│ ● \d+\. ",
        r"Apply this change\?",
        r"Do you want to proceed",
        r"Allow (once|for this session)",
    ),
    dialog_top=r"^╭",  # dialogs are boxes
    limit=(
        r"(?i)usage limit reached",
        r"(?i)quota (exceeded|exhausted)",
        r"(?i)exhausted your (daily )?quota",
        r"RESOURCE_EXHAUSTED",
        r"(?i)rate limit (reached|exceeded)",
    ),
    entry=r"^(✦ |✕ )",
    limit_entry=r"^✕ ",  # an error; a reply is a `✦` entry
    placeholder_dim=True,
    placeholder_fg=frozenset({"2;175;175;175", "5;248"}),
    placeholder_text=(r"Type your message or @path/to/file",),
    # In a terminal it does not trust with pastes (tmux: no kitty protocol), 0.61 turns an
    # Enter within 40 ms of its paste event into a newline; the paste can already show by
    # then, and a loaded machine stretches the window (seen in CI: `status?` left above an
    # empty row, the fire failed).
    enter_gap=0.25,
    # its hooks' progress, drawn as the turn ends; a long one takes a row above the status line
    turn_noise=(r"^\s*(?:[\u2800-\u28ff]\s+)?Executing Hooks: ",),
)

_ERROR_MARK = re.compile(r"^✕ ")  # `✕ [API Error: …]`, drawn in red (255;135;175)
_CANCEL_NOTE = re.compile(r"^ℹ Request cancelled\.")  # drawn in yellow (255;255;175)


def turn_end_of(styled: str, now: int, zone: tzinfo) -> tuple[str, int]:
    """How the last turn on a Gemini screen (`capture-pane -p -J -e`) ended, when
    its hooks cannot say: (`limited`, the reset instant or 0) for a quota error,
    (`failed`, 0) for another API error, (`interrupted`, 0) for "Request
    cancelled.", ("", 0) when the screen shows none of them (yet).

    Only the last turn's block (below the last past prompt, above the live
    composer) is read, and only the CLI's own marks at the margin, drawn in a
    colour: a reply is a `✦` entry whose lines are indented, so one quoting
    "✕ [API Error: …]" or "Request cancelled." reads as none."""
    lines = parse_screen(styled)
    found = _composer(LAYOUT, lines)
    region = _dialog_region(LAYOUT, lines)
    dialog = _lowest(LAYOUT.rx("dialog"), region)
    if found is None or (dialog >= 0 and len(lines) - len(region) + dialog > found[0]):
        return "", 0  # a dialog is up (the "composer" was a past prompt): the turn has not ended
    block = lines[_turn_start(LAYOUT, lines, found[0]) : found[0]]
    limit = _limit(LAYOUT, block, Dating(now, now, zone))
    if limit is not None:
        return LIMITED, limit[1]
    last = _last_entry(LAYOUT, block)
    if last and _ERROR_MARK.match(last[0].plain) and last[0].style_at(0).inked:
        return FAILED, 0
    if any(_CANCEL_NOTE.match(line.plain) and line.style_at(0).inked for line in block):
        return INTERRUPTED, 0
    return "", 0

"""Claude Code's screen (2.1), as captured from the real CLI (tests/fixtures/screens/claude).

The live composer is `❯` + NBSP between two rules, continuation lines
indented by two; past prompts above it are `❯ <text>` on a grey band. The
footer says `? for shortcuts` when the composer is empty and `esc to
interrupt` while a turn runs; the spinner line is a glyph and a gerund with
an ellipsis (`✢ Ionizing…`), which becomes `✻ Crunched for 0s` when the turn
ends. Dialogs replace the composer. A limit is the result of the last turn
(`⎿ You've hit your session limit · resets 2:57pm (UTC)`, `API Error: Request
rejected (429) · … rate limit …`); the footer's "You've used 92% of your
session limit" is only a warning. Placeholders in the composer are faint.
"""

from rk.core.screen.engine import Layout

LAYOUT = Layout(
    agent="claude",
    identify=(
        r"^❯( |$)",
        r"Claude Code v\d",
        r"Do you want to proceed\?",
        r"^ *❯ \d+\. ",
        r"Esc to cancel · Tab to amend",
    ),
    composer=r"^❯(?: (?P<text>.*))?$",
    composer_more=r"^  (?P<text>.*)$",
    composer_end=r"^─{10,}",
    turn_start=r"^❯ (?!/)\S",  # a past prompt; a slash command (/rate-limit-options) starts no turn
    working=(r"esc to interrupt", r"^[✻✶✽✢✳·*] \S[^…]*…"),
    dialog=(
        r"Do you want to proceed\?",
        r"Do you want to (make|allow|create|run)",
        r"^ *❯ \d+\. ",
        r"Esc to cancel",
        r"Enter to confirm",
    ),
    limit=(
        r"You[’']ve hit your .*limit",
        r"(?i)usage limit reached",
        r"(?i)limit will reset",
        r"(?i)\b(session|weekly|opus|5-hour) limit reached",
        r"API Error: .*\(429\)",
        r"API Error: .*(rate.?limit|usage limit)",
        r"(?i)stop and wait for limit to reset",
    ),
    title_busy=(r"^[\u2801-\u28ff] ",),  # a braille spinner while a turn runs (even when the screen looks idle)
    placeholder_dim=True,
    placeholder_text=(r"Press up to edit queued messages",),
)

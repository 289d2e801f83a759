"""Codex CLI's screen (0.171), as captured from the real CLI (tests/fixtures/screens/codex).

The live composer is the lowest `› ` line with a blank line under it, then
the status line (`gpt-5 default · <cwd>`) and the footer; its empty-state
placeholder (`Ask Codex to do anything`) is faint. Past prompts above are
`› <text>` on a grey band. A running turn shows `• Working (7s • esc to
interrupt)` (the bullet blinks between • and ◦) above the composer, and the
footer offers `tab to queue message` while a draft is typed during a turn.
An approval dialog lists `› 1. Yes, proceed (y)` and replaces the composer.
A turn that ended on a limit leaves `■ exceeded retry limit, last status:
429 Too Many Requests` or `■ You've hit your usage limit … try again in …`
above the composer.
"""

from rk.core.pane.screen.engine import Layout

LAYOUT = Layout(
    agent="codex",
    identify=(
        r"^›( |$)",
        r"Ask Codex to do anything",
        r"tab to queue message",
        r"⚠ \d+ warnings? · f2 to view",
        r"Press enter to confirm or esc to cancel",
        r"Would you like to (run|make|apply)",
    ),
    composer=r"^›(?: (?!\d+\. )(?P<text>.*))?$",
    composer_more=r"^  (?P<text>.*)$",
    composer_end=r"^$",
    turn_start=r"^› (?!\d+\. )\S",  # a past prompt, not a dialog option
    # the status line: right above the composer, or above the queued inputs
    # (`• Queued follow-up inputs` / `  ↳ …`); its text is faint, a reply's is not
    # (a reply's `•` is faint: "• Working (7s • esc to interrupt)" quoted in a reply reads idle)
    status=(r"^[•◦] ",),
    status_skip=r"^(\s*|• Queued follow-up inputs|  ↳ .*|    shift\+.*)$",
    status_reach=7,
    working=(r"\(\d+[smh][^)]*esc to interrupt\)", r"^[•◦] (Working|Reconnecting|Thinking)\b", r"esc to interrupt\)"),
    working_ink=True,
    dialog=(
        r"^› \d+\. ",
        r"^ {0,2}Press enter to confirm or esc to cancel",
        r"^ {0,2}Would you like to (run|make|apply)",
    ),
    dialog_top=r"^([•■⚠✔✗] |› (?!\d+\. )\S)",  # below the last entry (or the composer)
    limit=(
        r"exceeded retry limit, last status: 429",
        r"(?i)you[’']ve hit your usage limit",
        r"(?i)quota exceeded",
        r"(?i)usage limit (reached|exceeded)",
        r"(?i)\brate.?limit(ed)?\b.*(try again|retry|reached|exceeded)",
        r"429 Too Many Requests",
    ),
    entry=r"^[•■⚠✔✗] ",
    limit_entry=r"^■ ",  # an error, in red; a reply is a `•` entry
    limit_ink=True,
    title_dialog=(r"Action Required",),
    title_busy=(r"^[\u2801-\u28ff] ",),  # a braille spinner while a turn runs (even when the screen looks idle)
    placeholder_dim=True,
    turn_noise=(r"^\s*(?:─+ )?Worked for .*\d",),  # drawn a moment after the Stop hook
)

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

from rk.core.screen.engine import Layout

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
)

"""Qwen Code's screen (0.24), as captured from the real CLI (tests/fixtures/screens-qwen/0.24.4).

The live composer is a `> ` line at the margin between two rules (past prompts
are indented: `  > `); its placeholder (`Type your message or @path/to/file`)
is grey (108,112,134), a draft is in the default ink and ends in the cursor
and a zero-width space. A running turn shows `⠼ Poking the bear... (2s · esc
to cancel)` right above the upper rule. A permission request (`? Shell touch x
…`, `Allow execution of: 'touch'?`, `› 1. Yes, allow once`) replaces the
composer. An API error is a red `✕ [API Error: …]` entry (a 429:
`rate_limit_error`, no reset time); a reply is a `◆` entry, its lines indented.
"""

from rk.core.pane.screen.engine import Layout

LAYOUT = Layout(
    agent="qwen",
    identify=(
        r"\(shift \+ tab to cycle\)",
        r"Enter to steer · Ctrl\+Q to queue",
        r">_ Qwen Code \(v",
        r"Allow execution of: '",
        r"Waiting for user confirmation\.\.\.",
    ),
    composer=r"^> (?P<text>.*?)[\s\u200b]*$",
    composer_more=r"^  (?P<text>.*?)[\s\u200b]*$",
    composer_end=r"^─{10,}$",
    turn_start=r"^  > \S",
    # the status line sits right above the rule over the composer, its `(2s · esc to cancel)`
    # in grey; a reply's last line there starts with its mark or its indent, in the default ink
    status=(r"^  (?![◆✕✓●?>x] |  )\S",),
    status_anchor=r"^─{10,}$",
    working=(r"esc to cancel\)$",),
    working_ink=True,
    dialog=(
        r"Allow execution of: ",
        r"Do you want to proceed\?",
        r"Apply this change\?",
        r"^\s+› \d+\. ",
        r"Waiting for user confirmation",
    ),
    dialog_top=r"^  \? ",  # the tool call that asks: `? Shell touch x (Create a file) ←`
    limit=(
        r"rate_limit",
        r"(?i)rate limit",
        r"(?i)too many requests",
        r"(?i)quota",
        r"\b429\b",
    ),
    entry=r"^  (?:◆|✕|✓|x |\? )",
    limit_entry=r"^  ✕ ",  # an error; a reply is a `◆` entry
    limit_ink=True,
    placeholder_dim=True,
    placeholder_fg=frozenset({"2;108;112;134"}),
    placeholder_text=(r"Type your message or @path/to/file",),
    # Gemini CLI's paste handling (an Enter close behind a paste is read as a newline)
    enter_gap=0.25,
)

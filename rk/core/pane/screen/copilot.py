"""GitHub Copilot CLI's screen (1.0.102), as captured from the real CLI (tests/fixtures/screens/copilot).

The composer is a `❯ ` line between two dim rules (`────`), the cwd above
them; the footer under the lower rule reads `← open sidebar · Interactive ·
Manual Approval · / commands · ? help` at rest (`Interactive · … · @ files ·
# issues` while a draft is typed). While a turn runs the footer is the status
instead: `○ Working · 5 B esc esc interrupt` (`esc esc edit prompt` before
the reply starts, `esc again to interrupt` after one Esc; Esc Esc within
500 ms interrupts and fires no hook). Past prompts are ` ❯ <text>   14:28`
(indented, a time at the right). A permission dialog (`Do you want to run
this command?`, `❯ 1. Yes`, `↑/↓ to navigate · enter to select · esc to
cancel`) replaces the composer; so does the folder-trust modal. A turn that
fails leaves a red `✗` entry: `✗ 400 Sorry, you've hit a rate limit … Please
try again in 2 hours.` from GitHub's limit, `✗ Failed to get response from
the AI model; retried 5 times … Last error: 429 …` after a retried 429.
"""

from rk.core.pane.screen.engine import Layout

LAYOUT = Layout(
    agent="copilot",
    # The footer and status lines, as drawn: one space, then a mark or a word. Another CLI's
    # reply quoting these words starts at the margin (its mark) or two spaces in, and must
    # not make its screen Copilot's: Copilot's layout is tried first.
    identify=(
        r"^ \S.* · / commands · \? help\b",
        r"^ \S.* · @ files · # issues\b",
        r"^ \S (?:\S.* )?esc esc (?:interrupt|edit prompt|cancel)\b",
        r"^ \S (?:\S.* )?esc again to (?:interrupt|cancel)\b",
        r"^  ╰─╯╰─╯  Copilot v\d+\.\d+\.\d+ uses AI",
        r"^│ ↑/↓ to navigate · enter to select · esc to cancel",  # a dialog box, at the margin
    ),
    composer=r"^❯(?: (?P<text>.*))?$",
    composer_more=r"^  (?P<text>.*)$",
    composer_end=r"^─{20,}$",
    turn_start=r"^ ❯ \S",  # a past prompt (the live composer's `❯` is not indented)
    working=(r"\besc esc (?:interrupt|edit prompt|cancel)\b", r"\besc again to (?:interrupt|cancel)\b"),
    working_below=True,  # the status replaces the footer under the composer
    dialog=(
        r"^│ Do you want to ",
        r"^│ ❯ \d+\. ",
        r"^│ ↑/↓ to navigate · enter to select",
        r"^│ Confirm folder trust",
    ),
    limit=(
        r"(?i)\brate.?limit",
        r"(?i)session limits?\b",
        r"(?i)\bquota\b",
        r"\b429\b",
        r"(?i)too many requests",
    ),
    entry=r"^ [●✗!$] ",
    limit_entry=r"^ ✗ ",  # an error; a reply is a `●` entry
    limit_mark_fg=frozenset({"31"}),  # the `✗` is red
)

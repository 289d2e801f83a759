"""Mistral Vibe's screen (3.0.2), as captured from the real CLI (tests/fixtures/screens/vibe).

The banner names it (`Mistral Vibe v3.0.2`), the footer under the composer reads `<cwd>
[PID n] … 0/200k tokens (0%)`. The live composer is a `> ` line at the margin between two
rules, the upper one ending in the mode (`─ accept edits ─`); a past prompt is the same
`> ` line above a plain rule, so only the lowest one is live. A draft is typed text ending
in the reverse-video cursor (no placeholder is drawn). A running turn shows `⠇  Generating…
(1s Esc/Ctrl+C to interrupt)` right above the upper rule, the spinner and the word in
orange; a reply's lines are indented two columns. After an Esc the turn ends with `⎣
Interrupted · What should Vibe do instead?`.
"""

from rk.core.pane.screen.engine import Layout

LAYOUT = Layout(
    agent="vibe",
    identify=(
        r"^ \S+ +Mistral Vibe v\d+\.\d+",
        r"^\S.* \[PID \d+\] +\S+ tokens \(\d+%\)$",
        r"^\S \S* *\S.* \(\d+s Esc/Ctrl\+C to interrupt\)$",
    ),
    composer=r"^>(?: (?P<text>.*))?$",
    composer_more=r"^(?:  (?P<text>.*))?$",  # the box keeps blank rows under its text
    composer_end=r"^─{10,}$",
    turn_start=r"^> \S",
    # the status line sits right above the rule over the composer, at the margin (a reply is indented)
    status=(r"^\S",),
    status_anchor=r"^─{10,}",
    working=(r"\(\d+s Esc/Ctrl\+C to interrupt\)$",),
    working_ink=True,
)

"""Kilo Code CLI's screen (7.7), as captured from the real CLI (tests/fixtures/screens/kilo).

Kilo is a fork of OpenCode and draws OpenCode's TUI: the `┃` composer box closed by
`╹▀▀▀`, the agent · model line (`Code  · Mock Model Mock`), the `■⬝` spinner with
`esc interrupt` in the footer, `△ Permission required` … `Allow once   Allow always
Reject` in place of the composer. Only its theme differs: a past prompt's bar and the
home view's placeholder (`Ask anything... "<example>"`, three dots) are warm grey
(166,160,155), typed text near-white (250,250,249), an error's bar red (255,100,103).
Nothing in its text tells it from OpenCode's screen: it is read as Kilo's when the pane's
program is Kilo (the layout is tried after OpenCode's); read as OpenCode's, Kilo's
placeholder is a draft, so rk does not type there.
"""

from dataclasses import replace

from rk.core.pane.screen import opencode

LAYOUT = replace(
    opencode.LAYOUT,
    agent="kilo",
    composer_skip=r"^\s*┃  \S+ +· \S.*$",  # the agent · model line: `Code  · Mock Model Mock`, two spaces
    turn_start_fg=frozenset({"2;166;160;155"}),
    limit_mark_fg=frozenset({"2;255;100;103"}),
    placeholder_fg=frozenset({"2;166;160;155"}),
    _compiled={},  # its own cache of compiled patterns: replace() would share OpenCode's
)

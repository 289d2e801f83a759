"""OpenCode's screen (1.18), as captured from the real CLI (tests/fixtures/screens/opencode).

The composer is a box of `┃` lines whose last line names the agent and the
model (`Build · Mock Model Mock`), closed by `╹▀▀▀`; the footer below says
`ctrl+p commands`, and while a turn runs it starts with a `■⬝` spinner and
`esc interrupt` (`esc again to interrupt` after one Esc; `[retrying in 2s
attempt #1]` between retries). The home view's placeholder (`Ask anything…
"<example>"`) is grey (128,128,128), typed text is near-white (238,238,238).
A permission request (`△ Permission required` … `Allow once   Allow always
Reject`) replaces the composer and the footer. An API error is a red-barred
block with the provider's message under the last reply header (`▣  Build ·
…`). rk never sends C-c here: on an empty composer it quits OpenCode.
"""

from rk.core.pane.screen.engine import Layout

LAYOUT = Layout(
    agent="opencode",
    identify=(
        r"ctrl\+p commands",
        r"^\s*╹▀{10,}",
        r"△ Permission required",
        r"esc (again to )?interrupt\b",
        r"tab agents",
    ),
    composer=r"^\s*┃(?:  (?P<text>.*))?$",
    composer_end=r"^\s*╹▀{10,}",
    composer_block=True,
    composer_skip=r"^\s*┃  \S+ · \S.*$",  # the agent · model line at the bottom of the box
    turn_start=r"^\s*┃",  # a past prompt: its bar is blue (an error's is red)
    turn_start_fg=frozenset({"2;92;156;245"}),
    working=(r"esc (again to )?interrupt\b", r"^\s*[■⬝]{4,}", r"\[retrying in \d+"),
    working_below=True,  # the footer under the composer box
    dialog=(r"△ Permission required", r"Allow once\s+Allow always\s+Reject"),
    limit=(r"(?i)\brate.?limit", r"(?i)\bquota\b", r"(?i)usage limit", r"\b429\b", r"(?i)too many requests"),
    limit_mark_fg=frozenset({"2;224;108;117"}),  # an error's red bar; a reply has none
    placeholder_dim=True,
    placeholder_fg=frozenset({"2;128;128;128"}),
)

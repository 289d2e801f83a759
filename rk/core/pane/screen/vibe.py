"""Mistral Vibe's screen (3.0), as captured from the real CLI (tests/fixtures/screens/vibe).

Provisional: refined from the captures.
"""

from rk.core.pane.screen.engine import Layout

LAYOUT = Layout(
    agent="vibe",
    identify=(
        r"Esc/Ctrl\+C to interrupt\)",
        r"^\s*Mistral Vibe v\d+\.\d+",
        r"\[PID \d+\]\s+\S+ tokens \(\d+%\)",
        r"What should Vibe do instead\?",
    ),
    composer=r"^> ?(?P<text>.*)$",
    composer_more=r"^  (?P<text>.*)$",
    composer_end=r"^─{10,}",
    status=(r"\S",),
    status_anchor=r"^─{10,}",
    working=(r"Esc/Ctrl\+C to interrupt\)",),
)

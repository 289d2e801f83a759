"""A pane's screen as words for a reader (`rk agent read`, rk mcp's `pane_read`): the
terminal's escapes (colours, titles) and control characters (a bell) removed, so what
a pane shows reaches an agent as text, never as sequences its own terminal would act on."""

from __future__ import annotations

import re

#: CSI and OSC sequences, any other escape pair, and the C0 controls but the tab.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.|[\x00-\x08\x0b-\x1f\x7f]")


def screen_lines(captured: str, last: int) -> list[str]:
    """The last `last` rows of a captured screen, cleaned, trailing blank rows dropped."""
    rows = [_CONTROL.sub("", row).rstrip() for row in captured.split("\n")]
    while rows and not rows[-1]:
        rows.pop()
    return rows[-last:] if last > 0 else []

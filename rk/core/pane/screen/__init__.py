"""The screen as a second source of truth: each agent's layout, and the classifier."""

from rk.core.pane.screen import claude, codex, gemini, kilo, opencode
from rk.core.pane.screen.engine import Layout, Screen, classify

#: Every layout rk knows, in the order they are tried when the pane names no agent.
LAYOUTS: tuple[Layout, ...] = (claude.LAYOUT, codex.LAYOUT, gemini.LAYOUT, opencode.LAYOUT)
LAYOUTS += (kilo.LAYOUT,)

#: The versions of each agent CLI whose screens and hooks rk is tested with: the suite
#: (`make test-agents`) runs exactly these, and `rk doctor` warns about any other.
TESTED_VERSIONS: dict[str, tuple[str, ...]] = {
    "claude": ("2.1.197", "2.1.332"),
    "codex": ("0.171.0",),
    "gemini": ("0.61.0",),
    "opencode": ("1.18.33",),
    "kilo": ("7.7.7",),
}

__all__ = ["LAYOUTS", "TESTED_VERSIONS", "Layout", "Screen", "classify"]

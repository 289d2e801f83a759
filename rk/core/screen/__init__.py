"""The screen as a second source of truth: each agent's layout, and the classifier."""

from rk.core.screen import claude, codex, gemini, opencode
from rk.core.screen.engine import Layout, Screen, classify

#: Every layout rk knows, in the order they are tried when the pane names no agent.
LAYOUTS: tuple[Layout, ...] = (claude.LAYOUT, codex.LAYOUT, gemini.LAYOUT, opencode.LAYOUT)

__all__ = ["LAYOUTS", "Layout", "Screen", "classify"]

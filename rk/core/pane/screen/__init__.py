"""The screen as a second source of truth: each agent's layout, and the classifier."""

from rk.core.pane.screen import claude, codex, copilot, gemini, kilo, opencode
from rk.core.pane.screen import qwen as qwen_screen
from rk.core.pane.screen import vibe as vibe_screen
from rk.core.pane.screen.engine import Layout, Screen, classify

#: Every layout rk knows, in the order they are tried when the pane names no agent.
#: Copilot's is tried before Claude's: both draw a `❯` composer between rules, and only
#: Copilot's footer words (`/ commands · ? help`, `esc esc interrupt`) tell them apart.
LAYOUTS: tuple[Layout, ...] = (copilot.LAYOUT, claude.LAYOUT, codex.LAYOUT, gemini.LAYOUT, opencode.LAYOUT)
LAYOUTS += (kilo.LAYOUT, qwen_screen.LAYOUT, vibe_screen.LAYOUT)

#: A frame no layout reads is looked at again this much later, up to this many times,
#: before the screen is called unreadable: a TUI caught mid-redraw (Mistral Vibe draws a
#: band of blank rows) matches no layout for a moment. The last look before typing
#: (`rk.act.keys.Timing.look_again`) and a tick's look (`rk.tmux.observe`) both wait so.
REDRAW_PAUSE = 0.3
REDRAW_TRIES = 3

#: The versions of each agent CLI whose screens and hooks rk is tested with: the suite
#: (`make test-agents`) runs exactly these, and `rk doctor` warns about any other.
TESTED_VERSIONS: dict[str, tuple[str, ...]] = {
    "claude": ("2.1.197", "2.1.332"),
    "codex": ("0.171.0",),
    "gemini": ("0.61.0",),
    "opencode": ("1.18.33",),
    "copilot": ("1.0.102",),
    "qwen": ("0.24.4",),
    "kilo": ("7.7.7",),
    "vibe": ("3.0.2",),
}

__all__ = ["LAYOUTS", "REDRAW_PAUSE", "REDRAW_TRIES", "TESTED_VERSIONS", "Layout", "Screen", "classify"]

"""Gemini CLI: rk's hooks, and its MCP server, in `~/.gemini/settings.json`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup.agent_cli import AgentCli, Hook
from rk.core.environ import home
from rk.core.pane.state import AgentState

# Gemini CLI 0.61: AfterAgent ends every turn (errors and Esc included; no
# payload says which); a quota dialog fires nothing: the screen catches it.
HOOKS: tuple[Hook, ...] = (
    ("SessionStart", None, "stamp"),
    ("BeforeAgent", None, AgentState.ACTIVE),
    ("BeforeModel", None, AgentState.ACTIVE),
    ("BeforeTool", None, AgentState.ACTIVE),
    ("AfterTool", None, AgentState.ACTIVE),
    ("Notification", "ToolPermission", AgentState.WAITING),
    ("AfterAgent", None, AgentState.IDLE),
    ("SessionEnd", None, AgentState.IDLE),
)

#: Gemini draws a running hook's name on screen, and without one it draws the
#: whole command (which wraps and leaves garbage at narrow widths).
HANDLER_EXTRA = {"name": "rk"}


def config_path(env: Mapping[str, str]) -> Path:
    return Path(home(env)) / ".gemini" / "settings.json"


CLI = AgentCli(
    name="gemini",
    binary="gemini",
    config_path=config_path,
    mcp_config_path=config_path,
    after_install="restart running Gemini CLI sessions to load the hooks",
    after_mcp="restart running Gemini CLI sessions; /mcp shows rk",
    hooks=HOOKS,
    handler_extra=HANDLER_EXTRA,
)

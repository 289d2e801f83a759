"""Qwen Code: rk's hooks, and its MCP server, in `~/.qwen/settings.json` (`$QWEN_HOME/settings.json`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup.agent_cli import AgentCli, Hook
from rk.core.environ import home
from rk.core.pane.state import AgentState

# Qwen Code 0.24 (a Gemini CLI fork with Claude-shaped hooks): Stop ends a normal
# turn, StopFailure an API error (`error` rate_limit: a limit). Its idle_prompt
# Notification comes at once on every return to idle, after an Esc too (which
# fires no Stop): `idle-notice` ends such a turn but keeps a limit until its
# reset. The permission_prompt Notification comes as the dialog shows, and the
# approved tool's PreToolUse marks the turn running again. UserPromptSubmit also
# fires for each tool-result continuation: it only ever says `active`.
HOOKS: tuple[Hook, ...] = (
    ("SessionStart", None, "stamp"),
    ("UserPromptSubmit", None, AgentState.ACTIVE),
    ("PreToolUse", None, AgentState.ACTIVE),
    ("PostToolUse", None, AgentState.ACTIVE),
    ("PostToolUseFailure", None, AgentState.ACTIVE),
    ("Notification", "permission_prompt", AgentState.WAITING),
    ("Stop", None, AgentState.IDLE),
    ("StopFailure", None, "failed"),
    ("Notification", "idle_prompt", "idle-notice"),
    ("SessionEnd", None, AgentState.IDLE),
)


def config_path(env: Mapping[str, str]) -> Path:
    """`$QWEN_HOME/settings.json`, else `~/.qwen/settings.json` (Qwen's user settings)."""
    qwen_home = env.get("QWEN_HOME", "")
    return Path(qwen_home) / "settings.json" if qwen_home else Path(home(env)) / ".qwen" / "settings.json"


CLI = AgentCli(
    name="qwen",
    binary="qwen",
    config_path=config_path,
    mcp_config_path=config_path,
    after_install="restart running Qwen Code sessions to load the hooks",
    after_mcp="restart running Qwen Code sessions; /mcp shows rk",
    hooks=HOOKS,
)

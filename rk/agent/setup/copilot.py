"""GitHub Copilot CLI: rk's hooks in `$COPILOT_HOME/hooks/rk.json` (`~/.copilot`; Copilot
loads every `*.json` there), its MCP server in `$COPILOT_HOME/mcp-config.json`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup.agent_cli import AgentCli, Hook
from rk.agent.setup.plan import JsonDoc
from rk.core.environ import home
from rk.core.pane.state import AgentState

# Copilot 1.0.102, seen offline: agentStop ends a normal turn (an approved tool's
# included); sessionEnd comes once per session, not per turn, so it is not used.
# notification(permission_prompt) comes ~0.2 s after a dialog is drawn
# (permissionRequest fires before the rules decide, for calls they then allow
# too: not used). A failed turn fires only errorOccurred, which also fires for
# each retry of a 429 (all `recoverable: true`): not a turn end; Esc Esc fires
# nothing. The screen reads both. A preToolUse hook that fails DENIES the tool:
# rk's wrapper always exits 0.
HOOKS: tuple[Hook, ...] = (
    ("sessionStart", None, "stamp"),
    ("userPromptSubmitted", None, AgentState.ACTIVE),
    ("preToolUse", None, AgentState.ACTIVE),
    ("postToolUse", None, AgentState.ACTIVE),
    ("postToolUseFailure", None, AgentState.ACTIVE),
    ("notification", "permission_prompt|elicitation_dialog", AgentState.WAITING),
    ("agentStop", None, AgentState.IDLE),
)


def copilot_home(env: Mapping[str, str]) -> Path:
    base = env.get("COPILOT_HOME")
    return Path(base) if base else Path(home(env)) / ".copilot"


def config_path(env: Mapping[str, str]) -> Path:
    return copilot_home(env) / "hooks" / "rk.json"


def mcp_config_path(env: Mapping[str, str]) -> Path:
    return copilot_home(env) / "mcp-config.json"


def mcp_server(rk: str) -> JsonDoc:
    return {"type": "local", "command": rk, "args": ["mcp"], "tools": ["*"]}


CLI = AgentCli(
    name="copilot",
    binary="copilot",
    config_path=config_path,
    mcp_config_path=mcp_config_path,
    after_install="restart running Copilot CLI sessions to load the hooks",
    after_mcp="restart running Copilot CLI sessions; /mcp shows rk",
    hooks=HOOKS,
    mcp_server=mcp_server,
)

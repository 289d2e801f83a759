"""Claude Code: rk's hooks in `~/.claude/settings.json`; its MCP server in
`~/.claude.json` (the user scope, where `claude mcp add --scope user` writes)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup.agent_cli import AgentCli, Hook
from rk.agent.setup.plan import JsonDoc
from rk.core.environ import home
from rk.core.pane.state import AgentState

# Claude Code 2.1: PermissionRequest comes ~0.1 s after the dialog (its
# permission_prompt Notification only 6 s later, possibly after an approval,
# so it is not used); PostToolUse marks the turn running again after an
# approved dialog; StopFailure replaces Stop when an API error ends the turn.
# Esc and a denied dialog fire nothing: the screen catches them. The
# idle_prompt Notification comes ~60 s after any turn, a failed one too:
# `idle-notice` ends a turn left `active` but keeps a limit until its reset.
HOOKS: tuple[Hook, ...] = (
    ("SessionStart", None, "stamp"),
    ("UserPromptSubmit", None, AgentState.ACTIVE),
    ("PreToolUse", None, AgentState.ACTIVE),
    ("PostToolUse", None, AgentState.ACTIVE),
    ("PostToolUseFailure", None, AgentState.ACTIVE),
    ("PermissionRequest", None, AgentState.WAITING),
    ("Elicitation", None, AgentState.WAITING),
    ("ElicitationResult", None, AgentState.ACTIVE),
    ("Notification", "elicitation_dialog|agent_needs_input", AgentState.WAITING),
    ("Notification", "idle_prompt", "idle-notice"),
    ("Stop", None, AgentState.IDLE),
    ("StopFailure", None, "failed"),
)


def config_path(env: Mapping[str, str]) -> Path:
    return Path(home(env)) / ".claude" / "settings.json"


def mcp_config_path(env: Mapping[str, str]) -> Path:
    return Path(home(env)) / ".claude.json"  # `claude mcp add --scope user` writes its top-level mcpServers


def mcp_server(rk: str) -> JsonDoc:
    return {"type": "stdio", "command": rk, "args": ["mcp"], "env": {}}


CLI = AgentCli(
    name="claude",
    binary="claude",
    config_path=config_path,
    mcp_config_path=mcp_config_path,
    after_install="restart running Claude Code sessions to load the hooks",
    after_mcp="restart running Claude Code sessions; `claude mcp list` shows rk",
    hooks=HOOKS,
    mcp_server=mcp_server,
)

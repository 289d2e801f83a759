"""What rk writes into one agent CLI's configuration, and where: the record each
CLI's module (`claude`, `codex`, `gemini`, `opencode`) fills in, and the shared
code reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rk.agent.setup.plan import JsonDoc

#: One hook: (event, matcher or None, token).
Hook = tuple[str, str | None, str]


def stdio_server(rk: str) -> JsonDoc:
    """rk's MCP server as most CLIs' JSON configs spell a stdio server."""
    return {"command": rk, "args": ["mcp"]}


@dataclass(frozen=True)
class AgentCli:
    """One agent CLI, as `rk agent setup` sees it."""

    name: str
    binary: str  #: the program on PATH that says the CLI is installed
    #: the file its hooks go into (OpenCode's: rk's whole plugin file)
    config_path: Callable[[Mapping[str, str]], Path]
    mcp_config_path: Callable[[Mapping[str, str]], Path]  #: the file that lists its MCP servers
    after_install: str  #: what the user does next, once the hooks are in
    after_mcp: str  #: what the user does next, once the MCP server is registered
    hooks: tuple[Hook, ...] = ()  #: its hooks, for a CLI configured in JSON
    #: keys every hook handler carries beside its command
    handler_extra: Mapping[str, str] = field(default_factory=dict)
    #: the path of keys to the object that maps server names to servers
    mcp_keys: tuple[str, ...] = ("mcpServers",)
    #: rk's server (the caller's TMUX and TMUX_PANE reach it through the environment
    #: the CLI starts it with)
    mcp_server: Callable[[str], JsonDoc] = stdio_server


#: The name rk's MCP server is registered under in every CLI's config.
MCP_NAME = "rk"


def wrapper_command(rk: str, provider: str, token: str) -> str:
    """The shell command of one hook: nothing outside tmux, never a failure the agent sees."""
    return (
        f'/bin/sh -c \'[ -n "$TMUX_PANE" ] || exit 0; "{rk}" agent hook --agent {provider} {token}'
        f" 2>/dev/null || true'"
    )

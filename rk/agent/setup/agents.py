"""The agent CLIs `rk agent setup` knows, by name, and the files it edits for each."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup import claude, codex, copilot, gemini, kilo, opencode, vibe
from rk.agent.setup import qwen as qwen_cli
from rk.agent.setup.agent_cli import AgentCli, Hook
from rk.agent.setup.plan import UsageError

CLIS: dict[str, AgentCli] = {cli.name: cli for cli in (claude.CLI, codex.CLI, gemini.CLI, opencode.CLI)}
CLIS[copilot.CLI.name] = copilot.CLI
CLIS[qwen_cli.CLI.name] = qwen_cli.CLI
CLIS[kilo.CLI.name] = kilo.CLI
CLIS[vibe.CLI.name] = vibe.CLI
PROVIDERS = tuple(CLIS)
BINARIES = {name: cli.binary for name, cli in CLIS.items()}
#: The hooks of each agent CLI configured in JSON.
HOOKS: dict[str, tuple[Hook, ...]] = {name: cli.hooks for name, cli in CLIS.items() if cli.hooks}


def cli_of(agent: str) -> AgentCli:
    """The CLI named `agent` (UsageError for a name rk does not know)."""
    cli = CLIS.get(agent)
    if cli is None:
        raise UsageError(f"unknown agent {agent!r} (use {', '.join(PROVIDERS)})")
    return cli


def config_path(agent: str, env: Mapping[str, str]) -> Path:
    """The file `rk agent setup <agent>` edits."""
    return cli_of(agent).config_path(env)


def mcp_config_path(agent: str, env: Mapping[str, str]) -> Path:
    """The file `rk agent setup <agent> --mcp` edits: each CLI's user-wide MCP list."""
    return cli_of(agent).mcp_config_path(env)

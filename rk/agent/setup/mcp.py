"""`rk agent setup --mcp`: `rk mcp` (rk's MCP server) registered in each agent CLI's
user-wide list of MCP servers, under `MCP_NAME`: an entry of the JSON object that
maps names to servers (Claude Code, Gemini CLI, OpenCode), or Codex's TOML block
(`codex`). Other servers are never touched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup import codex
from rk.agent.setup.agent_cli import MCP_NAME, AgentCli
from rk.agent.setup.agents import cli_of, mcp_config_path
from rk.agent.setup.plan import JsonDoc, Plan, SetupError, dump_json, load_json, read_config


def _mcp_holder(cli: AgentCli, doc: JsonDoc, path: Path, create: bool) -> JsonDoc | None:
    """The object that maps server names to servers (`mcpServers`; OpenCode 2's `mcp.servers`)."""
    keys = cli.mcp_keys
    node = doc
    for key in keys:
        if key not in node:
            if not create:
                return None
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            raise SetupError(f'{path}: "{".".join(keys)}" is not an object — nothing was written')
    return node


def plan_mcp(agent: str, env: Mapping[str, str], rk: str | None, uninstall: bool) -> Plan:
    """Register (or remove) `rk mcp` in one CLI's config; other servers are never touched."""
    path = mcp_config_path(agent, env)
    old = read_config(path)
    if agent == "codex":
        return codex.plan_mcp(path, old, rk, uninstall)
    cli = cli_of(agent)
    doc = load_json(path, old)
    if uninstall:
        holder = _mcp_holder(cli, doc, path, create=False)
        if holder is None or MCP_NAME not in holder:
            return Plan(agent, path, old, old, f"{agent}: no rk MCP server in {path}")
        del holder[MCP_NAME]
        return Plan(agent, path, old, dump_json(doc), f"{agent}: removed the rk MCP server from {path}")
    assert rk is not None
    before = json.loads(json.dumps(doc))
    holder = _mcp_holder(cli, doc, path, create=True)
    assert holder is not None
    holder[MCP_NAME] = cli.mcp_server(rk)
    if old is not None and doc == before:
        return Plan(agent, path, old, old, f"{agent}: MCP server already up to date in {path}")
    return Plan(agent, path, old, dump_json(doc), f"{agent}: registered the rk MCP server in {path}", [cli.after_mcp])


def mcp_registered(agent: str, env: Mapping[str, str]) -> bool | None:
    """Whether `rk mcp` is registered for `agent` (None: its config cannot be read)."""
    path = mcp_config_path(agent, env)
    try:
        data = read_config(path)
        if agent == "codex":
            return codex.mcp_registered(data)
        holder = _mcp_holder(cli_of(agent), load_json(path, data), path, create=False)
    except (SetupError, UnicodeDecodeError):
        return None
    return holder is not None and isinstance(holder.get(MCP_NAME), dict)

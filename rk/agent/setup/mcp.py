"""`rk agent setup --mcp`: `rk mcp` (rk's MCP server) registered in each agent CLI's
user-wide list of MCP servers, under `MCP_NAME`: an entry of the JSON object that
maps names to servers (Claude Code, Gemini CLI, OpenCode), or Codex's TOML block
(`codex`), beside the allow rules that let the tools rk scopes itself run without a
dialog (`permissions`): in the same file, or in Claude Code's settings.json, a plan
of its own. For Claude Code, `~/.claude.json` also gets the operator's directory
marked trusted (`workspace`), so `rk operator` starts there without a trust screen.
Other servers, rules and projects are never touched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup import codex, workspace
from rk.agent.setup.agent_cli import MCP_NAME, AgentCli
from rk.agent.setup.agents import cli_of, mcp_config_path
from rk.agent.setup.permissions import RULES, WORKER_TOOLS, add_rules, remove_rules, wide_rule_notes
from rk.agent.setup.plan import JsonDoc, Plan, SetupError, as_text, dump_json, load_json, read_config

#: Options of rk's server entry that are the user's to set, kept by a re-run of setup
#: (Claude Code: `alwaysLoad` offers rk's tools up front, not behind its ToolSearch).
USER_OPTIONS = ("alwaysLoad", "timeout")


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


def plans_mcp(agent: str, env: Mapping[str, str], rk: str | None, uninstall: bool) -> list[Plan]:
    """Register (or remove) `rk mcp` and its allow rules: one plan per file."""
    plans = [plan_mcp(agent, env, rk, uninstall)]
    rules = RULES.get(agent)
    if rules is not None and rules.path(env) != plans[0].path:
        plans.append(plan_rules(agent, env, uninstall))
    return plans


def plan_mcp(agent: str, env: Mapping[str, str], rk: str | None, uninstall: bool) -> Plan:
    """Register (or remove) `rk mcp` in one CLI's config, with the allow rules that live
    in the same file; other servers and rules are never touched."""
    path = mcp_config_path(agent, env)
    old = read_config(path)
    if agent == "vibe":  # its config.toml is not rk's to edit: the server is not offered there
        return Plan(agent, path, old, old, "vibe: rk registers no MCP server with Mistral Vibe (only its hooks)")
    if agent == "codex":
        return codex.plan_mcp(path, old, rk, uninstall)
    cli = cli_of(agent)
    doc = load_json(path, old)
    rules = RULES.get(agent)
    here = rules is not None and rules.path(env) == path
    if uninstall:
        holder = _mcp_holder(cli, doc, path, create=False)
        had = holder is not None and MCP_NAME in holder
        if had and holder is not None:
            del holder[MCP_NAME]
        removed = remove_rules(doc, rules, path) if here and rules is not None else 0
        untrusted = agent == "claude" and workspace.untrust_claude(doc, env)
        if not had and not removed and not untrusted:
            return Plan(agent, path, old, old, f"{agent}: no rk MCP server in {path}")
        what = "the rk MCP server" if had else "rk's allow rules" if removed else "the operator's trust"
        return Plan(agent, path, old, dump_json(doc), f"{agent}: removed {what} from {path}")
    assert rk is not None
    before = json.loads(json.dumps(doc))
    holder = _mcp_holder(cli, doc, path, create=True)
    assert holder is not None
    server = cli.mcp_server(rk)
    existing = holder.get(MCP_NAME)
    if isinstance(existing, dict):  # the options a user adds to rk's entry are theirs
        server.update({key: existing[key] for key in USER_OPTIONS if key in existing})
    holder[MCP_NAME] = server
    if here and rules is not None:
        add_rules(doc, rules, path)
    if agent == "claude":  # `rk operator` starts Claude there, with no trust screen
        workspace.trust_claude(doc, env)
    if old is not None and doc == before:
        return Plan(agent, path, old, old, f"{agent}: MCP server already up to date in {path}")
    allowed = f", its {len(WORKER_TOOLS)} scoped tools allowed without a dialog" if here else ""
    if agent == "claude":
        allowed += f", the operator's directory {workspace.operator_dir(env)} trusted"
    summary = f"{agent}: registered the rk MCP server in {path}{allowed}"
    notes = [cli.after_mcp, *(wide_rule_notes(agent, doc) if here else [])]
    return Plan(agent, path, old, dump_json(doc), summary, notes)


def plan_rules(agent: str, env: Mapping[str, str], uninstall: bool) -> Plan:
    """rk's allow rules in a file of their own (Claude Code's settings.json)."""
    rules = RULES[agent]
    path = rules.path(env)
    old = read_config(path)
    doc = load_json(path, old)
    if uninstall:
        removed = remove_rules(doc, rules, path)
        if not removed:
            return Plan(agent, path, old, old, f"{agent}: no rk allow rules in {path}")
        return Plan(agent, path, old, dump_json(doc), f"{agent}: removed {removed} rk allow rule(s) from {path}")
    added = add_rules(doc, rules, path)
    notes = wide_rule_notes(agent, doc)
    if not added:
        return Plan(agent, path, old, old, f"{agent}: allow rules already up to date in {path}", notes)
    summary = f"{agent}: allowed {added} rk tool(s) without a dialog in {path}"
    return Plan(agent, path, old, dump_json(doc), summary, notes)


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


def _registered_command(agent: str, env: Mapping[str, str]) -> str:
    """The program `agent`'s rk entry starts ("" when none can be read)."""
    path = mcp_config_path(agent, env)
    data = read_config(path)
    if agent == "codex":
        import tomllib

        try:
            server = tomllib.loads((data or b"").decode("utf-8")).get("mcp_servers", {}).get(MCP_NAME, {})
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
            return ""
    else:
        holder = _mcp_holder(cli_of(agent), load_json(path, data), path, create=False) or {}
        server = holder.get(MCP_NAME)
    command = server.get("command") if isinstance(server, dict) else None
    if isinstance(command, list):  # OpenCode: the whole argv
        command = command[0] if command else None
    return command if isinstance(command, str) else ""


def mcp_drift(agent: str, env: Mapping[str, str], rk: str) -> tuple[bool, str] | None:
    """None when `agent`'s rk MCP set-up is what setup writes for `rk` (wherever Codex's
    block sits among tables written after it); else (whether it runs another rk, what
    differs). SetupError when the config cannot be read."""
    command = _registered_command(agent, env)
    if command != rk:
        return True, f"runs another rk ({command or 'no command'})"
    if agent == "codex":
        path = mcp_config_path(agent, env)
        current = codex.block_current(as_text(path, read_config(path)), rk)
    else:
        current = not any(p.changed for p in plans_mcp(agent, env, rk, uninstall=False))
    return None if current else (False, "is older than this rk's set-up (allow rules, options or trust)")


def claude_eager_flags(env: Mapping[str, str]) -> list[str]:
    """Claude Code's flags that load rk's tools up front for one process (the operator):
    rk's registered entry again, with `alwaysLoad`, through `--mcp-config`. Claude 2.x
    otherwise defers every MCP tool behind its ToolSearch tool (a turn to find one).
    None when rk is not registered for Claude, or already loads up front."""
    path = mcp_config_path("claude", env)
    try:
        holder = _mcp_holder(cli_of("claude"), load_json(path, read_config(path)), path, create=False)
    except SetupError:
        return []
    entry = holder.get(MCP_NAME) if holder is not None else None
    if not isinstance(entry, dict) or entry.get("alwaysLoad") is True:
        return []
    eager = {"mcpServers": {MCP_NAME: {**entry, "alwaysLoad": True}}}
    return ["--mcp-config", json.dumps(eager, separators=(",", ":"))]

"""`rk uninstall`'s file plans: everything `rk agent setup` writes, removed in one
plan per file (hooks, the MCP server, its allow rules and the tmux segment often
share a file, and two plans of one file would each undo the other's removal).

Only rk's own entries go, recognised as setup recognises them (`hooks`, `mcp`,
`permissions`, `workspace`, `codex`, `opencode`, `tmux`, and `rk cron ticker
install`'s tmux line). What the removal empties is pruned too (an object or list
that held something and now holds nothing; one the user left empty stays), so a
file setup created from scratch is deleted rather than left as `{}`: a missing
file means the same to every CLI. A file that cannot be read or parsed is left as
it is and reported; the others are planned regardless.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rk.agent.setup import codex, kilo, opencode, vibe, workspace
from rk.agent.setup.agent_cli import MCP_NAME, AgentCli
from rk.agent.setup.agents import PROVIDERS, cli_of
from rk.agent.setup.hooks import strip_rk_hooks
from rk.agent.setup.permissions import RULES, Rules, remove_rules
from rk.agent.setup.plan import JsonDoc, Plan, SetupError, as_text, dump_json, load_json, read_config
from rk.agent.setup.ticker_line import remove_ticker_line
from rk.agent.setup.tmux import plan_tmux

#: One removal from a parsed JSON file: edits the document in place and says what it
#: removed ("" when nothing of rk's was there).
JsonEdit = Callable[[JsonDoc, Path], str]


@dataclass
class Removal:
    """The plans of an uninstall, and the files that could not be planned (one line each)."""

    plans: list[Plan] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _hooks(doc: JsonDoc, path: Path) -> str:
    stripped, removed = strip_rk_hooks(doc, path)
    doc.clear()
    doc.update(stripped)
    return f"{removed} rk hook(s)" if removed else ""


def _server(cli: AgentCli, doc: JsonDoc, path: Path) -> str:
    node: Any = doc
    for key in cli.mcp_keys:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict) or MCP_NAME not in node:
        return ""
    del node[MCP_NAME]
    return "the rk MCP server"


def _rules(rules: Rules, doc: JsonDoc, path: Path) -> str:
    removed = remove_rules(doc, rules, path)
    return f"{removed} rk allow rule(s)" if removed else ""


def _trust(env: Mapping[str, str], doc: JsonDoc, path: Path) -> str:
    return "the operator's directory's trust" if workspace.untrust_claude(doc, env) else ""


def _json_edits(env: Mapping[str, str]) -> dict[Path, list[tuple[str, JsonEdit]]]:
    """Each JSON file setup writes, with the removals of every CLI that writes it."""
    edits: dict[Path, list[tuple[str, JsonEdit]]] = {}
    for agent in PROVIDERS:
        cli = cli_of(agent)
        if cli.hooks:
            edits.setdefault(cli.config_path(env), []).append((agent, _hooks))
        if agent not in ("codex", "vibe"):  # Codex's server is a TOML block (`_codex_plan`); Vibe has none
            edits.setdefault(cli.mcp_config_path(env), []).append((agent, partial(_server, cli)))
        if agent == "claude":  # the operator's directory, trusted beside the server
            edits.setdefault(cli.mcp_config_path(env), []).append((agent, partial(_trust, env)))
        rules = RULES.get(agent)
        if rules is not None:
            edits.setdefault(rules.path(env), []).append((agent, partial(_rules, rules)))
    return edits


def prune_emptied(before: Any, after: Any) -> None:
    """Drop from `after` (in place) each object or list that the removal emptied: empty
    now, not empty in `before`; one that was already empty is the user's and stays."""
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return
    for key in list(after):
        value = after[key]
        was = before.get(key)
        prune_emptied(was, value)
        if isinstance(value, dict | list) and not value and isinstance(was, dict | list) and was:
            del after[key]


def _json_plan(path: Path, edits: list[tuple[str, JsonEdit]]) -> Plan:
    old = read_config(path)
    agents = "/".join(dict.fromkeys(agent for agent, _ in edits))
    doc = load_json(path, old)
    before = copy.deepcopy(doc)
    removed = [what for _, edit in edits if (what := edit(doc, path))]
    if not removed:
        return Plan(agents, path, old, old, f"{agents}: nothing of rk's in {path}")
    prune_emptied(before, doc)
    what = ", ".join(removed)
    if not doc:  # rk's entries were all it held: setup created it, or they are all that is left
        return Plan(agents, path, old, None, f"{agents}: removed {path} ({what}: all it held)")
    return Plan(agents, path, old, dump_json(doc), f"{agents}: removed {what} from {path}")


def _codex_plan(env: Mapping[str, str]) -> Plan:
    """rk's block out of Codex's config.toml (a server the user wrote is theirs)."""
    path = cli_of("codex").mcp_config_path(env)
    old = read_config(path)
    text = as_text(path, old)
    rest, ours = codex.strip_codex_block(text)
    if not ours:
        return Plan("codex", path, old, old, f"codex: nothing of rk's in {path}")
    if not rest.strip():
        return Plan("codex", path, old, None, f"codex: removed {path} (the rk MCP server: all it held)")
    return Plan("codex", path, old, rest.encode("utf-8"), f"codex: removed the rk MCP server from {path}")


def _tmux_plan(env: Mapping[str, str], socket: str | None) -> Plan:
    """rk's status segment out of the tmux config and the running server; a config
    that held nothing else is deleted."""
    p = plan_tmux(env, None, True, socket)
    if p.old != p.new and p.new is not None and not p.new.strip():
        p.new = None
        p.summary = f"tmux: removed {p.path} (rk's status segment: all it held)"
    return p


def removal_plans(env: Mapping[str, str], tmux_socket: str | None) -> Removal:
    """Every file `rk agent setup` writes (for every CLI, hooks and MCP, and tmux),
    planned without rk's entries; `tmux_socket`: the server whose status line is set too."""
    out = Removal()
    planners: list[Callable[[], Plan]] = [partial(_json_plan, path, e) for path, e in _json_edits(env).items()]
    planners.append(partial(_codex_plan, env))
    plugin = cli_of("opencode").config_path(env)
    planners.append(lambda: opencode.plan_plugin(plugin, read_config(plugin), None, True))
    kilo_plugin = cli_of("kilo").config_path(env)
    planners.append(lambda: kilo.plan_plugin(kilo_plugin, read_config(kilo_plugin), None, True))
    vibe_hooks = cli_of("vibe").config_path(env)
    planners.append(lambda: vibe.plan_hooks(vibe_hooks, read_config(vibe_hooks), None, True))
    planners.append(partial(_tmux_plan, env, tmux_socket))
    for planner in planners:
        try:
            out.plans.append(planner())
        except SetupError as exc:
            out.errors.append(str(exc).replace("nothing was written", "left as it is"))
    try:  # `rk cron ticker install`'s tmux line, in the tmux plan when they share a file
        remove_ticker_line(out.plans, env)
    except SetupError as exc:
        out.errors.append(str(exc).replace("nothing was written", "left as it is"))
    return out

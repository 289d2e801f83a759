"""`rk agent setup --mcp`: the allow rules that let rk's tools run without a dialog.

rk checks every tool call against the caller's scope itself (rk.core.channels.mcpguard),
so a per-call dialog of the agent CLI adds nothing for the tools whose scope rk checks
(`UNATTENDED["worker"]`): setup allows them for every pane. The tools that act on a whole
server (`cron_pause`, `cron_resume`) stay behind the CLI's dialog, and only the operator
runs them unattended: `rk operator` launches its agent with a flag (or, for OpenCode, a
variable) that allows them for that one process (`operator_launch`).

Where each CLI keeps them:

* claude: `permissions.allow` of `~/.claude/settings.json`, `mcp__rk__<tool>`;
  the operator: `--allowedTools mcp__rk__cron_pause,mcp__rk__cron_resume`, and rk's
  tools offered up front rather than behind Claude's ToolSearch (`mcp.claude_eager_flags`).
* codex: `tools.<tool>.approval_mode = "approve"` in rk's own `[mcp_servers.rk]` block
  (`codex`); the operator: `-c mcp_servers.rk.tools.<tool>.approval_mode="approve"`
  (only when rk's block is there: a partial server table would stop Codex from starting).
* gemini: `tools.allowed` of `~/.gemini/settings.json`, `mcp_rk_<tool>`; the operator:
  `--allowed-tools mcp_rk_cron_pause,mcp_rk_cron_resume`.
* opencode, which runs every tool unasked unless told: `permission` of `opencode.json`,
  `rk_<tool>: "allow"` for the scoped tools and `"ask"` for the server tools; the
  operator: `OPENCODE_PERMISSION={"rk_cron_pause":"allow","rk_cron_resume":"allow"}`.

Ownership: rk owns exactly the rules it writes, recognised by their text (a rule list's
`mcp__rk__cron_add`; an OpenCode key whose value is the one rk writes). An install adds
the missing ones; an uninstall removes those and prunes the list or object that this
emptied. A rule that is not rk's is never touched: a wider one (`mcp__rk`, `mcp__rk__*`)
is said in a note, and an OpenCode key the user set to something else is left as set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rk.agent.setup import claude, gemini, kilo, opencode
from rk.agent.setup.agent_cli import MCP_NAME
from rk.agent.setup.plan import JsonDoc, SetupError
from rk.core.channels.mcpguard import OPERATOR_ROLE, UNATTENDED

#: The tools every pane runs without a dialog (rk checks their scope itself).
WORKER_TOOLS: tuple[str, ...] = UNATTENDED["worker"]
#: The tools only the operator runs without a dialog.
OPERATOR_TOOLS: tuple[str, ...] = tuple(t for t in UNATTENDED[OPERATOR_ROLE] if t not in WORKER_TOOLS)
#: OpenCode's answers: run unasked, or ask a person.
ALLOW, ASK = "allow", "ask"


@dataclass(frozen=True)
class Rules:
    """Where one JSON-configured CLI keeps its allow rules, and how it names rk's tools."""

    path: Callable[[Mapping[str, str]], Path]  #: the file
    keys: tuple[str, ...]  #: the path of keys to the list (or, for `ask`, the object) of rules
    name: Callable[[str], str]  #: rk's tool as the CLI's rules name it
    #: the CLI runs every tool unasked unless told (OpenCode): the rules are an object of
    #: name → allow|ask, and the server tools are written as `ask`
    ask: bool = False


RULES: dict[str, Rules] = {
    "claude": Rules(claude.config_path, ("permissions", "allow"), lambda t: f"mcp__{MCP_NAME}__{t}"),
    "gemini": Rules(gemini.config_path, ("tools", "allowed"), lambda t: f"mcp_{MCP_NAME}_{t}"),
    "opencode": Rules(opencode.mcp_config_path, ("permission",), lambda t: f"{MCP_NAME}_{t}", ask=True),
}
RULES["kilo"] = Rules(kilo.mcp_config_path, ("permission",), lambda t: f"{MCP_NAME}_{t}", ask=True)  # OpenCode's


#: Rules wider than rk's that allow the server tools in every pane (Claude Code's spellings).
WIDE_CLAUDE = (f"mcp__{MCP_NAME}", f"mcp__{MCP_NAME}__*")


def wanted(rules: Rules) -> dict[str, str]:
    """rk's rules for one CLI: each rule's text and (for an object of rules) its value."""
    out = {rules.name(t): ALLOW for t in WORKER_TOOLS}
    if rules.ask:
        out.update({rules.name(t): ASK for t in OPERATOR_TOOLS})
    return out


def _node(doc: JsonDoc, rules: Rules, path: Path, create: bool) -> Any:
    """The list (or object) of rules in `doc`; None when it is missing and not `create`d."""
    node: Any = doc
    for i, key in enumerate(rules.keys):
        last = i == len(rules.keys) - 1
        if key not in node:
            if not create:
                return None
            node[key] = ({} if rules.ask else []) if last else {}
        node = node[key]
        shape = (dict if rules.ask else list) if last else dict
        if not isinstance(node, shape):
            what = "an object" if shape is dict else "a list"
            raise SetupError(f'{path}: "{".".join(rules.keys[: i + 1])}" is not {what} — nothing was written')
    return node


def add_rules(doc: JsonDoc, rules: Rules, path: Path) -> int:
    """Add rk's missing rules to `doc` (in place); how many were added."""
    node = _node(doc, rules, path, create=True)
    added = 0
    for name, value in wanted(rules).items():
        if rules.ask:
            if name not in node:  # a value the user chose is theirs
                node[name] = value
                added += 1
        elif name not in node:
            node.append(name)
            added += 1
    return added


def remove_rules(doc: JsonDoc, rules: Rules, path: Path) -> int:
    """Remove rk's rules from `doc` (in place), pruning what that emptied; how many."""
    node = _node(doc, rules, path, create=False)
    if node is None:
        return 0
    ours = wanted(rules)
    if rules.ask:
        gone = [k for k, v in node.items() if ours.get(k) == v]
        for key in gone:
            del node[key]
        removed = len(gone)
    else:
        kept = [r for r in node if not (isinstance(r, str) and r in ours)]
        removed = len(node) - len(kept)
        node[:] = kept
    if removed:
        _prune(doc, rules.keys)
    return removed


def _prune(doc: JsonDoc, keys: tuple[str, ...]) -> None:
    """Drop the emptied list or object at `keys`, then each parent that this emptied."""
    for depth in range(len(keys), 0, -1):
        parent: Any = doc
        for key in keys[: depth - 1]:
            parent = parent[key]
        if parent[keys[depth - 1]]:
            return
        del parent[keys[depth - 1]]


def wide_rule_notes(agent: str, doc: JsonDoc) -> list[str]:
    """A note for each rule the user keeps that allows the server tools in every pane too."""
    rules = RULES.get(agent)
    if rules is None or rules.ask:
        return []
    node: Any = doc
    for key in rules.keys:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, list):
        return []
    wide = WIDE_CLAUDE if agent == "claude" else (f"mcp_{MCP_NAME}_*",)
    server = {rules.name(t) for t in OPERATOR_TOOLS}
    return [
        f"{'.'.join(rules.keys)} has {rule}: it lets every pane run "
        f"{', '.join(OPERATOR_TOOLS)} without a dialog (rk still refuses them to a worker); "
        "remove it to keep the dialog"
        for rule in node
        if isinstance(rule, str) and (rule in wide or rule in server)
    ]

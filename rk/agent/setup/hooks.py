"""rk's hooks in each agent CLI's configuration: handlers in the JSON hook lists of
Claude Code, Codex and Gemini CLI (their tables are in `claude`, `codex`,
`gemini`), OpenCode's whole plugin file (`opencode`).

Every handler is the same thin wrapper around the absolute path of the `rk`
script (`wrapper_command`). A handler whose command carries one of `MARKERS` is
rk's, of any generation: an install replaces them all, an uninstall removes them
and prunes what that empties; other handlers are never touched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rk.agent.setup import kilo, opencode, vibe
from rk.agent.setup.agent_cli import wrapper_command as wrapper_command  # re-exported: its one door before
from rk.agent.setup.agents import cli_of, config_path
from rk.agent.setup.plan import JsonDoc, Plan, SetupError, dump_json, load_json, read_config

#: The CLIs whose hooks are a whole plugin file rk owns (or, for Mistral Vibe, a block of a
#: TOML file), and the planner of each.
PLUGINS: dict[str, Callable[[Path, bytes | None, str | None, bool], Plan]] = {
    "opencode": opencode.plan_plugin,
    "kilo": kilo.plan_plugin,
    "vibe": vibe.plan_hooks,
}
#: Whether such a file holds rk's hooks, for a CLI whose file is not rk's plugin.
OWNED: dict[str, Callable[[bytes], bool]] = {"vibe": vibe.has_rk_hooks}

#: A hook handler whose command contains one of these belongs to rk (any generation).
MARKERS = (" agent hook ", " agent-hook ", "@rk_agent_state")


def is_rk_command(command: object) -> bool:
    """Whether a handler's command is rk's (any generation)."""
    return isinstance(command, str) and any(m in command for m in MARKERS)


def strip_rk_hooks(doc: JsonDoc, path: Path | str = "settings") -> tuple[JsonDoc, int]:
    """A copy of `doc` without rk-owned handlers; groups, event lists and the
    `hooks` object that this empties are pruned. (doc, handlers removed)."""
    if "hooks" not in doc:
        return dict(doc), 0
    hooks = doc["hooks"]
    if not isinstance(hooks, dict):
        raise SetupError(f'{path}: "hooks" is not an object — nothing was written')
    removed = 0
    new_hooks: JsonDoc = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise SetupError(f'{path}: "hooks".{event!r} is not a list — nothing was written')
        kept: list[Any] = []
        removed_here = 0
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not (isinstance(h, dict) and is_rk_command(h.get("command")))]
                n = len(group["hooks"]) - len(handlers)
                if n:
                    removed_here += n
                    if not handlers:
                        continue
                    group = {**group, "hooks": handlers}
            kept.append(group)
        removed += removed_here
        if removed_here and not kept:
            continue
        new_hooks[event] = kept
    out = dict(doc)
    if removed and not new_hooks:
        del out["hooks"]
    else:
        out["hooks"] = new_hooks
    return out, removed


def install_hooks(doc: JsonDoc, agent: str, rk: str, path: Path | str = "settings") -> JsonDoc:
    """`doc` with rk's hooks for `agent` in place of any earlier rk hooks."""
    out, _ = strip_rk_hooks(doc, path)
    hooks = dict(out.get("hooks") or {})
    cli = cli_of(agent)
    for event, matcher, token in cli.hooks:
        group: JsonDoc = {}
        if matcher is not None:
            group["matcher"] = matcher
        group["hooks"] = [{"type": "command", "command": wrapper_command(rk, agent, token), **cli.handler_extra}]
        hooks[event] = [*hooks.get(event, []), group]
    out["hooks"] = hooks
    return out


#: The rk script a handler of this generation runs (`wrapper_command`).
_WRAPPED_RK = re.compile(r'"([^"]+)" agent hook ')


def rk_handlers(doc: JsonDoc) -> list[tuple[str, str, str]]:
    """rk's handlers in `doc`, each (event, its group's matcher, the handler as JSON), sorted:
    what an install owns, wherever the user's own hooks sit around it."""
    hooks = doc.get("hooks")
    found: list[tuple[str, str, str]] = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else ():
                if isinstance(handler, dict) and is_rk_command(handler.get("command")):
                    matcher = json.dumps(group.get("matcher"))
                    found.append((event, matcher, json.dumps(handler, sort_keys=True)))
    return sorted(found)


def hooks_drift(doc: JsonDoc, agent: str, rk: str) -> str | None:
    """None when `doc` holds exactly the hooks an install of `rk` writes (the user's own
    hooks, before or after rk's, are theirs and never count); else what differs."""
    have = rk_handlers(doc)
    if have == rk_handlers(install_hooks({}, agent, rk)):
        return None
    if not have:
        return "no rk hooks"
    paths = {m.group(1) for _, _, h in have if (m := _WRAPPED_RK.search(json.loads(h)["command"]))}
    others = sorted(paths - {rk})
    if others:
        return f"runs another rk ({', '.join(others)})"
    return "has rk hooks of another version (old ones, or some missing)"


def hooks_state(agent: str, env: Mapping[str, str], rk: str) -> tuple[bool, str | None]:
    """Whether `agent`'s file has rk hooks at all, and (None: as an install of `rk` writes
    them) what differs; SetupError when the file cannot be read."""
    path = config_path(agent, env)
    old = read_config(path)
    if agent in PLUGINS:
        present = old is not None and OWNED.get(agent, opencode.is_rk_plugin)(old)
        current = PLUGINS[agent](path, old, rk, False)
        return present, None if not current.changed else "has another rk's plugin, or an old one"
    doc = load_json(path, old)
    strip_rk_hooks(doc, path)  # a `hooks` of the wrong shape is refused as setup refuses it
    drift = hooks_drift(doc, agent, rk)
    return bool(rk_handlers(doc)), drift


def plan(agent: str, env: Mapping[str, str], rk: str | None, uninstall: bool) -> Plan:
    """Install (or remove, `uninstall`) rk's hooks for `agent`; `rk`: the script they run."""
    path = config_path(agent, env)
    old = read_config(path)
    if agent in PLUGINS:
        return PLUGINS[agent](path, old, rk, uninstall)
    doc = load_json(path, old)
    if uninstall:
        new_doc, removed = strip_rk_hooks(doc, path)
        if not removed:
            return Plan(agent, path, old, old, f"{agent}: no rk hooks in {path}")
        return Plan(agent, path, old, dump_json(new_doc), f"{agent}: removed {removed} rk hook(s) from {path}")
    assert rk is not None
    new_doc = install_hooks(doc, agent, rk, path)
    if old is not None and new_doc == doc:
        return Plan(agent, path, old, old, f"{agent}: hooks already up to date in {path}")
    return Plan(
        agent,
        path,
        old,
        dump_json(new_doc),
        f"{agent}: installed {len(cli_of(agent).hooks)} hooks in {path}",
        [cli_of(agent).after_install],
    )

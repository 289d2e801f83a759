"""Mistral Vibe (`vibe`, PyPI `mistral-vibe`): rk's hooks are `[[hooks]]` tables in
`$VIBE_HOME/hooks.toml` (`~/.vibe`), between two comment lines rk owns
(`toml_block`): the user's own hooks around them are never touched.

Vibe 3.0 has three hook types: `post_agent` once a turn has ended (the turn's
end: `idle`), `pre_tool` before each tool call (and before its permission
dialog) and `post_tool` after a tool that ran (both: the turn runs, `active`).
No hook reports a turn's start, a dialog, an Esc or an error: the screen does
(`rk.core.pane.screen.vibe`). A subagent's hooks run with the parent's config
and carry `parent_session_id`; the hook ignores them (`rk.agent.hook_event`).
Every hook exits 0 with nothing on stdout: Vibe then lets the tool or the turn
go on as if there were no hook.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup import toml_block
from rk.agent.setup.agent_cli import AgentCli, Hook, wrapper_command
from rk.agent.setup.plan import Plan, SetupError, as_text
from rk.core.environ import home
from rk.core.pane.state import AgentState

HOOKS: tuple[Hook, ...] = (
    ("pre_tool", None, AgentState.ACTIVE),
    ("post_tool", None, AgentState.ACTIVE),
    ("post_agent", None, AgentState.IDLE),
)
#: The lines that enclose rk's hooks in hooks.toml.
MARKERS = toml_block.Markers(
    "# rk: begin — hooks written by `rk agent setup vibe`; removed by `--uninstall`; edits are overwritten",
    "# rk: end",
)
#: Seconds Vibe gives each of rk's hooks (its default is 60; rk's returns within a few).
HOOK_TIMEOUT = 10.0
AFTER_INSTALL = "restart running Mistral Vibe sessions to load the hooks"


def vibe_home(env: Mapping[str, str]) -> Path:
    """`$VIBE_HOME`, else `~/.vibe`."""
    base = env.get("VIBE_HOME", "")
    return Path(base) if base else Path(home(env)) / ".vibe"


def config_path(env: Mapping[str, str]) -> Path:
    return vibe_home(env) / "hooks.toml"


def mcp_config_path(env: Mapping[str, str]) -> Path:
    return vibe_home(env) / "config.toml"


CLI = AgentCli(
    name="vibe",
    binary="vibe",
    config_path=config_path,
    mcp_config_path=mcp_config_path,
    after_install=AFTER_INSTALL,
    after_mcp="rk's MCP server is not registered with Mistral Vibe by rk",
)


def hook_name(event: str) -> str:
    """rk's name for its hook of `event` (Vibe wants every hook name unique)."""
    return f"rk-{event.replace('_', '-')}"


def hooks_block(rk: str) -> str:
    """rk's block: its marker lines around one `[[hooks]]` table per hook."""
    tables = "".join(
        f"[[hooks]]\nname = {json.dumps(hook_name(event))}\ntype = {json.dumps(event)}\n"
        f"command = {json.dumps(wrapper_command(rk, 'vibe', token))}\ntimeout = {HOOK_TIMEOUT}\n\n"
        for event, _, token in HOOKS
    )
    return f"{MARKERS.begin}\n{tables}{MARKERS.end}\n"


def has_rk_hooks(data: bytes) -> bool:
    """Whether hooks.toml's bytes hold rk's block (a broken one counts: it is rk's to fix)."""
    text = data.decode("utf-8", "replace")
    return any(line.rstrip("\r") in (MARKERS.begin, MARKERS.end) for line in text.splitlines())


def _clashes(rest: str, path: Path) -> None:
    """Refuse a file whose own hooks use one of rk's names (Vibe would drop one of the two)."""
    doc = toml_block.parse(rest, path)
    hooks = doc.get("hooks", [])
    if not isinstance(hooks, list):
        raise SetupError(f"{path}: `hooks` is not a list of tables — nothing was written")
    ours = {hook_name(event) for event, _, _ in HOOKS}
    taken = sorted({str(h.get("name")) for h in hooks if isinstance(h, dict)} & ours)
    if taken:
        raise SetupError(f"{path}: a hook of yours is named {taken[0]!r}, as rk's is; rename it — nothing was written")


def plan_hooks(path: Path, old: bytes | None, rk: str | None, uninstall: bool) -> Plan:
    """Write (or remove) rk's block in hooks.toml (`old`: its bytes); other hooks are never touched."""
    text = as_text(path, old)
    rest, ours = toml_block.without(text, MARKERS, path)
    if uninstall:
        if not ours:
            return Plan("vibe", path, old, old, f"vibe: no rk hooks in {path}")
        if not rest.strip():
            return Plan("vibe", path, old, None, f"vibe: removed {path} (rk's hooks: all it held)")
        return Plan("vibe", path, old, rest.encode("utf-8"), f"vibe: removed rk's hooks from {path}")
    assert rk is not None
    _clashes(rest, path)
    new = toml_block.with_block(text, hooks_block(rk), MARKERS, path).encode("utf-8")
    if new == old:
        return Plan("vibe", path, old, old, f"vibe: hooks already up to date in {path}")
    return Plan("vibe", path, old, new, f"vibe: installed {len(HOOKS)} hooks in {path}", [AFTER_INSTALL])

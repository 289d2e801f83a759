"""Kilo Code CLI (`kilo`, npm `@kilocode/cli`): a fork of OpenCode with OpenCode's plugin
API, so rk's hooks are OpenCode's plugin with Kilo's names: the whole file
`$XDG_CONFIG_HOME/kilo/plugins/rk.js` (`~/.config`), marked rk's by its first line (only
then is it replaced or deleted), reporting as `--agent kilo`; its MCP server in `mcp` of
`$XDG_CONFIG_HOME/kilo/kilo.json`.

The events and what each means are OpenCode 1.x's (see `rk.agent.setup.opencode`); Kilo
7.7 sends them as OpenCode 1.18 does (tests/agents/KILO.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rk.agent.setup import opencode
from rk.agent.setup.agent_cli import AgentCli
from rk.agent.setup.plan import JsonDoc, Plan, SetupError
from rk.core.environ import home

KILO_HEADER = (
    "// rk agent hook plugin: written by `rk agent setup kilo`, removed by `--uninstall`; edits are overwritten."
)

AFTER_INSTALL = "restart running Kilo Code sessions to load the plugin"


def _config_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path(home(env)) / ".config") / "kilo"


def config_path(env: Mapping[str, str]) -> Path:
    return _config_dir(env) / "plugins" / "rk.js"


def mcp_config_path(env: Mapping[str, str]) -> Path:
    return _config_dir(env) / "kilo.json"


def mcp_server(rk: str) -> JsonDoc:
    return {"type": "local", "command": [rk, "mcp"], "enabled": True}


CLI = AgentCli(
    name="kilo",
    binary="kilo",
    config_path=config_path,
    mcp_config_path=mcp_config_path,
    after_install=AFTER_INSTALL,
    after_mcp="restart running Kilo Code sessions; `kilo mcp list` shows rk",
    mcp_keys=("mcp",),
    mcp_server=mcp_server,
)


def kilo_plugin(rk: str) -> str:
    """OpenCode's plugin, under Kilo's header and reporting as `--agent kilo`."""
    body = opencode.opencode_plugin(rk).split("\n", 1)[1]
    reporting = '["agent", "hook", "--agent", "opencode", token]'
    assert reporting in body  # the OpenCode plugin's one call of rk
    body = body.replace(reporting, '["agent", "hook", "--agent", "kilo", token]')
    return KILO_HEADER + "\n" + body.replace("--agent opencode <token>", "--agent kilo <token>", 1)


def plan_plugin(path: Path, old: bytes | None, rk: str | None, uninstall: bool) -> Plan:
    """Write (or delete) rk's plugin at `path` (`old`: its bytes); a file rk did not write is never touched."""
    ours = old is not None and opencode.is_rk_plugin(old)
    if uninstall:
        if old is None:
            return Plan("kilo", path, None, None, f"kilo: no rk plugin at {path}")
        if not ours:
            return Plan("kilo", path, old, old, f"kilo: {path} was not written by rk; left as is")
        return Plan("kilo", path, old, None, f"kilo: removed {path}")
    if old is not None and not ours:
        raise SetupError(f"{path} exists and was not written by rk; move it away — nothing was written")
    assert rk is not None
    new = kilo_plugin(rk).encode("utf-8")
    if new == old:
        return Plan("kilo", path, old, old, f"kilo: plugin already up to date at {path}")
    return Plan("kilo", path, old, new, f"kilo: installed plugin {path}", [AFTER_INSTALL])

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
from rk.agent.setup.plan import Plan

KILO_HEADER = (
    "// rk agent hook plugin: written by `rk agent setup kilo`, removed by `--uninstall`; edits are overwritten."
)

AFTER_INSTALL = "restart running Kilo Code sessions to load the plugin"


def config_path(env: Mapping[str, str]) -> Path:
    return opencode.config_dir(env, "kilo") / "plugins" / "rk.js"


def mcp_config_path(env: Mapping[str, str]) -> Path:
    return opencode.config_dir(env, "kilo") / "kilo.json"


CLI = AgentCli(
    name="kilo",
    binary="kilo",
    config_path=config_path,
    mcp_config_path=mcp_config_path,
    after_install=AFTER_INSTALL,
    after_mcp="restart running Kilo Code sessions; `kilo mcp list` shows rk",
    mcp_keys=("mcp",),
    mcp_server=opencode.mcp_server,
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
    return opencode.plan_plugin_file("kilo", kilo_plugin, AFTER_INSTALL, path, old, rk, uninstall)

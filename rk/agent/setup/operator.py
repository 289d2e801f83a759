"""The operator's launch: its agent CLI started with rk's server-wide tools
(`cron_pause`, `cron_resume`) allowed for that process alone, and, in Claude Code,
rk's tools offered up front. Its own module: it reads both the allow rules
(`permissions`) and the registered MCP entry (`mcp`), which reads the rules."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from rk.agent.setup.agent_cli import MCP_NAME
from rk.agent.setup.mcp import claude_eager_flags
from rk.agent.setup.permissions import ALLOW, OPERATOR_TOOLS, RULES
from rk.agent.setup.plan import SetupError

#: The variable each CLI merges into its `permission` config (the user's own value is kept).
PERMISSION_VARIABLES = {"opencode": "OPENCODE_PERMISSION", "kilo": "KILO_PERMISSION"}


def operator_launch(argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The operator's agent command with the server tools allowed for that process alone,
    and the variables its window gets. A program that is not a known agent CLI is left
    as it is (its server tools then ask, as in any pane)."""
    argv = list(argv)
    program = os.path.basename(argv[0]) if argv else ""
    tools = OPERATOR_TOOLS
    if program == "claude":
        allowed = ["--allowedTools", ",".join(RULES["claude"].name(t) for t in tools)]
        return _with_flags(argv, allowed + claude_eager_flags(env)), {}
    if program == "gemini":
        return _with_flags(argv, ["--allowed-tools", ",".join(RULES["gemini"].name(t) for t in tools)]), {}
    if program == "codex" and _codex_has_rk(env):
        flags = [arg for t in tools for arg in ("-c", f'mcp_servers.{MCP_NAME}.tools.{t}.approval_mode="approve"')]
        return _with_flags(argv, flags), {}
    if program in PERMISSION_VARIABLES:  # OpenCode, and Kilo (its fork)
        variable = PERMISSION_VARIABLES[program]
        grants: dict[str, Any] = {}
        try:
            given = json.loads(env.get(variable) or "{}")
        except ValueError:
            given = {}
        if isinstance(given, dict):
            grants.update(given)
        grants.update({RULES[program].name(t): ALLOW for t in tools})
        return argv, {variable: json.dumps(grants, separators=(",", ":"))}
    return argv, {}


def _with_flags(argv: list[str], flags: list[str]) -> list[str]:
    """`flags` after the user's own arguments (a variadic flag never swallows a prompt),
    before a `--` that ends the options."""
    at = argv.index("--") if "--" in argv[1:] else len(argv)
    return argv[:at] + flags + argv[at:]


def _codex_has_rk(env: Mapping[str, str]) -> bool:
    """Whether Codex's config holds rk's MCP block (unreadable: no)."""
    from rk.agent.setup import codex
    from rk.agent.setup.agents import mcp_config_path
    from rk.agent.setup.plan import read_config

    try:
        return codex.mcp_registered(read_config(mcp_config_path("codex", env)))
    except (SetupError, UnicodeDecodeError):
        return False

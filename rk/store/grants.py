"""The `mcp: grants:` of the config file: what `rk mcp` callers may reach beyond
their own scope (`rk.core.channels.mcpguard.Grant`)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from rk.core.channels.mcpguard import Grant, parse_grants
from rk.store.config import config_path


def load_grants(env: Mapping[str, str] | None = None) -> tuple[list[Grant], list[str]]:
    """The grants, and one line per item that cannot be used (a bad item grants nothing;
    a config that cannot be read grants nothing and says so)."""
    env = os.environ if env is None else env
    path = config_path(env)
    if not path.exists():
        return [], []
    from ruamel.yaml.error import YAMLError

    from rk.host.yamlguard import safe_load

    try:
        data = safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, YAMLError, ValueError, RecursionError) as exc:
        return [], [f"{path}: cannot read mcp.grants: {str(exc).splitlines()[0] if str(exc) else exc}"]
    section = data.get("mcp") if isinstance(data, dict) else None
    if section is None:
        return [], []
    if not isinstance(section, dict):
        return [], [f"{path}: mcp is not a mapping; no grant is used"]
    return parse_grants(section.get("grants"), str(path))

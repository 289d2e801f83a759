"""The `mcp: grants:` of the config file: what `rk mcp` callers may reach beyond
their own scope (`rk.core.channels.mcpguard.Grant`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rk.store.config import config_section

if TYPE_CHECKING:  # the rules are imported when there are grants to read: `rk status` most often has none
    from rk.core.channels.mcpguard import Grant


def load_grants(env: Mapping[str, str] | None = None) -> tuple[list[Grant], list[str]]:
    """The grants, and one line per item that cannot be used (a bad item grants nothing;
    a config that cannot be read grants nothing and says so)."""
    section, path, problems = config_section("mcp", env)
    if problems:
        return [], problems
    if section is None:
        return [], []
    if not isinstance(section, dict):
        return [], [f"{path}: mcp is not a mapping; no grant is used"]
    from rk.core.channels.mcpguard import parse_grants

    return parse_grants(section.get("grants"), path)

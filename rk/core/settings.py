"""The limits a user may change, with their defaults and ranges, in one place.

The core takes these as parameters (the poll, the caps); `rk.store.config` reads
the config file and the environment into a `Settings`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rk.core.bounds import MAX_ENTRIES_HARD


@dataclass(frozen=True)
class Settings:
    """Limits with their defaults; each can be raised in the config file or by env."""

    max_entries: int = 50  #: entries per server (RK_MAX_ENTRIES)
    rate_per_hour: int = 30  #: counted deliveries per target per hour (RK_RATE_PER_HOUR)
    log_max_bytes: int = 128 * 1024  #: live log size that triggers a rotation (RK_LOG_MAX_BYTES)
    log_keep: int = 0  #: archives kept; 0 (the default) keeps every one (RK_LOG_KEEP)
    #: ticker period in seconds (RK_TICK_INTERVAL): the poll, the finest grain the
    #: core can observe (a backoff `min` below it counts as one poll)
    tick_interval: int = 30
    respawn_timeout: int = 90  #: seconds a respawn command may run (RK_RESPAWN_TIMEOUT)
    operator_command: str = "claude"  #: what `rk operator` launches (RK_OPERATOR_COMMAND)
    lock_wait: int = 60  #: seconds a change waits while a tick holds the server's lock (RK_LOCK_WAIT)
    mcp_max_pending: int = 20  #: entries one `rk mcp` caller may have (RK_MCP_MAX_PENDING)
    #: 1: any `rk mcp` caller may change any entry, not only its own (RK_MCP_ANY_OWNER)
    mcp_any_owner: int = 0
    #: how deep a chain of agent-made entries may grow (RK_MAX_CHAIN_DEPTH; `rk.core.schedule.lineage`)
    max_chain_depth: int = 2


#: The range each number may be set to.
MINIMUM: dict[str, int] = {
    "max_entries": 1,
    "rate_per_hour": 0,
    "log_max_bytes": 4096,
    "log_keep": 0,
    "tick_interval": 1,
    "respawn_timeout": 1,
    "lock_wait": 0,
    "mcp_max_pending": 0,
    "mcp_any_owner": 0,
    "max_chain_depth": 1,
}
MAXIMUM: dict[str, int] = {
    "max_entries": MAX_ENTRIES_HARD,
    "rate_per_hour": 3600,
    "log_max_bytes": 1 << 30,
    "log_keep": 1_000_000,
    "tick_interval": 86400,
    "respawn_timeout": 3600,
    "lock_wait": 3600,
    "mcp_max_pending": MAX_ENTRIES_HARD,
    "mcp_any_owner": 1,
    "max_chain_depth": 16,
}

"""What the ticker keeps for the status line's fleet part (`rk.core.channels.fleet_glance`
reads it): whether to keep it at all, each host's agents counted from its `agent list`,
and when each host is looked at again.

Off unless the config file says `status_line: {fleet: true}` (every `DEFAULT_EVERY`
seconds) or `fleet: SECONDS`: keeping it means an ssh look at every host on that cadence,
which nobody should get without asking.
"""

from __future__ import annotations

from collections.abc import Mapping

from rk.core.channels.fleet_glance import MARKS

#: Seconds between two looks at one host, unless the config file says.
DEFAULT_EVERY = 30
MIN_EVERY, MAX_EVERY = 5, 3600
#: Seconds at least between two looks at one host, when its mirrored journal moved sooner.
MIN_GAP = 5
#: Seconds one look may take (a view's bound, `rk.cli.fleet.VIEW_TIMEOUT`).
LOOK_TIMEOUT = 15
#: The states counted.
COUNTED = tuple(state for state, _ in MARKS)


def every_of(section: object) -> tuple[int, str]:
    """Seconds between looks (0: off) from the config file's `status_line:`, and why the
    value cannot be used ("" when it can; then it is off)."""
    if section is None:
        return 0, ""
    if not isinstance(section, Mapping):
        return 0, "status_line must be a mapping (status_line: {fleet: true})"
    value = section.get("fleet")
    if value is None or value is False:
        return 0, ""
    if value is True:
        return DEFAULT_EVERY, ""
    if type(value) is int and MIN_EVERY <= value <= MAX_EVERY:
        return value, ""
    return 0, f"status_line.fleet must be true, false or seconds from {MIN_EVERY} to {MAX_EVERY}"


def stale_after(every: int) -> int:
    """Seconds after which a host's counts are stale: two looks missed, and one look's bound."""
    return 2 * every + LOOK_TIMEOUT


def counts(rows: object) -> dict[str, int] | None:
    """Agents by state from `rk agent list --json`'s result (None when it is not a list of rows)."""
    if not isinstance(rows, list):
        return None
    out = dict.fromkeys(COUNTED, 0)
    for row in rows:
        state = row.get("state") if isinstance(row, dict) else None
        if state in out:
            out[str(state)] += 1
    return out


def due(now: float, tried: float, every: int, moved: bool) -> bool:
    """Whether a host is looked at now: its cadence is up, or its mirrored journal moved
    (a change there) and the last look is `MIN_GAP` old."""
    return now - tried >= every or (moved and now - tried >= MIN_GAP)

"""The one clock: `RK_NOW` when set, else the system clock; and the local zone.

Every command takes "now" from here, so a test or a simulation can replay a
day in a second by setting `RK_NOW` (ISO-8601 with an offset, or unix seconds).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import UTC, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rk.core.environ import ClockError, fixed_now, parse_instant

__all__ = ["ClockError", "local_zone", "now", "parse_instant"]


def now(environ: Mapping[str, str] | None = None) -> int:
    """The current instant in unix seconds, honouring RK_NOW."""
    fixed = fixed_now(os.environ if environ is None else environ)
    return int(time.time()) if fixed is None else fixed


def local_zone(environ: Mapping[str, str] | None = None) -> tzinfo:
    """The machine's IANA zone (`$TZ`, else /etc/localtime), for cron entries without `tz`.

    A fixed offset would be wrong across daylight saving, so we look for the
    zone's name; UTC when nothing can be found.
    """
    env = os.environ if environ is None else environ
    name = env.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    link = Path("/etc/localtime")
    try:
        target = str(link.resolve())
        marker = "zoneinfo/"
        if marker in target:
            return ZoneInfo(target.split(marker, 1)[1])
        with link.open("rb") as fh:
            return ZoneInfo.from_file(fh, key="localtime")
    except (OSError, ZoneInfoNotFoundError, ValueError):
        pass
    try:
        return ZoneInfo(Path("/etc/timezone").read_text().strip())
    except (OSError, ZoneInfoNotFoundError, ValueError):
        return UTC


def zone_name(zone: tzinfo) -> str:
    key = getattr(zone, "key", None)
    return key or str(zone)

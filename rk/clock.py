"""The one clock: `RK_NOW` when set, else the system clock; and the local zone.

Every command takes "now" from here, so a test or a simulation can replay a
day in a second by setting `RK_NOW` (ISO-8601 with an offset, or unix seconds).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rk.core.bounds import MAX_DIGITS, MAX_EPOCH


class ClockError(ValueError):
    """An RK_NOW value that cannot be read."""


def parse_instant(text: str) -> int:
    """Unix seconds from `1788254000`, `2026-09-01T09:00:00+02:00` or `…Z`."""
    s = text.strip()
    if not s:
        raise ClockError("empty time")
    if s.lstrip("-").isascii() and s.lstrip("-").isdigit():
        if len(s) > MAX_DIGITS or not 0 <= int(s) <= MAX_EPOCH:
            raise ClockError(f"time {s[:30]!r} is out of range (unix seconds between 0 and {MAX_EPOCH})")
        return int(s)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ClockError(f"cannot read time {text!r}: use unix seconds or ISO-8601 with an offset") from None
    if dt.tzinfo is None:
        raise ClockError(f"time {text!r} needs an offset (e.g. +02:00 or Z)")
    seconds = int(dt.timestamp())
    if not 0 <= seconds <= MAX_EPOCH:
        raise ClockError(f"time {text!r} is out of range (1970 to 9999)")
    return seconds


def now(environ: Mapping[str, str] | None = None) -> int:
    """The current instant in unix seconds, honouring RK_NOW."""
    env = os.environ if environ is None else environ
    fixed = env.get("RK_NOW", "")
    if fixed:
        try:
            return parse_instant(fixed)
        except ClockError as exc:
            raise ClockError(f"RK_NOW: {exc}") from None
    return int(time.time())


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
        return timezone.utc


def zone_name(zone: tzinfo) -> str:
    key = getattr(zone, "key", None)
    return key or str(zone)

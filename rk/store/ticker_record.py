"""What the ticker records for the others to read: its pid file (`ticker.pid`: is it
up, since when) and what its last tick did (`ticker.status`).

Here, not in `rk.engine.ticker`, so that `rk status` reads them without importing
the tick (its delivery, notifications and logging: most of what that view loaded).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from rk.host.files import read_nofollow
from rk.host.process import start_time

PID_NAME = "ticker.pid"
#: `ticker.status`: what the last tick did (`rk status` reads it).
STATUS_NAME = "ticker.status"


def process_start_time(pid: int) -> str:
    """The kernel's start time of `pid` (clock ticks since boot); "" if unknown or a zombie."""
    return start_time(pid)


@dataclass(frozen=True)
class PidRecord:
    pid: int
    start_time: str
    started_at: int

    def alive(self) -> bool:
        """Alive and the same process (start time matches, so not a reused pid)."""
        current = process_start_time(self.pid)
        if current:
            return current == self.start_time
        if Path("/proc/self/stat").exists():
            return False  # /proc works and has no live process by that pid
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not self.start_time


def read_pid(state_dir: Path) -> PidRecord | None:
    try:
        data = json.loads(read_nofollow(state_dir / PID_NAME).decode("utf-8"))
        return PidRecord(int(data["pid"]), str(data.get("start_time", "")), int(data.get("started_at", 0)))
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def read_status(state_dir: Path) -> dict[str, object] | None:
    """The last tick as the ticker recorded it (`ticker.status`), or None."""
    try:
        data = json.loads(read_nofollow(state_dir / STATUS_NAME, 64 * 1024))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None

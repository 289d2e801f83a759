"""A server's pause, `<slug>.pause`: `rk cron pause` and `rk cron resume`.

`{"since": <unix>, "until": <unix>}` (`until` 0: until resumed), written
atomically. While it lasts every entry of the server is silent as if muted
(`rk.core.schedule.due`), and a cron or `at` occurrence that comes due is dropped
with a `skipped-paused` line. A pause with an `until` lapses by itself; `resume`
ends it by writing `until` as now. The file stays after either, so the tick
after a pause that no tick saw (a laptop asleep) still drops what it covered
(`pause_span`). Being a file beside the entries, it survives restarts. A file
that cannot be read pauses the server until `resume` removes it: when in doubt,
rk stays silent rather than typing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from rk.core import bounds
from rk.host.files import TooLarge, atomic_write, read_nofollow

_LIMIT = 4096


@dataclass(frozen=True)
class Pause:
    since: int
    until: int  #: 0: until resumed
    readable: bool = True

    def active(self, now: int) -> bool:
        return self.until == 0 or now < self.until


def read_pause(path: Path) -> Pause | None:
    """The pause on file, or None when there is none (or it has lapsed on its own)."""
    try:
        data = json.loads(read_nofollow(path, _LIMIT))
    except FileNotFoundError:
        return None
    except (OSError, TooLarge, ValueError, RecursionError):
        return Pause(0, 0, readable=False)
    if not isinstance(data, dict):
        return Pause(0, 0, readable=False)
    since, until = data.get("since"), data.get("until")
    if not (isinstance(since, int) and isinstance(until, int) and _epoch(since) and _epoch(until)):
        return Pause(0, 0, readable=False)
    return Pause(since, until)


def _epoch(value: int) -> bool:
    return not isinstance(value, bool) and 0 <= value <= bounds.MAX_EPOCH


def paused_until(path: Path, now: int) -> int | None:
    """What `rk.core.schedule.due` takes: None when not paused, 0 until resumed, else the lapse instant."""
    pause = read_pause(path)
    if pause is None or not pause.active(now):
        return None
    return pause.until


def pause_span(path: Path) -> tuple[int, int] | None:
    """What `rk.core.schedule.due` takes as `paused_span`: the pause on file, `(since,
    until)`, when it has an end (lapsed or not); None for none, one until resumed, or
    one that cannot be read (those pause the server: `paused_until`)."""
    pause = read_pause(path)
    if pause is None or not pause.readable or pause.until == 0:
        return None
    return pause.since, pause.until


def end_pause(path: Path, now: int) -> bool:
    """`resume`: end the pause at `now`, keeping its span on file (`pause_span`); a file
    that cannot be read is removed. Whether a pause was in force."""
    pause = read_pause(path)
    if pause is None:
        return False
    if not pause.readable:
        clear_pause(path)
        return True
    if not pause.active(now):
        return False
    write_pause(path, pause.since, max(now, pause.since))
    return True


def write_pause(path: Path, since: int, until: int) -> None:
    atomic_write(path, (json.dumps({"since": since, "until": until}) + "\n").encode("utf-8"))


def clear_pause(path: Path) -> bool:
    """Remove the pause; whether there was one."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False

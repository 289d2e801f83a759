"""A server's signals on disk: `<slug>.signals`, one JSON line per `rk signal`
(`rk.core.schedule.world.Signal`), 0600 in the private state dir, never followed
through a symlink.

Appends take `<slug>.signals.lock`, so each id is past the last one (microseconds
of the clock, bumped when the clock has not moved on): ids only grow, even when the
file is removed or the clock steps back a little, and a fire's line naming one says
exactly which signals it consumed. The file is append-only until it passes
`MAX_BYTES`; then the append rewrites it (atomically) with its newest half, which
holds far more than a day of signals at any sane rate (`world.SIGNAL_TTL`).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from rk.core.log.wake_mark import FILE, SIGNAL
from rk.core.schedule.entry import Entry
from rk.core.schedule.world import SIGNAL_TTL, Signal, World, parse_signal, source_of
from rk.host import lock
from rk.host.files import atomic_write, read_nofollow
from rk.host.filestat import fingerprint
from rk.store.config import ServerFiles

#: Past this size an append keeps the newest half of the file.
MAX_BYTES = 256 << 10
#: How long `rk signal` waits for another sender's append.
LOCK_WAIT = 5.0


def signals_path(files: ServerFiles) -> Path:
    return files.dir / f"{files.slug}.signals"


def _lock_path(files: ServerFiles) -> Path:
    return files.dir / f"{files.slug}.signals.lock"


def read(path: Path, since: int = 0) -> list[Signal]:
    """The signals sent at or after `since`, oldest first; none when there is no file.
    A torn or malformed line is skipped."""
    try:
        data = read_nofollow(path)
    except FileNotFoundError:
        return []
    out = []
    for raw in data.split(b"\n"):
        signal = parse_signal(raw) if raw.strip() else None
        if signal is not None and signal.ts >= since:
            out.append(signal)
    return out


def _last_id(path: Path) -> int:
    """The id of the file's newest well-formed line (0: none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, min(size, 16 << 10), max(0, size - (16 << 10)))
    finally:
        os.close(fd)
    for raw in reversed(tail.split(b"\n")):
        signal = parse_signal(raw) if raw.strip() else None
        if signal is not None:
            return signal.id
    return 0


def append(files: ServerFiles, name: str, data: str, now: int) -> Signal:
    """Record one signal (its id past every earlier one) and return it; OSError or
    `lock.LockHeld` when it cannot be written."""
    path = signals_path(files)
    with lock.locked(_lock_path(files), retry_every=0.02, retry_for=LOCK_WAIT):
        signal = Signal(max(_last_id(path) + 1, time.time_ns() // 1000), now, name, data)
        line = (signal.to_json() + "\n").encode("utf-8")
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # a crash left a torn last line: do not glue onto it
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if size + len(line) > MAX_BYTES:
            _trim(path)
    return signal


def _trim(path: Path) -> None:
    """Keep the newest half of the file (whole lines)."""
    data = read_nofollow(path)
    cut = data.find(b"\n", len(data) // 2)
    atomic_write(path, data[cut + 1 :] if cut >= 0 else b"")


def listeners(entries: list[Entry], name: str) -> list[Entry]:
    """The entries that wake on signal `name`."""
    event = f"{SIGNAL}:{name}"
    return [e for e in entries if e.wake_on is not None and str(e.wake_on.event) == event]


def read_world(files: ServerFiles, entries: list[Entry], now: int) -> World | None:
    """What the server's wakes on the world read this tick: the signals any listener
    may still fire for (only when one listens) and each watched file's fingerprint;
    None when no entry wakes on the world (nothing is read). An unreadable signals
    file reads as no signal: the tick goes on."""
    waking = [(e.wake_on, s) for e in entries if e.wake_on is not None and (s := source_of(str(e.wake_on.event)))]
    if not waking:
        return None
    watched = {s.arg: fingerprint(s.arg) for _, s in waking if s.kind == FILE}
    spans = [max(SIGNAL_TTL, 2 * wake.debounce) for wake, s in waking if s.kind == SIGNAL]
    signals: list[Signal] = []
    if spans:
        with contextlib.suppress(OSError):
            signals = read(signals_path(files), now - max(spans))
    return World(signals, watched)

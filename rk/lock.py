"""File locks: the per-server tick lock, the edit lock retry, and the delivery's
per-pane and per-buffer locks; the one `flock` of rk.

A non-blocking `flock` on `<slug>.lock`: held by another process, a tick is a
quiet no-op (a manual `rk cron tick`, the ticker and an OS timer are
interchangeable invokers). The kernel drops the lock when its holder dies, so
a killed ticker never leaves it stuck.

Within one process the lock is reentrant: flock conflicts between two open
file descriptions even in the same process, so a tick that holds its server's
lock and then edits the entries file (which takes the same lock) would
otherwise wait for itself.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


class LockHeld(Exception):
    """Another process holds the lock."""


#: Locks this process holds: path → [fd, depth].
_HELD: dict[str, list[int]] = {}


def try_lock(path: Path) -> int | None:
    """Take the lock without waiting; return the fd, or None if another process holds it."""
    key = os.path.abspath(path)
    held = _HELD.get(key)
    if held is not None:
        held[1] += 1
        return held[0]
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    _HELD[key] = [fd, 1]
    return fd


def release(fd: int) -> None:
    for key, held in list(_HELD.items()):
        if held[0] == fd:
            held[1] -= 1
            if held[1] > 0:
                return
            del _HELD[key]
            break
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def holds(path: Path) -> bool:
    """Whether this process holds the lock on `path`."""
    return os.path.abspath(path) in _HELD


def acquire(
    path: Path | str, retry_every: float = 0.0, retry_for: float = 0.0, on_wait: Callable[[], None] | None = None
) -> int:
    """Take the lock, retrying every `retry_every` s for up to `retry_for` s; the fd
    to `release`, or LockHeld. `on_wait` is called once, when the first try finds it held."""
    deadline = time.monotonic() + retry_for
    waited = False
    while True:
        fd = try_lock(Path(path))
        if fd is not None:
            return fd
        if time.monotonic() >= deadline:
            raise LockHeld(f"{path} stayed locked for {retry_for:g} s")
        if not waited and on_wait is not None:
            on_wait()
        waited = True
        time.sleep(retry_every)


@contextmanager
def locked(
    path: Path, retry_every: float = 0.0, retry_for: float = 0.0, on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold the lock for the block (see `acquire`)."""
    fd = acquire(path, retry_every, retry_for, on_wait)
    try:
        yield
    finally:
        release(fd)

"""File locks: the per-server tick lock and the edit lock retry.

A non-blocking `flock` on `<slug>.lock`: held by another process, a tick is a
quiet no-op (a manual `rk cron tick`, the ticker and an OS timer are
interchangeable invokers). The kernel drops the lock when its holder dies, so
a killed ticker never leaves it stuck.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockHeld(Exception):
    """Another process holds the lock."""


def try_lock(path: Path) -> int | None:
    """Take the lock without waiting; return the fd, or None if it is held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


def release(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def locked(path: Path, retry_every: float = 0.0, retry_for: float = 0.0) -> Iterator[None]:
    """Hold the lock for the block; retry every `retry_every` s for up to `retry_for` s,
    then raise LockHeld."""
    deadline = time.monotonic() + retry_for
    while True:
        fd = try_lock(path)
        if fd is not None:
            break
        if time.monotonic() >= deadline:
            raise LockHeld(str(path))
        time.sleep(retry_every)
    try:
        yield
    finally:
        release(fd)

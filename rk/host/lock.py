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
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rk.core import environ
from rk.core.errors import RkError
from rk.host import private


class LockHeld(RkError):
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
    fd = claim(path)
    if fd is not None:
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


def claim(path: Path) -> int | None:
    """Take a claim lock without waiting, on a fresh open file description (not
    reentrant: a second claim in this same process fails too); the fd to
    `release_claim`, or None when someone holds it. A tick claims each entry it
    fires while it types with the server's lock let go (rk.engine.tick)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


def release_claim(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def claimed(path: Path) -> bool:
    """Whether a live holder (this process included) holds the claim on `path`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


# -- keyed locks for threads and processes (delivery's per-pane and per-buffer locks)

_registry_lock = threading.Lock()
_thread_locks: dict[str, threading.Lock] = {}


def lock_dir() -> str:
    """`<state dir>/locks` (0700); a private tempdir if the state dir cannot be created.
    A locks directory that is a symbolic link or not private is refused (UnsafeDir, an
    OSError): never followed, and never traded for the fallback."""
    primary = os.path.join(environ.state_dir(os.environ), "locks")
    try:
        why = private.ensure_dir(primary)
    except OSError:
        import tempfile

        fallback = os.path.join(tempfile.gettempdir(), f"rk-locks-{os.getuid()}")
        return private.private_dir(fallback)
    if why:
        raise private.UnsafeDir(why)
    return primary


class LockTimeout(RkError, TimeoutError):
    """A lock was still held by someone else when the wait ran out."""


@contextmanager
def exclusive(key: str, wait: float, poll: float) -> Iterator[None]:
    """Hold `key` against other threads (threading.Lock) and other processes
    (`flock` on `<lock dir>/<hash>.lock`, mode 0600) for the `with` body.

    The threading lock orders the threads of this process (the ticker may
    deliver from several) before they touch the disk; flock orders separate
    rk processes (`rk cron run` beside the ticker) and is dropped by the
    kernel if a holder dies, so a crash never leaves a pane locked. Waiting
    is bounded; a lock still held after `wait` raises LockTimeout.
    """
    deadline = time.monotonic() + wait
    with _registry_lock:
        tlock = _thread_locks.setdefault(key, threading.Lock())
    if not tlock.acquire(timeout=max(wait, 0.0)):
        raise LockTimeout(key)
    try:
        import hashlib  # only a writer locks: the views start without it (OpenSSL's library)

        name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".lock"
        try:
            fd = acquire(os.path.join(lock_dir(), name), poll, max(deadline - time.monotonic(), 0.0))
        except LockHeld:
            raise LockTimeout(key) from None
        try:
            yield
        finally:
            release(fd)
    finally:
        tlock.release()

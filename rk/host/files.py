"""Crash-safe file writes: temp file in the same directory, fsync, rename, fsync dir."""

from __future__ import annotations

import os
from pathlib import Path

from rk.core.errors import RkError


def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class TooLarge(RkError, ValueError):
    """A file over the size its reader accepts."""


def read_nofollow(path: Path, limit: int | None = None) -> bytes:
    """The whole file, refusing a symlink in its last component (ELOOP, an OSError)
    and, with `limit`, a file of more bytes (TooLarge), before reading any of it."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if limit is not None:
            size = os.fstat(fd).st_size
            if size > limit:
                raise TooLarge(f"{path} is {size:,} bytes; the limit is {limit:,}")
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            if limit is not None and sum(map(len, chunks)) > limit:
                raise TooLarge(f"{path} grew past {limit:,} bytes while read")
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace `path` with `data` so a reader sees the old or the new file, never a mix."""
    import tempfile  # only a writer: the views start without it (and random, shutil)

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)

"""The delivery log on disk: appends, the live segment, rotation and archives.

Appends are one `write` of whole lines with O_APPEND, then fsync, so a line is
never torn by another writer; a line torn by a crash is skipped by the reader,
and the next append starts on a fresh line so it is not glued to the wreck.

The live segment `<slug>.log` rotates into numbered archives `<slug>.log.1`
(newest) … instead of being trimmed. A rotation keeps in the live segment every
line a derivation still needs (see `rk.log.lines_to_keep`), so a tick reads only
the live segment and its cost does not grow with history, while nothing the
schedule depends on moves out of sight. `read_history` merges archives and the
live segment back into one chronological stream for `rk cron log`.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Collection, Sequence
from pathlib import Path

from rk.fsutil import atomic_write
from rk.log import LogLine, lines_to_keep, parse_line


def append_lines(path: Path, lines: Sequence[LogLine]) -> None:
    """Append `lines` in a single write and fsync (creates the file 0600)."""
    if not lines:
        return
    data = "".join(line.to_json() + "\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a crash left a torn last line; do not glue onto it
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _parse_chunk(data: bytes) -> list[LogLine]:
    out = []
    for raw in data.split(b"\n"):
        if raw:
            line = parse_line(raw)
            if line is not None:
                out.append(line)
    return out


def read_live(path: Path) -> list[LogLine]:
    """Every readable line of the live segment, in file order (absent file → [])."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return []
    return _parse_chunk(data)


_TAIL = 64


class LiveLogCache:
    """The live segment, parsed once and then read only where it grew.

    For the long-running ticker: the log only ever grows by appends or is
    replaced by a rotation (a new inode), so a tick can parse just the bytes
    appended since the last one. Any other change (same inode but shorter, or
    different first or last bytes of what was parsed) falls back to a full read.
    """

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[int, int], int, bytes, list[LogLine]]] = {}

    def read(self, path: Path) -> list[LogLine]:
        key = str(path)
        try:
            fh = open(path, "rb")
        except FileNotFoundError:
            self._files.pop(key, None)
            return []
        with fh:
            st = os.fstat(fh.fileno())
            ident = (st.st_dev, st.st_ino)
            cached = self._files.get(key)
            lines: list[LogLine]
            if cached and cached[0] == ident and cached[1] <= st.st_size and self._same_tail(fh, cached):
                _, offset, _, lines = cached
                fh.seek(offset)
                data = fh.read()
            else:
                fh.seek(0)
                offset, lines, data = 0, [], fh.read()
            end = data.rfind(b"\n") + 1  # a torn or in-progress last line waits
            lines = lines + _parse_chunk(data[:end])
            offset += end
            fh.seek(0)
            head = fh.read(min(_TAIL, offset))
            fh.seek(max(0, offset - _TAIL))
            tail = head + fh.read(min(_TAIL, offset))
        self._files[key] = (ident, offset, tail, lines)
        return list(lines)

    @staticmethod
    def _same_tail(fh, cached) -> bool:
        _, offset, marks, _ = cached
        size = min(_TAIL, offset)
        fh.seek(0)
        head = fh.read(size)
        fh.seek(max(0, offset - size))
        return head + fh.read(size) == marks


def archive_path(path: Path, n: int) -> Path:
    return path.with_name(f"{path.name}.{n}")


def archives(path: Path) -> list[Path]:
    """Existing archives, oldest first (`.N` … `.1`)."""
    found = []
    prefix = path.name + "."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    for name in names:
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            found.append((int(name[len(prefix) :]), path.parent / name))
    return [p for _, p in sorted(found, reverse=True)]


def read_history(path: Path) -> list[LogLine]:
    """Archives plus live segment, merged by `ts` (stable), oldest first."""
    streams = [read_live(p) for p in archives(path)]
    streams.append(read_live(path))
    return list(heapq.merge(*streams, key=lambda line: line.ts))


def rotate_if_needed(
    path: Path,
    now: int,
    backoff: Collection[str],
    max_bytes: int,
    keep_archives: int,
    live: Collection[str] | None = None,
) -> bool:
    """Rotate when the live segment is over `max_bytes` and a rotation frees at
    least a quarter of it. `live`: the entry ids of the file (see `lines_to_keep`).
    Returns whether it rotated. Call under the tick lock."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return False
    if size <= max_bytes:
        return False
    with open(path, "rb") as fh:
        raw_lines = [r for r in fh.read().split(b"\n") if r.strip()]
    parsed: list[LogLine] = []
    parsed_at: list[int] = []
    for i, raw in enumerate(raw_lines):
        line = parse_line(raw)
        if line is not None:
            parsed.append(line)
            parsed_at.append(i)
    kept_raw_idx = {parsed_at[j] for j in lines_to_keep(parsed, now, backoff, live)}
    kept = [raw for i, raw in enumerate(raw_lines) if i in kept_raw_idx]
    moved = [raw for i, raw in enumerate(raw_lines) if i not in kept_raw_idx]
    kept_bytes = sum(len(r) + 1 for r in kept)
    if not moved or kept_bytes > size * 3 // 4:
        return False
    existing = archives(path)
    numbers = sorted((int(p.name.rsplit(".", 1)[1]) for p in existing), reverse=True)
    for n in numbers:
        src = archive_path(path, n)
        if keep_archives and n + 1 > keep_archives:
            src.unlink(missing_ok=True)  # past the configured retention
        else:
            os.replace(src, archive_path(path, n + 1))
    atomic_write(archive_path(path, 1), b"".join(r + b"\n" for r in moved))
    atomic_write(path, b"".join(r + b"\n" for r in kept))
    return True

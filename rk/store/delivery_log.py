"""The delivery log on disk: appends, the live segment, rotation and archives.

Appends are one `write` of whole lines with O_APPEND, then fsync, so a line is
never torn by another writer; a line torn by a crash is skipped by the reader,
and the next append starts on a fresh line so it is not glued to the wreck.

The live segment `<slug>.log` rotates into numbered archives `<slug>.log.1`
(newest) … instead of being trimmed. A rotation keeps in the live segment every
line a derivation still needs (see `rk.core.log.delivery.lines_to_keep`), so a tick reads only
the live segment and its cost does not grow with history, while nothing the
schedule depends on moves out of sight. `read_history` merges archives and the
live segment back into one chronological stream; `read_newest` gives the
newest N lines reading archives newest first by their suffix only as far as needed, so
`rk cron log -n 20` costs the same over a million archived lines as over a
thousand. Every file is opened without following a symlink.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from rk.core.log.chunk import parse_chunk
from rk.core.log.delivery import LogLine, lines_to_keep, parse_line
from rk.host.files import atomic_write, read_nofollow


def append_lines(path: Path, lines: Sequence[LogLine]) -> None:
    """Append `lines` in a single write and fsync (creates the file 0600)."""
    if not lines:
        return
    data = "".join(line.to_json() + "\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
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


def _parse_chunk(data: bytes, bad: list[int] | None = None) -> list[LogLine]:
    """The lines that parse; with `bad`, how many did not is added to `bad[0]`."""
    lines, skipped = parse_chunk(data)
    if bad is not None:
        bad[0] += skipped
    return lines


def read_live(path: Path, bad: list[int] | None = None) -> list[LogLine]:
    """Every readable line of the live segment, in file order (absent file → []);
    with `bad`, the count of lines skipped as malformed is added to `bad[0]`."""
    try:
        data = read_nofollow(path)
    except FileNotFoundError:
        return []
    return _parse_chunk(data, bad)


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
        #: per file, the malformed lines skipped in what the cache holds
        self.malformed: dict[str, int] = {}

    def read(self, path: Path) -> list[LogLine]:
        key = str(path)
        try:
            fh = os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb")
        except FileNotFoundError:
            self._files.pop(key, None)
            self.malformed.pop(key, None)
            return []
        with fh:
            st = os.fstat(fh.fileno())
            ident = (st.st_dev, st.st_ino)
            cached = self._files.get(key)
            lines: list[LogLine]
            bad = [self.malformed.get(key, 0)]
            if cached and cached[0] == ident and cached[1] <= st.st_size and self._same_tail(fh, cached):
                _, offset, _, lines = cached
                fh.seek(offset)
                data = fh.read()
            else:
                fh.seek(0)
                offset, lines, data, bad = 0, [], fh.read(), [0]
            end = data.rfind(b"\n") + 1  # a torn or in-progress last line waits
            lines = lines + _parse_chunk(data[:end], bad)
            self.malformed[key] = bad[0]
            offset += end
            fh.seek(0)
            head = fh.read(min(_TAIL, offset))
            fh.seek(max(0, offset - _TAIL))
            tail = head + fh.read(min(_TAIL, offset))
        self._files[key] = (ident, offset, tail, lines)
        return list(lines)

    @staticmethod
    def _same_tail(fh: BinaryIO, cached: tuple[object, int, bytes, object]) -> bool:
        _, offset, marks, _ = cached
        size = min(_TAIL, offset)
        fh.seek(0)
        head = fh.read(size)
        fh.seek(max(0, offset - size))
        return bool(head + fh.read(size) == marks)


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
        if name.startswith(prefix) and name[len(prefix) :].isascii() and name[len(prefix) :].isdigit():
            found.append((int(name[len(prefix) :]), path.parent / name))
    return [p for _, p in sorted(found, reverse=True)]


def read_history(path: Path) -> list[LogLine]:
    """Archives plus live segment, merged by `ts` (stable), oldest first."""
    streams = [read_live(p) for p in archives(path)]
    streams.append(read_live(path))
    return list(heapq.merge(*streams, key=lambda line: line.ts))


def _newest_ts(path: Path) -> int | None:
    """The `ts` of an archive's last line (lines are appended in time order), read
    from its end; None if that line cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, min(size, 8192), max(0, size - 8192))
    finally:
        os.close(fd)
    for raw in reversed(tail.split(b"\n")):
        if raw.strip():
            line = parse_line(raw)
            return line.ts if line is not None else None
    return None


def _newest_first(path: Path) -> Iterator[Path]:
    """Archives newest first by their suffix (.1, .2, …, found one by one, no directory
    listing while they are contiguous, as rotations leave them); past a gap, the rest."""
    k = 1
    while os.path.lexists(archive_path(path, k)):
        yield archive_path(path, k)
        k += 1
    yield from [p for p in reversed(archives(path)) if int(p.name.rsplit(".", 1)[1]) > k]


def read_newest(path: Path, n: int, keep: Callable[[LogLine], bool] = lambda _line: True) -> list[LogLine]:
    """The newest `n` lines that `keep` accepts, oldest first, as `read_history(path)[-n:]`
    would give them. Archives are read newest first by their suffix; once `n` lines
    are found, the walk stops at the first archive whose last line is older than the
    n-th newest found: a rotation leaves no archive holding a line newer than the last
    line of the archive before it (`rotate_if_needed`), so nothing older can rank. Only
    names and contents count, never mtimes (a restore or a copy changes those), and the
    cost does not grow with history: the archives read, and one more archive's tail."""
    ranked = [(line.ts, 0, i, line) for i, line in enumerate(read_live(path)) if keep(line)]
    for j, archive in enumerate(_newest_first(path), start=1):
        if len(ranked) >= n:
            newest = _newest_ts(archive)
            if newest is not None and newest < heapq.nlargest(n, ranked)[-1][0]:
                break
        ranked += [(line.ts, -j, i, line) for i, line in enumerate(read_live(archive)) if keep(line)]
    return [item[3] for item in sorted(ranked)[-n:]]


def _in_time_order(raw_lines: list[bytes]) -> bytes:
    """An archive's bytes: its lines by `ts` (stable; a line that does not parse keeps
    the time of the one before it), so its last line is its newest."""
    keyed = []
    ts = -(2**63)
    for i, raw in enumerate(raw_lines):
        line = parse_line(raw)
        ts = line.ts if line is not None else ts
        keyed.append((ts, i, raw))
    return b"".join(raw + b"\n" for _, _, raw in sorted(keyed))


def rotate_if_needed(
    path: Path,
    now: int,
    backoff: Collection[str],
    max_bytes: int,
    keep_archives: int,
    live: Collection[str] | None = None,
    counted: Mapping[str, int] | None = None,
    budgeted: Collection[str] = (),
) -> bool:
    """Rotate when the live segment is over `max_bytes` and a rotation frees at
    least a quarter of it. `live`: the entry ids of the file, `counted`: what
    their caps count, `budgeted`: those with a token budget (see `lines_to_keep`).
    Returns whether it rotated. Call under the tick lock.

    Archives keep one order `read_newest` relies on, whatever their mtimes: each is
    written in time order, and no archive holds a line newer than the last line of
    the archive before it (.1's ≥ .2's ≥ …)."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return False
    if size <= max_bytes:
        return False
    raw_lines = [r for r in read_nofollow(path).split(b"\n") if r.strip()]
    parsed: list[LogLine] = []
    parsed_at: list[int] = []
    for i, raw in enumerate(raw_lines):
        line = parse_line(raw)
        if line is not None:
            parsed.append(line)
            parsed_at.append(i)
    kept_raw_idx = {parsed_at[j] for j in lines_to_keep(parsed, now, backoff, live, counted, budgeted)}
    kept = [raw for i, raw in enumerate(raw_lines) if i in kept_raw_idx]
    moved = [raw for i, raw in enumerate(raw_lines) if i not in kept_raw_idx]
    kept_bytes = sum(len(r) + 1 for r in kept)
    if not moved or kept_bytes > size * 3 // 4:
        return False
    newest = archive_path(path, 1)
    previous = _newest_ts(newest) if os.path.lexists(newest) else None
    moved_max = max((parsed[j].ts for j in range(len(parsed)) if parsed_at[j] not in kept_raw_idx), default=None)
    if previous is not None and (moved_max is None or moved_max < previous):
        # only old lines leave (or the clock went back): a new archive would end older
        # than the one before it, so they join the newest archive instead, keeping the
        # order `read_newest` stops on
        atomic_write(newest, _in_time_order([r for r in read_nofollow(newest).split(b"\n") if r.strip()] + moved))
    else:
        existing = archives(path)
        numbers = sorted((int(p.name.rsplit(".", 1)[1]) for p in existing), reverse=True)
        for n in numbers:
            src = archive_path(path, n)
            if keep_archives and n + 1 > keep_archives:
                src.unlink(missing_ok=True)  # past the configured retention
            else:
                os.replace(src, archive_path(path, n + 1))
        atomic_write(newest, _in_time_order(moved))
    atomic_write(path, b"".join(r + b"\n" for r in kept))
    return True


def mark(path: Path) -> tuple[int, int] | None:
    """Where the live segment ends now (inode, size): `follow` starts there."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size


def follow(
    path: Path, after: LogLine | None, poll: float = 0.5, start: tuple[int, int] | None = None
) -> Iterator[LogLine]:
    """Yield the lines appended to the live segment after `start` (a `mark`; the caller ends it).

    The caller takes the mark when it reads what it shows first, so a line
    appended while it prints is not lost. Across a rotation the live file is a
    new one that starts with the kept lines again: those up to `after` (the
    newest line already shown; by time, then by count within one second) are
    skipped, so nothing is shown twice.
    """
    import time

    inode, offset = start if start is not None else (mark(path) or (0, 0))
    last_ts = after.ts if after is not None else -1
    same_second = 1 if after is not None else 0
    pending = b""
    #: after a rotation: skip lines up to (ts, how many of that second), then show
    skip: tuple[int, int] | None = None
    skipped = 0
    while True:
        now = mark(path)
        if now is not None and (now[0] != inode or now[1] < offset):  # rotated (or replaced): start over
            inode, offset, pending = now[0], 0, b""
            skip, skipped = (last_ts, same_second), 0
        if now is not None and now[1] > offset:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    chunk = os.pread(fd, now[1] - offset, offset)
                finally:
                    os.close(fd)
            except OSError:
                chunk = b""
            offset += len(chunk)
            *whole, pending = (pending + chunk).split(b"\n")
            for raw in whole:
                line = parse_line(raw)
                if line is None:
                    continue
                if skip is not None:
                    if line.ts < skip[0] or (line.ts == skip[0] and skipped < skip[1]):
                        skipped += line.ts == skip[0]
                        continue
                    skip = None
                same_second = same_second + 1 if line.ts == last_ts else 1
                last_ts = line.ts
                yield line
        time.sleep(poll)

"""A server's state journal read as a feed: each line with the mark just past it.

Another host follows this machine's journal over ssh (`rk remote`, a follow
request) and keeps the mark of the last line it stored; reconnecting, it asks
from that mark and gets the next line, never one twice, never one skipped.

A mark is (file, offset). A file is named by its inode and a checksum of its
first line: an inode alone is not a name, since the filesystem gives a freed
one to the next new file (the journal rotates by renaming to `.1`, dropping the
older `.1`). After a rotation the rest of the renamed file (`.1`, when it is the
marked file) comes first, then the new one. A mark whose file is in neither
place (rotated away twice) is a gap: the feed starts at the oldest line there
is, and says so.
"""

from __future__ import annotations

import os
import zlib

from rk.core.log import states as journal
from rk.store.state_journal import journal_path

#: A file's name in a mark: (inode, checksum of its first line); (0, 0) for none.
FileId = tuple[int, int]
#: Where a feed stands: (inode, checksum, offset).
Mark = tuple[int, int, int]
Marked = tuple[dict[str, object], Mark]
#: Bytes of a first line read to name a file (a journal line is ~100).
FIRST_LINE = 512


def file_id(path: str) -> FileId:
    """The name of the file at `path` now ((0, 0) when there is none or it is empty)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0, 0
    try:
        head = os.pread(fd, FIRST_LINE, 0)
        inode = os.fstat(fd).st_ino
    finally:
        os.close(fd)
    end = head.find(b"\n")
    return (inode, zlib.crc32(head[: end + 1])) if end >= 0 else (0, 0)


class MarkedTail:
    """The whole lines appended to a server's journal after a mark, each with its own."""

    def __init__(self, directory: str, slug: str, start: Mark = (0, 0, 0)) -> None:
        self.path = journal_path(directory, slug)
        self.file: FileId = (start[0], start[1])
        self.offset = start[2]
        self.pending = b""
        #: The marked file is gone (rotated twice since): lines were lost before this feed began.
        self.gap = False
        if self.file != (0, 0) and self.file not in (file_id(self.path), file_id(self.path + ".1")):
            self.gap = True
            archive = file_id(self.path + ".1")
            self.file, self.offset = (archive, 0) if archive != (0, 0) else ((0, 0), 0)

    def poll_marked(self) -> list[Marked]:
        """The whole lines appended since the last poll, each with the mark after it."""
        live = file_id(self.path)
        out: list[Marked] = []
        if live != (0, 0) and live != self.file:
            if self.file != (0, 0) and file_id(self.path + ".1") == self.file:
                out += self._read_lines(self.path + ".1")
            self.file, self.offset, self.pending = live, 0, b""  # a torn last line of the old file is dropped
        if live != (0, 0):
            out += self._read_lines(self.path)
        return out

    def _read_lines(self, path: str) -> list[Marked]:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return []
        try:
            chunks = []
            at = self.offset
            while chunk := os.pread(fd, 1 << 20, at):
                chunks.append(chunk)
                at += len(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        buf, base = self.pending + data, self.offset - len(self.pending)
        self.offset += len(data)
        out: list[Marked] = []
        pos = 0
        while (nl := buf.find(b"\n", pos)) >= 0:
            fields = journal.parse(buf[pos:nl]) if buf[pos:nl].strip() else None
            if fields is not None:
                out.append((fields, (self.file[0], self.file[1], base + nl + 1)))
            pos = nl + 1
        self.pending = buf[pos:]
        return out


def before(directory: str, slug: str, start: Mark) -> list[dict[str, object]]:
    """The journal's lines before the mark `start` (the archive's, then the live file's
    up to it; [] when the mark names neither): the turns under way when a feed begins."""
    path = journal_path(directory, slug)
    marked = (start[0], start[1])
    if marked == (0, 0):
        return []
    if marked == file_id(path):
        return _whole_lines(path + ".1", None) + _whole_lines(path, start[2])
    if marked == file_id(path + ".1"):
        return _whole_lines(path + ".1", start[2])
    return []


def _whole_lines(path: str, upto: int | None) -> list[dict[str, object]]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        size = os.fstat(fd).st_size if upto is None else upto
        data = os.pread(fd, size, 0)
    finally:
        os.close(fd)
    fields = (journal.parse(raw) for raw in data.split(b"\n") if raw.strip())
    return [f for f in fields if f is not None]


def feed_of(directory: str, slug: str, start: Mark = (0, 0, 0)) -> MarkedTail:
    """The feed of server `slug`'s journal from `start` (none: the live journal's first line)."""
    return MarkedTail(directory, slug, start)

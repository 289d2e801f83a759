"""Another host's state journal, mirrored here line by line with the mark of each.

`<state dir>/hosts/<host>/<slug>.events` (0600, in 0700 directories, never through a
symbolic link): each line is the other host's journal line with `"at"`, the mark
just past it there. The newest whole line's mark is where following resumes,
so a line is stored once however often the link drops. A last line torn by a
crash is cut off before the next append (it comes again from the mark before it).
Past `CAP` bytes the mirror is renamed to `.1` (one archive), as the journal is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from rk.core.fleet.watch import MirrorLine, ScopeError, parse_scope
from rk.core.log import states as journal
from rk.host import private
from rk.host.files import read_nofollow

CAP = 256 * 1024
#: What the far end adds to a journal line (`rk.core.fleet.watch.MirrorLine`): who started
#: the turn, the role and name of the pane's window; each kept to `MAX_STAMP` characters.
STAMPS = ("by", "role", "window")
MAX_STAMP = 200
HOSTS_DIR = "hosts"
#: Bytes read from a mirror's end to find its newest whole line.
TAIL = 8192


def mirror_path(state_dir: str, host: str, slug: str) -> str:
    return os.path.join(state_dir, HOSTS_DIR, host, f"{slug}.events")


def _last_whole_line(path: str) -> tuple[bytes, int]:
    """The newest whole line of the file (b"" when none) and the file's length up to it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return b"", 0
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - TAIL)
        data = os.pread(fd, size - start, start)
    finally:
        os.close(fd)
    end = data.rfind(b"\n")
    if end < 0:
        return b"", start
    begin = data.rfind(b"\n", 0, end) + 1
    return data[begin:end], start + end + 1


def resume_mark(state_dir: str, host: str, slug: str) -> tuple[int, int, int]:
    """The mark after the newest line mirrored ((0, 0, 0): none yet, or unreadable)."""
    path = mirror_path(state_dir, host, slug)
    line, _ = _last_whole_line(path)
    if not line:
        line, _ = _last_whole_line(path + ".1")
    try:
        at = json.loads(line)["at"] if line else [0, 0, 0]
        return int(at[0]), int(at[1]), int(at[2])
    except (ValueError, KeyError, TypeError, IndexError):
        return 0, 0, 0


class Mirror:
    """The writer of one host's mirror of one server's journal."""

    def __init__(self, state_dir: str, host: str, slug: str) -> None:
        self.path = mirror_path(state_dir, host, slug)
        private.private_dir(os.path.dirname(os.path.dirname(self.path)))
        private.private_dir(os.path.dirname(self.path))
        self._repaired = False

    def append(self, lines: list[tuple[dict[str, object], tuple[int, int, int]]]) -> int:
        """Store the lines (each with its mark) in one write; how many were stored."""
        data = b"".join(_render(fields, at) for fields, at in lines)
        if not data:
            return 0
        if not self._repaired:
            self._cut_torn_end()
            self._repaired = True
        fd = private.open_file(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            if os.fstat(fd).st_size + len(data) > CAP:
                os.replace(self.path, self.path + ".1")
                os.close(fd)
                fd = private.open_file(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return data.count(b"\n")

    def _cut_torn_end(self) -> None:
        _, whole = _last_whole_line(self.path)
        try:
            if os.stat(self.path, follow_symlinks=False).st_size > whole:
                os.truncate(self.path, whole)
        except FileNotFoundError:
            pass


def _render(fields: dict[str, object], at: tuple[int, int, int]) -> bytes:
    line = journal.render(
        int(str(fields["ts"])),
        str(fields["pane"]),
        str(fields["to"]),
        str(fields.get("end", "")),
        str(fields.get("source", "hook")),
        str(fields.get("agent", "")),
    )
    if not line:
        return b""  # a value outside the journal's alphabet: not ours to store
    extra = "".join(f',"{k}":{json.dumps(_text(fields.get(k)))}' for k in STAMPS if fields.get(k))
    return line[:-2] + f'{extra},"at":[{int(at[0])},{int(at[1])},{int(at[2])}]}}\n'.encode()


def _text(value: object) -> str:
    """A stamp as stored: text, one line, at most `MAX_STAMP` characters."""
    return " ".join(str(value).split())[:MAX_STAMP]


def read_mirror(state_dir: str, host: str, slug: str) -> list[dict[str, object]]:
    """Every mirrored line (the archive's, then the live file's), each with its `at`."""
    out: list[dict[str, object]] = []
    path = mirror_path(state_dir, host, slug)
    for name in (path + ".1", path):
        try:
            data = read_nofollow(Path(name))
        except OSError:
            continue
        for raw in data.split(b"\n"):
            fields = journal.parse(raw) if raw.strip() else None
            if fields is not None:
                whole = json.loads(raw)
                fields["at"] = whole.get("at")
                fields.update({k: whole[k] for k in STAMPS if isinstance(whole.get(k), str)})
                out.append(fields)
    return out


def remote_lines(state_dir: str, scopes: Iterable[str]) -> dict[str, list[MirrorLine]]:
    """The mirrored lines each other-host scope reads, by `host/server` (`rk.core.fleet.watch`)."""
    out: dict[str, list[MirrorLine]] = {}
    for text in scopes:
        try:
            scope = parse_scope(text)
        except ScopeError:
            continue  # the tick's due() says why
        if scope is None or scope.source in out:
            continue
        lines = []
        for fields in read_mirror(state_dir, scope.host, scope.server):
            at = fields.get("at")
            if isinstance(at, list) and len(at) == 3:
                stamps = {k: str(fields.get(k, "")) for k in STAMPS}
                ts, pane, to = int(str(fields["ts"])), str(fields["pane"]), str(fields["to"])
                lines.append(MirrorLine(ts, pane, to, (at[0], at[1], at[2]), **stamps))
        out[scope.source] = lines
    return out

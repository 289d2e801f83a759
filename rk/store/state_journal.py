"""The state journal on disk, and the wake of waiting `rk agent await`s.

Every state write (a hook's, a screen correction's, `rk agent state`) appends one
line to `<state dir>/<slug>.events` (0600, never through a symlink) and then
sends one datagram to each socket in `<state dir>/await/`, where every waiting
`rk agent await` listens: it wakes at once instead of polling. Past
`JOURNAL_CAP` bytes the journal is renamed to `<slug>.events.1` (the one
archive, replacing the older one) under an flock, so two writers never both
rotate; `rk events -f` reads the rest of the renamed file before the new one.

The hook imports this module on every agent event: it imports only `os` at the
top; the rest (fcntl on a rotation, `_socket` for the wake) is imported where used.
"""

from __future__ import annotations

import os
from _collections_abc import Iterator, Mapping  # what collections.abc re-exports: `collections` costs the hook ~1.5 ms

from rk.core.environ import AWAIT_DIR, JOURNAL_SUFFIX, state_dir
from rk.host import private

JOURNAL_CAP = 256 * 1024  #: bytes of the live journal before it rotates
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def journal_path(directory: str, slug: str) -> str:
    return os.path.join(directory, slug + JOURNAL_SUFFIX)


def append(env: Mapping[str, str], slug: str, line: bytes, cap: int = JOURNAL_CAP) -> bool:
    """Append one rendered line to the server's journal (rotating it first when it is
    full); False when it could not be written. Never raises."""
    if not line or not slug or "/" in slug:
        return False
    try:
        directory = state_dir(env)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        path = journal_path(directory, slug)
        fd = os.open(path, _FLAGS, 0o600)
    except (OSError, ValueError):
        return False
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o170000 != 0o100000:
            return False
        size = st.st_size
        if size >= cap:
            full, fd = fd, -1
            fd = _rotate(path, full, st.st_ino)
            size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # a torn last line (a crash, a full disk): never glue onto it
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view) :]
        return True
    except OSError:
        return False
    finally:
        if fd >= 0:
            os.close(fd)


def _rotate(path: str, fd: int, inode: int) -> int:
    """Rename the full journal to `.1` unless another writer already did; an fd of
    the live journal (a new file) to write to."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.stat(path, follow_symlinks=False).st_ino == inode:
            os.replace(path, path + ".1")
    except OSError:
        pass
    finally:
        os.close(fd)  # the lock goes with it, after the rename
    return os.open(path, _FLAGS, 0o600)


def wake(env: Mapping[str, str]) -> None:
    """One datagram to every waiting await's socket; a dead one (its await was
    killed) is removed. Every failure ignored."""
    try:
        directory = os.path.join(state_dir(env), AWAIT_DIR)
        names = private.listdir(directory)  # a planted link: no datagram, no unlink, through it
    except (OSError, ValueError):
        return
    names = [n for n in names if n.endswith(".sock")]
    if not names:
        return
    try:
        import _socket
    except ImportError:  # not CPython
        import socket as _socket  # type: ignore[no-redef]
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
    except OSError:
        return
    try:
        sock.setblocking(False)
        for name in names:
            path = os.path.join(directory, name)
            try:
                sock.sendto(b"w", path)
            except ConnectionRefusedError:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            except OSError:
                pass
    finally:
        sock.close()


def record(
    env: Mapping[str, str], slug: str, ts: int, pane: str, to: str, end: str = "", source: str = "hook", agent: str = ""
) -> None:
    """Journal one state change and wake the awaits (for the shell's writers)."""
    from rk.core.log import states as journal

    append(env, slug, journal.render(ts, pane, to, end, source, agent))
    wake(env)


# -- reading ------------------------------------------------------------------


def _lines(data: bytes) -> list[dict[str, object]]:
    from rk.core.log import states as journal

    out = []
    for raw in data.split(b"\n"):
        if raw.strip():
            fields = journal.parse(raw)
            if fields is not None:
                out.append(fields)
    return out


def _read(path: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return private.read_to_end(fd)
    finally:
        os.close(fd)


def mark(path: str) -> tuple[int, int]:
    """(inode, size) of the live journal now; (0, 0) when there is none."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return 0, 0
    return st.st_ino, st.st_size


def read_all(directory: str, slug: str) -> tuple[list[dict[str, object]], tuple[int, int]]:
    """Every readable line, the archive's then the live journal's, and the live
    journal's mark as read (where a follow starts)."""
    path = journal_path(directory, slug)
    start = mark(path)
    live = _read(path)[: start[1]] if start[0] else b""
    return _lines(_read(path + ".1")) + _lines(live), start


class Tail:
    """The lines appended to the live journal after a mark, across rotations: when
    the live file is a new one, the rest of the renamed one (`.1`, if it is the file
    read so far) is read first, then the new one from its start."""

    def __init__(self, directory: str, slug: str, start: tuple[int, int]) -> None:
        self.path = journal_path(directory, slug)
        self.inode, self.offset = start
        self.pending = b""

    def _from(self, path: str, inode: int, offset: int) -> bytes:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return b""
        try:
            if os.fstat(fd).st_ino != inode:
                return b""
            chunks = []
            while chunk := os.pread(fd, 1 << 20, offset):
                chunks.append(chunk)
                offset += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def poll(self) -> list[dict[str, object]]:
        """The whole lines appended since the last poll."""
        inode, size = mark(self.path)
        data = b""
        if inode and inode != self.inode:
            if self.inode:
                data += self._from(self.path + ".1", self.inode, self.offset)
            self.inode, self.offset = inode, 0
        if inode and size > self.offset:
            chunk = self._from(self.path, inode, self.offset)
            self.offset += len(chunk)
            data += chunk
        *whole, self.pending = (self.pending + data).split(b"\n")
        return _lines(b"\n".join(whole))


def follow(directory: str, slug: str, start: tuple[int, int], poll: float = 0.2) -> Iterator[dict[str, object]]:
    """Yield journal lines as they are appended (the caller ends it)."""
    import time

    tail = Tail(directory, slug, start)
    while True:
        yield from tail.poll()
        time.sleep(poll)

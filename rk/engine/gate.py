"""The lock is not held while typing (specs/cron.md, "The tick").

What keeps a tick's decisions good while it lets the server's lock go to type:
the `Gate` (the lock itself), the `Claims` (the entries being fired, which
another tick leaves alone) and the `Snapshot` (the entries file and the pause
as decided on: a change that landed in between holds the fire).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from rk.core.schedule.entry import Entry
from rk.host import private
from rk.host.lock import acquire, claim, claimed, release, release_claim
from rk.store.config import ServerFiles, ensure_private_dir
from rk.store.entries import load_entries
from rk.store.pause import paused_until


class Gate:
    """The server's lock as a tick holds it: every decision and every commit is
    made under it, and it is let go while a fire is carried out (typed,
    respawned), so a change of the entries file never waits behind typing.
    The entries being fired stay claimed (`ServerFiles.claim`) meanwhile: another
    tick leaves them, and their journals, alone (specs/cron.md, "The tick")."""

    def __init__(self, path: Path, fd: int | None, wait: float) -> None:
        self.path, self.fd, self.wait = path, fd, wait
        self.opened = 0  #: how often the lock was let go (then the entries file may have changed)
        self.waited = 0.0  #: seconds spent taking it back

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        """Let the lock go for the block and take it back after (LockHeld if it
        stays held for `wait` s: the tick stops, leaving its journals to recovery)."""
        if self.fd is None:  # a dry run, or `rk cron run` (which holds its lock throughout)
            yield
            return
        release(self.fd)
        self.fd = None
        self.opened += 1
        try:
            yield
        finally:
            started = time.monotonic()
            self.fd = acquire(self.path, 0.01, self.wait)
            self.waited += time.monotonic() - started

    def close(self) -> None:
        if self.fd is not None:
            release(self.fd)
            self.fd = None


class Claims:
    """The entries this tick is firing, each claimed with a lock file
    (`<slug>.claims/<id>.lock`) that the kernel drops if the tick dies. Taken
    and tested only under the server's lock; held until the tick has logged
    their outcomes and written the cursor."""

    def __init__(self, files: ServerFiles, dry_run: bool) -> None:
        self.files, self.dry_run = files, dry_run
        self.mine: dict[str, int] = {}

    def busy(self) -> set[str]:
        """Entries another live tick holds; stale claim files are removed."""
        try:
            names = private.listdir(self.files.claims)
        except OSError:
            return set()
        out = set()
        for name in names:
            path = self.files.claims / name
            if name.endswith(".lock") and claimed(path):
                out.add(name[: -len(".lock")])
            elif not self.dry_run:
                with contextlib.suppress(OSError):
                    path.unlink()
        return out

    def take(self, entry_id: str) -> bool:
        if self.dry_run or entry_id in self.mine:
            return True
        ensure_private_dir(self.files.claims)
        fd = claim(self.files.claim(entry_id))
        if fd is None:
            return False
        self.mine[entry_id] = fd
        return True

    def release(self) -> None:
        for fd in self.mine.values():
            with contextlib.suppress(OSError):
                release_claim(fd)
        self.mine.clear()


def same_entry(now: Entry | None, then: Entry) -> bool:
    """The entry unchanged (the server identity a tick learns aside)."""
    if now is None:
        return False
    return replace(now, target=replace(now.target, server=then.target.server)) == then


#: A file's inode, size and modification time: equal stamps, the same content.
Stamp = tuple[int, int, int] | tuple[()]


@dataclass
class Snapshot:
    """The entries file and the pause as the decisions saw them, to tell whether
    a change landed while the server's lock was let go."""

    files: ServerFiles
    now: int
    paused: int | None
    stamp: Stamp = ()

    @classmethod
    def of(cls, files: ServerFiles, now: int, paused: int | None) -> Snapshot:
        return cls(files, now, paused, _stamp(files.entries))

    def changed(self, entry: Entry, gate: Gate | None = None) -> str:
        """Why the fire of `entry` no longer stands ("" when it does): the entry
        removed, edited or muted, or the server paused, since the decision."""
        if gate is not None and not gate.opened:
            return ""  # the lock has been held since the decision: nothing changed
        if paused_until(self.files.pause, self.now) and not self.paused:
            return "server paused since the decision"
        if _stamp(self.files.entries) == self.stamp:
            return ""
        current = next((e for e in load_entries(self.files.entries).entries if e.id == entry.id), None)
        if current is None:
            return "entry removed since the decision"
        if current.is_muted(self.now) and not entry.is_muted(self.now):
            return "entry muted since the decision"
        return "" if same_entry(current, entry) else "entry edited since the decision"


def _stamp(path: Path) -> Stamp:
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns)

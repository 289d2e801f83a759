"""Claude Code's live session registry, read for one pane: `<config home>/sessions/<pid>.json`.

Claude Code writes one file per running session, named by the pid of the `claude`
process (the pane's own process when it was exec'd, else a descendant of it), and
rewrites its status block on every change of its screen (`rk.core.pane.registry`
says what a status implies). The files are undocumented, written in place (a read
may see half of one) and left behind by a crash, so a file is that pane's record
only when every check passes; any failure is "no record":

* the name is `<digits>.json`, a regular file of ours, not a symlink (nor is the
  directory), and the JSON parses (a torn read is retried a few times, ms apart);
* the pid is alive and its start time (`/proc/<pid>/stat` field 22) is the record's
  `procStart`, so a reused pid is not taken for the session;
* the pid is the pane's process or a descendant of it (the outermost such session
  when there are several), and a `tmux` field, when present, names this pane;
* an interactive session with a status.

Linux only: elsewhere the start time cannot be checked, and nothing is read.

The config home is `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`, as Claude Code itself
resolves it, read from rk's own environment (the pane's is not known here).

Cheap for a caller that asks often (a watcher, each tick): the pane's file is
remembered, re-read only when its inode, mtime or size changed, and otherwise
costs one `lstat` and one read of `/proc/<pid>/stat`; a rescan skips files already
found not to be the pane's, unchanged since.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rk.core.environ import home as home_of
from rk.core.pane.facts import PaneFact
from rk.core.pane.registry import Record, Verdict, names_pane, parse_record, verdict
from rk.host.process import ancestors, start_time

#: Only these names are session records (beside them: `<pid>.<hex>.key`, legacy `pid-<n>.json`).
RECORD_NAME = re.compile(r"^([1-9][0-9]{0,9})\.json$")
#: A record is a few hundred bytes; a larger file is not one.
MAX_RECORD = 65536
#: A file that does not parse is read again this many times, this far apart (Claude
#: rewrites it in place, so a read may catch it half written).
TORN_RETRIES = 3
TORN_DELAY = 0.005
#: At most this many names of the directory are looked at in one scan.
MAX_NAMES = 4096
#: A file's mtime moves in coarse steps (a few ms), and Claude rewrites it in place with
#: a status of the same length (`busy`, `idle`): a record read this soon after its mtime
#: may have been rewritten since with the same stamp, so it is read again next time.
COARSE_MTIME_NS = 100_000_000
#: The `/proc/<pid>/stat` field that holds the start time (1-based, as proc(5) counts).

Stamp = tuple[int, int, int]


def config_home(env: Mapping[str, str]) -> str:
    """Claude Code's config home: `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`."""
    return env.get("CLAUDE_CONFIG_DIR") or os.path.join(home_of(env), ".claude")


def proc_start(pid: int, proc_root: str = "/proc") -> str | None:
    """The start time of a live `pid` (`rk.host.process.start_time`); None when it is
    gone, a zombie, or unreadable."""
    return start_time(pid, proc_root) or None


def tree_depth(pid: int, pane_pid: int, proc_root: str = "/proc") -> int | None:
    """How far below the pane's process `pid` is (0: the pane's process itself), or
    None when it is not in the pane's tree."""
    if pane_pid <= 1:
        return None
    for depth, proc in enumerate(ancestors(pid, proc_root)):
        if proc.pid == pane_pid:
            return depth
    return None


@dataclass(frozen=True)
class _Known:
    """A file found to be a pane's record, as it was when checked."""

    name: str
    stamp: Stamp
    record: Record
    read_at: int  #: when it was read (ns, the wall clock)

    def holds(self, stamp: Stamp | None) -> bool:
        """Whether the file is surely as it was read: the same stamp, read well after its mtime."""
        return stamp == self.stamp and self.read_at - self.stamp[1] > COARSE_MTIME_NS


class Sessions:
    """The registry reader, with what it remembers between calls (one per process)."""

    def __init__(
        self, proc_root: str = "/proc", sleep: Callable[[float], None] = time.sleep, uid: int | None = None
    ) -> None:
        self.proc_root = proc_root
        self.sleep = sleep
        self.uid = os.getuid() if uid is None else uid  #: whose files count (Claude's are the user's own)
        self._known: dict[tuple[str, str, int], _Known] = {}
        self._rejected: dict[tuple[str, str, int], dict[str, Stamp]] = {}

    def status_for(self, pane_pid: int, pane_id: str, home: str) -> Record | None:
        """The session record of the Claude running in pane `pane_id` (whose process is
        `pane_pid`) under config home `home`, or None (see the module docstring)."""
        if pane_pid <= 1 or not pane_id or not os.path.exists(f"{self.proc_root}/self/stat"):
            return None
        key = (home, pane_id, pane_pid)
        try:
            fd = os.open(os.path.join(home, "sessions"), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            self._forget(key)
            return None
        try:
            return self._find(fd, key)
        finally:
            os.close(fd)

    def _forget(self, key: tuple[str, str, int]) -> None:
        self._known.pop(key, None)
        self._rejected.pop(key, None)

    def _find(self, fd: int, key: tuple[str, str, int]) -> Record | None:
        known = self._known.get(key)
        if known is not None:
            stamp = _stamp(fd, known.name, self.uid)
            if known.holds(stamp):
                if proc_start(known.record.pid, self.proc_root) == known.record.proc_start:
                    return known.record
            elif stamp is not None:
                read_at = time.time_ns()
                record = self._check(fd, known.name, key)
                if record is not None:
                    self._known[key] = _Known(known.name, stamp, record, read_at)
                    return record
            del self._known[key]
        return self._scan(fd, key)

    def _scan(self, fd: int, key: tuple[str, str, int]) -> Record | None:
        try:
            names = [n for n in os.listdir(fd)[:MAX_NAMES] if RECORD_NAME.match(n)]
        except OSError:
            return None
        rejected = {n: s for n, s in self._rejected.get(key, {}).items() if n in names}
        found: list[tuple[int, _Known]] = []
        for name in names:
            stamp = _stamp(fd, name, self.uid)
            if stamp is None or rejected.get(name) == stamp:
                continue
            read_at = time.time_ns()
            record = self._check(fd, name, key)
            depth = None if record is None else tree_depth(record.pid, key[2], self.proc_root)
            if record is None or depth is None:
                if read_at - stamp[1] > COARSE_MTIME_NS:
                    rejected[name] = stamp  # surely as read: not read again until it changes
                continue
            found.append((depth, _Known(name, stamp, record, read_at)))
        self._rejected[key] = rejected
        found.sort(key=lambda pair: pair[0])
        if not found or (len(found) > 1 and found[0][0] == found[1][0]):
            return None  # none, or two at the same depth: which is the pane's is not known
        self._known[key] = found[0][1]
        return found[0][1].record

    def _check(self, fd: int, name: str, key: tuple[str, str, int]) -> Record | None:
        """The record in `name` if it passes every check but the tree's (the caller's)."""
        pid = int(name.partition(".")[0])
        started = proc_start(pid, self.proc_root)
        if started is None:
            return None  # gone (a crash leaves its file): not even read
        doc = self._load(fd, name)
        record = None if doc is None else parse_record(doc, pid)
        if record is None or not names_pane(record.tmux, key[1]):
            return None
        if not record.proc_start or started != record.proc_start:
            return None  # its pid reused by another process
        return record

    def _load(self, fd: int, name: str) -> object | None:
        for attempt in range(TORN_RETRIES + 1):
            raw = _read(fd, name)
            if raw is None:
                return None
            try:
                doc: object = json.loads(raw)
                return doc
            except (ValueError, RecursionError):  # half written, or not JSON rk can hold
                if attempt < TORN_RETRIES:
                    self.sleep(TORN_DELAY)
        return None


def _stamp(fd: int, name: str, uid: int) -> Stamp | None:
    """A regular file of ours (not a symlink): its inode, mtime and size; else None."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_size > MAX_RECORD:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _read(fd: int, name: str) -> bytes | None:
    try:
        file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return None
    try:
        return os.read(file, MAX_RECORD + 1)
    except OSError:
        return None
    finally:
        os.close(file)


_READER = Sessions()


def status_for(pane_pid: int, pane_id: str, home: str) -> Record | None:
    """The Claude session record of pane `pane_id` (process `pane_pid`) under Claude's
    config home `home` (`config_home`), or None; remembered between calls in this process."""
    return _READER.status_for(pane_pid, pane_id, home)


def verdict_for(pane: PaneFact, env: Mapping[str, str], reader: Sessions | None = None) -> Verdict | None:
    """What Claude's registry implies for `pane` now (`rk.core.pane.registry.verdict`),
    or None: no valid record, or nothing newer than the state rk holds."""
    found = (reader or _READER).status_for(pane.pane_pid, pane.pane_id, config_home(env))
    return verdict(found, pane.state, pane.epoch)

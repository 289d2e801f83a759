"""Reading the agents' session records for the tokens rk's deliveries cost.

Where a pane's record is: the hook writes the payload's `transcript_path` on
the pane (`@rk_pane_transcript`; Claude Code and Codex both send it); for a
Codex pane without it, the rollout named by its session id
(`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<id>.jsonl`). Reading is bounded
(at most `MAX_READ` bytes from the end on first sight, `CHUNK` bytes at a time,
and a line longer than `MAX_LINE` skipped as it streams past: a record that grows
without a newline costs no memory), tolerant (a torn or malformed line is
skipped; a partial last line waits for its end) and cached
by offset (`Transcripts`: the ticker reads only what was appended since its
last tick). Parsing and attribution are pure (`rk.core.cost.usage`).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Protocol

from rk.core.cost import caps, usage
from rk.core.cost.budget import Spent
from rk.core.cost.usage import Attributed, Delivery, Record, Turn
from rk.core.environ import SESSION_OPTION, TRANSCRIPT_OPTION
from rk.core.log.delivery import LogLine, Status, status_of
from rk.core.schedule.due import entry_zone
from rk.core.schedule.entry import Entry

#: Bytes of a record read at most on first sight (its end: the newest turns).
MAX_READ = 32 << 20
#: Bytes read per call.
CHUNK = 1 << 20
#: Bytes of the longest line read: a longer one (a record that grows without a newline,
#: an inlined image) is skipped as it streams past, never held whole.
MAX_LINE = 8 << 20


@dataclass
class _File:
    ident: tuple[int, int]
    offset: int
    raw: list[Record] = field(default_factory=list)
    partial: list[bytes] = field(default_factory=list)  #: the start of a line still being written
    held: int = 0  #: bytes in `partial`
    skipping: bool = False  #: inside a line that is skipped to its end (too long, or cut by a tail read)
    skipped: int = 0  #: lines skipped for their length


class Transcripts:
    """Session records by path, each read from where the last read stopped."""

    def __init__(self, max_read: int = MAX_READ, max_line: int = MAX_LINE) -> None:
        self.max_read = max_read
        self.max_line = max_line
        self._files: dict[tuple[str, str], _File] = {}

    def records(self, provider: str, path: str) -> tuple[list[Record] | None, str]:
        """The file's records (settled), or None and why."""
        if provider not in usage.PROVIDERS:
            return None, f"{provider or 'this agent'} records no token usage rk can read"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            self._files.pop((provider, path), None)
            return None, f"session record {path}: {exc.strerror or exc}"
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None, f"session record {path} is not a regular file"
            key = (provider, path)
            cached = self._files.get(key)
            ident = (st.st_dev, st.st_ino)
            if cached is None or cached.ident != ident or st.st_size < cached.offset:
                start = max(0, st.st_size - self.max_read)
                cached = _File(ident, start, skipping=start > 0)  # a tail read's first line starts mid-line
                self._files[key] = cached
            self._read(fd, provider, cached, st.st_size)
        except OSError as exc:
            return None, f"session record {path}: {exc.strerror or exc}"
        finally:
            os.close(fd)
        return usage.settle(provider, cached.raw), ""

    def skipped(self, provider: str, path: str) -> int:
        """Lines of the record skipped so far for being longer than `max_line`."""
        cached = self._files.get((provider, path))
        return cached.skipped if cached is not None else 0

    def _read(self, fd: int, provider: str, cached: _File, size: int) -> None:
        """Whole lines from `cached.offset` to `size`, a chunk at a time: at most
        `max_line` bytes of one line are ever held."""
        os.lseek(fd, cached.offset, os.SEEK_SET)
        while cached.offset < size:
            chunk = os.read(fd, min(CHUNK, size - cached.offset))
            if not chunk:
                break
            cached.offset += len(chunk)
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                if not cached.skipping:
                    line = b"".join((*cached.partial, chunk[start:end])) if cached.partial else chunk[start:end]
                    if len(line) <= self.max_line:
                        cached.raw.extend(_decode(provider, line))
                    else:
                        cached.skipped += 1
                cached.partial, cached.held, cached.skipping = [], 0, False
                start = end + 1
            rest = chunk[start:]
            if cached.skipping or not rest:
                continue
            if cached.held + len(rest) > self.max_line:  # too long to hold: skipped to its end
                cached.partial, cached.held, cached.skipping = [], 0, True
                cached.skipped += 1
            else:
                cached.partial.append(rest)
                cached.held += len(rest)


def _decode(provider: str, line: bytes) -> list[Record]:
    if not line.strip():
        return []
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return []
    return usage.line_records(provider, obj)


def codex_rollout(session_id: str, environ: Mapping[str, str]) -> str:
    """The rollout file of a Codex session ("" if none is found)."""
    if not session_id or "/" in session_id or "*" in session_id:
        return ""
    home = environ.get("CODEX_HOME") or os.path.join(environ.get("HOME", os.path.expanduser("~")), ".codex")
    found = sorted(Path(home, "sessions").glob(f"*/*/*/rollout-*-{session_id}.jsonl"))
    return str(found[-1]) if found else ""


class PaneReader(Protocol):
    """What this module asks of a tmux server (`rk.tmux.server.Server`, one layer up):
    one pane's formats, expanded."""

    def display(self, pane: str, fmt: str) -> str: ...


def locate(server: PaneReader, pane: str, environ: Mapping[str, str]) -> tuple[str, str, str]:
    """(provider, path, why) of a pane's session record; path "" when not known."""
    try:
        text = server.display(pane, "#{" + SESSION_OPTION + "}\t#{" + TRANSCRIPT_OPTION + "}")
    except Exception as exc:  # a gone pane or server: unknown, never a crash
        return "", "", f"pane {pane}: {str(exc).splitlines()[0] if str(exc) else 'gone'}"
    session, _, path = text.rstrip("\n").partition("\t")
    provider, _, session_id = session.partition(":")
    if not provider:
        return "", "", f"pane {pane} carries no agent session (rk's hooks not installed, or a CLI without them)"
    if provider not in usage.PROVIDERS:
        return provider, "", f"{provider} records no token usage rk can read"
    if not path and provider == "codex":
        path = codex_rollout(session_id, environ)
    if not path:
        return provider, "", f"pane {pane} names no session record (its hook has not run since rk learned to ask)"
    return provider, path, ""


def delivered(lines: Sequence[LogLine], since: int) -> list[LogLine]:
    """The `delivered` lines from `since` on, oldest first."""
    return [line for line in lines if line.ts >= since and status_of(line.outcome) == Status.DELIVERED and line.target]


def attribute_lines(
    server: PaneReader,
    lines: Sequence[LogLine],
    entries: Mapping[str, Entry],
    environ: Mapping[str, str],
    cache: Transcripts,
    context: Sequence[LogLine] = (),
) -> list[Attributed]:
    """Each of `lines` (delivered lines of known entries) with its turn from its pane's
    record. `context` are the other delivered lines to those panes (they bound a turn)."""
    by_pane: dict[str, list[LogLine]] = {}
    for line in lines:
        by_pane.setdefault(line.target, []).append(line)
    out: list[Attributed] = []
    for pane, own in by_pane.items():
        provider, path, why = locate(server, pane, environ)
        record_turns: list[Turn] | None = None
        if path:
            records, why = cache.records(provider, path)
            record_turns = usage.turns(records) if records is not None else None
        if record_turns is None:
            out.extend(Attributed(line.entry, line.ts, None, why) for line in own)
            continue
        mine = {(line.entry, line.ts) for line in own}
        around = sorted(
            {(line.entry, line.ts) for line in (*own, *context) if line.target == pane and line.entry in entries},
            key=lambda k: k[1],
        )
        found = usage.attribute(record_turns, [Delivery(e, ts, entries[e].payload) for e, ts in around])
        for (entry_id, ts), turn in zip(around, found, strict=True):
            if (entry_id, ts) in mine:
                out.append(Attributed(entry_id, ts, turn, "" if turn else "its prompt is not in the session record"))
    return sorted(out, key=lambda a: a.ts)


def spent_today(
    server: PaneReader,
    entries: Sequence[Entry],
    lines: Sequence[LogLine],
    now: int,
    zone: tzinfo,
    environ: Mapping[str, str],
    cache: Transcripts | None = None,
) -> dict[str, Spent]:
    """For each entry with a budget: its tokens so far on its current local day (in
    its zone, `entry_zone`, the local one being `zone`). `cache`: the ticker's, which
    keeps the records read so far; a one-off command reads afresh."""
    out: dict[str, Spent] = {}
    budgeted = [e for e in entries if e.budget is not None]
    if not budgeted:
        return out
    cache = cache if cache is not None else Transcripts()
    by_id = {e.id: e for e in entries}
    for entry in budgeted:
        start, _ = caps.day_bounds(now, entry_zone(entry, zone))
        today = [line for line in delivered(lines, start) if line.entry == entry.id]
        if not today:
            out[entry.id] = Spent(0)
            continue
        context = [line for line in delivered(lines, start - 86400) if line.entry in by_id]
        with contextlib.suppress(Exception):
            rows = attribute_lines(server, today, by_id, environ, cache, context)
            out[entry.id] = usage.day_spent(
                [r.turn.tokens if r.turn else None for r in rows], next((r.why for r in rows if r.why), "")
            )
            continue
        out[entry.id] = Spent(None, len(today), "the session record could not be read")
    return out

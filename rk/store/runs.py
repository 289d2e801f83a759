"""What `rk cron runs` reads besides the log: each delivery's turn facts from the
agent's session record (`rk.store.transcripts` for the tokens, and the reply),
and the state journal (`rk.store.pane_history`). The join is pure
(`rk.core.log.runs`).

The record is read as `rk cron usage` reads it: bounded (its last `MAX_READ`
bytes, a line over `MAX_LINE` skipped), never through a symlink, a torn or
foreign line skipped.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence

from rk.core.cost.replies import Said, reply_to, said
from rk.core.cost.usage import Price
from rk.core.log.delivery import LogLine
from rk.core.log.runs import Facts
from rk.core.schedule.entry import Entry
from rk.store.transcripts import MAX_LINE, MAX_READ, PaneReader, Transcripts, attribute_lines, locate


def _tail(path: str, most: int = MAX_READ) -> list[bytes]:
    """The whole lines of the file's last `most` bytes (a first line cut by the tail read dropped)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return []
        start = max(0, st.st_size - most)
        os.lseek(fd, start, os.SEEK_SET)
        chunks = []
        left = st.st_size - start
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    lines = b"".join(chunks).split(b"\n")
    return lines[1 if start else 0 : -1]  # the last: a partial line still being written (or "")


def record_said(provider: str, path: str) -> list[Said]:
    """The prompts and replies of a session record; [] when it cannot be read."""
    objects: list[object] = []
    try:
        lines = _tail(path)
    except OSError:
        return []
    for raw in lines:
        if not raw.strip() or len(raw) > MAX_LINE:
            continue
        try:
            objects.append(json.loads(raw))
        except (ValueError, RecursionError):
            continue
    return said(provider, objects)


def run_facts(
    server: PaneReader,
    wanted: Sequence[LogLine],
    entries: Mapping[str, Entry],
    environ: Mapping[str, str],
    prices: Mapping[str, Price],
    context: Sequence[LogLine] = (),
) -> dict[tuple[str, int], Facts]:
    """Each delivered line of `wanted` (of entries still in the file) → what its pane's
    session record says of its turn; `context`: the other deliveries that bound turns."""
    known = [line for line in wanted if line.entry in entries]
    rows = attribute_lines(server, known, entries, environ, Transcripts(), context)
    pane_of = {(line.entry, line.ts): line.target for line in known}
    spoken: dict[str, list[Said]] = {}
    out: dict[tuple[str, int], Facts] = {}
    for row in rows:
        if row.turn is None:
            out[(row.entry, row.ts)] = Facts(why=row.why)
            continue
        pane = pane_of[(row.entry, row.ts)]
        if pane not in spoken:
            provider, path, _ = locate(server, pane, environ)
            spoken[pane] = record_said(provider, path) if path else []
        cost = row.turn.cost(prices) if prices else None
        out[(row.entry, row.ts)] = Facts(row.turn.tokens, cost, reply_to(spoken[pane], row.turn.prompt.ts))
    for line in wanted:
        if line.entry not in entries:
            out[(line.entry, line.ts)] = Facts(why="the entry is gone: its prompt cannot be matched in the record")
    return out

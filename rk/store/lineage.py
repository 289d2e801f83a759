"""`<state dir>/<slug>.lineage`: one line per entry an agent made, written as it is made.

An agent-made entry's parent may leave the file (a one-shot retires when it
delivers, a human removes it), and with it the chain above it; the chain's
depth must not shrink for that (`rk.core.schedule.lineage`), so each child's
parent and the least interval it was made under are kept here, apart from the
entries file a human edits. Append-only JSON lines, private (0600, never
through a link); the newest line of an id wins (ids are reused once free).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rk.core.schedule.lineage import Record
from rk.host.private import append_line, open_file

#: The newest bytes of the file that are read (about 20,000 records).
READ_MOST = 1 << 20


def lineage_path(directory: Path, slug: str) -> Path:
    return directory / f"{slug}.lineage"


def append(directory: Path, slug: str, entry_id: str, record: Record) -> None:
    """Keep `entry_id`'s record (OSError, UnsafeDir when it cannot: then the entry is not made)."""
    line = json.dumps({"id": entry_id, "parent": record.parent, "floor": record.floor}, separators=(",", ":"))
    append_line(directory, lineage_path(directory, slug).name, line)


def read(directory: Path, slug: str) -> dict[str, Record]:
    """Each id's newest record ({} without a file); a line that is not one of ours is skipped.
    OSError when the file is there and cannot be read (the caller refuses: a chain it cannot
    follow is not called short)."""
    try:
        fd = open_file(lineage_path(directory, slug), os.O_RDONLY)
    except FileNotFoundError:
        return {}
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(0, size - READ_MOST))
        data = f.read(READ_MOST)
    out: dict[str, Record] = {}
    for raw in data.splitlines():
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        entry_id, parent, floor = value.get("id"), value.get("parent"), value.get("floor")
        if isinstance(entry_id, str) and isinstance(parent, str) and type(floor) is int:
            out[entry_id] = Record(parent, floor)
    return out

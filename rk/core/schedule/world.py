"""Wakes on the world: `--wake-on signal:NAME` (an `rk signal NAME` arrived) and
`--wake-on file:PATH` (a file appeared or changed).

Both are decided purely from the entries, the log, what the ticker read of the
world (the server's signal lines, each watched file's fingerprint) and now:

* A signal entry fires for the signals of its name newer than the one its newest
  marked line consumed (`rk.core.log.wake_mark`: the fire's line names the
  signal's id, whatever its outcome), sent since the entry was created and at
  most `SIGNAL_TTL` ago (or twice the debounce, when longer). A burst coalesces:
  within the debounce from the entry's newest own line the edge is held, then one
  fire names the newest signal, which consumes every older one. The log, not the
  droppable cursor, says what was consumed: a restart loses and doubles nothing.
* A file entry keeps the file's fingerprint (device, inode, size, mtime) in the
  wake cursor, as an agent-state-change entry keeps the server's: the first look
  stores it (no fire), a change to a present file fires (debounced the same way),
  a file that vanishes only updates the observation. The fire's line names the
  fingerprint it fired for, so a crash before the cursor is written does not fire
  twice for the same state of the file.

`{signal}` is the signal's name (a file wake: the path) and `{signal_data}` its
`--data` (a file wake: `appeared` or `changed`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from rk.core import bounds
from rk.core.log.delivery import LogLine
from rk.core.log.wake_mark import FILE, SIGNAL, mark_of
from rk.core.schedule.sources import NAME
from rk.core.schedule.sources import Source as Source
from rk.core.schedule.sources import check_event as check_event  # re-exported: the callers' one door
from rk.core.schedule.sources import check_name as check_name
from rk.core.schedule.sources import check_path as check_path
from rk.core.schedule.sources import clean_data as clean_data
from rk.core.schedule.sources import event_flag as event_flag
from rk.core.schedule.sources import source_of as source_of
from rk.core.schedule.wake import Observation, WakeVerdict

#: A signal waits this long at most for its listeners (unless twice their debounce is
#: longer): an entry muted for a week does not wake for last week's CI run.
SIGNAL_TTL = 86400
#: What a watched file is when it is not there (or cannot be looked at).
ABSENT = "absent"
APPEARED, CHANGED = "appeared", "changed"


@dataclass(frozen=True)
class Signal:
    """One `rk signal`: its id (increasing on a server: microseconds, bumped past the
    last id), when, its name and its data."""

    id: int
    ts: int
    name: str
    data: str = ""

    def to_json(self) -> str:
        return json.dumps({"id": self.id, "ts": self.ts, "name": self.name, "data": self.data}, ensure_ascii=False)

    @property
    def mark(self) -> str:
        return f"{SIGNAL} {self.name}#{self.id}"


def parse_signal(text: str | bytes) -> Signal | None:
    """One signal line, or None for a torn or malformed one (never raises)."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    sid, ts, name, data = obj.get("id"), obj.get("ts"), obj.get("name"), obj.get("data", "")
    if not (isinstance(sid, int) and isinstance(ts, int) and isinstance(name, str) and isinstance(data, str)):
        return None
    if isinstance(sid, bool) or isinstance(ts, bool) or not NAME.fullmatch(name) or not 0 <= ts <= bounds.MAX_EPOCH:
        return None
    return Signal(sid, ts, name, data[: bounds.MAX_SIGNAL_DATA])


@dataclass(frozen=True, eq=False)
class World:
    """What the ticker read of the world: the server's recent signals (oldest first)
    and each watched file's fingerprint (`ABSENT` when it is not there)."""

    signals: Sequence[Signal] = ()
    files: Mapping[str, str] = field(default_factory=dict)


class FireFields(TypedDict):
    signal: str
    signal_data: str
    mark: str


@dataclass(frozen=True, eq=False)
class WorldEdge:
    """One entry's wake on the world: the verdict, the observation to store (a file;
    None: keep none), and what a fire types and marks its line with."""

    verdict: WakeVerdict
    observation: Observation | None = None
    signal: str = ""
    data: str = ""
    mark: str = ""

    @property
    def fire(self) -> FireFields:
        """A fire's fields (`rk.core.schedule.due.Fire`): what it types, what its line names."""
        return FireFields(signal=self.signal, signal_data=self.data, mark=self.mark)


def consumed_signal(own: Sequence[LogLine]) -> int:
    """The id of the newest signal the entry's lines consumed (0: none). Ids grow across
    names on a server, so after an edit to another name, older signals stay spent."""
    for line in reversed(own):
        sid = mark_of(line.outcome, SIGNAL).rpartition("#")[2]
        if sid.isdigit():
            return int(sid)
    return 0


def pending_signals(signals: Sequence[Signal], name: str, after: int, since: int) -> list[Signal]:
    """The signals of `name` after id `after`, sent at or after `since`, oldest first."""
    return [s for s in signals if s.name == name and s.id > after and s.ts >= since]


def held(newest_own_ts: int | None, debounce: int, now: int) -> bool:
    """Within the debounce from the entry's newest own line."""
    return newest_own_ts is not None and now - newest_own_ts < debounce


def signal_edge(
    name: str, signals: Sequence[Signal], own: Sequence[LogLine], created_at: int, debounce: int, now: int
) -> WorldEdge:
    """A `signal:NAME` entry's edge: fire for the newest pending signal, or hold it."""
    since = max(created_at, now - max(SIGNAL_TTL, 2 * debounce))
    pending = pending_signals(signals, name, consumed_signal(own), since)
    if not pending:
        return WorldEdge(WakeVerdict.UNCHANGED)
    if held(own[-1].ts if own else None, debounce, now):
        return WorldEdge(WakeVerdict.DEBOUNCED)
    newest = pending[-1]
    return WorldEdge(WakeVerdict.FIRE, signal=name, data=newest.data, mark=newest.mark)


def consumed_file(own: Sequence[LogLine]) -> str:
    """The fingerprint the entry's newest file-marked line fired for ("": none)."""
    for line in reversed(own):
        value = mark_of(line.outcome, FILE)
        if value:
            return value
    return ""


def file_edge(
    path: str, previous: Observation | None, current: str, own: Sequence[LogLine], debounce: int, now: int
) -> WorldEdge:
    """A `file:PATH` entry's edge: a present file whose fingerprint changed fires."""
    observed = Observation(fingerprint=current, observed_at=now)
    if previous is None:
        return WorldEdge(WakeVerdict.COLD_START, observed)
    if previous.fingerprint == current:
        return WorldEdge(WakeVerdict.UNCHANGED, previous)
    if current == ABSENT or current == consumed_file(own):
        return WorldEdge(WakeVerdict.IGNORED, observed)
    if held(own[-1].ts if own else None, debounce, now):
        return WorldEdge(WakeVerdict.DEBOUNCED, previous)
    how = APPEARED if previous.fingerprint == ABSENT else CHANGED
    return WorldEdge(WakeVerdict.FIRE, observed, signal=path, data=how, mark=f"{FILE} {current}")


def world_edge(
    source: Source,
    world: World,
    own: Sequence[LogLine],
    previous: Observation | None,
    created_at: int,
    debounce: int,
    now: int,
) -> WorldEdge:
    """The edge of an entry waking on `source` (`own`: its own lines, oldest first)."""
    if source.kind == SIGNAL:
        return signal_edge(source.arg, world.signals, own, created_at, debounce, now)
    return file_edge(source.arg, previous, world.files.get(source.arg, ABSENT), own, debounce, now)


def detail(edge: WorldEdge, source: Source, newest_ts: int | None, debounce: int, now: int) -> str:
    """The diagnostic's words for an edge that does not fire."""
    if edge.verdict == WakeVerdict.COLD_START:
        return f"first look at {source.arg}; no edge yet"
    if edge.verdict == WakeVerdict.IGNORED:
        return f"{source.arg} vanished or is as it was at the last fire"
    left = debounce - (now - (newest_ts if newest_ts is not None else now))
    return f"{source.event} held {left}s more (debounce from the newest own line)"

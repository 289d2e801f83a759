"""only_if_changed in the tick: the marks file and the prints behind `rk.core.cost.unchanged`.

`<slug>.unchanged.json` keeps, per entry, the `Mark` its last answered delivery
left (0600, written atomically, never read through a symlink). It is a
droppable cache: absent, unreadable or corrupt means no mark, and a fire
without a mark goes. A print is one capture of a pane (`capture-pane -e`, the
part of its agent's frame where news shows) with the state and turn end the
enumeration read. A mark waits until the compared panes have settled: the tick
that the answer's own Stop hook nudges still sees Claude Code's `running stop
hooks…`, so it asks for a recheck and a tick a second later takes the mark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

from rk.core.cost.unchanged import (
    Mark,
    Print,
    Verdict,
    compared,
    mark_of,
    recheck_for_settling,
    screen_hash,
    settled,
    verdict,
    wants_mark,
)
from rk.core.log.delivery import LogView
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule.entry import Entry, WakeEvent
from rk.host.files import TooLarge, atomic_write, read_nofollow
from rk.tmux.observe import read_screen
from rk.tmux.server import Server, TmuxError

#: A marks file larger than this is not read (each mark is a few hundred bytes).
MAX_BYTES = 4 << 20


def read_marks(path: Path) -> dict[str, Mark]:
    """Each entry's mark; {} when the file is absent, a symlink, too large or not JSON;
    a malformed mark is left out (its entry's next fire goes)."""
    try:
        data = json.loads(read_nofollow(path, MAX_BYTES).decode("utf-8"))
    except (OSError, TooLarge, ValueError, RecursionError):
        return {}
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    marks = {str(k): mark_of(v) for k, v in entries.items()}
    return {k: m for k, m in marks.items() if m is not None}


def write_marks(path: Path, marks: Mapping[str, Mark]) -> None:
    body = {k: m.to_json() for k, m in sorted(marks.items())}
    atomic_write(path, (json.dumps({"entries": body}, indent=1) + "\n").encode("utf-8"))


def panes_of(entry: Entry, target: str, panes: Sequence[PaneFact]) -> tuple[str, ...]:
    """The panes this entry's fires compare (`rk.core.cost.unchanged.compared`)."""
    others = entry.wake_on is not None and entry.wake_on.event == WakeEvent.AGENT_STATE_CHANGE
    states = {p.pane_id: p.state for p in panes if not p.dead}
    return compared(entry.only_if_changed, others, target, states)


@dataclass(frozen=True)
class Prints:
    """One look at the compared panes: a print each, and whether every one of them has
    settled (`rk.core.cost.unchanged.settled`); `turn_end` the latest turn end among
    those that have not."""

    panes: dict[str, Print]
    settled: bool = True
    turn_end: int = 0


def prints(server: Server, ids: Sequence[str], by_pane: Mapping[str, PaneFact], now: int) -> Prints | None:
    """One capture per pane (styled, with its title: the layout reads a turn still
    drawing its end); None when any of them cannot be read (the fire goes)."""
    out: dict[str, Print] = {}
    unsettled: list[int] = []
    for pane_id in ids:
        fact = by_pane.get(pane_id)
        if fact is None:
            return None
        try:
            title, screen = server.look(pane_id)
        except TmuxError:
            return None
        out[pane_id] = Print(fact.state, fact.turn_end, screen_hash(screen, fact.provider))
        seen = read_screen(fact, screen, title, now, UTC)
        if not settled(fact.state, fact.turn_end, seen.state, now):
            unsettled.append(fact.turn_end)
    return Prints(out, not unsettled, max(unsettled, default=0))


@dataclass
class Taken:
    """The marks as a tick leaves them, and whether one was put off for a pane still
    drawing its turn's end (the ticker then ticks again within a second)."""

    marks: dict[str, Mark]
    recheck: bool = False


def take_marks(
    server: Server,
    path: Path,
    entries: Sequence[Entry],
    view: LogView,
    panes: Sequence[PaneFact],
    targets: Mapping[str, TargetFact],
    now: int,
    write: bool = True,
) -> Taken:
    """The marks as this tick leaves them: a new mark for each entry whose last
    delivery it sees answered for the first time, once the compared panes have
    settled; none for entries gone from the file. Written back (unless `write` is
    off, as in a dry run) when anything changed. OSError when the write fails (the
    caller reports it; the fires go)."""
    marks = read_marks(path)
    keep = {e.id for e in entries}
    changed = bool(set(marks) - keep)
    marks = {k: m for k, m in marks.items() if k in keep}
    by_pane = {p.pane_id: p for p in panes}
    recheck = False
    for entry in entries:
        target = targets.get(entry.id)
        last = view.last_delivered(entry.id)
        if not entry.only_if_changed or target is None or not target.resolved or last is None:
            continue
        fact = by_pane.get(target.pane)
        if fact is None or not wants_mark(marks.get(entry.id), last.ts, fact.state, fact.turn_end):
            continue
        seen = prints(server, panes_of(entry, target.pane, panes), by_pane, now)
        if seen is None:
            continue
        if not seen.settled:  # its end still drawing: a later tick takes the mark
            recheck = recheck or recheck_for_settling(seen.turn_end, now)
            continue
        marks[entry.id] = Mark(last.ts, now, fact.turn_end, seen.panes)
        changed = True
    if changed and write:
        write_marks(path, marks)
    return Taken(marks, recheck)


def unchanged_now(
    server: Server,
    entry: Entry,
    target: str,
    view: LogView,
    panes: Sequence[PaneFact],
    marks: Mapping[str, Mark],
    poll: int,
    now: int,
) -> Verdict:
    """The comparison for one fire of `entry` into `target`, right before it is disposed
    of. Captures only when a mark of the last delivery is kept (else it goes anyway)."""
    last = view.last_delivered(entry.id)
    mark = marks.get(entry.id)
    delivered = last.ts if last is not None else 0
    if mark is None or mark.delivered != delivered:
        return verdict(mark, delivered, {}, poll, now)
    by_pane = {p.pane_id: p for p in panes}
    seen = prints(server, panes_of(entry, target, panes), by_pane, now)
    if seen is None:
        return Verdict.SCREEN  # unreadable: treated as changed
    return verdict(mark, delivered, seen.panes, poll, now)

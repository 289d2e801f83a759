"""Which entry's fire started the turn a caller runs in, and what its chain allows
(`rk.core.schedule.lineage`).

The caller's pane is proven from the process tree (`rk.tmux.caller.place`),
never taken from `TMUX_PANE`: an agent that sets it would pass for another
pane's turn, or for none. The turn's maker is read as the turn timeout reads
it: the pane's state journal, its last turn end, and the newest deliveries
into it in the delivery log (`rk.core.schedule.lineage.turn_parent`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rk.core.environ import TURN_END_OPTION
from rk.core.log.cause import is_rk_delivery
from rk.core.pane.turn import parse_turn_end
from rk.core.schedule.entry import Entry
from rk.core.schedule.lineage import Lineage, Record, least_interval, lineage, turn_parent
from rk.store import lineage as records_file
from rk.store.config import ServerFiles
from rk.store.delivery_log import read_newest
from rk.store.entries import load_entries
from rk.store.pane_history import journal_of
from rk.tmux.caller import place
from rk.tmux.server import Server, TmuxError

#: The newest deliveries into the caller's pane that are looked at (the turn's maker is among the last few).
NEWEST = 20


@dataclass(frozen=True)
class Turn:
    """The caller's turn: its pane and server, and the entry whose fire started it ("": none)."""

    pane: str = ""
    files: ServerFiles | None = None
    parent: str = ""


def caller_turn(environ: Mapping[str, str], state_dir: Path) -> Turn:
    """Where this process runs (proven) and the entry whose fire started that pane's ongoing
    turn. Nothing placed, or no fire of an entry started the turn: no parent."""
    placed = place(environ)
    if not placed.proven:
        return Turn()
    files = ServerFiles(state_dir, os.path.basename(placed.socket))
    keep = lambda line: line.target == placed.pane and is_rk_delivery(line)  # noqa: E731
    lines = read_newest(files.log, NEWEST, keep)
    if not lines:  # no fire ever typed into this pane: no need to read its turns
        return Turn(placed.pane, files)
    try:
        raw = Server(socket_path=placed.socket, env=environ).display(placed.pane, f"#{{{TURN_END_OPTION}}}")
        turn_end_at = parse_turn_end(raw)[1]
    except TmuxError:
        turn_end_at = 0
    journal = journal_of(str(state_dir), files.slug).get(placed.pane, [])
    return Turn(placed.pane, files, turn_parent(lines, placed.pane, journal, turn_end_at))


def records(files: ServerFiles) -> dict[str, Record]:
    """The children's records of `files`' server (OSError when unreadable)."""
    return records_file.read(files.dir, files.slug)


def entries_of(files: ServerFiles) -> list[Entry]:
    return load_entries(files.entries).entries


def parent_least(entry_id: str, entries: list[Entry]) -> int | None:
    """The least interval of `entry_id` in `entries`; None when it is not there (gone)."""
    found = next((e for e in entries if e.id == entry_id), None)
    return None if found is None else least_interval(found.schedule, found.wake_on)


def turn_lineage(turn: Turn) -> Lineage | None:
    """What a turn started by a fire may make; None for a turn no fire started.
    OSError when the children's records cannot be read."""
    if not turn.parent or turn.files is None:
        return None
    entries = entries_of(turn.files)
    live = {e.id: e.parent for e in entries}
    return lineage(turn.parent, parent_least(turn.parent, entries), live, records(turn.files))

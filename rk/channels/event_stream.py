"""The files behind `rk events`: the state journal and the delivery log, read
together, then followed live (`-f`) across the rotations of both.

The first read takes a mark of each file and reads again while either grew
during the read, so following starts exactly where the shown lines end: no
line twice, none lost. The log is followed by `rk.store.delivery_log.follow` in a thread
(it blocks between its looks), the journal by `rk.store.state_journal.Tail`.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rk.core.log.delivery import LogLine
from rk.core.log.events import Event, Replay, log_events, merged, selected
from rk.store import delivery_log as logfile
from rk.store import state_journal as statejournal

POLL = 0.2  #: seconds between looks at the journal while following


@dataclass
class Snapshot:
    """What was read first, and where following continues from."""

    events: list[Event]
    replay: Replay
    journal_mark: tuple[int, int]
    log_mark: tuple[int, int] | None
    newest_log: LogLine | None


def read(
    directory: Path, slug: str, log: Path, since: int | None = None, panes: frozenset[str] = frozenset()
) -> Snapshot:
    """Every event of the server so far (at or after `since`, of `panes`), oldest first."""
    for _ in range(5):
        log_mark = logfile.mark(log)
        journal_mark = statejournal.mark(statejournal.journal_path(str(directory), slug))
        lines, journal_read = statejournal.read_all(str(directory), slug)
        history = logfile.read_history(log)
        if logfile.mark(log) == log_mark and journal_read == journal_mark:
            break
    replay = Replay()
    replay.deliveries(history)  # who started each turn (`by`) reads rk's deliveries
    states = replay.feed(lines)
    events = selected(merged(states, log_events(history)), since, panes)
    return Snapshot(events, replay, journal_read, log_mark, history[-1] if history else None)


def follow(
    directory: Path, slug: str, log: Path, snap: Snapshot, panes: frozenset[str] = frozenset(), poll: float = POLL
) -> Iterator[Event]:
    """The events after the snapshot, as they happen (the caller ends it)."""
    found: queue.Queue[LogLine] = queue.Queue()

    def pump() -> None:
        for line in logfile.follow(log, snap.newest_log, poll=poll, start=snap.log_mark):
            found.put(line)

    threading.Thread(target=pump, name="rk-events-log", daemon=True).start()
    tail = statejournal.Tail(str(directory), slug, snap.journal_mark)
    while True:
        logs: list[LogLine] = []
        while True:
            try:
                logs.append(found.get_nowait())
            except queue.Empty:
                break
        snap.replay.deliveries(logs)  # before the journal's lines: who started a turn (`by`) reads them
        states = snap.replay.feed(tail.poll())
        yield from selected(merged(states, log_events(logs)), None, panes)
        time.sleep(poll)

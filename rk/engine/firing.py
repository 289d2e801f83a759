"""One fire being carried out (`rk.engine.fire`), with what carrying it out needs:
its own module, so that the steps of a fire (`rk.engine.fresh`) name it without
importing the fire."""

from __future__ import annotations

from dataclasses import dataclass

from rk.core.log.delivery import LogView
from rk.core.pane.facts import PaneFact
from rk.core.schedule.due import Fire
from rk.core.schedule.entry import Entry
from rk.engine.gate import Gate, Snapshot
from rk.engine.result import ServerTick
from rk.engine.runtime import Runtime
from rk.tmux.server import Server


@dataclass(frozen=True)
class Firing:
    """One fire being carried out, with what carrying it out needs."""

    runtime: Runtime
    server: Server
    entry: Entry
    fire: Fire
    out: ServerTick
    dry_run: bool
    view: LogView
    now: int
    pane: PaneFact | None = None  #: the target as this tick's enumeration and looks saw it
    gate: Gate | None = None  #: the server's lock, let go while the fire is carried out
    still: Snapshot | None = None  #: the entries file as the decision saw it
    typed: bool = False  #: this tick already typed a prompt into the target (`Seen.typed`)

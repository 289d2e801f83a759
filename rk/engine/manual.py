"""`rk cron run <id>`: fire one entry now, through its deliver policy.

The same steps as a tick's fire (rate cap, fresh state read, policy, delivery
or if_absent disposition), logged with reason `manual`, so a manual run moves
the entry's anchors exactly like a scheduled one. The caller holds the
server's tick lock.
"""

from __future__ import annotations

from dataclasses import dataclass

from rk.core.log.delivery import LogLine, LogView, Outcome, Reason, Status, status_of
from rk.core.pane.facts import PaneFact, TargetFact, resolve_target
from rk.core.schedule.due import Fire
from rk.core.schedule.entry import Entry
from rk.engine.fire import Firing, fire_outcome
from rk.engine.gate import Claims
from rk.engine.recovery import forget_intent, recover_intents
from rk.engine.replace import fire_lines
from rk.engine.result import ServerTick
from rk.engine.runtime import Runtime
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles
from rk.store.entries import load_entries
from rk.tmux.observe import LookReport, learn_idle_lines, look_around, watched
from rk.tmux.server import Server, TmuxError


@dataclass
class RunReport:
    entry: str
    pane: str
    outcome: str
    held: bool = False

    @property
    def failed(self) -> bool:
        return status_of(self.outcome) in (Status.FAILED, Status.RESPAWN_FAILED)

    @property
    def human(self) -> str:
        where = self.pane or "(target absent)"
        if self.held:
            return f"{self.entry} -> {where}: not sent, {self.outcome} (held: nothing typed, nothing logged)"
        return f"{self.entry} -> {where}: {self.outcome}"

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.entry,
            "pane": self.pane,
            "reason": str(Reason.MANUAL),
            "outcome": self.outcome,
            "logged": not self.held,
        }


def run_now(runtime: Runtime, files: ServerFiles, entry_id: str) -> RunReport:
    """KeyError if there is no such entry; TmuxError-derived outcomes are logged as failed."""
    entry = next((e for e in load_entries(files.entries).entries if e.id == entry_id), None)
    if entry is None:
        raise KeyError(entry_id)
    return fire_now(runtime, files, entry)


#: The log's entry id for `rk send` (no stored entry has it: ids are letters, digits, `.`, `_`, `-`).
SEND_ID = "(send)"


def fire_now(runtime: Runtime, files: ServerFiles, entry: Entry) -> RunReport:
    """One fire of `entry` now, as the tick would: the rate cap, a fresh look, the
    deliver policy and its guards, the verified delivery; logged with reason manual.
    `rk cron run` fires a stored entry; `rk send` a transient one (SEND_ID)."""
    server = runtime.server(files.slug)
    now = runtime.clock()
    sink = ServerTick(files.slug)
    try:
        if not server.is_live():
            raise TmuxError(f"no tmux server {files.slug} is running")
        panes = look_around(server, [entry], server.pane_facts(), now, runtime.zone)
        learn_idle_lines(server, panes, watched([entry], panes), LookReport())  # as a tick does
        target = resolve_target(entry.target, panes, entry.any_program)
    except TmuxError as exc:
        outcome = str(Outcome(Status.FAILED, str(exc)))
        logfile.append_lines(files.log, [LogLine(now, entry.id, "", Reason.MANUAL, outcome)])
        return RunReport(entry.id, "", outcome)
    claims = Claims(files, dry_run=False)  # a tick types with the server's lock let go: not beside it
    if not claims.take(entry.id):
        from rk.host.lock import LockHeld

        raise LockHeld(f"a tick is firing {entry.id} right now")
    try:
        return _fire(runtime, files, entry, server, now, sink, panes, target)
    finally:
        claims.release()


def _fire(
    runtime: Runtime,
    files: ServerFiles,
    entry: Entry,
    server: Server,
    now: int,
    sink: ServerTick,
    panes: list[PaneFact],
    target: TargetFact,
) -> RunReport:
    sink.journal = files
    recover_intents(server, files, sink, panes)
    view = LogView(logfile.read_live(files.log))  # with what the recovery logged
    fire = Fire(entry.id, Reason.MANUAL, target.pane, 0, now, now, target.refused)
    pane = next((p for p in panes if p.pane_id == target.pane), None)
    logged = fire_outcome(Firing(runtime, server, entry, fire, sink, False, view, now, pane))
    aside, line = fire_lines(sink, fire, now, logged)  # a replace's `interrupted` line first, even before a hold
    if logged is None or line is None:
        logfile.append_lines(files.log, aside)
        return RunReport(entry.id, target.pane, sink.decisions[-1].outcome, held=True)
    logfile.append_lines(files.log, [*aside, line])
    forget_intent(files, entry.id)
    return RunReport(entry.id, target.pane, logged)

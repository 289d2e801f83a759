"""What a tick keeps in order beside its fires: the entries file and the log.

Under the server's lock: a pane target learns its server's identity on first
sight; after the fires, entries orphaned too long expire, one-shots whose line
is logged and entries that made their `max_total` deliveries retire; last, a
log grown too big is rotated, keeping what the caps count. A dry run writes
none of it (its lines are only mirrored).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping

from rk.core.cost import caps
from rk.core.log.delivery import LogLine, Reason, Status
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule.due import at_done
from rk.core.schedule.entry import At, Backoff, Entry, EntryError, TargetKind
from rk.core.schedule.orphan import should_expire
from rk.engine.gate import same_entry
from rk.engine.result import Decision, ServerTick
from rk.engine.runtime import Runtime
from rk.engine.writer import LogWriter
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles
from rk.store.entries import EntryDocument, EntryFileError, EntryNotFound, LoadResult, load_entries


def learn_identities(
    files: ServerFiles, entries: list[Entry], panes: list[PaneFact], out: ServerTick, dry_run: bool
) -> None:
    """First sight: a pane target written before identity (or by the Go original)
    learns the server its pane id belongs to from this enumeration, so a later
    restart that reuses the id is `pane replaced`. Written under the tick's lock;
    a dry run writes nothing."""
    live = {p.pane_id: p.server for p in panes if not p.dead and p.server.known}
    learn = {
        e.id: live[e.target.value]
        for e in entries
        if e.target.kind == TargetKind.PANE and not e.target.server.known and e.target.value in live
    }
    if not learn or dry_run:
        return
    try:
        with EntryDocument.edit(files, wait=0) as doc:  # this tick holds the lock
            for entry_id, identity in learn.items():
                with contextlib.suppress(EntryNotFound, EntryError):
                    doc.learn_server(entry_id, identity)
    except (EntryFileError, OSError) as exc:
        out.diagnostics.extend(Diagnostic(e, Diag.IDENTITY_UNRECORDED, str(exc)) for e in learn)


def still_as_decided(files: ServerFiles, entries: list[Entry], cache: bool) -> list[Entry]:
    """The `entries` the file still holds as they were (the lock was let go meanwhile):
    only those are retired or expired."""
    current = {e.id: e for e in load_entries(files.entries, cache=cache).entries}
    return [e for e in entries if same_entry(current.get(e.id), e)]


def expire_orphans(
    writer: LogWriter,
    entries: list[Entry],
    targets: Mapping[str, TargetFact],
    orphan_since: Mapping[str, int],
    resolved_now: Collection[str],
    now: int,
) -> None:
    """An entry whose target stayed unresolved past its orphan timeout leaves the file
    and logs `expired-orphan` (`rk.core.schedule.orphan`)."""
    files, out = writer.files, writer.out
    expired = [
        e for e in entries if should_expire(e, targets.get(e.id), orphan_since.get(e.id, 0), now, e.id in resolved_now)
    ]
    for entry in expired:
        if not writer.dry_run and not _removed(files, entry.id, Diag.ORPHAN_EXPIRE_FAILED, out):
            continue
        writer.line(LogLine(now, entry.id, "", Reason.GC, Status.EXPIRED_ORPHAN))
        out.decisions.append(Decision(files.slug, entry.id, Reason.GC, "", Status.EXPIRED_ORPHAN))


def retire_one_shots(writer: LogWriter, entries: list[Entry]) -> None:
    """A one-shot (`at`) entry whose line is logged leaves the file (`list` shows it until then)."""
    done = [e for e in entries if isinstance(e.schedule, At) and at_done(e, writer.view)]
    if not done or writer.dry_run:
        return
    try:
        with EntryDocument.edit(writer.files, wait=0) as doc:  # this tick holds the lock
            for entry in done:
                doc.remove(entry.id)
    except (EntryFileError, OSError) as exc:
        writer.out.diagnostics.extend(Diagnostic(e.id, Diag.RETIRE_FAILED, str(exc)) for e in done)


def retire_spent(writer: LogWriter, entries: list[Entry], now: int) -> None:
    """An entry that made its `max_total` deliveries leaves the file, then logs
    `retired: max-total` (`rk.core.cost.caps`); if it cannot leave, the next tick tries again."""
    files, out = writer.files, writer.out
    for entry in caps.retiring(entries, writer.view):
        if not writer.dry_run and not _removed(files, entry.id, Diag.RETIRE_FAILED, out):
            continue
        line = caps.retired_line(entry, now)
        writer.line(line)
        out.decisions.append(Decision(files.slug, entry.id, line.reason, "", line.outcome))


def _removed(files: ServerFiles, entry_id: str, failure: Diag, out: ServerTick) -> bool:
    """Take one entry out of the file (this tick holds the lock); on failure report
    `failure` for it and say False, so its line waits for the tick that can remove it."""
    try:
        with EntryDocument.edit(files, wait=0) as doc:
            doc.remove(entry_id)
    except (EntryFileError, OSError) as exc:
        out.diagnostics.append(Diagnostic(entry_id, failure, str(exc)))
        return False
    return True


def rotate_log(runtime: Runtime, files: ServerFiles, loaded: LoadResult, now: int, out: ServerTick) -> None:
    """Rotate the log when it is too big, keeping every line an entry of the file still
    needs: backoff anchors, what the caps count, today's budgeted deliveries."""
    if any(d.reason in (Diag.ENTRY_FILE_CORRUPT, Diag.ENTRY_FILE_UNREADABLE) for d in loaded.diagnostics):
        return  # without the entry list, a rotation could not tell which anchors still matter
    entries = loaded.entries
    try:
        backoff = {e.id for e in entries if isinstance(e.schedule, Backoff)}
        known = {e.id for e in entries} | {d.entry for d in loaded.diagnostics if d.entry}  # invalid ones too
        counted = {e.id: caps.kept_deliveries(e) for e in entries if caps.kept_deliveries(e)}  # what the caps count
        budgeted = {e.id for e in entries if e.budget is not None}
        logfile.rotate_if_needed(
            files.log,
            now,
            backoff,
            runtime.settings.log_max_bytes,
            runtime.settings.log_keep,
            known,
            counted,
            budgeted,
        )
    except OSError as exc:
        out.diagnostics.append(Diagnostic("", Diag.LOG_APPEND_FAILED, f"rotating {files.log}: {exc.strerror or exc}"))

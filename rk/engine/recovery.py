"""Deliveries a crash interrupted, resolved at the start of the next tick.

A delivery keeps an intent journal (`<slug>.intents/<id>.json`, `rk.act.intents.Intent`)
until its outcome is in the log. One left over, whose entry no live tick claims, is
resolved from what the pane shows it did (`rk.act.intents.recover`), logged, then
forgotten. A prompt that may have gone in is never typed again.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from rk.core.log.delivery import LogLine, Reason
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.log.wake_mark import marked
from rk.core.pane.facts import PaneFact
from rk.core.pane.identity import JOURNAL_DROPPED, journal_moved
from rk.engine.result import Decision, ServerTick
from rk.host import private
from rk.host.files import read_nofollow
from rk.host.lock import claimed
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles
from rk.tmux.server import Server


def recover_intents(
    server: Server, files: ServerFiles, out: ServerTick, panes: list[PaneFact] | None = None
) -> set[str]:
    """Resolve the deliveries a crash interrupted (a journal whose entry no live
    tick claims: its writer is gone): log what the pane shows they did, then
    forget them. Returns the entries whose journal stays (its outcome could not
    be logged): they are not fired until it is.
    A prompt that may have gone in is never typed again (rk.act.intents.recover).
    A journal whose pane is not the one it typed into (`panes`: this tick's
    enumeration; the tmux server restarted, the pane is gone or runs another
    process) is dropped with a line: nothing is typed into the pane there now."""
    kept: set[str] = set()
    names = _journal_names(files, out)
    if not names:
        return kept  # the usual case: no delivery was interrupted, so the log is not read here
    logged: dict[str, int] = {}
    for old in logfile.read_live(files.log):
        logged[old.entry] = max(logged.get(old.entry, old.ts), old.ts)
    for name in names:
        path = files.intents / name
        if name.startswith(".") or not name.endswith(".json"):  # a journal being written, or one a kill cut short
            if not claimed(files.claim(_written_for(name))):  # a live tick's write in progress is its own
                _remove(path)
            continue
        read = _read_journal(path, out)
        if read is None:
            continue
        record, entry, ts = read
        if claimed(files.claim(entry)):  # its writer is alive, typing with the lock let go: its own to log
            continue
        if logged.get(entry, -1) >= ts:  # killed after its line was written, before forgetting the intent
            _remove(path)
            continue
        line = _resolve(server, record, entry, ts, panes, out)
        if line is not None:
            try:
                logfile.append_lines(files.log, [line])
            except OSError as exc:
                out.diagnostics.append(Diagnostic(entry, Diag.LOG_APPEND_FAILED, f"{files.log}: {exc.strerror or exc}"))
                kept.add(entry)
                continue  # kept: the next tick tries again
            logged[entry] = max(logged.get(entry, ts), ts)
            out.decisions.append(Decision(files.slug, entry, line.reason, line.target, line.outcome))
        _remove(path)
    return kept


def _written_for(name: str) -> str:
    """The entry a journal's temporary file is written for (`.<entry>.json.<random>.tmp`,
    `rk.host.files.atomic_write`); "" for any other name."""
    head, sep, _ = name.removeprefix(".").partition(".json.")
    return head if sep and name.startswith(".") else ""


def _journal_names(files: ServerFiles, out: ServerTick) -> list[str]:
    """The journals left in the server's intents directory, sorted ([] when it is absent or unreadable)."""
    try:
        return sorted(private.listdir(files.intents))
    except FileNotFoundError:
        return []
    except OSError as exc:
        out.diagnostics.append(Diagnostic("", Diag.INTENT_UNRESOLVED, f"{files.intents}: {exc.strerror or exc}"))
        return []


def _read_journal(path: Path, out: ServerTick) -> tuple[dict[str, Any], str, int] | None:
    """The journal's record, with its entry and instant; None (the file removed) when it does not parse."""
    try:
        record = json.loads(read_nofollow(path).decode("utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not a mapping")
        entry, ts = str(record["entry"]), int(record["ts"])
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        out.diagnostics.append(Diagnostic("", Diag.INTENT_UNRESOLVED, f"{path}: unreadable ({exc}); removed"))
        _remove(path)
        return None
    return record, entry, ts


def _resolve(
    server: Server, record: dict[str, Any], entry: str, ts: int, panes: list[PaneFact] | None, out: ServerTick
) -> LogLine | None:
    """What the interrupted delivery did, as the line to log (None: nothing typed, nothing to log)."""
    from rk.act.intents import forget_pending, recover

    moved = _journal_moved(record, panes)
    if moved:  # its marker must not make the next delivery clear the pane there now
        forget_pending(server, str(record.get("pane") or record.get("target") or ""))
    outcome: str | None
    if moved and record.get("phase") != "done":
        outcome, detail = JOURNAL_DROPPED, f"{moved}; nothing typed"
    else:
        outcome, detail = recover(server, record)
    out.diagnostics.append(Diagnostic(entry, Diag.INTENT_RECOVERED, f"{outcome or 'nothing logged'}: {detail}"))
    if outcome is None:
        return None
    outcome = marked(outcome, str(record.get("mark", "")))  # the signal a wake on the world consumed
    return LogLine(ts, entry, str(record.get("target", "")), str(record.get("reason", Reason.SCHEDULE)), outcome)


def _journal_moved(record: dict[str, Any], panes: list[PaneFact] | None) -> str:
    """Why the journal's pane is not in this enumeration as it was ("" when it is, or unknown)."""
    if panes is None:
        return ""  # the recovery's own frame decides
    pane_id = str(record.get("pane") or record.get("target") or "")
    now = next((p for p in panes if p.pane_id == pane_id and not p.dead), None)
    return journal_moved(record, now.server if now is not None else None, now.pane_pid if now is not None else 0)


def forget_intent(files: ServerFiles, entry_id: str, dry_run: bool = False) -> None:
    """The outcome is in the log: the intent journal of that delivery has done its work."""
    if not dry_run:
        with contextlib.suppress(OSError):
            files.intent(entry_id).unlink()


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()

"""Orphan expiry: a session or pane entry whose target has been gone for a week.

Pure: `since` (when the target went missing) comes from the log view
(`LogView.orphaned_since`), computed on the log as it was before this tick's
dispositions.
"""

from __future__ import annotations

from rk.core.log.delivery import ORPHAN_TTL, LogView
from rk.core.pane.facts import TargetFact
from rk.core.schedule.entry import Entry, TargetKind


def can_orphan(entry: Entry) -> bool:
    """Only session and pane targets orphan: a role re-resolves to whatever window carries it."""
    return entry.target.kind in (TargetKind.SESSION, TargetKind.PANE)


def orphaned_since(entry: Entry, view: LogView) -> int:
    """When the entry's target went missing (0: it can't orphan, or it is not missing)."""
    return view.orphaned_since(entry.id, entry.created_by.at) if can_orphan(entry) else 0


def should_expire(entry: Entry, target: TargetFact | None, since: int, now: int, resolved_this_tick: bool) -> bool:
    """Orphan GC: remove a session/pane entry whose target has been missing for 7 days.

    A pinned entry never expires (muted does not protect); an entry that was
    delivered or respawned this tick does not expire on facts that predate it.
    """
    if not can_orphan(entry):
        return False
    if target is None or target.resolved or entry.pinned or resolved_this_tick:
        return False
    return since > 0 and now - since >= ORPHAN_TTL


def expires_at(entry: Entry, since: int) -> int:
    """When an orphan would be collected (0: never — pinned, role target, or not orphaned)."""
    if entry.pinned or since <= 0 or not can_orphan(entry):
        return 0
    return since + ORPHAN_TTL

"""Changing an entry in place: what else a change implies, and what it logs.

`rk cron edit` and `rk cron mute` parse flags; the rules that decide how the
changed entry is scheduled afterwards are here, beside the log queries that
read their lines (`LogView`). Pure.
"""

from __future__ import annotations

from dataclasses import replace

from rk.core.log.delivery import LogLine, Reason, Status
from rk.core.schedule.entry import Entry, IfAbsent


def rescheduled_line(old: Entry, new: Entry, now: int) -> LogLine | None:
    """The line an edit logs: `rescheduled` (reason `edit`) when the schedule or
    the deliver policy changed, else None.

    The line restarts the entry's anchors (every, cron) and cuts its backoff
    climb. The policy is compared, not the stored text: `""` is `immediate`.
    """
    if new.schedule == old.schedule and new.policy == old.policy:
        return None
    return LogLine(now, new.id, "", Reason.EDIT, Status.RESCHEDULED)


def with_if_absent(entry: Entry, if_absent: IfAbsent) -> Entry:
    """The absent policy changed; a respawn command is kept only under `respawn`."""
    entry = replace(entry, if_absent=if_absent)
    return entry if if_absent == IfAbsent.RESPAWN else replace(entry, respawn=())


def muted(entry: Entry, now: int, lease: int = 0) -> Entry:
    """Muted for good (`lease` 0) or for `lease` seconds from `now` (a lease that
    lapses by itself); one replaces the other."""
    if lease:
        return replace(entry, muted=False, muted_until=now + lease)
    return replace(entry, muted=True, muted_until=0)


def unmuted(entry: Entry) -> Entry:
    """Unmuted: the flag and any lease cleared."""
    return replace(entry, muted=False, muted_until=0)

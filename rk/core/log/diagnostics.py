"""Diagnostics: why an entry did or did not fire, in the Go original's vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Diag(StrEnum):
    """The diagnostic reason words (the Go original's, and rk's own for what it adds)."""

    MUTED = "muted"
    PAUSED = "server-paused"  #: `rk cron pause`: every entry of the server is silent
    QUIET_HOURS = "quiet-hours"  #: due outside the entry's active hours
    BUDGET_SPENT = "budget-spent"  #: its day's tokens reached its budget: silent until its next local midnight
    BUDGET_UNKNOWN = "budget-unknown"  #: its usage is unknown: the budget cannot be enforced (it fires)
    ENTRY_CAP_EXCEEDED = "entry-cap-exceeded"
    ANCHOR_UNAVAILABLE = "anchor-unavailable"
    UNKNOWN_SCHEDULE_KIND = "unknown-schedule-kind"
    UNKNOWN_WAKE_EVENT = "unknown-wake-event"
    WAKE_COLD_START = "wake-cold-start"
    WAKE_IGNORED_TRANSITION = "wake-ignored-transition"
    WAKE_IGNORED_RK = "wake-ignored-rk"  #: wake_from human: only turns rk's own fires started ended
    WAKE_DEBOUNCED = "wake-debounced"
    TARGET_UNRESOLVED = "target-unresolved"
    TARGET_ACTIVE = "target-active"
    SERVER_NOT_LIVE = "server-not-live"
    ENTRY_FILE_UNREADABLE = "entry-file-unreadable"
    ENTRY_FILE_CORRUPT = "entry-file-corrupt"
    ENTRY_INVALID = "entry-invalid"
    ENUMERATION_FAILED = "enumeration-failed"
    LOG_APPEND_FAILED = "log-append-failed"
    DELIVERY_HELD = "delivery-held"
    RESPAWN_UNCOMMANDED = "respawn-uncommanded"
    NOTIFY_FAILED = "notify-failed"
    ORPHAN_EXPIRE_FAILED = "orphan-expire-failed"
    RETIRE_FAILED = "retire-failed"  #: a one-shot entry's line is logged but it could not leave the file
    CURSOR_WRITE_FAILED = "cursor-write-failed"
    LOG_MALFORMED = "log-malformed"  #: lines of the live log that do not parse, skipped; one per tick
    INTENT_RECOVERED = "intent-recovered"  #: a delivery a crash interrupted, resolved from the pane
    INTENT_UNRESOLVED = "intent-unresolved"
    IDENTITY_UNRECORDED = "identity-unrecorded"  #: a pane target's first sight could not be written
    CLOCK_BACK = "clock-back"  #: the entry's newest line is later than now; re-anchored at now
    FIRE_DROPPED = "fire-dropped"  #: the entry changed while the server's lock was let go; nothing typed
    TURN_UNWATCHED = "turn-unwatched"  #: the turn timeouts' facts (turn ends, state journal) could not be read
    TICK_FAILED = "tick-failed"  #: an unexpected error in one server's tick; the others go on
    CAPPED = "capped"  #: the entry's max_per_day is reached today (rk.core.cost.caps); it fires after midnight
    RETIRED = "retired"  #: the entry had its max_total deliveries: it fires no more and leaves the file
    DORMANT = "dormant"  #: its last N deliveries started no turn: silent until its pane shows life (rk cron wake)


def first_line(exc: BaseException, limit: int = 300) -> str:
    """An exception as one short line (its message's first line, else its type's name)."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else type(exc).__name__


@dataclass(frozen=True)
class Diagnostic:
    """Why an entry did or did not fire, in one reason word and a detail."""

    entry: str
    reason: Diag
    detail: str = ""

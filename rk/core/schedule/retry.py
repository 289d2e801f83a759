"""Retries: a fire whose delivery failed is tried again, a few times, soon.

`--retry 2 --retry-after 2m`: after a `failed:` outcome (the paste or the submit
went wrong; never a skip, which is a decision, not a failure) the entry is due
again `retry_after` later, up to `retry` times (never after a failure that may have
submitted the prompt: `UNSURE`), each logged with its own reason
`retry 1/2 of <fire>` (`<fire>`: the unix second of the fire it retries). A
`delivered` outcome ends the retries (a retry never doubles a prompt that
landed), and so does any other outcome (a skip, a hold, an edit); past the
last one the entry waits for its next regular fire, which wins over a retry
due in the same tick.

Restart-safe from the log alone: the newest own line says everything (its
status, and its reason: a fire's, or a retry's count and fire), and a
rotation always keeps each entry's newest line. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rk.core.durations import format_duration
from rk.core.log.delivery import LogView, Reason, Status, status_of
from rk.core.schedule.entry import Entry

#: `--retry-after` when `--retry` is given without it.
DEFAULT_AFTER = 120
#: The most retries of one fire (`--retry`).
MAX_RETRIES = 10

#: Failures after which the prompt may have landed, or may sit in the composer (Enter pressed
#: without evidence, a tick killed after the paste, a composer that could not be cleared,
#: `rk.act.deliver`, `rk.act.intents`): never retried, so a retry never doubles a prompt.
UNSURE = ("submit not confirmed", "interrupted after the paste", "could not clear composer", "may remain")

#: The reasons of the fires a retry may follow (a manual send is someone's to repeat).
_RETRIED = frozenset({Reason.SCHEDULE, Reason.WAKE})
_REASON = re.compile(r"retry ([0-9]{1,2})/([0-9]{1,2}) of ([0-9]{1,19})")


@dataclass(frozen=True)
class Attempt:
    """A retry: its number (1…`of`), how many the entry allows, and the fire it retries."""

    number: int
    of: int
    fire: int

    @property
    def reason(self) -> str:
        """Its log line's reason: `retry 1/2 of 1796235278`."""
        return f"retry {self.number}/{self.of} of {self.fire}"


def parse(reason: str) -> Attempt | None:
    """A retry's reason read back; None for any other reason."""
    m = _REASON.fullmatch(reason)
    return Attempt(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def is_retry(reason: str) -> bool:
    return reason.startswith("retry ") and parse(reason) is not None


def retryable(outcome: str) -> bool:
    """A `failed:` outcome after which nothing of the prompt was submitted, as far as rk knows."""
    return status_of(outcome) == Status.FAILED and not any(word in outcome for word in UNSURE)


def may_have_typed(outcome: str) -> bool:
    """Whether the prompt went into the composer, as far as rk knows: delivered, or a
    failure after which it may have landed (`UNSURE`)."""
    status = status_of(outcome)
    return status == Status.DELIVERED or (status == Status.FAILED and not retryable(outcome))


def after(entry: Entry) -> int:
    """Seconds from a failed attempt to the next retry."""
    return entry.retry_after or DEFAULT_AFTER


def pending(entry: Entry, log: LogView) -> Attempt | None:
    """The retry the entry owes (whenever it comes due), or None: none asked for, the
    newest own line is not `failed`, or it was already the last retry."""
    if entry.retry <= 0:
        return None
    newest = log.newest(entry.id)
    if newest is None or not retryable(newest.outcome) or not newest.target:
        return None
    done = parse(newest.reason)
    if done is None:
        return Attempt(1, entry.retry, newest.ts) if newest.reason in _RETRIED else None
    if done.number >= entry.retry:
        return None
    return Attempt(done.number + 1, entry.retry, done.fire)


def retry_at(entry: Entry, log: LogView) -> int | None:
    """When the retry the entry owes comes due (None: it owes none): the ticker wakes for it."""
    owed, newest = pending(entry, log), log.newest(entry.id)
    return newest.ts + after(entry) if owed is not None and newest is not None else None


def due_retry(entry: Entry, log: LogView, now: int) -> Attempt | None:
    """The retry due at `now`: owed (`pending`) and `retry_after` past the failed attempt."""
    at = retry_at(entry, log)
    return pending(entry, log) if at is not None and now >= at else None


def record(entry: Entry) -> dict[str, object]:
    """Its JSON keys in `list`/`show`, only when set: `retry` and `retry_after` (seconds)."""
    return {"retry": entry.retry, "retry_after": after(entry)} if entry.retry else {}


def text(entry: Entry) -> str:
    """`2 times, 2m apart` (`show`), "" without retries."""
    if not entry.retry:
        return ""
    times = "once" if entry.retry == 1 else f"{entry.retry} times"
    return f"{times}, {format_duration(after(entry))} after a failed delivery"

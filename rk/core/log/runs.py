"""Every run on record (`rk cron runs`): one row per fire that delivered, and how it went.

Joined from three records, none of which knows the others: the delivery log
(when rk typed, into which pane, for which fire; a retry's reason names its
fire, `rk.core.schedule.retry`), the state journal (when the turn began and
ended, and how: its rest line's `end`), and the agent's own session record (the
turn's tokens, and the first line of its reply), read by the shell and handed
in per delivery (`Facts`).

A delivery started a turn when the pane's first busy run to begin at or after
it began within `START_WINDOW`, before the pane's next delivery, and the pane
was at rest from before the delivery until then (a prompt typed into a busy
agent starts no turn of its own). How the turn ended is its rest line's word
(ok, failed, interrupted, limited), `timeout` when rk logged `turn-timeout` for
that delivery, `running` while it goes on, `unknown` when nothing says. A
failed attempt is a row too (`undelivered`), so a retry shows under its fire.
Pure.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rk.core.cost.turn_timeout import START_WINDOW, StateLine
from rk.core.cost.turn_timeout import Run as Busy  # a busy stretch, with how it ended: the turn timeout's own
from rk.core.cost.turn_timeout import runs as busy_runs
from rk.core.cost.usage import Tokens
from rk.core.log.delivery import LogLine, Status, status_of
from rk.core.pane.state_words import TURN_ENDS
from rk.core.redact import redact
from rk.core.schedule import retry

TIMEOUT = "timeout"  #: rk logged `turn-timeout` for the delivery's turn
RUNNING = "running"  #: the turn goes on
UNKNOWN = "unknown"  #: no turn known to have begun, or no word on how it ended
UNDELIVERED = "undelivered"  #: the attempt failed (`failed:`): nothing was typed, or not submitted
#: Every word of a row's `ended`.
ENDS = (*TURN_ENDS, TIMEOUT, RUNNING, UNKNOWN, UNDELIVERED)

#: Characters of a reply's first line kept.
REPLY_MOST = 120


@dataclass(frozen=True)
class Facts:
    """What the agent's session record says of one delivery's turn (`tokens` None: unknown, and `why`)."""

    tokens: Tokens | None = None
    cost: float | None = None
    reply: str = ""
    why: str = ""


@dataclass(frozen=True)
class RunRow:
    """One attempt of a fire: the line rk logged, the turn it started (`start` 0: none known)."""

    entry: str
    at: int  #: the log line's instant (rk typed just before)
    pane: str
    reason: str  #: schedule, wake, manual, or `retry k/N of <fire>`
    ended: str  #: one of `ENDS`
    start: int = 0
    end: int = 0
    tokens: Tokens | None = None
    cost: float | None = None
    reply: str = ""
    why: str = ""  #: why the turn, its end or its usage is unknown; a failed attempt's error

    @property
    def fire(self) -> int:
        """The fire this attempt belongs to: itself, or the one a retry retries."""
        attempt = retry.parse(self.reason)
        return attempt.fire if attempt is not None else self.at

    @property
    def seconds(self) -> int | None:
        """How long the turn ran; None while it runs or when no turn is known."""
        return self.end - self.start if self.start and self.end else None

    def to_dict(self) -> dict[str, object]:
        attempt = retry.parse(self.reason)
        return {
            "entry": self.entry,
            "at": self.at,
            "target": self.pane,
            "reason": self.reason,
            "retry": None if attempt is None else {"number": attempt.number, "of": attempt.of, "fire": attempt.fire},
            "turn": {"start": self.start, "end": self.end or None} if self.start else None,
            "ended": self.ended,
            "seconds": self.seconds,
            "tokens": self.tokens.to_dict() if self.tokens is not None else None,
            "cost": self.cost,
            "reply": self.reply,
            "why": self.why,
        }


def started(at: int, before: int, found: Sequence[Busy], starts: Sequence[int] | None = None) -> Busy | None:
    """The busy run a delivery at `at` started: the first to begin at or after it, within
    `START_WINDOW` and before `before` (the pane's next delivery; 0: none), with the pane
    at rest from before the delivery (or nothing known before the run). `starts`: the
    runs' starts (journal order is time order), to find it by bisection."""
    i = bisect_left(starts if starts is not None else [r.start for r in found], at)
    if i >= len(found):
        return None
    run = found[i]
    in_time = run.start <= at + START_WINDOW and (not before or run.start < before)
    return run if in_time and run.rest_from <= at else None


def first_line(text: str) -> str:
    """A reply's first non-blank line, at most `REPLY_MOST` characters."""
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= REPLY_MOST else line[: REPLY_MOST - 1] + "…"


def _ended(run: Busy | None, timed_out: bool) -> tuple[str, str]:
    """(the row's `ended`, why) for a delivered line."""
    if run is None:
        return UNKNOWN, f"no turn began within {START_WINDOW}s of it (the agent was busy, or not journaled)"
    if timed_out:
        return TIMEOUT, ""
    if not run.end:
        return RUNNING, ""
    return (run.how, "") if run.how else (UNKNOWN, "the journal names no end for the turn")


def runs(
    lines: Sequence[LogLine],
    journal: Mapping[str, Sequence[StateLine]],
    facts: Mapping[tuple[str, int], Facts],
    start: int = 0,
) -> list[RunRow]:
    """Each delivered or failed attempt of a fire in `lines` from `start` on (`lines`: every
    line of the log, oldest first: the other deliveries bound each turn), with its turn;
    oldest first."""
    next_into: dict[int, int] = {}  #: index of a delivery → the pane's next delivery's instant
    last: dict[str, int] = {}
    for i, line in enumerate(lines):
        if line.target and status_of(line.outcome) == Status.DELIVERED:
            if line.target in last:
                next_into[last[line.target]] = line.ts
            last[line.target] = i
    timeouts = _timeouts(lines)
    by_pane = {pane: busy_runs(journal.get(pane, ())) for pane in last}
    starts = {pane: [r.start for r in found] for pane, found in by_pane.items()}
    out: list[RunRow] = []
    for i, line in enumerate(lines):
        if line.ts < start:
            continue
        status = status_of(line.outcome)
        if status == Status.FAILED and line.target:
            out.append(RunRow(line.entry, line.ts, line.target, line.reason, UNDELIVERED, why=line.outcome))
            continue
        if status != Status.DELIVERED or not line.target:
            continue
        run = started(line.ts, next_into.get(i, 0), by_pane.get(line.target, ()), starts.get(line.target, ()))
        fact = facts.get((line.entry, line.ts), Facts())
        ended, why = _ended(run, i in timeouts)
        out.append(
            RunRow(
                line.entry,
                line.ts,
                line.target,
                line.reason,
                ended,
                run.start if run else 0,
                run.end if run else 0,
                fact.tokens,
                fact.cost,
                first_line(redact(fact.reply)),
                why or fact.why,
            )
        )
    return out


def _timeouts(lines: Sequence[LogLine]) -> set[int]:
    """Indices of the deliveries a `turn-timeout` line was logged for: the entry's newest
    delivery into that pane at or before the line."""
    newest: dict[tuple[str, str], int] = {}
    out: set[int] = set()
    for i, line in enumerate(lines):
        status = status_of(line.outcome)
        if status == Status.DELIVERED:
            newest[(line.entry, line.target)] = i
        elif status == Status.TURN_TIMEOUT and (line.entry, line.target) in newest:
            out.add(newest[(line.entry, line.target)])
    return out


def since(rows: Sequence[RunRow], start: int, entry: str | None = None) -> list[RunRow]:
    """The rows from `start` on, of `entry` when given."""
    return [r for r in rows if (entry is None or r.entry == entry) and r.at >= start]

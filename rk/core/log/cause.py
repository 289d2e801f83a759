"""Who started a turn: rk (a fire of an entry) or a human (anyone else).

A worker's answer to rk's own heartbeat is no news for the operator: with
`--idle-every 3m` on three workers, the answers woke an operator 25 times in 33
minutes. So a wake names the cause of the turn whose change fired it (`{wake_by}`,
`rk events`' `by`), and `wake_from: human` lets those of rk's own turns pass.

A turn is rk's when a fire of an entry (reason `schedule` or `wake`) was
delivered into the pane while it was at rest, and the pane's busy run (a
stretch of `active`/`waiting` state-journal lines, `rk.core.cost.turn_timeout.runs`)
began within `START_WINDOW` after that delivery. A manual send (`rk send`,
`cron run`, MCP send) is someone's choice, not rk's: its turn is a human's. When
the journal cannot tell (no run known, the run has not ended there yet, the pane
was never seen at rest before it) the turn is a human's: a doubt wakes.
Pure: the log lines and the journal lines come in.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence

from rk.core.cost.turn_timeout import START_WINDOW, Run, StateLine, runs
from rk.core.log.delivery import LogLine, LogView, Reason, Status, status_of
from rk.core.pane.state import BUSY_STATES
from rk.core.schedule.retry import is_retry

#: A pane's "state" once it vanished (`rk.core.schedule.wake.VANISHED`).
VANISHED = "gone"

RK = "rk"  #: a fire of an entry started the turn
HUMAN = "human"  #: someone else did (a person, `rk send`), or nothing tells
CAUSES = (RK, HUMAN)

#: The reasons of the fires whose turns are rk's own (a manual send is someone's choice).
_RK_REASONS = frozenset({Reason.SCHEDULE, Reason.WAKE})


def is_rk_delivery(line: LogLine) -> bool:
    """Whether `line` is a delivery a fire of an entry made (a turn it starts is rk's); a retry
    is a fire of the entry too."""
    rk_reason = line.reason in _RK_REASONS or is_retry(line.reason)
    return bool(line.target) and rk_reason and status_of(line.outcome) == Status.DELIVERED


def rk_deliveries(lines: Iterable[LogLine]) -> dict[str, list[int]]:
    """Each pane's stamps of the deliveries fires of entries made into it, oldest first."""
    out: dict[str, list[int]] = {}
    for line in lines:
        if is_rk_delivery(line):
            out.setdefault(line.target, []).append(line.ts)
    for stamps in out.values():
        stamps.sort()
    return out


def run_cause(run: Run, stamps: Sequence[int]) -> str:
    """`rk` when one of rk's deliveries (`stamps`, sorted) came while the pane was at rest
    before the run and at most `START_WINDOW` before it began; else `human`."""
    if not run.rest_from:
        return HUMAN  # never seen at rest before it: nothing says who started it
    i = bisect_left(stamps, max(run.rest_from, run.start - START_WINDOW))
    return RK if i < len(stamps) and stamps[i] <= run.start else HUMAN


def newest_turn(journal: Sequence[StateLine], at_rest: bool) -> Run | None:
    """The pane's newest busy run in `journal`; None when there is none, or when the pane
    is at rest now (`at_rest`) and the run has not ended in the journal (a journal behind
    the pane cannot tell which turn ended)."""
    found = runs(journal)
    if not found or (at_rest and not found[-1].end):
        return None
    return found[-1]


def turn_cause(journal: Sequence[StateLine], stamps: Sequence[int], at_rest: bool) -> str:
    """The cause of the pane's newest turn (`newest_turn`); `human` when there is none."""
    run = newest_turn(journal, at_rest)
    return HUMAN if run is None else run_cause(run, stamps)


#: How far before a turn's rest a log line may be and still be read: ticks append their
#: lines in the order they run, each with its own `now`, so the log is nearly in time order.
_SLACK = 3600


class Causes:
    """The causes of the panes' newest turns for one evaluation, each worked out on
    first use from the journal, then from the log's lines since that turn's rest only
    (most ticks ask none)."""

    def __init__(self, view: LogView, journal: Mapping[str, Sequence[StateLine]]) -> None:
        self._view = view
        self._journal = journal
        self._found: dict[tuple[str, str], str] = {}

    def _stamps(self, pane: str, since: int) -> list[int]:
        """rk's deliveries into `pane` from about `since` on, oldest first."""
        out = []
        for line in reversed(self._view.lines):
            if line.ts < since - _SLACK:
                break
            if line.target == pane and is_rk_delivery(line):
                out.append(line.ts)
        return sorted(out)

    def of(self, pane: str, state: str) -> str:
        """Who started the turn of `pane` whose change left it in `state` (`gone`: vanished)."""
        key = (pane, state)
        found = self._found.get(key)
        if found is None:
            at_rest = state not in BUSY_STATES and state != VANISHED
            run = newest_turn(self._journal.get(pane, ()), at_rest)
            found = HUMAN if run is None else run_cause(run, self._stamps(pane, run.rest_from))
            self._found[key] = found
        return found

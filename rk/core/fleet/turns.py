"""Who started the turn a streamed line ends, said by the far end of a follow.

Only the host where a turn ran knows whether a fire of one of its entries started
it: its delivery log holds rk's deliveries, its journal the turns
(`rk.core.log.cause`). So the far end (`rk.channels.journal_follow`) keeps each
pane's recent lines (only where the state changed: that is all a turn is made
of) from the journal before the follow's mark on, and stamps each line going
anywhere but `active` with `by`: `rk` or `human`, by the same rule a wake on that
host reads (`rk.core.log.cause.turn_cause`). The watcher's `wake_from: human`
then tells an answer to a heartbeat from other ends (`rk.core.fleet.watch`).

A turn that rk started is logged when the delivery is seen to take, a moment after
the turn began: a turn shorter than that would be called a human's. So a line
that would be a human's, while a delivery into its pane is in flight (its intent
journaled, `rk.act.intents`, and not yet logged) and its turn began less than
`LOG_LAG` ago, waits for the log (`settled`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rk.core.cost.turn_timeout import StateLine, runs
from rk.core.log.cause import HUMAN, VANISHED, turn_cause
from rk.core.pane.state import BUSY_STATES, AgentState

#: Lines kept per pane (each a change of state): a turn is a few.
KEEP = 64
#: Seconds a delivery in flight may be logged after the turn it started began, at most.
LOG_LAG = 10


class Turns:
    """Each pane's recent changes of state, to say who started the turn a line ends."""

    def __init__(self, lines: Iterable[Mapping[str, object]] = ()) -> None:
        self.panes: dict[str, list[StateLine]] = {}
        for fields in lines:
            self.add(fields)

    def add(self, fields: Mapping[str, object]) -> None:
        """Take in one journal line (oldest first)."""
        pane, to = str(fields.get("pane", "")), str(fields.get("to", ""))
        kept = self.panes.setdefault(pane, [])
        if kept and kept[-1].to == to:
            return  # the same state again (a turn's every tool call says active): no change
        kept.append(StateLine(int(str(fields.get("ts", 0))), to, str(fields.get("end", ""))))
        del kept[:-KEEP]

    def by(self, pane: str, to: str, stamps: Mapping[str, Sequence[int]]) -> str:
        """Who started the turn the pane's newest line (going to `to`) is in or ends: ""
        for `active` (nothing to tell), else `rk` or `human`. `stamps`: rk's deliveries
        into each pane, oldest first (`rk.core.log.cause.rk_deliveries`)."""
        if to == AgentState.ACTIVE:
            return ""
        at_rest = to not in BUSY_STATES and to != VANISHED
        return turn_cause(self.panes.get(pane, ()), stamps.get(pane, ()), at_rest)

    def settled(self, pane: str, by: str, now: int, in_flight: bool) -> bool:
        """Whether a line stamped `by` may go: a human's, while a delivery into the pane is
        `in_flight`, of a turn begun `LOG_LAG` or less ago, may yet be rk's once logged."""
        if by != HUMAN or not in_flight:
            return True
        found = runs(self.panes.get(pane, ()))
        return not found or now - found[-1].start > LOG_LAG

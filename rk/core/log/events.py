"""`rk events`: one stream of what happened on a server, oldest first — the
panes' state changes (from the state journal) and the delivery log's outcomes.

A journal line names only where a pane went; where it came from is the
previous line of the same pane (`-` for the first one known), so `from` is
worked out here, over the whole journal, before any filter applies. So is `by`:
on a change a wake reacts to (to anything but `active`) inside or at the end of a
turn, who started that turn (`rk.core.log.cause`: `rk` when a fire of an entry
did, else `human`), from the log's deliveries fed in before the journal's lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rk.core.log.delivery import LogLine
from rk.core.pane.state import BUSY_STATES, AgentState

if TYPE_CHECKING:  # the turns and their causes load with a replay, not with `rk --help` (rk/cli/events.py)
    from rk.core.cost.turn_timeout import Run

STATE = "state"
LOG = "log"


@dataclass(frozen=True)
class Event:
    """One event: a state change (`kind` state) or a log outcome (`kind` log)."""

    ts: int
    kind: str
    pane: str
    from_: str = ""
    to: str = ""
    turn_end: str = ""
    source: str = ""
    agent: str = ""
    entry: str = ""
    reason: str = ""
    outcome: str = ""
    by: str = ""  #: a state change of a turn (not to active): `rk` or `human` started the turn

    def to_dict(self) -> dict[str, object]:
        if self.kind == STATE:
            return {
                "ts": self.ts,
                "kind": STATE,
                "pane": self.pane,
                "from": self.from_ or None,
                "to": self.to,
                "turn_end": self.turn_end or None,
                "source": self.source,
                "agent": self.agent or None,
                "by": self.by or None,
            }
        return {
            "ts": self.ts,
            "kind": LOG,
            "pane": self.pane,
            "entry": self.entry,
            "reason": self.reason,
            "outcome": self.outcome,
        }


class Replay:
    """State changes from journal lines, each with the state its pane came from and,
    inside or at the end of a turn, who started it; a line that repeats its pane's
    state and ends no turn is no change and is dropped."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}
        self.rest: dict[str, int] = {}  #: since when each pane at rest has been
        self.runs: dict[str, Run] = {}  #: each busy pane's turn so far
        self.stamps: dict[str, list[int]] = {}  #: rk's deliveries into each pane (`rk.core.log.cause`)

    def deliveries(self, lines: Iterable[LogLine]) -> None:
        """Take in log lines (before the journal lines of the same stretch): rk's deliveries."""
        from rk.core.log.cause import rk_deliveries

        for pane, stamps in rk_deliveries(lines).items():
            self.stamps[pane] = sorted(self.stamps.get(pane, []) + stamps)

    def _by(self, pane: str, ts: int, to: str) -> str:
        """Track the pane's turn; who started it, for a line inside or at its end (not to active)."""
        from rk.core.cost.turn_timeout import Run
        from rk.core.log.cause import run_cause

        run = self.runs.get(pane)
        if to in BUSY_STATES:
            if run is None:
                run = self.runs[pane] = Run(ts, 0, self.rest.get(pane, 0))
        else:
            self.runs.pop(pane, None)
            if run is None:
                self.rest.setdefault(pane, ts)
            else:
                self.rest[pane] = ts
        if run is None or to == AgentState.ACTIVE:
            return ""
        return run_cause(run, self.stamps.get(pane, ()))

    def feed(self, lines: Iterable[Mapping[str, object]]) -> list[Event]:
        out = []
        for line in lines:
            pane, to, ts = str(line["pane"]), str(line["to"]), int(str(line["ts"]))
            before = self.last.get(pane, "")
            self.last[pane] = to
            by = self._by(pane, ts, to)
            end = str(line.get("end", ""))
            if before == to and not end:
                continue  # the same state again (a turn's every tool call says active): no change
            source, agent = str(line.get("source", "")), str(line.get("agent", ""))
            out.append(Event(ts, STATE, pane, before, to, end, source, agent, by=by))
        return out


def log_events(lines: Iterable[LogLine]) -> list[Event]:
    return [
        Event(line.ts, LOG, line.target, entry=line.entry, reason=line.reason, outcome=line.outcome) for line in lines
    ]


def merged(states: Sequence[Event], logs: Sequence[Event]) -> list[Event]:
    """Both streams in one, oldest first (a state change before a log line of the same second)."""
    return sorted([*states, *logs], key=lambda e: e.ts)


#: `rk events --pane`: the most panes one call names (a server rarely has a few dozen).
MAX_PANES = 100


def selected(events: Iterable[Event], since: int | None = None, panes: frozenset[str] = frozenset()) -> list[Event]:
    """The events at or after `since` and, when `panes` is given, of those panes (a set:
    one look each)."""
    return [e for e in events if (since is None or e.ts >= since) and (not panes or e.pane in panes)]

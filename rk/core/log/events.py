"""`rk events`: one stream of what happened on a server, oldest first — the
panes' state changes (from the state journal) and the delivery log's outcomes.

A journal line names only where a pane went; where it came from is the
previous line of the same pane (`-` for the first one known), so `from` is
worked out here, over the whole journal, before any filter applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rk.core.log.delivery import LogLine

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
    """State changes from journal lines, each with the state its pane came from; a
    line that repeats its pane's state and ends no turn is no change and is dropped."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}

    def feed(self, lines: Iterable[Mapping[str, object]]) -> list[Event]:
        out = []
        for line in lines:
            pane, to = str(line["pane"]), str(line["to"])
            before = self.last.get(pane, "")
            self.last[pane] = to
            end = str(line.get("end", ""))
            if before == to and not end:
                continue  # the same state again (a turn's every tool call says active): no change
            out.append(
                Event(
                    int(str(line["ts"])),
                    STATE,
                    pane,
                    before,
                    to,
                    end,
                    str(line.get("source", "")),
                    str(line.get("agent", "")),
                )
            )
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

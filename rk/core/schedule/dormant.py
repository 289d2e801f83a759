"""Dormant entries: an agent that never answers is not nudged forever.

An entry whose last `dormant_after` deliveries (3 by default) each started no
turn goes dormant: at its next fire the tick logs `dormant: no answer to 3
prompts` once (a notification follows) and types nothing more, every later
fire held silently, as a mute holds it. It wakes by itself the moment its
pane shows life, and `rk cron wake` ends it by hand (a `woken` line).

"Started no turn" is read from the pane's state stamp: every state write (an
agent's hook, a screen correction, `rk agent state`) stamps the pane with its
epoch (`TargetFact.epoch`) and journals the change. A delivery with no stamp
at or after it had no answer: no turn started, no prompt of a human's, no new
agent's start, no change of state. So the count is the entry's newest
deliveries into its target (of its own fires: `schedule`, `wake`) that are
newer than the pane's stamp, back to the newest `woken` or `rescheduled` line
or a delivery into another pane; any later stamp ends it, and the entry
fires again. Nothing is kept but the log and the panes: a restart loses nothing.

Only where rk can know turns: a target with an agent state (hooks, or a screen
rk reads). A pane with none (a plain shell, an agent without hooks whose screen
no layout reads) never makes an entry dormant.
Pure: the log, the target's facts and the entry come in.
"""

from __future__ import annotations

from dataclasses import dataclass

from rk.core.log.delivery import LogLine, LogView, Reason, Status, status_of
from rk.core.pane.facts import TargetFact
from rk.core.schedule.decoding import parse_dormant_after as parse_dormant_after
from rk.core.schedule.entry import Entry

#: The most unanswered deliveries an entry may wait for (a rotation keeps that many of its deliveries).
#: The fires whose deliveries count (a manual `rk cron run` is someone's choice: it neither counts nor cuts).
_COUNTED = frozenset({Reason.SCHEDULE, Reason.WAKE})


@dataclass(frozen=True)
class Dormancy:
    """An entry's unanswered deliveries now: how many in a row (up to its limit), the
    newest stamp that would have answered them, and whether a `dormant` line told it."""

    unanswered: int
    limit: int
    #: the oldest of the `limit` newest unanswered deliveries (0: fewer than `limit`)
    since: int = 0
    said: bool = False

    @property
    def dormant(self) -> bool:
        """Its last `limit` deliveries all went unanswered: it types no more."""
        return self.limit > 0 and self.unanswered >= self.limit

    @property
    def held(self) -> bool:
        """Dormant and already told: each fire is held silently, as a mute holds it."""
        return self.dormant and self.said


NOT_DORMANT = Dormancy(0, 0)


def _answered(line: LogLine, target: TargetFact) -> bool:
    """Whether the pane's stamp is at or after this delivery (same second: answered, in doubt)."""
    return target.epoch >= line.ts


def _cut(aside: list[LogLine], status: Status) -> int:
    """The newest `status` line's ts among an entry's aside lines (-1: none)."""
    return next((line.ts for line in reversed(aside) if status_of(line.outcome) == status), -1)


def dormancy(entry: Entry, log: LogView, target: TargetFact) -> Dormancy:
    """Where the entry stands (`Dormancy`); `NOT_DORMANT` when off or where no turn can be
    known (no resolved target, or one with no agent state)."""
    limit = entry.dormant_after
    if limit <= 0 or not target.resolved or not target.state:
        return NOT_DORMANT
    aside = list(log.aftermath(entry.id))
    woken = _cut(aside, Status.WOKEN)
    count, since = 0, 0
    for line in reversed(log.own(entry.id)):
        status = status_of(line.outcome)
        if line.ts <= woken or status == Status.RESCHEDULED:
            break
        if status != Status.DELIVERED or line.reason not in _COUNTED:
            continue
        if line.target != target.pane or _answered(line, target):
            break
        count += 1
        if count == limit:
            since = line.ts
            break
    if not since:
        return Dormancy(count, limit)
    said = _cut(aside, Status.DORMANT) >= since
    return Dormancy(count, limit, since, said)


def dormant_line(entry: Entry, pane: str, reason: str, now: int) -> LogLine:
    """`dormant: no answer to 3 prompts`, once, when the entry goes dormant."""
    n = entry.dormant_after
    detail = f"no answer to {n} prompt{'s' if n != 1 else ''}"
    return LogLine(now, entry.id, pane, reason, f"{Status.DORMANT}: {detail}")


def woken_line(entry_id: str, now: int) -> LogLine:
    """`rk cron wake`: ends a dormancy (its count starts again from here)."""
    return LogLine(now, entry_id, "", Reason.MANUAL, f"{Status.WOKEN}: by hand")


def is_dormant(entry: Entry, log: LogView, target: TargetFact) -> bool:
    """What the views show: dormant and told (`Dormancy.held`)."""
    return dormancy(entry, log, target).held

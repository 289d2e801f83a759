"""Gaps: the cron occurrences of an entry that have no `delivered` line.

A line belongs to the occurrence it follows: an own line with `o <= ts <
next(o)` speaks for occurrence `o` (an on-time fire, a catch-up, a skip, the
`missed` line of a gap, which is logged at the tick that noticed it). An
occurrence with a `delivered` line among them is no gap; one with other lines
is a gap with the first of them as what happened; one with none is a gap that
nothing ran for (the ticker was down, the laptop asleep, or the missed line of
a longer gap went to a later occurrence).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo

from rk.core.cost.caps import day_bounds
from rk.core.log.delivery import LogLine, Status, is_aftermath, status_of
from rk.core.schedule.cronexpr import CronExpr

#: What `gaps` reports for an occurrence with no line at all.
NOT_RUN = "not run"


@dataclass(frozen=True)
class Gap:
    occurrence: int
    what: str  #: the outcome of the occurrence's first line, or NOT_RUN


def occurrences(expr: CronExpr, since: int, until: int, zone: tzinfo, limit: int) -> list[int]:
    """The occurrences in `(since, until]`, at most the newest `limit` of them."""
    out: list[int] = []
    t = since
    while True:
        nxt = expr.next_after(t, zone)
        if nxt is None or nxt > until:
            return out[-limit:]
        out.append(nxt)
        if len(out) > 2 * limit:
            del out[:limit]
        t = nxt


#: What `gaps` reports for an occurrence a day cap silenced (`rk.core.cost.caps`: after the day's one line).
CAPPED = "capped (after skipped-cap: day)"


def gaps(occurrence_times: Sequence[int], own: Sequence[LogLine], now: int, zone: tzinfo | None = None) -> list[Gap]:
    """The occurrences (oldest first) that no `delivered` line answered; `own` is the
    entry's lines, oldest first. With the entry's `zone`, an occurrence with no line
    after the `skipped-cap` line of its local day is CAPPED, not NOT_RUN. Its
    `AFTERMATH` lines, about a turn, answer no occurrence."""
    own = [line for line in own if not is_aftermath(line.outcome)]
    stamps = [line.ts for line in own]
    skips = [line.ts for line in own if status_of(line.outcome) == Status.SKIPPED_CAP]
    out: list[Gap] = []
    for i, o in enumerate(occurrence_times):
        end = occurrence_times[i + 1] if i + 1 < len(occurrence_times) else now + 1
        lo, hi = bisect.bisect_left(stamps, o), bisect.bisect_left(stamps, end)
        mine = own[lo:hi]
        if any(status_of(line.outcome) == Status.DELIVERED for line in mine):
            continue
        out.append(Gap(o, mine[0].outcome if mine else _silent(o, skips, zone)))
    return out


def _silent(occurrence: int, skips: Sequence[int], zone: tzinfo | None) -> str:
    """Why an occurrence has no line: capped, when its day's skipped-cap line came before it."""
    if zone is not None and is_capped(occurrence, occurrence + 1, skips, zone):
        return CAPPED
    return NOT_RUN


def is_capped(occurrence: int, following: int, skips: Sequence[int], zone: tzinfo) -> bool:
    """Whether the day cap silenced `occurrence` (`rk.core.cost.caps`: not owed): an own
    `skipped-cap` line (`skips`, their stamps) on its local day, before the `following`
    occurrence (the line of this occurrence, or of an earlier one of its day)."""
    if not skips:
        return False
    start, _ = day_bounds(occurrence, zone)
    return any(start <= t < following for t in skips)

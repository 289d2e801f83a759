"""A token budget's word on a due fire: `budget-spent` holds it until the entry's
next local midnight (one `skipped-budget` line a day, then silence), and an
unknown usage lets it go with a `budget-unknown` diagnostic. Pure: the day's
spend is read by the shell (`rk.store.transcripts.spent_today`) and handed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo

from rk.core.cost import caps
from rk.core.cost.budget import Spent, format_tokens, over_budget
from rk.core.log.delivery import LogView, Status, status_of
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.schedule.entry import Entry
from rk.core.wallclock import moment


@dataclass(frozen=True)
class BudgetStop:
    """What a budget says of a due fire: `budget-spent` (it does not go; `said` once
    today's `skipped-budget` line is written, so one line a day), or `budget-unknown`
    (it goes: an unknown usage is never taken for 0)."""

    diagnostic: Diagnostic
    said: bool = False


def budget_stop(entry: Entry, log: LogView, spent: Spent | None, now: int, zone: tzinfo) -> BudgetStop | None:
    """The budget's word on a due fire of `entry`, or None when it has nothing to say."""
    if entry.budget is None:
        return None
    if spent is None or spent.tokens is None:
        why = spent.why if spent is not None and spent.why else "no usage was read for it"
        detail = f"usage unknown ({why}): the budget cannot be enforced"
        return BudgetStop(Diagnostic(entry.id, Diag.BUDGET_UNKNOWN, detail))
    if not over_budget(entry.budget, spent):
        return None
    start, end = caps.day_bounds(now, zone)
    opens = moment(end, zone)
    used = f"{format_tokens(spent.tokens)} of {entry.budget.text} spent"
    if _budget_said(entry, log, start):
        detail = f"already skipped today: {used}; fires again from {opens}"
        return BudgetStop(Diagnostic(entry.id, Diag.BUDGET_SPENT, detail), said=True)
    return BudgetStop(Diagnostic(entry.id, Diag.BUDGET_SPENT, f"{used}; skipped until {opens}"))


def _budget_said(entry: Entry, log: LogView, start: int) -> bool:
    """The entry's `skipped-budget` line of the day that began at `start` is written."""
    return any(line.ts >= start and status_of(line.outcome) == Status.SKIPPED_BUDGET for line in log.own(entry.id))


def budget_reopens(entry: Entry, log: LogView, now: int, zone: tzinfo) -> int:
    """When a budget-stopped entry may fire again: the next local midnight once its
    day's `skipped-budget` line is written (0 otherwise). A day's spend only grows,
    so the line holds for the rest of its day; `next_due()` and the forecast read
    it from the log alone, without the agents' records."""
    if entry.budget is None:
        return 0
    start, end = caps.day_bounds(now, zone)
    return end if _budget_said(entry, log, start) else 0

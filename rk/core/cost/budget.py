"""An entry's daily token budget (`budget: 2M/day`) and what it has spent today.

Split from rk.core.cost.usage, which reads the agents' records to count the tokens:
an entry's schedule and the views read and compare budgets on every run, and need
none of that reading (importing it costs a view ~10 ms).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rk.core.bounds import quote
from rk.core.errors import ExitStatus, RkError


class BudgetError(RkError, ValueError, status=ExitStatus.USAGE):
    """A budget that does not read; the message is the user-facing gist."""


_BUDGET = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*([kmg]?)\s*/\s*(day|d)$", re.IGNORECASE)
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
MAX_BUDGET = 10**15


@dataclass(frozen=True)
class Budget:
    """Tokens an entry may spend per local day in its zone."""

    tokens: int

    @property
    def text(self) -> str:
        return f"{format_tokens(self.tokens)}/day"

    @staticmethod
    def parse(text: object) -> Budget:
        """`2M/day`, `500k/day`, `1500000/day`; BudgetError otherwise."""
        if isinstance(text, bool) or not isinstance(text, str):
            raise BudgetError("budget must be text like 2M/day")
        m = _BUDGET.match(text.strip())
        if not m:
            raise BudgetError(f"budget {quote(text)} does not read: use tokens per day, e.g. 2M/day or 500k/day")
        tokens = int(float(m.group(1)) * _SCALE[m.group(2).lower()])
        if not 0 < tokens <= MAX_BUDGET:
            raise BudgetError(f"budget {quote(text)} must be a positive number of tokens up to 1000T")
        return Budget(tokens)


def format_tokens(n: int) -> str:
    """`2M`, `1.5M`, `500k`, `950`: the short form budgets are written in."""
    for unit, scale in (("G", 1_000_000_000), ("M", 1_000_000), ("k", 1_000)):
        if n >= scale:
            value = n / scale
            return f"{value:.3f}".rstrip("0").rstrip(".") + unit
    return str(n)


@dataclass(frozen=True)
class Spent:
    """An entry's tokens so far on its current local day: `tokens` None when any of
    that day's deliveries has unknown usage and no known ones reach the budget."""

    tokens: int | None
    unknown: int = 0  #: deliveries of the day whose usage is unknown
    why: str = ""  #: why the usage is unknown (no transcript, a CLI that records none…)


def over_budget(budget: Budget, spent: Spent) -> bool:
    """The day's known tokens reach the budget (unknown ones cannot stop it)."""
    return spent.tokens is not None and spent.tokens >= budget.tokens

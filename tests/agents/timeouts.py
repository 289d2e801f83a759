"""What every real agent's turn-timeout test checks the same way: ticks every few
seconds leave the turn alone before its timeout, then the entry's log reads
exactly `delivered`, `turn-timeout`, `interrupted`, and a later tick adds nothing."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rk.core.log.delivery import LogLine
from rk.store import delivery_log as logfile

#: The ticker's poll, made short.
POLL = 3


def interrupted_once(
    tick: Callable[[], object], log: Path, delivered: int, timeout: int, show: Callable[[], object] = lambda: ""
) -> tuple[list[LogLine], LogLine, float]:
    """Tick every POLL s until the `turn-timeout` line is logged; assert it came no
    earlier than `timeout` after the delivery, nor more than 5 s late, after at least
    3 ticks that did nothing, and that the interrupt then ended the turn. Returns the
    log's lines, the `turn-timeout` line, and when the tick that logged it began
    (`show()`: what a failure's message adds)."""
    ticks_before, began = 0, 0.0
    deadline = time.monotonic() + timeout + 90
    while time.monotonic() < deadline:
        now, began = int(time.time()), time.time()
        tick()
        outcomes = [line.outcome for line in logfile.read_live(log)]
        if any(o.startswith("turn-timeout") for o in outcomes):
            break
        assert now - delivered < timeout + 5, (outcomes, show())  # it came late
        ticks_before += 1
        time.sleep(POLL)
    lines = logfile.read_live(log)
    statuses = [line.outcome.split(":")[0] for line in lines if line.outcome != "rescheduled"]
    assert statuses == ["delivered", "turn-timeout", "interrupted"], (lines, show())
    timed_out = next(line for line in lines if line.outcome.startswith("turn-timeout"))
    assert timed_out.ts - delivered >= timeout
    assert ticks_before >= 3  # ticks came before the timeout and left the turn alone
    return lines, timed_out, began


def ticks_once_only(tick: Callable[[], object], log: Path) -> None:
    """A tick after the interrupt adds nothing: the turn is over and the delivery handled."""
    tick()
    assert [line.outcome.split(":")[0] for line in logfile.read_live(log)][-2:] == ["turn-timeout", "interrupted"]

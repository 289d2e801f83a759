"""The backoff ladder: gaps that double from `min` up to `max`, counted from the
target's last genuine activity.

The anchor is the target pane's agent-state epoch, except that an epoch
written within 120 s after the entry's own newest log line is taken as caused
by that delivery (the agent went busy, answered, went idle). Without that
"anchor-join" every delivery would restart the ladder at rung 1 (the
self-resetting ladder). The streak walk reconstructs how far up the ladder the
log already is, adding one poll of skew and taking the largest fitting rung
(else a 2m/4m alternation), and counting every capped gap as one more rung at
the cap (else the ladder collapses right after reaching max).

Pure functions of integers; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: An epoch at most this long after our own newest line is attributed to it.
ATTRIBUTION_WINDOW = 120
#: One poll interval of skew added when seeding the walk from the newest gap.
SEED_SKEW = 30


def gap(rung: int, lo: int, hi: int) -> int:
    """Seconds between rung `rung` and rung `rung + 1`: `lo·2^rung`, capped at `hi`.

    `hi < lo` is treated as `hi == lo` (a flat ladder).
    """
    hi = max(hi, lo)
    if rung <= 0:
        return lo
    if rung >= 62 or lo << rung >= hi:
        return hi
    return lo << rung


def offset(rung: int, lo: int, hi: int) -> int:
    """Sum of gap(0) … gap(rung): how far rung `rung + 1` lies from the anchor."""
    hi = max(hi, lo)
    total = 0
    r = 0
    while r <= rung:
        g = gap(r, lo, hi)
        if g >= hi:
            return total + hi * (rung - r + 1)
        total += g
        r += 1
    return total


@dataclass(frozen=True)
class Ladder:
    """A position on the ladder: `rung` rungs already fired since `anchor`."""

    anchor: int
    rung: int

    def next_fire(self, lo: int, hi: int) -> int:
        """When the next rung comes due (unix seconds)."""
        return self.anchor + offset(self.rung, lo, hi)


def _seed_rung(g: int, lo: int, hi: int) -> int:
    """Largest rung r >= 1 whose gap fits the newest observed gap plus one poll of
    skew; a saturated rung stops the scan (the smallest saturated rung wins)."""
    best = 0
    r = 1
    while True:
        gr = gap(r, lo, hi)
        if gr > g + SEED_SKEW:
            return best
        best = r
        if gr >= max(hi, lo):
            return best
        r += 1


def streak(history: Sequence[int], lo: int, hi: int) -> int:
    """How many of the newest lines of `history` form one climb of the ladder
    (walking back from the newest gap). 1 when only the newest line counts."""
    hi = max(hi, lo)
    n = len(history)
    count = 1
    expect = 0
    for i in range(n - 1, 0, -1):
        g = history[i] - history[i - 1]
        if expect == 0:
            expect = _seed_rung(g, lo, hi)
            if expect == 0:
                break
            count += 1
            continue
        if gap(expect, lo, hi) >= hi and g >= hi - ATTRIBUTION_WINDOW:
            count += 1  # one more rung at the cap
            continue
        expect -= 1
        if expect < 1 or g < gap(expect, lo, hi) - ATTRIBUTION_WINDOW:
            break
        count += 1
    return count


def join_anchor(epoch: int, history: Sequence[int], lo: int, hi: int) -> Ladder:
    """The ladder position from the pane's state epoch and the entry's schedule
    history (timestamps of own lines after the newest `rescheduled`, oldest first)."""
    hi = max(hi, lo)
    if not history or epoch > history[-1] + ATTRIBUTION_WINDOW:
        return Ladder(anchor=epoch, rung=0)
    s = streak(history, lo, hi)
    ladder = Ladder(anchor=history[len(history) - s] - lo, rung=s)
    newest = history[-1]
    if ladder.next_fire(lo, hi) < newest + lo:  # consistency floor
        ladder = Ladder(anchor=newest - lo, rung=1)
    return ladder

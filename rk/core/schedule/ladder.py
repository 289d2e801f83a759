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

from rk.core.settings import Settings

#: An epoch at most this long after our own newest line is attributed to it.
ATTRIBUTION_WINDOW = 120
#: The poll: the shortest gap the ticks can observe (a smaller `min` counts as
#: one poll), and the skew added when seeding the walk from the newest gap.
POLL = Settings.tick_interval


def bounds(lo: int, hi: int, poll: int = POLL) -> tuple[int, int]:
    """The ladder's effective (min, max): min at least one poll, max at least min."""
    lo = max(lo, poll)
    return lo, max(hi, lo)


def gap(rung: int, lo: int, hi: int, poll: int = POLL) -> int:
    """Seconds between rung `rung` and rung `rung + 1`: `lo·2^rung`, capped at `hi`.

    `hi < lo` is treated as `hi == lo` (a flat ladder). A `lo` below one poll
    counts as one poll: the ticks could not tell such rungs apart, and the walk
    would never see the ladder climb (it would ping every poll forever).
    """
    lo, hi = bounds(lo, hi, poll)
    if rung <= 0:
        return lo
    if rung >= 62 or lo << rung >= hi:
        return hi
    return lo << rung


def offset(rung: int, lo: int, hi: int, poll: int = POLL) -> int:
    """Sum of gap(0) … gap(rung): how far rung `rung + 1` lies from the anchor."""
    top = gap(64, lo, hi, poll)
    total = 0
    r = 0
    while r <= rung:
        g = gap(r, lo, hi, poll)
        if g >= top:
            return total + top * (rung - r + 1)
        total += g
        r += 1
    return total


@dataclass(frozen=True)
class Ladder:
    """A position on the ladder: `rung` rungs already fired since `anchor`."""

    anchor: int
    rung: int

    def next_fire(self, lo: int, hi: int, poll: int = POLL) -> int:
        """When the next rung comes due (unix seconds)."""
        return self.anchor + offset(self.rung, lo, hi, poll)


def tolerance(rung_gap: int) -> int:
    """How much shorter than its rung a gap may be and still count as that rung:
    the Go original's 120 s, but never half the rung or more. With 120 s outright, a
    rung of 120 s or less accepted any gap at all, so lines 30 s apart counted as a
    climb (`--idle-every 90s` with lines at 0, 30, …, 150 and 240 s next fired 390 s
    after the last line instead of 90 s)."""
    return min(ATTRIBUTION_WINDOW, rung_gap // 2)


def _seed_rung(g: int, lo: int, hi: int, poll: int) -> int:
    """Largest rung r >= 1 whose gap fits the newest observed gap plus one poll of
    skew; a saturated rung stops the scan (the smallest saturated rung wins)."""
    lo, hi = bounds(lo, hi, poll)
    best = 0
    r = 1
    while True:
        gr = gap(r, lo, hi, poll)
        if gr > g + poll:
            return best
        best = r
        if gr >= hi:
            return best
        r += 1


#: The walk looks at no more than this many of the newest lines. A climb that
#: fills them all is placed by its oldest visible line (see `join_anchor`), so
#: the result never depends on older lines and log rotation can drop them.
WALK_LIMIT = 32


def _walk(history: Sequence[int], lo: int, hi: int, poll: int) -> tuple[int, int, bool]:
    """Walk back from the newest gap over at most WALK_LIMIT lines.

    Returns (streak, expect, exhausted): how many newest lines form one climb,
    the rung the walk assigns to the oldest of them, and whether the climb ran
    through every line the walk may look at (the limit, not a break, ended it).

    The Go original's walk, with one repair. When the last rung below the cap lies
    within 150 s of it (120 s of tolerance plus a poll of lateness; min 2m
    max 8m20s: …, 4m, 8m, 8m20s), a gap of that rung also passes for a gap at
    the cap, and its walk then stops one rung early and the floor
    drops the ladder to 2·min right after it reached max, over and over. So
    where a gap could be either, both readings are followed and the longer
    climb wins (the original's reading on a tie).
    """
    lo, hi = bounds(lo, hi, poll)
    n = len(history)
    first = max(1, n - WALK_LIMIT + 1)
    gaps = [history[i] - history[i - 1] for i in range(n - 1, first - 1, -1)]  # newest first
    if not gaps:
        return 1, 1, False
    seed = _seed_rung(gaps[0], lo, hi, poll)
    if seed == 0:
        return 1, 1, False
    ramp_top = gap(seed - 1, lo, hi, poll) if seed >= 2 else 0  # the last rung below the cap

    def could_be_ramp_top(g: int) -> bool:
        """A gap read as capped that could as well be the ramp's last rung (no
        longer than that rung plus one poll of lateness)."""
        return ramp_top > 0 and g <= ramp_top + poll

    best = (0, 1, False)
    if gap(seed, lo, hi, poll) >= hi and could_be_ramp_top(gaps[0]):
        best = _descend(gaps, 1, seed - 1, 2, lo, hi, poll)
    i, expect, count = 1, seed, 2
    while i < len(gaps):
        g = gaps[i]
        if gap(expect, lo, hi, poll) >= hi and g >= hi - tolerance(hi):
            if could_be_ramp_top(g):  # the other reading: descend from here
                alt = _descend(gaps, i, expect, count, lo, hi, poll)
                if alt[0] > best[0]:
                    best = alt
            count += 1  # one more rung at the cap
            i += 1
            continue
        found = _descend(gaps, i, expect, count, lo, hi, poll)
        return found if found[0] >= best[0] else best
    found = (count, expect, True)
    return found if found[0] >= best[0] else best


def _descend(
    gaps: Sequence[int], i: int, expect: int, count: int, lo: int, hi: int, poll: int
) -> tuple[int, int, bool]:
    """Continue down the ramp from gaps[i], whose later line has rung `expect`.
    Returns (streak, rung of the oldest line counted, whether the gaps ran out)."""
    while i < len(gaps):
        if expect - 1 < 1 or gaps[i] < gap(expect - 1, lo, hi, poll) - tolerance(gap(expect - 1, lo, hi, poll)):
            return count, expect, False
        expect -= 1
        count += 1
        i += 1
    return count, expect, True


def _beyond_view(history: Sequence[int], lo: int, hi: int, rung: int, poll: int) -> Ladder:
    """Place a climb longer than the walk's view.

    Such a climb has long been at the cap, and the unbounded walk would put the
    next rung on the grid that starts where the climb began: `max` after each
    fire, less that fire's lateness. Every capped line i of the view predicts
    that grid point as `H[i] + (n - i)·max` plus its own lateness (under one
    poll), so the earliest prediction is within one poll of it, needs no line
    outside the view, and never pulls the ladder below the cap.
    """
    lo, hi = bounds(lo, hi, poll)
    n = len(history)
    best = history[-1] + hi
    i = n - 2
    while i >= n - WALK_LIMIT and history[i + 1] - history[i] >= hi - poll:
        best = min(best, history[i] + (n - i) * hi)
        i -= 1
    return Ladder(anchor=best - offset(rung, lo, hi, poll), rung=rung)


def join_anchor(epoch: int, history: Sequence[int], lo: int, hi: int, poll: int = POLL) -> Ladder:
    """The ladder position from the pane's state epoch and the entry's schedule
    history (timestamps of own lines after the newest `rescheduled`, oldest first)."""
    lo, hi = bounds(lo, hi, poll)
    if not history or epoch > history[-1] + ATTRIBUTION_WINDOW:
        return Ladder(anchor=epoch, rung=0)
    count, expect, ran_out = _walk(history, lo, hi, poll)
    if ran_out and len(history) > WALK_LIMIT:
        ladder = _beyond_view(history, lo, hi, expect - 1 + count, poll)
    else:
        ladder = Ladder(anchor=history[len(history) - count] - lo, rung=count)
    newest = history[-1]
    if ladder.next_fire(lo, hi, poll) < newest + lo:  # consistency floor
        ladder = Ladder(anchor=newest - lo, rung=1)
    return ladder

"""Property tests of the core (hypothesis): the ladder, the simulated ticker,
`due()` purity, durations, the cron parser and the wake fingerprint.

Rules are quoted from the reference (`rk-cron-reference.md`, §3) and
DECISIONS.md; each test names the rule it checks.
"""

from __future__ import annotations

import copy
import itertools
import math
import random
from datetime import UTC
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rk.core.bounds import MAX_DURATION
from rk.core.durations import DurationError, format_duration, format_go, parse_duration
from rk.core.log.delivery import LogLine, LogView
from rk.core.pane.facts import PaneFact, TargetFact, resolve_all
from rk.core.schedule import ladder
from rk.core.schedule.cronexpr import CronError, CronExpr
from rk.core.schedule.due import due
from rk.core.schedule.entry import WAKE_EVENT, Backoff, CreatedBy, Cron, Entry, Every, Target, WakeOn
from rk.core.schedule.simulate import AgentModel, StateChange, simulate
from rk.core.schedule.wake import Observation, fingerprint, parse_fingerprint

TICK = 30
DURATION = st.integers(min_value=1, max_value=2 * 3600)


@st.composite
def min_max(draw, lo_min: int = 1):
    lo = draw(st.integers(min_value=lo_min, max_value=2 * 3600))
    hi = draw(st.integers(min_value=lo, max_value=2 * 3600))
    return lo, hi


# =========================================================================== ladder (§3.4)


@settings(max_examples=300, deadline=None)
@given(mm=min_max(), rungs=st.integers(min_value=0, max_value=80))
def test_gap_doubles_from_min_and_is_capped_at_max(mm, rungs):
    """gap(r) = min·2^r until it would reach max, then max: non-decreasing, ≤ max,
    gap(0) = min, and it does reach max (with min taken as at least one poll)."""
    lo, hi = ladder.bounds(*mm)
    assert (lo, hi) == (max(mm[0], 30), max(mm[1], mm[0], 30))
    gaps = [ladder.gap(r, lo, hi) for r in range(rungs + 1)]
    assert gaps[0] == lo
    assert all(a <= b for a, b in itertools.pairwise(gaps))
    assert all(g <= hi for g in gaps)
    assert gaps == [min(lo * 2**r, hi) for r in range(rungs + 1)]
    assert ladder.gap(rungs + 64, lo, hi) == hi


@settings(max_examples=300, deadline=None)
@given(mm=min_max(), rung=st.integers(min_value=0, max_value=80))
def test_offset_is_the_sum_of_gaps(mm, rung):
    """offset(r) = gap(0) + … + gap(r) (next_fire = anchor + offset(rung))."""
    lo, hi = mm
    assert ladder.offset(rung, lo, hi) == sum(ladder.gap(r, lo, hi) for r in range(rung + 1))
    assert ladder.Ladder(anchor=1000, rung=rung).next_fire(lo, hi) == 1000 + ladder.offset(rung, lo, hi)


@st.composite
def attributed_history(draw):
    """(min, max, epoch, history): history of own-line timestamps (non-decreasing,
    possibly several lines in one tick), epoch attributed to it (≤ newest + 120 s)."""
    lo, hi = draw(min_max())
    base = draw(st.integers(min_value=1_700_000_000, max_value=1_800_000_000))
    gaps = draw(
        st.lists(
            st.one_of(
                st.integers(min_value=0, max_value=3 * hi + 300),
                st.sampled_from([0, lo, hi, 2 * lo, hi - 120, hi + 29]),
                st.integers(min_value=0, max_value=3 * hi + 300).map(lambda g: g - g % TICK),
            ).map(lambda g: max(0, g)),
            max_size=14,
        )
    )
    history = [base]
    for g in gaps:
        history.append(history[-1] + g)
    newest = history[-1]
    epoch = draw(
        st.one_of(st.integers(min_value=1, max_value=newest + ladder.ATTRIBUTION_WINDOW), st.just(newest + 120))
    )
    return lo, hi, epoch, history


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=attributed_history())
def test_joined_next_fire_is_never_before_newest_plus_min(case):
    """Consistency floor (§3.4 step 3): with an attributed epoch, the next fire is
    never earlier than the newest own line + min, whatever the history."""
    lo, hi, epoch, history = case
    position = ladder.join_anchor(epoch, history, lo, hi)
    assert position.rung >= 1
    assert position.next_fire(lo, hi) >= history[-1] + lo


@settings(max_examples=300, deadline=None)
@given(mm=min_max(), history=st.lists(st.integers(0, 10**6), max_size=6), skew=st.integers(121, 10**6))
def test_unattributed_epoch_restarts_the_ladder(mm, history, skew):
    """An epoch more than 120 s after the newest own line (or no history) is
    genuine activity: ladder (epoch, 0), next fire = epoch + min (§3.4 step 1;
    a min below one poll counts as one poll)."""
    lo, hi = mm
    history = sorted(history)
    epoch = (history[-1] if history else 0) + skew
    position = ladder.join_anchor(epoch, history, lo, hi)
    assert position == ladder.Ladder(anchor=epoch, rung=0)
    assert position.next_fire(lo, hi) == epoch + max(lo, 30)


def near_cap(lo: int, hi: int) -> bool:
    """A rung just under the cap (max − 120 s ≤ min·2^k < max, k ≥ 1), e.g. min 2m
    max 8m20s, min 1m max 16m40s. The reference walk miscounted such a climb (the
    seed landed on the capped rung, or the near-cap gap counted as "at the cap")
    and the consistency floor then dropped the ladder back to 2·min right after
    it reached max, over and over; rk follows both readings. The examples marked
    `was:` below are those regressions."""
    return any(hi - 120 <= ladder.gap(k, lo, hi) < hi for k in range(1, 64))


@settings(max_examples=400, deadline=None)
@given(
    mm=min_max(lo_min=16),
    fired=st.integers(min_value=1, max_value=90),  # past the walk's 64-line view too
    busy=st.integers(0, 120),
    epoch0=st.integers(1_700_000_000, 1_800_000_000),
)
@example(mm=(60, 1800), fired=9, busy=20, epoch0=1_750_000_000)
@example(mm=(120, 500), fired=3, busy=20, epoch0=1_750_000_000)  # was: next is newest + 240, not + 500
@example(mm=(31, 249), fired=4, busy=0, epoch0=1_700_000_000)  # was: next is newest + 62, not + 249
def test_walk_reconstructs_an_exact_climb(mm, fired, busy, epoch0):
    """Fires exactly on each rung since epoch E (E+gap0, then +gap1, …) and an
    attributed epoch: the join finds the whole streak and the next fire is
    newest + gap(n) (§3.4 step 2; "capped gaps stay at the cap", §7 bug 3).
    (With min < 16 s two rungs fit in one poll of seed skew — the reference
    calls such a min unobservable — so min starts at 16 s.)"""
    lo, hi = mm
    history = [epoch0 + ladder.offset(r, lo, hi) for r in range(fired)]
    position = ladder.join_anchor(history[-1] + busy, history, lo, hi)
    assert position.next_fire(lo, hi) - history[-1] == ladder.gap(fired, lo, hi), (
        f"min {lo} max {hi}: after {fired} exact fires (gaps "
        f"{[ladder.gap(r, lo, hi) for r in range(1, fired)]}) the join gives {position}, "
        f"next gap {position.next_fire(lo, hi) - history[-1]}, want {ladder.gap(fired, lo, hi)}"
    )


# =========================================================================== simulated ticker


def _backoff(lo: int, hi: int) -> Entry:
    return Entry(
        id="bk01",
        schedule=Backoff(min=lo, max=hi),
        target=Target(kind="pane", value="%1"),
        payload="tick",
        created_by=CreatedBy(at=0),
    )


def _quick(busy: int, lo: int) -> int:
    """An answer time shorter than the first gap (min, at least one poll): the
    agent is at rest again before its next rung comes due, so the ladder's own
    timing shows. (A longer turn delays the fire until the turn ends: quiet
    means quiet, see test_backoff_never_fires_into_a_working_agent.)"""
    return max(1, min(busy, max(lo, TICK) - 1))


def _quiet_pane_fires(lo: int, hi: int, phase: int, busy: int, span: int) -> list[int]:
    start = 1_750_000_000
    sim = simulate(
        [_backoff(lo, hi)],
        start=start,
        end=start + span,
        tick=TICK,
        phase=phase,
        script=[StateChange(start, "%1", "idle")],
        agents={"%1": AgentModel(busy_for=busy)},
    )
    return [line.ts for line in sim.fires("bk01")]


def _span_to_cap(lo: int, hi: int, extra_gaps: int) -> int:
    """Long enough to climb to the cap and fire `extra_gaps` more times there."""
    rung = 0
    while ladder.gap(rung, lo, hi) < hi:
        rung += 1
    return ladder.offset(rung, lo, hi) + 30 * (rung + 1) + extra_gaps * (hi + TICK) + 600


@settings(max_examples=80, deadline=None)
@given(mm=min_max(), phase=st.integers(0, TICK - 1), busy=st.integers(1, 119))
@example(mm=(60, 1800), phase=0, busy=20)  # reference bug 1
@example(mm=(60, 1800), phase=17, busy=45)  # reference bug 2
@example(mm=(60, 300), phase=11, busy=30)  # reference bug 3
@example(mm=(1, 33), phase=0, busy=1)  # min and max about one poll: a fire every tick
@example(mm=(34, 946), phase=8, busy=93)  # at the cap: 960, 930, 960, … (one poll of jitter)
@example(mm=(120, 500), phase=0, busy=20)  # was: 240, 480, 240, 480, … never reaches 500
@example(mm=(60, 1000), phase=0, busy=20)  # was: 120 … 960, 1020, then 120 again
@example(mm=(20, 780), phase=23, busy=15)  # was: 60, 60, 180, 300, 660, 780, then 60 again
def test_quiet_pane_gaps_never_shrink_and_never_exceed_max(mm, phase, busy):
    """A quiet pane whose agent answers each delivery (active at once, idle `busy`
    s later, an attributed epoch): the gaps between fires never fall back — no
    self-reset, no 2m/4m alternation, no collapse after reaching max (reference
    §7 bugs 1–3) — and no gap exceeds max + one poll.

    "Never fall back" holds up to one poll: fires land on the 30-s tick grid
    while the ladder is anchored (next = anchor + offset(rung), §3.4), so a late
    tick is paid back by the next gap — at the cap the gaps of min 34 s max 946 s
    are 960, 930, 960, …, averaging max. A drop of more than 30 s is a reset."""
    lo, hi = mm
    times = _quiet_pane_fires(lo, hi, phase, _quick(busy, lo), _span_to_cap(lo, hi, 6))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) >= 6, times
    drops = [(i, a, b) for i, (a, b) in enumerate(itertools.pairwise(gaps)) if b < a - TICK]
    assert not drops, f"min {lo} max {hi} phase {phase} busy {busy}: gaps fall back {drops[:3]} in {gaps[:16]}"
    assert all(g <= hi + TICK for g in gaps), f"gap over max {hi} + one poll: {gaps}"


@settings(max_examples=80, deadline=None)
@given(mm=min_max(), phase=st.integers(0, TICK - 1), busy=st.integers(1, 119))
@example(mm=(60, 1800), phase=17, busy=45)
@example(mm=(1, 1800), phase=0, busy=20)  # was: every 30 s, forever
@example(mm=(120, 500), phase=0, busy=20)  # was: 240, 480, 240, 480, …
def test_quiet_pane_backs_off_to_max(mm, phase, busy):
    """The point of a backoff ladder: once the climb is over, a quiet pane is
    pinged once per max (± one poll, see above), whatever min is — the reference
    allows a min under one poll (§3.4 "min < 30 s is allowed by validation"), it
    just cannot time the first rungs precisely."""
    lo, hi = mm
    times = _quiet_pane_fires(lo, hi, phase, _quick(busy, lo), _span_to_cap(lo, hi, 6))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    tail = gaps[-4:]
    assert tail and all(hi - TICK <= g <= hi + TICK for g in tail), (
        f"min {lo} max {hi} phase {phase} busy {busy}: last gaps {tail}, want max ± {TICK} s; all gaps {gaps[:20]}"
    )


@settings(max_examples=5, deadline=None)
@given(mm=min_max(lo_min=30), phase=st.integers(0, TICK - 1), busy=st.integers(1, 119))
@example(mm=(60, 1800), phase=17, busy=45)
@example(mm=(180, 180), phase=3, busy=90)
@example(mm=(60, 300), phase=11, busy=30)
@example(mm=(157, 5145), phase=0, busy=1)  # was: a ramp gap 16 s late read as capped, back to rung 1 each time
def test_a_long_quiet_stretch_stays_at_max(mm, phase, busy):
    """Eighty fires at the cap — past the walk's view (`ladder.WALK_LIMIT` lines):
    the ladder stays at max ± one poll and never drifts or resets."""
    lo, hi = mm
    assume(not near_cap(lo, hi))  # shown by the two tests above
    times = _quiet_pane_fires(lo, hi, phase, _quick(busy, lo), _span_to_cap(lo, hi, 80))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) > ladder.WALK_LIMIT + 10
    at_cap = gaps[-70:]
    assert all(hi - TICK <= g <= hi + TICK for g in at_cap), f"min {lo} max {hi}: {sorted(set(at_cap))}"
    if hi - lo >= TICK:
        # a climbing ladder is anchored (§3.4): at the cap the fires stay on the
        # grid anchor + offset(rung), so 70 gaps add up to 70·max within a poll.
        # (Not so when max − min < one poll: a late tick can put the grid point
        # under newest + min, and the consistency floor re-anchors at the newest
        # line; nor for a flat ladder: next = newest + min.)
        assert abs(sum(at_cap) - 70 * hi) <= TICK, f"drift {sum(at_cap) - 70 * hi} s over 70 gaps"


@settings(max_examples=60, deadline=None)
@given(d=DURATION, phase=st.integers(0, TICK - 1), busy=st.integers(1, 119))
@example(d=180, phase=0, busy=20)
@example(d=181, phase=29, busy=119)
def test_flat_ladder_fires_every_min_rounded_up_to_the_poll(d, phase, busy):
    """Flat ladder (min = max = d): next = newest own line + d, and a fire lands on
    the first tick at or after it when the agent is not working. Every fire is
    itself on the 30-s tick grid, so every gap is the longer of d and the
    agent's answer (`busy`, under the 120-s attribution window) rounded up to a
    whole poll: 30·⌈max(d, busy)/30⌉. The first fire comes d after the pane went
    idle, rounded up to a tick."""
    start = 1_750_000_000
    times = _quiet_pane_fires(d, d, phase, busy, 12 * max(d, TICK, busy) + 600)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    d = max(d, TICK)  # a min below one poll counts as one poll
    want = TICK * math.ceil(max(d, busy) / TICK)
    assert len(gaps) >= 8
    assert set(gaps) == {want}, f"flat ladder d={d}: gaps {gaps}"
    first_tick = start + phase + TICK * math.ceil(max(0, d - phase) / TICK)
    assert times[0] == first_tick


@settings(max_examples=60, deadline=None)
@given(mm=min_max(), phase=st.integers(0, TICK - 1), busy=st.integers(1, 119))
@example(mm=(60, 60), phase=0, busy=100)  # --idle-every 1m into an agent that works 100 s per prompt
@example(mm=(34, 946), phase=8, busy=93)
def test_backoff_never_fires_into_a_working_agent(mm, phase, busy):
    """Quiet means quiet: whatever the ladder and however long the agent works
    after each prompt, no backoff fire lands while the target reads active, the
    ladder still climbs (gaps ≥ min), and no gap exceeds max + the turn + a poll."""
    lo, hi = mm
    start = 1_750_000_000
    sim = simulate(
        [_backoff(lo, hi)],
        start=start,
        end=start + _span_to_cap(lo, hi, 4),
        tick=TICK,
        phase=phase,
        script=[StateChange(start, "%1", "idle")],
        agents={"%1": AgentModel(busy_for=busy)},
    )
    seen = dict(sim.strip)
    times = [line.ts for line in sim.fires("bk01")]
    assert len(times) >= 4
    assert all(seen[t].get("%1") != "active" for t in times), [(t, seen[t]) for t in times]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(max(lo, TICK) <= g <= hi + busy + 2 * TICK for g in gaps), gaps


# =========================================================================== due() is pure

PANE_IDS = [f"%{n}" for n in (0, 1, 2, 3, 9, 10, 11, 42)]
STATES = ["", "active", "waiting", "idle"]
NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
CRONS = ["*/5 * * * *", "0 9 * * 1-5", "30 2 * * *", "0 * * * *", "15,45 1 * * *", "0 0 1 * *", "*/1 * * * *"]
OUTCOMES = [
    "delivered",
    "failed: boom",
    "skipped-busy: active",
    "held-expired: waiting",
    "rate-capped",
    "skipped-absent",
    "notified-absent",
    "respawned",
    "respawn-failed: exit 1",
    "missed",
    "rescheduled",
    "expired-orphan",
    "no-deliverer",
]


@st.composite
def schedules(draw):
    kind = draw(st.sampled_from(["every", "cron", "backoff"]))
    if kind == "every":
        return Every(interval=draw(DURATION))
    if kind == "backoff":
        lo, hi = draw(min_max())
        return Backoff(min=lo, max=hi)
    return Cron(
        expr=draw(st.sampled_from(CRONS)),
        tz=draw(st.sampled_from(["", "", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])),
        catch_up=draw(st.sampled_from(["", "once"])),
    )


@st.composite
def entries(draw):
    n = draw(st.integers(0, 12))
    out = []
    for i in range(n):
        kind = draw(st.sampled_from(["pane", "role", "session"]))
        value = (
            draw(st.sampled_from(PANE_IDS + ["%77"]))
            if kind == "pane"
            else draw(st.sampled_from(["r0", "r1", "s0", "s1"]))
        )
        wake = draw(
            st.one_of(
                st.none(),
                st.builds(
                    WakeOn, event=st.sampled_from([WAKE_EVENT, WAKE_EVENT, "bogus"]), debounce=st.integers(0, 600)
                ),
            )
        )
        out.append(
            Entry(
                id=f"e{i}",
                schedule=draw(schedules()),
                target=Target(kind=kind, value=value),
                payload="p",
                deliver=draw(st.sampled_from(["", "immediate", "when-idle", "skip-if-busy"])),
                wake_on=wake,
                muted=draw(st.booleans()) and draw(st.booleans()),
                muted_until=draw(st.one_of(st.just(0), st.integers(NOW - 600, NOW + 600))),
                created_by=CreatedBy(at=draw(st.integers(NOW - 5 * 86400, NOW))),
            )
        )
    return out


@st.composite
def panes(draw):
    ids = draw(st.lists(st.sampled_from(PANE_IDS), unique=True, max_size=len(PANE_IDS)))
    return [
        PaneFact(
            pane_id=p,
            state=draw(st.sampled_from(STATES)),
            epoch=draw(st.integers(0, NOW)),
            window_id=f"@{i}",
            role=draw(st.sampled_from(["", "r0", "r1"])),
            session_ref=draw(st.sampled_from(["", "s0", "claude:s1"])),
            active=draw(st.booleans()),
        )
        for i, p in enumerate(ids)
    ]


@st.composite
def log_lines(draw, ids):
    n = draw(st.integers(0, 40))
    stamps = sorted(draw(st.lists(st.integers(NOW - 3 * 86400, NOW), min_size=n, max_size=n)))
    return [
        LogLine(
            ts,
            draw(st.sampled_from(ids + ["gone"])),
            draw(st.sampled_from(PANE_IDS + [""])),
            draw(st.sampled_from(["schedule", "wake", "edit", "manual", ""])),
            draw(st.sampled_from(OUTCOMES)),
        )
        for ts in stamps
    ]


@st.composite
def due_inputs(draw):
    es = draw(entries())
    ps = draw(panes())
    ids = [e.id for e in es] or ["e0"]
    targets = resolve_all(es, ps)
    for e in es:
        if draw(st.integers(0, 5)) == 0:
            targets[e.id] = TargetFact(why="overridden: unresolved")
        elif draw(st.integers(0, 8)) == 0:
            del targets[e.id]  # a missing fact counts as unresolved
    cursor = {}
    for e in es:
        if draw(st.booleans()):
            seen = {
                p: draw(st.sampled_from(STATES))
                for p in draw(st.lists(st.sampled_from(PANE_IDS), unique=True, max_size=4))
            }
            cursor[e.id] = Observation(fingerprint=fingerprint(seen), observed_at=draw(st.integers(NOW - 3600, NOW)))
    return {
        "entries": tuple(es),
        "lines": draw(log_lines(ids)),
        "panes": ps,
        "targets": targets,
        "cursor": cursor,
        "now": NOW + draw(st.integers(-3600, 3600)),
        "zone": draw(st.sampled_from([UTC, ZoneInfo("Europe/Berlin"), ZoneInfo("Australia/Lord_Howe")])),
        "max_entries": draw(st.integers(1, 60)),
    }


def _call(inp, panes_arg=None):
    return due(
        inp["entries"],
        inp["log"],
        inp["panes"] if panes_arg is None else panes_arg,
        inp["targets"],
        inp["cursor"],
        inp["now"],
        zone=inp["zone"],
        max_entries=inp["max_entries"],
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw=due_inputs())
def test_due_is_deterministic_and_leaves_its_inputs_alone(raw):
    """§3.2: "Output is deterministic; inputs (cursor, state map) are never mutated"."""
    inp = dict(raw, log=LogView(raw["lines"]))
    snapshot = copy.deepcopy({k: v for k, v in inp.items() if k != "log"})
    lines_before = tuple(inp["log"].lines)
    own_before = {e.id: tuple(inp["log"].own(e.id)) for e in inp["entries"]}

    first = _call(copy.deepcopy(inp))
    second = _call(copy.deepcopy(inp))
    direct = _call(inp)
    assert first == second == direct

    assert inp["entries"] == snapshot["entries"]
    assert inp["panes"] == snapshot["panes"]
    assert inp["targets"] == snapshot["targets"]
    assert inp["cursor"] == snapshot["cursor"]
    assert tuple(inp["log"].lines) == lines_before
    assert {e.id: tuple(inp["log"].own(e.id)) for e in inp["entries"]} == own_before
    assert direct.next_cursor is not inp["cursor"]

    # the output is the caller's: changing it does not reach the inputs
    direct.next_cursor.clear()  # type: ignore[attr-defined]
    assert inp["cursor"] == snapshot["cursor"]

    # the pane enumeration order does not matter to due() (the fingerprint sorts)
    shuffled = list(inp["panes"])
    random.Random(len(shuffled)).shuffle(shuffled)
    assert _call(inp, panes_arg=shuffled) == first
    assert _call(inp, panes_arg={p.pane_id: p for p in shuffled}) == first

    # one decision per entry per tick, and only for known entries
    fired = [f.entry for f in first.fires + first.absent]
    assert len(fired) == len(set(fired))
    assert set(fired) <= {e.id for e in inp["entries"][: inp["max_entries"]]}
    assert all(f.pane for f in first.fires) and not any(f.pane for f in first.absent)


# =========================================================================== durations


@settings(max_examples=300, deadline=None)
@given(s=st.one_of(st.integers(0, MAX_DURATION), st.sampled_from([0, 1, 59, 60, 61, 3599, 3600, 3601, 86400, 90061])))
def test_short_and_go_forms_round_trip(s):
    """Durations are written in short form and read in short and Go form."""
    assert parse_duration(format_duration(s)) == s
    assert parse_duration(format_go(s)) == s


@settings(max_examples=300, deadline=None)
@given(s=st.integers(MAX_DURATION + 1, 10**30))
def test_a_duration_past_ten_years_is_refused_in_either_form(s):
    for text in (format_duration(s), format_go(s)):
        try:
            parse_duration(text)
        except DurationError as exc:
            assert "too long" in str(exc) or "too long to be one" in str(exc)
            continue
        raise AssertionError(f"{text!r} parsed")


@settings(max_examples=300, deadline=None)
@given(
    terms=st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from(["h", "m", "s", "ms", "us", "ns", "d"])),
        min_size=1,
        max_size=5,
    )
)
def test_composed_durations_sum_their_terms(terms):
    """`1h30m`, `90s`, `1500ms`…: the value is the sum of the terms; a total that is
    not a whole number of seconds is refused with DurationError."""
    ns = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1, "d": 86400 * 10**9}
    text = "".join(f"{n}{u}" for n, u in terms)
    total = sum(n * ns[u] for n, u in terms)
    if total % 10**9 or total > MAX_DURATION * 10**9:
        try:
            parse_duration(text)
        except DurationError:
            return
        raise AssertionError(f"{text!r} is not whole seconds, or is past ten years, but parsed")
    assert parse_duration(text) == total // 10**9


@settings(max_examples=500, deadline=None)
@given(
    junk=st.one_of(
        st.text(),
        st.text(alphabet="0123456789.+-hmsuµnd :_eE", max_size=12),
        st.none(),
        st.integers(),
        st.floats(),
        st.booleans(),
        st.binary(),
        st.lists(st.text(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )
)
@example(junk="-5s")
@example(junk="5")
@example(junk="1.5s")
@example(junk="s")
@example(junk="1h-5m")
@example(junk="9" * 400 + "h")
def test_garbage_durations_raise_only_duration_error(junk):
    """A duration either reads as whole non-negative seconds or raises DurationError
    — never TypeError, ValueError of another kind, or OverflowError."""
    try:
        value = parse_duration(junk)
    except DurationError:
        return
    assert isinstance(value, int) and value >= 0
    assert isinstance(junk, str)


# =========================================================================== cron parser

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
FIELDS = [(0, 59, None, 0), (0, 23, None, 0), (1, 31, None, 0), (1, 12, MONTHS, 1), (0, 7, DAYS, 0)]


@st.composite
def cron_term(draw, index: int):
    """One term of field `index` and the values it means (standard cron)."""
    lo, hi, names, base = FIELDS[index]

    def spell(v: int) -> str:
        if names and base <= v < base + len(names) and draw(st.booleans()):
            name = names[v - base]
            return draw(st.sampled_from([name, name.upper(), name.capitalize()]))
        return str(v)

    kind = draw(st.sampled_from(["num", "range", "range-step", "star-step", "star"]))
    if kind == "num":
        v = draw(st.integers(lo, hi))
        return spell(v), {v}
    if kind == "star":
        return "*", set(range(lo, hi + 1))
    if kind == "star-step":
        step = draw(st.integers(1, hi - lo + 2))
        return f"*/{step}", set(range(lo, hi + 1 if index != 4 else 7, step))
    a = draw(st.integers(lo, hi))
    b = draw(st.integers(a, hi))  # a == b included: `5-5` is minute 5
    if kind == "range":
        return f"{spell(a)}-{spell(b)}", set(range(a, b + 1))
    step = draw(st.integers(1, hi - lo + 2))
    return f"{spell(a)}-{spell(b)}/{step}", set(range(a, b + 1, step))


@st.composite
def cron_field(draw, index: int):
    terms = draw(st.lists(cron_term(index), min_size=1, max_size=4))
    if len(terms) > 1:  # `*` alone, never in a list
        terms = [t for t in terms if t[0] != "*"] or [terms[0]]
    values: set[int] = set()
    for _, v in terms:
        values |= v
    return ",".join(t for t, _ in terms), values


@st.composite
def cron_expressions(draw):
    fields = [draw(cron_field(i)) for i in range(5)]
    text = " ".join(f for f, _ in fields)
    return text, [v for _, v in fields]


@settings(max_examples=250, deadline=None)
@given(case=cron_expressions())
def test_valid_expressions_parse(case):
    """Numbers, ranges, steps, lists and month/day names in any case parse, unless
    the day fields can never match a real date (e.g. `0 0 30 2 *`)."""
    text, values = case
    doms, months = values[2], values[3]
    day_and = text.split()[2].startswith("*") or text.split()[4].startswith("*")
    max_days = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    possible = not day_and or text.split()[2].startswith("*") or any(d <= max_days[m - 1] for m in months for d in doms)
    try:
        CronExpr.parse(text)
    except CronError as exc:
        assert not possible, f"{text!r} refused: {exc}"
        return
    assert possible, f"{text!r} can never fire but parsed"


@settings(max_examples=250, deadline=None)
@given(case=cron_expressions())
@example(case=("5-5/10 9-9 15-15 jun-jun 7-7", [{5}, {9}, {15}, {6}, {7}]))
@example(
    case=(
        "*/7 */5 */10 */4 */2",
        [set(range(0, 60, 7)), set(range(0, 24, 5)), set(range(1, 32, 10)), set(range(1, 13, 4)), {0, 2, 4, 6}],
    )
)
def test_parsed_fields_mean_what_standard_cron_means(case):
    """The expansion: minutes×hours as minutes of the day, day-of-month, month, and
    day-of-week with 7 = Sunday; `a-a` is the one value a (croniter 7 read it as
    the whole field)."""
    text, (minutes, hours, doms, months, dows) = case
    try:
        expr = CronExpr.parse(text)
    except CronError:
        assume(False)
    assert expr.times == tuple(sorted(h * 60 + m for h in hours for m in minutes))
    assert expr.doms == frozenset(doms)
    assert expr.months == frozenset(months)
    assert expr.dows == frozenset(d % 7 for d in dows)
    fields = text.split()
    assert expr.day_and == (fields[2].startswith("*") or fields[4].startswith("*"))
    assert expr.fixed_time == (not fields[0].startswith("*") and not fields[1].startswith("*"))


CRON_JUNK = st.one_of(
    st.text(),
    st.text(alphabet="0123456789*/-, LW#?janmonSUNx\t", max_size=30),
    st.lists(st.text(alphabet="0123456789*/-,", min_size=1, max_size=8), min_size=5, max_size=5).map(" ".join),
    st.lists(
        st.sampled_from(
            [
                "*",
                "*/0",
                "*/99999999999999999999",
                "0-99999999999999",
                "5-3",
                "-1",
                "1-",
                "/5",
                "L",
                "5W",
                "1#2",
                "?",
                "mon-fri",
                "jan",
                "60",
                "24",
                "0",
                "32",
                "13",
                "8",
                "7",
                "",
            ]
        ),
        min_size=5,
        max_size=5,
    ).map(" ".join),
)


@settings(max_examples=600, deadline=None)
@given(junk=CRON_JUNK)
@example(junk="@daily")
@example(junk="0 0 31 2 *")
@example(junk="*/99999999999999999999 * * * *")
@example(junk="1-99999999999999999999 * * * *")
@example(junk="0 0 * * 1#6")
@example(junk="0 0 L * *")
@example(junk="TZ=UTC 0 0 * * *")
def test_garbage_expressions_raise_only_cron_error(junk):
    """CronExpr.parse either returns an expression or raises CronError."""
    try:
        expr = CronExpr.parse(junk)
    except CronError:
        return
    assert len(expr.text.split()) == 5 and expr.times


# =========================================================================== wake fingerprint

STATE_VALUES = st.sampled_from(["", "active", "waiting", "idle", "weird-state"])


@settings(max_examples=300, deadline=None)
@given(states=st.dictionaries(st.integers(0, 100_000).map(lambda n: f"%{n}"), STATE_VALUES, max_size=30))
def test_fingerprint_round_trips_the_known_states(states):
    """parse(fingerprint(m)) == m without unknown states (§3.6)."""
    assert parse_fingerprint(fingerprint(states)) == {k: v for k, v in states.items() if v}


@settings(max_examples=300, deadline=None)
@given(
    states=st.dictionaries(st.integers(0, 100_000).map(lambda n: f"%{n}"), STATE_VALUES, max_size=30),
    pick=st.integers(0, 1000),
)
@example(states={"%9": "idle", "%10": "idle", "%100": "active"}, pick=0)
def test_fingerprint_is_in_pane_id_string_order_and_excludes_the_target(states, pick):
    """`pane=state\\n` per known pane, sorted by pane-id *string* (`%10` before
    `%9`), leaving out the entry's own target."""
    fp = fingerprint(states)
    lines = fp.splitlines()
    assert fp == "".join(line + "\n" for line in lines)
    panes_in_order = [line.split("=", 1)[0] for line in lines]
    assert panes_in_order == sorted(p for p, s in states.items() if s)
    if states.get("%9") and states.get("%10"):
        assert panes_in_order.index("%10") < panes_in_order.index("%9")
    if states:
        exclude = sorted(states)[pick % len(states)]
        assert parse_fingerprint(fingerprint(states, exclude=exclude)) == {
            k: v for k, v in states.items() if v and k != exclude
        }


# =========================================================================== log rotation


def test_rotation_keeps_the_live_segment_bounded_while_entries_come_and_go(tmp_path):
    """DECISIONS §2: the live log rotates into archives and "a tick reads only the
    live segment, so its cost does not grow with history".

    A server with 5 entries, each firing every 2 hours; twice a day one entry is
    removed (`rk cron rm`, or orphan GC) and a new id takes its place. Appended
    hourly and rotated after each append, as the tick does. Expected: the live
    segment stays around max_bytes. Got: `lines_to_keep` keeps each id's newest
    line (and orphan-run start) for every id that ever wrote a line — removed
    entries included, as rotation cannot tell them from live ones — so the live
    segment grows by ~one line per removed entry, for ever, and once those lines
    fill 3/4 of it no rotation frees enough to happen at all. (A fix needs the
    ids of the entries that still exist; pass them here when the signature has
    them.)"""
    from rk.store.delivery_log import append_lines, read_live, rotate_if_needed

    path = tmp_path / "s.log"
    max_bytes = 4096
    rng = random.Random(5)
    t = 1_750_000_000
    live = [f"e{n:03d}" for n in range(5)]
    next_id = len(live)
    due_at = {e: t + rng.randint(0, 7200) for e in live}
    for hour in range(24 * 60):
        t += 3600
        if hour % 12 == 0:  # twice a day: one entry goes, a new one comes
            gone = live.pop(rng.randrange(len(live)))
            del due_at[gone]
            new = f"e{next_id:03d}"
            next_id += 1
            live.append(new)
            due_at[new] = t + rng.randint(0, 7200)
        batch = []
        for e in live:
            if due_at[e] <= t:
                batch.append(LogLine(t, e, "%1", "schedule", "delivered"))
                due_at[e] = t + 7200
        append_lines(path, batch)
        rotate_if_needed(path, t, backoff={}, max_bytes=max_bytes, keep_archives=3, live=set(live))
    size = path.stat().st_size
    ids = {line.entry for line in read_live(path)}
    assert size <= 2 * max_bytes, (
        f"live segment {size} bytes (max_bytes {max_bytes}) holding lines of {len(ids)} ids, "
        f"{len(ids - set(live))} of them removed entries"
    )


@settings(max_examples=200, deadline=None)
@given(
    states=st.dictionaries(st.sampled_from(PANE_IDS), st.sampled_from(STATES)), exclude=st.sampled_from([*PANE_IDS, ""])
)
def test_the_sliced_fingerprint_equals_the_built_one(states, exclude):
    from rk.core.schedule.wake import Fingerprints, fingerprint

    assert Fingerprints(states).without(exclude) == fingerprint(states, exclude=exclude)

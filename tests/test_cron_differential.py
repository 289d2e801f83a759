"""Differential test: our cron occurrences (`rk.core.schedule.cronexpr`) against cronsim.

cronsim is an independent implementation of the same rule (Debian cron's DST
rule, DECISIONS §2 "Time zones"). For several hundred random expressions in
eight zones, starting a little before each 2025–2027 DST transition, we walk
`CronExpr.next_after` and cronsim side by side and compare UTC instants.

cronsim has known defects, so a disagreement is adjudicated by a third,
brute-force oracle that reads the rule literally on the UTC minute line:

* an expression whose minute or hour field starts with `*` ("follows the
  clock") fires at every real instant whose wall time matches;
* a fixed-time expression fires at a matching wall time on its first pass
  only, and once at the first instant after a jump that skipped a matching
  wall time.

The oracle parses with cronsim's field parser (not ours), and scans every
UTC minute, so it shares no code with `rk.core.schedule.cronexpr`. Assertions:

1. every instant we return is an occurrence for the oracle;
2. near each transition (a 26-hour window) we return exactly the oracle's
   occurrences — nothing missed;
3. every cronsim instant (after dropping results at or before the previous
   instant, its fold=1 quirk) is ours, unless the oracle says cronsim is
   wrong; every instant of ours cronsim lacks is an oracle occurrence. The
   cronsim defects found are pinned in `test_cronsim_defects_we_do_not_copy`;
4. `latest_in(lo, hi)` is the latest adjudicated occurrence in (lo, hi].
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim, CronSimError

from rk.core.schedule.cronexpr import CronError, CronExpr

ZONES = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Europe/London",
    "Australia/Sydney",
    "Australia/Lord_Howe",  # 30-minute shifts
    "America/Santiago",  # transitions at local midnight
    "Pacific/Auckland",
]
YEARS = (2025, 2027)
RANDOM_EXPRESSIONS = 400
WINDOW = 26 * 3600  # completeness is checked up to this long after each transition
LEAD = 60 * 60  # walks start up to this long before a transition (or up to an hour after)
MIN_OCCURRENCES = 24
MAX_OCCURRENCES = 180
DENSE = 60  # a walk this long may stop half an hour past the transition

MINUTE = timedelta(minutes=1)


# --------------------------------------------------------------------------- zones


def _offset(t: int, zone) -> int:
    return int(datetime.fromtimestamp(t, zone).utcoffset().total_seconds())


@cache
def transitions(zone_name: str) -> tuple[int, ...]:
    """UTC instants (unix seconds) where the zone's offset changes, 2025–2027."""
    zone = ZoneInfo(zone_name)
    t = int(datetime(YEARS[0], 1, 1, tzinfo=UTC).timestamp())
    end = int(datetime(YEARS[1] + 1, 1, 1, tzinfo=UTC).timestamp())
    out = []
    prev = _offset(t, zone)
    while t < end:
        nxt = t + 3600
        off = _offset(nxt, zone)
        if off != prev:
            lo, hi = t, nxt
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _offset(mid, zone) == prev:
                    lo = mid
                else:
                    hi = mid
            out.append(hi)
            prev = off
        t = nxt
    if not out:  # UTC: month ends, a leap-day neighbourhood, the new year
        out = [
            int(datetime(y, m, d, tzinfo=UTC).timestamp())
            for (y, m, d) in [(2025, 3, 1), (2025, 12, 31), (2026, 2, 28), (2027, 1, 1), (2027, 6, 30), (2027, 10, 31)]
        ]
    return tuple(out)


def test_every_dst_zone_has_six_transitions_in_range():
    """The fixture itself: each DST zone changes offset twice a year, 2025–2027."""
    for name in ZONES[1:]:
        assert len(transitions(name)) == 6, name


# --------------------------------------------------------------------------- oracle


@dataclass(frozen=True)
class Oracle:
    """The DST rule read literally, with cronsim's field parser (not ours)."""

    minutes: frozenset
    hours: frozenset
    days: frozenset
    months: frozenset
    weekdays: frozenset
    day_and: bool
    fixed: bool

    @staticmethod
    def of(expr: str) -> Oracle:
        cs = CronSim(expr, datetime(2000, 1, 1))  # naive start: parse only
        fields = expr.split()
        return Oracle(
            frozenset(cs.minutes),
            frozenset(cs.hours),
            frozenset(cs.days),
            frozenset(cs.months),
            frozenset(cs.weekdays),
            cs.day_and,
            not fields[0].startswith("*") and not fields[1].startswith("*"),
        )

    def matches(self, w: datetime) -> bool:
        if w.minute not in self.minutes or w.hour not in self.hours or w.month not in self.months:
            return False
        dom_ok = w.day in self.days
        dow = w.isoweekday() % 7
        dow_ok = dow in self.weekdays or (dow == 0 and 7 in self.weekdays)
        return (dom_ok and dow_ok) if self.day_and else (dom_ok or dow_ok)

    def is_occurrence(self, u: int, zone) -> bool:
        """Whether instant `u` (unix seconds) is an occurrence in `zone`."""
        if u % 60:
            return False
        w = _wall(u, zone)
        if not self.fixed:
            return self.matches(w)
        if self.matches(w) and _first_pass(u, zone):
            return True
        return any(self.matches(m) for m in _gap_before(u, zone))

    def scan(self, table: ZoneTable, lo: int, hi: int) -> list[int]:
        """Every occurrence in (lo, hi] from a precomputed minute table."""
        out = []
        for u, w, first, gap in table.rows:
            if u <= lo or u > hi:
                continue
            if not self.fixed:
                if self.matches(w):
                    out.append(u)
            elif (first and self.matches(w)) or any(self.matches(m) for m in gap):
                out.append(u)
        return out


def _wall(u: int, zone) -> datetime:
    return datetime.fromtimestamp(u, zone).replace(tzinfo=None)


def _first_pass(u: int, zone) -> bool:
    """False if the wall time of `u` already happened earlier (the second pass of
    a repeated hour)."""
    off = _offset(u, zone)
    for other in {_offset(u - 4 * 3600, zone), _offset(u + 4 * 3600, zone)} - {off}:
        earlier = u + off - other  # the instant showing the same wall time under `other`
        if earlier < u and _offset(earlier, zone) == other:
            return False
    return True


def _gap_before(u: int, zone) -> list[datetime]:
    """The wall minutes a jump skipped right before instant `u` (empty if none)."""
    w, wp = _wall(u, zone), _wall(u - 60, zone)
    out = []
    m = wp + MINUTE
    while m < w:
        out.append(m)
        m += MINUTE
    return out


@dataclass(frozen=True)
class ZoneTable:
    rows: tuple  # (u, wall, first_pass, gap wall minutes)


@cache
def zone_table(zone_name: str, lo: int, hi: int) -> ZoneTable:
    zone = ZoneInfo(zone_name)
    rows = []
    u = lo - lo % 60
    while u <= hi:
        rows.append((u, _wall(u, zone), _first_pass(u, zone), tuple(_gap_before(u, zone))))
        u += 60
    return ZoneTable(tuple(rows))


# --------------------------------------------------------------------------- expressions

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]


def _num(rng: random.Random, lo: int, hi: int, favour: list[int]) -> int:
    return rng.choice(favour) if rng.random() < 0.5 else rng.randint(lo, hi)


def _term(rng: random.Random, lo: int, hi: int, favour: list[int], names: list[str] | None, name_base: int) -> str:
    def value(v: int) -> str:
        if names and rng.random() < 0.4 and name_base <= v < name_base + len(names):
            return names[v - name_base] if rng.random() < 0.5 else names[v - name_base].upper()
        return str(v)

    kind = rng.random()
    if kind < 0.40:
        return value(_num(rng, lo, hi, favour))
    if kind < 0.65:
        a = _num(rng, lo, hi, favour)
        b = rng.randint(a, hi)
        text = f"{value(a)}-{value(b)}"
        if rng.random() < 0.3 and a < b:
            # `a-a/step`: cronsim reads a one-value range with a step as `a/step`
            # (a, a+step, … to the end); standard cron as the value a alone.
            text += f"/{rng.randint(1, max(1, hi - lo))}"
        return text
    if kind < 0.85 or names is DAYS:
        # `N/step` in day-of-week is left out: cronsim runs it up to 7 (so `1/2` has
        # Sunday), croniter and robfig/cron up to 6 — no shared meaning to compare.
        return f"*/{rng.choice([1, 2, 3, 5, 7, 10, 15, 20, 30, rng.randint(1, hi - lo + 1)])}"
    return f"{value(_num(rng, lo, hi, favour))}/{rng.randint(1, max(1, hi - lo))}"


def _field(rng, lo, hi, favour, star_p, names=None, name_base=0) -> str:
    if rng.random() < star_p:
        return "*"
    n = 1 if rng.random() < 0.7 else rng.randint(2, 4)
    return ",".join(_term(rng, lo, hi, favour, names, name_base) for _ in range(n))


def random_expression(rng: random.Random) -> str:
    """One 5-field expression both libraries accept, biased to the DST hours."""
    minute = _field(rng, 0, 59, [0, 15, 30, 45, 59, 1], 0.1)
    hour = _field(rng, 0, 23, [0, 1, 2, 3, 23, 22], 0.3)
    dom = _field(rng, 1, 31, [1, 5, 6, 7, 28, 29, 30, 31], 0.75)
    month = _field(rng, 1, 12, [3, 4, 9, 10, 11], 0.75, MONTHS, 1)
    dow = _field(rng, 0, 7, [0, 6, 7, 1], 0.75, DAYS, 0)
    return f"{minute} {hour} {dom} {month} {dow}"


#: Expressions aimed at the DST rule; each runs at every transition of every zone.
DST_EXPRESSIONS = [
    "30 2 * * *",  # fixed time in the spring gap
    "30 1 * * *",  # fixed time in the repeated hour
    "0 2 * * *",
    "45 1 * * *",  # Lord Howe's half-hour repeat
    "15 2 * * *",  # Lord Howe's half-hour gap
    "0,30 2 * * *",  # two skipped fixed times → one fire
    "0 2,3 * * *",  # skipped fixed time merging with a real one
    "30 23 * * *",  # Santiago's repeated hour
    "0 0 * * *",  # Santiago's skipped midnight
    "30 0 * * *",
    "0 * * * *",  # follows the clock
    "40 * * * *",
    "15,45 * * * *",
    "*/30 * * * *",
    "*/7 * * * *",
    "* 2 * * *",  # every minute of a skipped hour
    "* 1 * * *",  # every minute of a repeated hour, both passes
    "* 0 * * *",
    "*/15 1-3 * * *",
    "30 */2 * * *",
    "5 0-23/2 * * *",  # fixed (does not start with *) though it looks stepped
    "0 0 * * sun",
    "30 2 * mar,oct sun",
    "0 3 1-7 * 0",  # OR semantics
]


def _expressions() -> list[str]:
    rng = random.Random(20250309)
    out = []
    while len(out) < RANDOM_EXPRESSIONS:
        text = random_expression(rng)
        try:
            CronSim(text, datetime(2025, 1, 1, tzinfo=UTC))
        except CronSimError:
            continue  # e.g. `0 0 30 2 *` — checked separately below
        out.append(text)
    return out


# --------------------------------------------------------------------------- walks


def ours_from(expr: CronExpr, start: int, zone, transition: int, until: int) -> list[int]:
    out: list[int] = []
    t = start
    while len(out) < MIN_OCCURRENCES or (
        t <= until and len(out) < MAX_OCCURRENCES and not (len(out) >= DENSE and t > transition + 1800)
    ):
        nxt = expr.next_after(t, zone)
        if nxt is None:
            break
        assert nxt > t, f"next_after({t}) went back to {nxt}"
        out.append(nxt)
        t = nxt
    return out


def theirs_from(text: str, start: int, zone, count: int) -> list[int]:
    """cronsim's instants after `start`, dropping any at or before the previous one
    (its fold=1 quirk returns an instant in the past)."""
    out: list[int] = []
    prev = start
    try:
        for dt in CronSim(text, datetime.fromtimestamp(start, zone)):
            x = int(dt.timestamp())
            if x <= prev:
                continue
            out.append(x)
            prev = x
            if len(out) >= count:
                break
    except StopIteration:  # pragma: no cover - cronsim ends its own iteration
        pass
    return out


def random_start(rng: random.Random, t: int) -> int:
    """A start near transition `t`: before it, or inside/after the change; any second."""
    if rng.random() < 0.3:
        return t + rng.randint(0, 3600)
    return t - rng.randint(60, LEAD) + rng.choice([0, 0, 1, 29, 59, rng.randint(0, 59)])


def check(text: str, zone_name: str, t: int, start: int, rng: random.Random, found: list) -> None:
    """Compare one walk from `start` near transition `t` (see the module doc)."""
    zone = ZoneInfo(zone_name)
    expr = CronExpr.parse(text)
    oracle = Oracle.of(text)
    window_end = t + WINDOW
    ours = ours_from(expr, start, zone, t, window_end)
    assert ours == sorted(set(ours)), (text, zone_name)

    # 1. everything we return is an occurrence (inside the window, 2. says so too)
    for x in ours:
        if x > window_end:
            assert oracle.is_occurrence(x, zone), (
                f"{text!r} in {zone_name}: we fire at {_wall(x, zone)} ({x}), not an occurrence"
            )

    # 2. near the transition we return exactly the oracle's occurrences
    horizon = min(window_end, ours[-1]) if ours else window_end
    table = zone_table(zone_name, t - LEAD - 3600, window_end)
    want = oracle.scan(table, start, horizon)
    got = [x for x in ours if x <= horizon]
    assert got == want, (
        f"{text!r} in {zone_name} from {_wall(start, zone)}: "
        f"missing {[str(_wall(x, zone)) for x in sorted(set(want) - set(got))]}, "
        f"extra {[str(_wall(x, zone)) for x in sorted(set(got) - set(want))]}"
    )

    # 3. against cronsim, adjudicated by the oracle
    theirs = theirs_from(text, start, zone, len(ours))
    if ours and theirs:
        common = min(ours[-1], theirs[-1])
        mine = {x for x in ours if x <= common}
        cs = {x for x in theirs if x <= common}
        for x in sorted(cs - mine):
            assert not oracle.is_occurrence(x, zone), (
                f"{text!r} in {zone_name}: cronsim fires at {_wall(x, zone)} ({x}) and so does the rule; we do not"
            )
            found.append((zone_name, text, "cronsim-extra", datetime.fromtimestamp(x, zone).isoformat()))
        for x in sorted(mine - cs):
            found.append((zone_name, text, "cronsim-missing", datetime.fromtimestamp(x, zone).isoformat()))
        # cronsim's defects are understood only where a shift is not a whole hour
        # (Lord Howe) or hits midnight (Santiago); anywhere else the oracle and we
        # might share a misreading of the rule — fail so a person looks.
        strange = [f for f in found if f[0] not in CRONSIM_DEFECT_ZONES]
        assert not strange, f"cronsim disagrees where it has no known defect: {strange[:3]}"
    else:
        assert not theirs or not ours, (text, zone_name, ours[:3], theirs[:3])

    # 4. latest_in over the adjudicated list
    if not ours:
        return
    last = ours[-1]
    probes = [(start, last), (start, ours[0]), (ours[0], last), (start, ours[0] - 1)]
    for _ in range(6):
        a = rng.randint(start, last)
        b = rng.randint(a, last)
        probes.append((a, b))
    for _ in range(3):
        i = rng.randrange(len(ours))
        j = rng.randrange(i, len(ours))
        probes.append((ours[i], ours[j]))  # lo excluded, hi included
        probes.append((ours[i] - 1, ours[i]))
    for lo, hi in probes:
        inside = [x for x in ours if lo < x <= hi]
        want_latest = inside[-1] if inside else None
        assert expr.latest_in(lo, hi, zone) == want_latest, (
            f"{text!r} in {zone_name}: latest_in({lo}, {hi}) want {want_latest}, got {expr.latest_in(lo, hi, zone)}"
        )


CRONSIM_FINDINGS: list = []  # (zone, expr, kind, local time) — handy when debugging
CRONSIM_DEFECT_ZONES = {"Australia/Lord_Howe", "America/Santiago"}


def test_random_expressions_agree_across_transitions():
    """Several hundred random expressions, spread over the zones, each walked from a
    random start near a random 2025–2027 transition (inside the repeated hour too)."""
    rng = random.Random("diff")
    found: list = []
    for i, text in enumerate(_expressions()):
        zone_name = ZONES[i % len(ZONES)]
        t = rng.choice(transitions(zone_name))
        check(text, zone_name, t, random_start(rng, t), rng, found)
    CRONSIM_FINDINGS.extend(found)


@pytest.mark.slow
@pytest.mark.parametrize("zone_name", ZONES[1:])
def test_dst_expressions_at_every_transition(zone_name):
    """Hand-picked DST cases at both transitions of a random year (2025–2027) of
    every DST zone."""
    rng = random.Random(f"dst-{zone_name}")
    found: list = []
    trans = transitions(zone_name)
    for text in DST_EXPRESSIONS:
        year = rng.randrange(3)
        for t in trans[2 * year : 2 * year + 2]:
            check(text, zone_name, t, random_start(rng, t), rng, found)
    CRONSIM_FINDINGS.extend(found)


def test_both_reject_the_same_impossible_and_malformed_expressions():
    """Parse acceptance agrees on the syntax both accept (and on impossible dates)."""
    rng = random.Random(7)
    exprs = [random_expression(rng) for _ in range(300)]
    exprs += [
        "0 0 31 2 *",
        "0 0 30 2 *",
        "0 0 30,31 2 *",
        "0 0 31 4,6,9,11 *",
        "0 0 29 2 *",
        "0 0 31 2 mon",
        "0 0 */31 2 *",
    ]
    exprs += [
        "61 * * * *",
        "* 24 * * *",
        "* * 0 * *",
        "* * 32 * *",
        "* * * 13 *",
        "* * * * 8",
        "*/0 * * * *",
        "5-3 * * * *",
    ]
    for text in exprs:
        try:
            CronSim(text, datetime(2025, 1, 1, tzinfo=UTC))
            theirs = True
        except CronSimError:
            theirs = False
        try:
            CronExpr.parse(text)
            ours = True
        except CronError:
            ours = False
        assert ours == theirs, f"{text!r}: we accept={ours}, cronsim accepts={theirs}"


# --------------------------------------------------------------------------- cronsim defects


def _at(zone_name: str, *args, fold: int = 0) -> int:
    return int(datetime(*args, tzinfo=ZoneInfo(zone_name), fold=fold).timestamp())


@pytest.mark.parametrize(
    "zone_name, expr, start, want",
    [
        # Lord Howe 2025-04-06: 02:00 (+11) falls back to 01:30 (+10:30); 01:30–02:00 twice.
        # A clock-following job fires in both passes. cronsim's minute jump overshoots
        # the half-hour fold and skips the second 01:40.
        (
            "Australia/Lord_Howe",
            "40 * * * *",
            ("Australia/Lord_Howe", 2025, 4, 6, 1, 0),
            [(2025, 4, 6, 1, 40, 0), (2025, 4, 6, 1, 40, 1), (2025, 4, 6, 2, 40, 0)],
        ),
        # Lord Howe 2025-10-05: 02:00 jumps to 02:30 (+11). 02:40 exists; cronsim skips it.
        (
            "Australia/Lord_Howe",
            "40 * * * *",
            ("Australia/Lord_Howe", 2025, 10, 5, 1, 0),
            [(2025, 10, 5, 1, 40, 0), (2025, 10, 5, 2, 40, 0), (2025, 10, 5, 3, 40, 0)],
        ),
        # Santiago 2025-09-07: midnight does not exist (00:00 → 01:00). A clock-following
        # job in hour 0 has nothing to follow that day; cronsim fires at the imaginary
        # 00:00 (really 01:00 -03), a time whose hour is not 0.
        (
            "America/Santiago",
            "* 0 7 9 *",
            ("America/Santiago", 2025, 9, 6, 12, 0),
            [(2026, 9, 7, 0, 0, 0), (2026, 9, 7, 0, 1, 0)],
        ),
    ],
)
def test_cronsim_defects_we_do_not_copy(zone_name, expr, start, want):
    """Where cronsim breaks the rule, we follow the rule (and the oracle agrees)."""
    zone = ZoneInfo(zone_name)
    t = _at(*start)
    e = CronExpr.parse(expr)
    got = []
    for _ in range(len(want)):
        t = e.next_after(t, zone)
        got.append(t)
    expected = [_at(zone_name, *w[:5], fold=w[5]) for w in want]
    assert got == expected, [datetime.fromtimestamp(x, zone).isoformat() for x in got]
    oracle = Oracle.of(expr)
    assert all(oracle.is_occurrence(x, zone) for x in got)
    theirs = theirs_from(expr, _at(*start), zone, len(want))
    assert theirs != expected  # the defect is cronsim's (drop this case if cronsim is fixed)


# --------------------------------------------------------------------------- equal ranges


@pytest.mark.parametrize(
    "expr",
    [
        "5-5 * * * *",  # minute 5 — not every minute
        "30 9-9 * * *",  # 09:30 — not every hour at :30
        "0 0 15-15 * *",  # the 15th — not every day
        "0 0 1 jun-jun *",  # June 1st — not every month
        "0 0 * * 7-7",  # Sundays (7 is Sunday) — not every day
        "0 0 * * mon-mon",  # Mondays
        "0 0 * * 6,7-7",  # weekends
        "0 12 * * 2-2,4-4",  # Tuesdays and Thursdays
    ],
)
def test_equal_ranges_are_one_value(expr):
    """`a-a` is the single value a, in every field (cronsim, robfig/cron and Vixie
    cron agree; croniter 7 widens it to the whole field, which is why rk expands
    fields itself). Compared with cronsim in UTC and in New York."""
    for zone_name in ("UTC", "America/New_York"):
        zone = ZoneInfo(zone_name)
        start = int(datetime(2025, 3, 1, tzinfo=zone).timestamp())
        e = CronExpr.parse(expr)
        ours, t = [], start
        for _ in range(12):
            t = e.next_after(t, zone)
            ours.append(t)
        theirs = theirs_from(expr, start, zone, 12)
        assert ours == theirs, (
            f"{expr!r} in {zone_name}: we fire at {[str(_wall(x, zone)) for x in ours[:4]]}, "
            f"cronsim at {[str(_wall(x, zone)) for x in theirs[:4]]}"
        )


def test_equal_range_with_a_step_is_still_one_value():
    """`5-5/10` is minute 5 (the range has one value; the step skips nothing). Not
    compared with cronsim, which reads it as `5/10` (:05, :15, … :55)."""
    e = CronExpr.parse("5-5/10 * * * *")
    start = int(datetime(2025, 3, 1, tzinfo=UTC).timestamp())
    got, t = [], start
    for _ in range(3):
        t = e.next_after(t, UTC)
        got.append(t - start)
    assert got == [5 * 60, 65 * 60, 125 * 60]

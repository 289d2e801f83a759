"""A usage or rate limit read from each CLI's screen, against the outside values
the read depends on: the ticker's local zone (a printed wall time without a zone
is the local one; one that names its zone is not) and when the limit began.

One test per CLI: its limit screen reads `limited` in every zone and at every
start, and the reset, when printed, is the first such wall time at or after the
start (a minute of slack) in the zone it names, else the local zone."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.pane.screen import LAYOUTS, classify
from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN, STALE_SLACK

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "screens"
UTC = ZoneInfo("UTC")
ZONES = [ZoneInfo(name) for name in ("UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata")]
#: 2025-06-01 … 2027-06-01: every zone's daylight-saving days, both ways, twice.
SINCE = st.integers(1_748_736_000, 1_811_808_000)


def read(name: str) -> str:
    return (FIXTURES / f"{name}.ansi").read_text(encoding="utf-8")


def check_reset(reset: int, since: int, hour: int, minute: int, zone: ZoneInfo) -> None:
    """`reset` (rk's: the printed minute's end plus the margin) names the first instant at or after
    `since - STALE_SLACK` whose wall clock in `zone` is hour:minute."""
    reset -= MINUTE + RESET_MARGIN
    wall = datetime.fromtimestamp(reset, zone)
    assert (wall.hour, wall.minute, wall.second) == (hour, minute, 0), wall
    assert reset >= since - STALE_SLACK, (reset, since)
    day_before = (wall - timedelta(days=1)).replace(fold=0)
    assert int(day_before.timestamp()) < since - STALE_SLACK, (wall, since)


def reads(name: str, agent: str, since: int, lag: int, zone: ZoneInfo):
    got = classify(read(name), LAYOUTS, now=since + lag, since=since, zone=zone, hint=agent)
    assert (got.agent, got.state) == (agent, "limited"), (name, got)
    return got


ALONG = dict(since=SINCE, lag=st.integers(0, 6 * 3600), zone=st.sampled_from(ZONES))


@settings(max_examples=60, deadline=None)
@given(**ALONG)
def test_claude_reads_its_limit_and_the_reset_in_the_zone_it_prints(since, lag, zone):
    """Claude prints `resets 3:06pm (UTC)` / `resets at 15:04 UTC`: the local zone does not move it."""
    got = reads("claude/limit_reached", "claude", since, lag, zone)
    check_reset(got.reset_at, since, 15, 6, UTC)
    got = reads("claude/error_429_reset_text", "claude", since, lag, zone)
    check_reset(got.reset_at, since, 15, 4, UTC)


@settings(max_examples=60, deadline=None)
@given(**ALONG)
def test_claude_2_1_reads_its_limit_and_the_reset_in_the_zone_it_prints(since, lag, zone):
    got = reads("claude-2.1.332/limit_reached", "claude", since, lag, zone)
    check_reset(got.reset_at, since, 10, 18, UTC)


@settings(max_examples=60, deadline=None)
@given(**ALONG)
def test_codex_reads_its_limit_and_a_zoneless_reset_in_the_local_zone(since, lag, zone):
    """Codex prints `try again at 3:07 PM`: the wall time of the ticker's zone."""
    got = reads("codex/usage_limit", "codex", since, lag, zone)
    check_reset(got.reset_at, since, 15, 7, zone)


@settings(max_examples=30, deadline=None)
@given(**ALONG)
def test_gemini_reads_its_quota_limit_without_a_reset(since, lag, zone):
    for name in ("gemini/error429", "gemini/error429_full"):
        assert reads(name, "gemini", since, lag, zone).reset_at == 0


@settings(max_examples=30, deadline=None)
@given(**ALONG)
def test_opencode_reads_its_rate_limit_without_a_reset(since, lag, zone):
    assert reads("opencode/error_429", "opencode", since, lag, zone).reset_at == 0


@settings(max_examples=60, deadline=None)
@given(now=SINCE, zone=st.sampled_from(ZONES))
def test_a_limit_seen_with_no_known_start_reads_the_printed_time_nearest_now(now, zone):
    """With no start known (`since` 0) the reset is the printed wall time nearest to
    now: a banner read long after it was printed is not pushed a day on."""
    for name, agent, (hour, minute), printed_in in (
        ("claude/limit_reached", "claude", (15, 6), UTC),
        ("codex/usage_limit", "codex", (15, 7), zone),
    ):
        got = classify(read(name), LAYOUTS, now=now, since=0, zone=zone, hint=agent)
        assert got.state == "limited"
        wall = datetime.fromtimestamp(got.reset_at - MINUTE - RESET_MARGIN, printed_in)
        assert (wall.hour, wall.minute) == (hour, minute)
        assert abs(got.reset_at - now) <= 12 * 3600 + 1800, (name, now, got.reset_at)  # a DST day is 23…25 h

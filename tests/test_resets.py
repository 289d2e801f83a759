"""Resets to the second: the pure rules.

1. A reset printed to the minute ("resets 2:38am") is over at that minute's end plus
   RESET_MARGIN; one printed to the second (an epoch, an ISO instant with seconds, a
   delay in seconds) at itself plus the margin. The precision is read with the reset
   (`Reset`), and every reader gets `Reset.over` (`reset_instant`).
2. A CLI whose screen says it will continue by itself is given SELF_RESUME_GRACE past
   the reset before rk calls the limit over ("Continuing automatically at 2:38am",
   "Continuing shortly"); a stale "Press enter to continue" does not resume by itself.
3. A refused resume (the limit again) is retried at the next reset it names, never
   lost: the limit-reset edge stays pending (`RESUMING`) until the resume is seen to take.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rk.agent.hook_turn_end import payload_reset
from rk.core.cost.turn_timeout import StateLine
from rk.core.pane.facts import PaneFact, Source
from rk.core.pane.look import (
    LIMIT_RETRY,
    SELF_RESUME_GRACE,
    correction,
    limit_over,
    resumes_itself,
    seen_before_typing,
)
from rk.core.pane.screen import LAYOUTS, Screen, classify
from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN, Reset, read_reset, reset_instant
from rk.core.schedule.wake import RESUMING, Observation, WakeVerdict, journaled_since, limit_edge

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "screens"


def at(hms: str) -> int:
    h, m, s = map(int, hms.split(":"))
    return int(datetime(2026, 12, 6, h, m, s, tzinfo=UTC).timestamp())


# -- 1. precision and margin -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, printed, to_minute",
    [
        ("You've hit your session limit · resets 2:38am (UTC)", "02:38:00", True),
        ("Your limit resets at 02:38 UTC.", "02:38:00", True),
        ("limit until 2026-12-06T02:38Z", "02:38:00", True),  # an ISO instant without seconds
        ("limit until 2026-12-06T02:38:50Z", "02:38:50", False),
        ("usage limit reached|" + str(at("02:38:50")), "02:38:50", False),
        ("try again in 38 minutes", "02:38:00", True),  # from `since`, 02:00:00
        ("retry after 50s", "02:00:50", False),
        ("try again in 1 hour 2 minutes 3 seconds", "03:02:03", False),
        # Codex, for a reset on another day (seen at 23:41 for a reset an hour on)
        ("or try again at Dec 6th, 2026 2:38 AM.", "02:38:00", True),
        ("usage to purchase more credits or try again at Dec 6th 2:38 AM.", "02:38:00", True),
    ],
)
def test_a_reset_is_read_with_its_precision(text, printed, to_minute):
    reset = read_reset(text, at("02:00:00"), UTC)
    assert reset == Reset(at(printed), to_minute=to_minute)
    assert reset_instant(text, at("02:00:00"), UTC) == reset.over


def test_a_reset_on_another_day_is_read_with_its_date():
    """Codex names the day when the reset is not today: past midnight, or a weekly limit.
    Read as a bare clock time it was no reset at all (`skipped-limited`, no `resets …`)."""
    since = at("23:41:00")
    midnight = read_reset("or try again at Dec 7th, 2026 12:41 AM.", since, UTC)
    assert midnight == Reset(since + 3600, to_minute=True)
    week = read_reset("try again at Dec 13th, 2026 3:05 PM.", since, UTC)
    assert week == Reset(int(datetime(2026, 12, 13, 15, 5, tzinfo=UTC).timestamp()), to_minute=True)
    new_year = read_reset("try again at Jan 2nd 9:00 AM", since, UTC)  # no year: the next Jan 2nd
    assert new_year == Reset(int(datetime(2027, 1, 2, 9, 0, tzinfo=UTC).timestamp()), to_minute=True)
    tokyo = zoneinfo.ZoneInfo("Asia/Tokyo")  # the zone it names wins over the local one
    weekly = read_reset("limit reached · resets Dec 9 at 5pm (UTC)", since, tokyo)
    assert weekly == Reset(int(datetime(2026, 12, 9, 17, 0, tzinfo=UTC).timestamp()), to_minute=True)
    assert read_reset("try again at Feb 30th, 2027 9:00 AM", since, UTC) is None  # no such day
    assert read_reset("try again at Foo 3rd, 2027 9:00 AM", since, UTC) is None


def test_a_minute_is_over_at_its_end_plus_the_margin_a_second_at_itself_plus_the_margin():
    assert RESET_MARGIN > 0
    assert Reset(at("02:38:00"), to_minute=True).over == at("02:39:00") + RESET_MARGIN
    assert Reset(at("02:38:50")).over == at("02:38:50") + RESET_MARGIN


@pytest.mark.parametrize("second", [0, 30, 50, 59])
def test_a_reset_printed_to_the_minute_is_never_over_before_the_real_one(second):
    """Claude prints "resets 2:38am" for a reset anywhere in that minute: rk's reset is after it."""
    real = at(f"02:38:{second:02d}")
    over = reset_instant("Usage limit reached · limit resets 2:38am (UTC)", at("02:00:00"), UTC)
    assert over > real
    assert over - real <= MINUTE + RESET_MARGIN
    pane = PaneFact("%1", state="limited", epoch=at("02:00:00"), pid=42, reset_at=over)
    assert not limit_over(pane, at("02:38:59"))  # typed then, the prompt was refused (issue 28)
    assert limit_over(pane, over)


def test_the_hook_reads_a_refused_resumes_banner_as_the_end_of_its_minute():
    """A resume refused within the printed minute: the limit lasts to the minute's end (was: the
    reset taken as past, so unknown, and the agent waited out the retry delay)."""
    message = {"error": "rate_limit", "last_assistant_message": "Your limit resets at 02:38 UTC."}
    assert payload_reset(message, at("02:38:21"), {"TZ": "UTC"}) == at("02:39:00") + RESET_MARGIN
    # refused after that: the banner names a reset that did not end the limit: unknown, not tomorrow
    assert payload_reset(message, at("02:39:10"), {"TZ": "UTC"}) == 0


# -- 2. a CLI that resumes by itself ----------------------------------------------------------------

AUTO = (FIXTURES / "claude-2.1.332/limit_reached_autocontinue.ansi").read_text(encoding="utf-8")
SHORTLY = AUTO.replace("Continuing automatically at 10:18am", "Continuing shortly")
WHEN = AUTO.replace("Continuing automatically at 10:18am", "Continuing automatically when it resets")
STALE = AUTO.replace("Continuing automatically at 10:18am · Esc to cancel", "Press enter to continue")


def _read(text: str, now: int) -> Screen:
    return classify(text, LAYOUTS, now=now, zone=UTC, hint="claude")


RESET = _read(AUTO, at("10:00:00")).reset_at


def test_every_footer_that_says_claude_continues_by_itself_is_read():
    assert at("10:19:00") + RESET_MARGIN == RESET  # "resets 10:18am": its end, and the margin
    for text in (AUTO, SHORTLY, WHEN):
        screen = _read(text, RESET + 60)
        assert (screen.state, screen.resumes, screen.reset_at) == ("limited", True, RESET)
    stale = _read(STALE, RESET + 60)  # slept past Claude's fire: it waits for Enter, it does not resume
    assert stale.state == "limited" and not stale.resumes


@pytest.mark.parametrize("text", [AUTO, SHORTLY, WHEN], ids=["at", "shortly", "when"])
def test_rk_types_only_if_the_agent_has_not_resumed_a_stated_time_after_the_reset(text):
    assert 120 < SELF_RESUME_GRACE <= 180  # Claude fires 30-90 s after the reset, checking every 30 s
    pane = PaneFact("%1", state="limited", epoch=RESET - 3600, pid=42, source=str(Source.HOOK), reset_at=RESET)
    for now in (RESET, RESET + 90, RESET + SELF_RESUME_GRACE):
        screen = _read(text, now)
        assert resumes_itself(pane, screen, now)
        assert correction(pane, screen, now, settled=True) is None  # still limited: no idle written
        assert seen_before_typing(pane, screen, now).state == "limited"  # nothing typed
    late = RESET + SELF_RESUME_GRACE + 1
    screen = _read(text, late)
    assert not resumes_itself(pane, screen, late)
    assert correction(pane, screen, late, settled=True).state == "idle"


def test_the_wait_counts_from_the_panes_reset_when_the_screen_shows_none():
    pane = PaneFact("%1", state="limited", epoch=RESET - 3600, pid=42, reset_at=RESET)
    screen = Screen("claude", "limited", resumes=True)
    assert resumes_itself(pane, screen, RESET + SELF_RESUME_GRACE)
    assert not resumes_itself(pane, screen, RESET + SELF_RESUME_GRACE + 1)
    unknown = PaneFact("%1", state="limited", epoch=RESET - 3600, pid=42)  # no reset anywhere: the retry delay's
    assert resumes_itself(unknown, screen, RESET - 3600 + LIMIT_RETRY + SELF_RESUME_GRACE)
    assert not resumes_itself(unknown, screen, RESET - 3600 + LIMIT_RETRY + SELF_RESUME_GRACE + 1)


# -- 3. a refused resume is retried -----------------------------------------------------------------


def test_a_banner_repeated_by_a_refused_resume_does_not_end_the_limit():
    """The limit began after the reset the screen names: that reset did not end it; the limit
    lasts the retry delay (ended at once, rk would type into it again every tick)."""
    refused = at("02:39:10")
    pane = PaneFact("%1", state="limited", epoch=refused, pid=42, source=str(Source.HOOK))
    screen = Screen("claude", "limited", reset_at=at("02:39:05"))
    now = refused + 30
    assert correction(pane, screen, now, settled=True) is None
    assert seen_before_typing(pane, screen, now).state == "limited"
    assert correction(pane, screen, refused + LIMIT_RETRY, settled=True).state == "idle"


def test_a_limit_reset_fire_stays_pending_until_the_resume_is_seen_to_take():
    limited = Observation("limited", 100)
    verdict, pending = limit_edge(limited, "idle", None, 0, 200)
    assert verdict == WakeVerdict.FIRE and pending == Observation(RESUMING, 200)
    assert limit_edge(pending, "idle", 200, 0, 230) == (WakeVerdict.UNCHANGED, pending)  # not yet seen
    assert limit_edge(pending, "active", 200, 0, 230) == (WakeVerdict.IGNORED, Observation("active", 230))  # took
    # refused, and a tick saw the limit: the usual edge, at the next reset
    verdict, seen = limit_edge(pending, "limited", 200, 0, 230)
    assert verdict == WakeVerdict.IGNORED and seen == Observation("limited", 230)
    assert limit_edge(seen, "idle", 200, 0, 400)[0] == WakeVerdict.FIRE
    # refused, and over before any tick saw it: the hooks' journal says so
    assert limit_edge(pending, "idle", 200, 0, 230, "limited") == (WakeVerdict.FIRE, Observation(RESUMING, 230))
    assert limit_edge(pending, "idle", 200, 60, 230, "limited") == (WakeVerdict.DEBOUNCED, pending)
    # took, in a turn that ended between two ticks: spent
    assert limit_edge(pending, "idle", 200, 0, 230, "active") == (WakeVerdict.IGNORED, Observation("idle", 230))


def test_the_journal_tells_a_refused_resume_from_one_that_took():
    def lines(*states: tuple[int, str]) -> list[StateLine]:
        return [StateLine(ts, to) for ts, to in states]

    assert journaled_since(lines((100, "limited"), (200, "active"), (201, "limited")), 200) == "limited"
    assert journaled_since(lines((200, "active"), (201, "limited"), (230, "idle")), 200) == "limited"  # a look ended it
    assert journaled_since(lines((200, "active"), (260, "idle")), 200) == "active"  # it took
    assert journaled_since(lines((201, "limited"), (240, "active"), (300, "idle")), 200) == "active"  # then it worked
    assert journaled_since(lines((100, "limited"), (150, "idle")), 200) == ""  # before the resume
    assert journaled_since([], 200) == ""

"""Every constant in specs/cron.md's "Where each rule lives", at its boundary: the
value at the edge, one just inside, one just outside. A constant that moves by
one, or a `<` that becomes `<=`, fails here (`make mutants` checks that it does)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from rk.core import bounds
from rk.core.bounds import MAX_EPOCH
from rk.core.cost import unchanged
from rk.core.cost.budget import MAX_BUDGET, Budget, BudgetError
from rk.core.environ import is_pane_id
from rk.core.log.delivery import BUDGET_KEEP, MISSED_CAP, ORPHAN_TTL, RATE_WINDOW, LogLine, LogView, lines_to_keep
from rk.core.pane.facts import LIMITED as LIMITED_STATE
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.pane.look import LIMIT_RETRY, STALE_AFTER, limit_over, needs_look
from rk.core.pane.recheck import DIALOG_WATCH, RECHECK_WINDOW, wants_recheck, watching_dialog
from rk.core.schedule.cronexpr import FOLD_MARGIN_MIN, CronExpr
from rk.core.schedule.dispose import Act, Disposition, Seen, deliver_policy, dispose
from rk.core.schedule.due import Fire, backoff_verdict, clock_went_back, cron_verdict
from rk.core.schedule.entry import (
    WAKE_DEBOUNCE,
    Backoff,
    CreatedBy,
    Cron,
    Deliver,
    Entry,
    Every,
    IfAbsent,
    Target,
    WakeEvent,
    WakeOn,
)
from rk.core.schedule.grace import CRON_GRACE, HOLD_WINDOW
from rk.core.schedule.ladder import ATTRIBUTION_WINDOW, POLL, Ladder, join_anchor
from rk.core.schedule.orphan import should_expire
from rk.core.schedule.wake import LIMITED, Observation, WakeVerdict, limit_edge, wake_edge

NOW = 1_800_000_000
CAP = 30  # Settings.rate_per_hour's default


def _entry(entry_id="e1", **kw) -> Entry:
    kw.setdefault("schedule", Every(interval=60))
    kw.setdefault("target", Target("pane", "%1"))
    return Entry(id=entry_id, **kw)


def _fire(entry="e1", pane="%1") -> Fire:
    return Fire(entry=entry, reason="schedule", pane=pane, rung=0, due_at=NOW, at=NOW)


def _lines(n, *, entry="e1", target="%1", ts=NOW, outcome="delivered") -> list[LogLine]:
    return [LogLine(ts - i, entry, target, "schedule", outcome) for i in range(n)]


# -- the rate cap: its key, its limit, its window ----------------------------------------------


def test_a_resolved_fire_is_capped_by_its_pane_whatever_entry_wrote_the_lines():
    others_on_the_pane = LogView(_lines(CAP, entry="other"))
    assert dispose(_fire(), _entry(), others_on_the_pane, NOW, CAP).text == "rate-capped"
    own_lines_elsewhere = LogView(_lines(CAP, target="%2"))  # the entry's own lines, on another pane
    assert dispose(_fire(), _entry(), own_lines_elsewhere, NOW, CAP).act == Act.SEND


def test_an_absent_fire_is_capped_by_its_entry_whatever_pane_the_lines_name():
    absent = _entry(if_absent=IfAbsent.NOTIFY)
    own_lines = LogView(_lines(CAP, target="%7", outcome="notified-absent"))
    assert dispose(_fire(pane=""), absent, own_lines, NOW, CAP).text == "rate-capped"
    others = LogView(_lines(CAP, entry="other", target="", outcome="notified-absent"))
    assert dispose(_fire(pane=""), absent, others, NOW, CAP).act == Act.NOTIFY


def test_the_rate_cap_trips_at_the_limit_not_before():
    assert dispose(_fire(), _entry(), LogView(_lines(CAP - 1)), NOW, CAP).act == Act.SEND
    assert dispose(_fire(), _entry(), LogView(_lines(CAP)), NOW, CAP).text == "rate-capped"


def test_the_rate_window_holds_its_first_second_and_not_the_one_before():
    edge = LogView(_lines(CAP - 1) + [LogLine(NOW - RATE_WINDOW, "e1", "%1", "schedule", "delivered")])
    assert dispose(_fire(), _entry(), edge, NOW, CAP).text == "rate-capped"
    outside = LogView(_lines(CAP - 1) + [LogLine(NOW - RATE_WINDOW - 1, "e1", "%1", "schedule", "delivered")])
    assert dispose(_fire(), _entry(), outside, NOW, CAP).act == Act.SEND


def test_a_failed_attempt_counts_against_the_cap_a_skip_does_not():
    failed = LogView(_lines(CAP, outcome="failed: pane busy"))
    assert dispose(_fire(), _entry(), failed, NOW, CAP).text == "rate-capped"
    skipped = LogView(_lines(CAP, outcome="skipped-busy: active"))
    assert dispose(_fire(), _entry(), skipped, NOW, CAP).act == Act.SEND


# -- the clock set back: one poll of skew -------------------------------------------------------


def test_an_anchor_one_poll_ahead_is_skew_one_second_more_is_the_clock_set_back():
    entry = _entry(created_by=CreatedBy(at=NOW))
    assert not clock_went_back(entry, LogView(), NOW - POLL)  # the anchor exactly one poll ahead
    assert clock_went_back(entry, LogView(), NOW - POLL - 1)
    logged = LogView([LogLine(NOW + POLL, "e1", "%1", "schedule", "delivered")])  # the newest own line anchors
    assert not clock_went_back(entry, logged, NOW)
    assert clock_went_back(entry, logged, NOW - 1)


# -- wake edges and their debounce ----------------------------------------------------------------


def test_the_limit_reset_edge_is_debounced_until_its_debounce_has_passed_exactly():
    limited = Observation(fingerprint=LIMITED, observed_at=NOW - 600)
    last_own = NOW - 600
    assert limit_edge(limited, "idle", last_own, 600 + 1, NOW)[0] == WakeVerdict.DEBOUNCED
    assert limit_edge(limited, "idle", last_own, 600, NOW)[0] == WakeVerdict.FIRE
    assert limit_edge(limited, "idle", None, 600, NOW)[0] == WakeVerdict.FIRE  # never fired: nothing to debounce
    assert limit_edge(limited, "active", None, 0, NOW)[0] == WakeVerdict.IGNORED  # to work: a human resumed it


def test_a_state_edge_is_debounced_until_its_debounce_has_passed_exactly():
    before = Observation(fingerprint="%2=active\n", observed_at=NOW - 100)
    assert wake_edge(before, "%2=idle\n", NOW - WAKE_DEBOUNCE + 1, WAKE_DEBOUNCE, NOW)[0] == WakeVerdict.DEBOUNCED
    assert wake_edge(before, "%2=idle\n", NOW - WAKE_DEBOUNCE, WAKE_DEBOUNCE, NOW)[0] == WakeVerdict.FIRE


def test_add_s_default_wake_debounce_is_a_minute():
    from rk.cli.flags import wake_from_flags

    for event in WakeEvent:
        wake = wake_from_flags(str(event), None, None, allow_off=False)
        assert isinstance(wake, WakeOn) and wake.debounce == 60  # specs/cron.md: 60 s, add's default


# -- cron's grace, the when-idle window, the hold ----------------------------------------------

HOURLY = Cron(expr="0 * * * *", tz="UTC")  # NOW is on the hour


def test_cron_s_grace_holds_its_last_second_and_not_the_next():
    entry = _entry(schedule=HOURLY, created_by=CreatedBy(at=NOW - 60))
    assert cron_verdict(entry, HOURLY, LogView(), NOW + CRON_GRACE, UTC).due
    late = cron_verdict(entry, HOURLY, LogView(), NOW + CRON_GRACE + 1, UTC)
    assert late.missed and not late.due


def test_a_when_idle_cron_occurrence_is_due_for_the_hold_window_exactly():
    entry = _entry(schedule=HOURLY, deliver=Deliver.WHEN_IDLE, created_by=CreatedBy(at=NOW - 60))
    for now, due in ((NOW + CRON_GRACE + 1, True), (NOW + HOLD_WINDOW, True), (NOW + HOLD_WINDOW + 1, False)):
        # (every hour has an occurrence: look from just after NOW's, so only NOW's is in view)
        verdict = cron_verdict(entry, Cron(expr="0 8 * * *", tz="UTC"), LogView(), now, UTC)
        assert verdict.due is due, now - NOW


def test_a_held_fire_expires_one_second_after_the_hold_window():
    for policy in (Deliver.IMMEDIATE, Deliver.WHEN_IDLE):
        assert deliver_policy(policy, Seen("idle", draft=True), NOW, NOW + HOLD_WINDOW).act == Act.HOLD
        assert (
            deliver_policy(policy, Seen("idle", draft=True), NOW, NOW + HOLD_WINDOW + 1).text == "held-expired: draft"
        )


# -- backoff attribution ------------------------------------------------------------------------


def test_an_epoch_up_to_the_attribution_window_after_our_line_is_ours():
    history = [NOW - 600, NOW - 300, NOW]
    ours = join_anchor(NOW + ATTRIBUTION_WINDOW, history, 300, 1800)
    assert ours.rung > 0
    theirs = join_anchor(NOW + ATTRIBUTION_WINDOW + 1, history, 300, 1800)
    assert theirs == Ladder(anchor=NOW + ATTRIBUTION_WINDOW + 1, rung=0)


# -- looks, rechecks, dialogs ------------------------------------------------------------------


def test_a_busy_pane_is_looked_at_once_its_state_is_older_than_stale_after():
    # (a waiting pane is also watched as a dialog for DIALOG_WATCH, below)
    assert not needs_look(PaneFact("%1", state="active", epoch=NOW - STALE_AFTER, pid=9), NOW)
    assert needs_look(PaneFact("%1", state="active", epoch=NOW - STALE_AFTER - 1, pid=9), NOW)


def test_a_limit_without_a_known_reset_is_over_after_limit_retry_exactly():
    assert limit_over(PaneFact("%1", state=LIMITED_STATE, epoch=NOW - LIMIT_RETRY), NOW)
    assert not limit_over(PaneFact("%1", state=LIMITED_STATE, epoch=NOW - LIMIT_RETRY + 1), NOW)
    assert limit_over(PaneFact("%1", state=LIMITED_STATE, epoch=NOW - 5, reset_at=NOW), NOW)
    assert not limit_over(PaneFact("%1", state=LIMITED_STATE, epoch=NOW - 5, reset_at=NOW + 1), NOW)


def test_a_hold_as_active_under_a_fresh_idle_is_rechecked_within_the_recheck_window():
    held = Disposition(Act.HOLD, held_by="active")
    assert wants_recheck(PaneFact("%1", state="idle", epoch=NOW - RECHECK_WINDOW), held, NOW)
    assert not wants_recheck(PaneFact("%1", state="idle", epoch=NOW - RECHECK_WINDOW - 1), held, NOW)


def test_a_dialog_is_watched_for_dialog_watch_exactly():
    assert watching_dialog(PaneFact("%1", state="waiting", epoch=NOW - DIALOG_WATCH), NOW)
    assert not watching_dialog(PaneFact("%1", state="waiting", epoch=NOW - DIALOG_WATCH - 1), NOW)


# -- orphans, placeholders, bounds -----------------------------------------------------------


def test_an_orphan_expires_at_orphan_ttl_exactly():
    missing = TargetFact(why="pane %1 not found")
    assert should_expire(_entry(), missing, NOW - ORPHAN_TTL, NOW, False)
    assert not should_expire(_entry(), missing, NOW - ORPHAN_TTL + 1, NOW, False)


def test_missed_lines_are_counted_up_to_missed_cap():
    assert MISSED_CAP == 32  # specs/cron.md
    for n, want in ((31, 31), (32, 32), (33, 32), (40, 32)):
        view = LogView([LogLine(NOW - 3600 * i, "e1", "%1", "schedule", "missed") for i in range(n)][::-1])
        assert view.missed_since_delivered("e1") == want, n


def test_epochs_reach_the_last_second_of_year_9999_and_no_further():
    assert bounds.epoch(MAX_EPOCH, "at") == MAX_EPOCH
    with pytest.raises(bounds.OutOfRange):
        bounds.epoch(MAX_EPOCH + 1, "at")
    assert bounds.epoch(0, "at") == 0


def test_a_pane_id_is_a_percent_and_at_least_one_digit():
    assert is_pane_id("%0") and not is_pane_id("%") and not is_pane_id("0") and not is_pane_id("%1a")


@pytest.mark.shell
def test_the_hook_log_is_kept_at_log_cap_and_started_again_past_it(tmp_path):
    from rk.agent import hook

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    env = {"RK_STATE_DIR": str(state)}
    log = state / hook.HOOK_LOG
    for size, kept in ((hook.LOG_CAP, True), (hook.LOG_CAP + 1, False)):
        log.write_text("x" * size)
        log.chmod(0o600)
        hook.log_line(env, "%1 claude idle: next")
        text = log.read_text()
        assert text.startswith("x" * size) is kept, size
        assert text.endswith(" %1 claude idle: next\n")


# -- the ladder's walk and tolerance -------------------------------------------------------------


def test_the_streak_walk_looks_at_walk_limit_lines_and_no_more():
    from rk.core.schedule.ladder import WALK_LIMIT, _walk

    assert WALK_LIMIT == 32  # specs/cron.md
    for n in (WALK_LIMIT - 1, WALK_LIMIT, WALK_LIMIT + 1, WALK_LIMIT + 10):
        at_the_cap = [600 * i for i in range(n)]
        streak, _, exhausted = _walk(at_the_cap, 600, 600, POLL)
        assert (streak, exhausted) == (min(n, WALK_LIMIT), True), n


def test_a_gap_may_fall_short_of_its_rung_by_half_the_rung_at_most_and_never_by_more_than_120_s():
    from rk.core.schedule.ladder import tolerance

    assert [tolerance(g) for g in (60, 90, 239, 240, 241, 1800)] == [30, 45, 119, 120, 120, 120]


# -- a limit-reset fire waits through a limit ------------------------------------------------


def test_a_limit_reset_fire_meeting_a_limit_is_held_under_every_policy_a_schedule_fire_is_not():
    wake = Fire(entry="e1", reason="wake", pane="%1", rung=0, due_at=NOW, at=NOW)
    limited = Seen(LIMITED_STATE)
    for policy in Deliver:
        entry = _entry(deliver=policy, wake_on=WakeOn(event=WakeEvent.LIMIT_RESET, debounce=60))
        held = dispose(wake, entry, LogView(), NOW + HOLD_WINDOW + 1, CAP, limited)
        assert (held.act, held.held_by) == (Act.HOLD, "limited"), policy  # and it never expires
    skip = _entry(deliver=Deliver.SKIP_IF_BUSY, wake_on=WakeOn(event=WakeEvent.LIMIT_RESET, debounce=60))
    assert dispose(_fire(), skip, LogView(), NOW, CAP, limited).text.startswith("skipped-limited")


def test_a_pane_in_a_mode_tmux_does_not_name_is_held_as_pane_mode():
    from rk.core.schedule.dispose import held_mode

    assert held_mode(True, "") == "pane-mode"
    assert held_mode(True, "copy-mode") == "copy-mode"
    assert held_mode(False, "copy-mode") == ""


def test_an_old_copy_ending_at_a_cursor_that_never_moved_is_no_echo():
    """The `cursor` reading of the echo needs the cursor to have moved since the
    baseline: a previous identical prompt ending where the cursor still sits is old."""
    from rk.act.echo import Echo
    from rk.core.pane.payload import needle_for
    from rk.tmux.frame import Frame

    def frame(screen: str, cursor: str) -> Frame:
        return Frame("%1", False, False, cursor, screen, rows=screen)

    echo = Echo.of(frame("say hello\n", "9,0"), needle_for("say hello"), False)
    assert not echo.holds(frame("say hello\n", "9,0"))
    assert echo.holds(frame("say hello\nsay hello\n", "9,1"))


def test_a_mark_is_trusted_up_to_trust_window_after_the_answer_and_not_a_second_more():
    assert unchanged.TRUST_AFTER == 120 and unchanged.trust_window(30) == 120 and unchanged.trust_window(90) == 180
    prints = {"%1": unchanged.Print("idle", NOW - 200, "s")}
    for late, want in ((120, unchanged.Verdict.UNCHANGED), (121, unchanged.Verdict.LATE)):
        mark = unchanged.Mark(NOW - 300, NOW - 200 + late, NOW - 200, prints)
        assert unchanged.verdict(mark, NOW - 300, prints, 30, NOW) == want, late


def test_a_cap_reads_from_one_to_max_cap():
    assert bounds.cap(1, "x") == 1 and bounds.cap(bounds.MAX_CAP, "x") == bounds.MAX_CAP
    for bad in (0, bounds.MAX_CAP + 1):
        with pytest.raises(bounds.OutOfRange):
            bounds.cap(bad, "x")


def test_a_budget_reads_up_to_max_budget():
    assert Budget.parse(f"{MAX_BUDGET}/day").tokens == MAX_BUDGET
    with pytest.raises(BudgetError):
        Budget.parse(f"{MAX_BUDGET + 1}/day")


def test_a_rotation_keeps_a_budgeted_entry_s_deliveries_of_budget_keep_exactly():
    assert BUDGET_KEEP == 26 * 3600  # a local day began at most 25 hours ago
    lines = [LogLine(NOW - BUDGET_KEEP - 1, "b", "%1", "schedule", "delivered")]
    lines += [LogLine(NOW - BUDGET_KEEP, "b", "%1", "schedule", "delivered")]
    lines += [LogLine(NOW - 7200, "b", "%1", "schedule", "delivered")]
    assert lines_to_keep(lines, NOW, (), budgeted={"b"}) == [1, 2]
    assert lines_to_keep(lines, NOW, ()) == [2]


def test_a_backoff_epoch_up_to_one_poll_ahead_is_trusted_and_a_later_one_is_not():
    """An agent-state epoch later than now + one poll comes from before the clock was set
    back: the ladder runs from the entry's own anchor instead, so it still fires."""
    entry = _entry(schedule=Backoff(min=300, max=3600), created_by=CreatedBy(at=NOW - 3600))
    for epoch, due_now in ((NOW - 300, True), (NOW + POLL, False), (NOW + POLL + 1, True), (NOW + 7200, True)):
        target = TargetFact(pane="%1", state="idle", epoch=epoch)
        assert backoff_verdict(entry, entry.schedule, LogView([]), target, NOW, POLL).due == due_now, epoch


def test_a_repeated_wall_hour_is_looked_for_as_wide_as_fold_margin_min():
    """Antarctica/Troll falls back two hours (+02 to +00): a wildcard schedule fires in
    both passes of 01:00-02:59, which needs a look back wider than one hour."""
    assert FOLD_MARGIN_MIN == 180  # Debian cron assumes clock changes of less than three hours
    troll = ZoneInfo("Antarctica/Troll")
    expr, t, seen = CronExpr.parse("*/30 1-2 * * *"), int(datetime(2026, 10, 24, 12, tzinfo=UTC).timestamp()), []
    for _ in range(9):
        t = expr.next_after(t, troll)
        seen.append(datetime.fromtimestamp(t, troll).strftime("%d %H:%M%z"))
    first = ["25 01:00+0200", "25 01:30+0200", "25 02:00+0200", "25 02:30+0200"]
    assert seen == [*first, *(s.replace("+0200", "+0000") for s in first), "26 01:00+0000"]

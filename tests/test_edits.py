"""`rk.core.schedule.edits`: what an in-place change implies and what it logs (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rk.core.log.delivery import LogLine, LogView, Reason, Status
from rk.core.schedule.edits import muted, rescheduled_line, unmuted, with_if_absent
from rk.core.schedule.entry import Backoff, Cron, Deliver, Entry, Every, IfAbsent, Target, TargetKind, WakeEvent, WakeOn

NOW = 1_800_000_000
BASE = Entry(
    id="e001",
    name="ping",
    schedule=Every(interval=300),
    target=Target(TargetKind.SESSION, "claude:s1"),
    payload="ping",
)


@pytest.mark.parametrize(
    "change",
    [
        {"schedule": Every(interval=600)},
        {"schedule": Backoff(min=60, max=1800)},
        {"schedule": Cron(expr="0 9 * * 1-5")},
        {"deliver": Deliver.WHEN_IDLE},
        {"deliver": Deliver.SKIP_IF_BUSY},
    ],
    ids=lambda c: next(iter(c)) + "=" + str(next(iter(c.values()))),
)
def test_a_schedule_or_deliver_change_logs_rescheduled_by_edit(change):
    line = rescheduled_line(BASE, replace(BASE, **change), NOW)
    assert line == LogLine(NOW, "e001", "", Reason.EDIT, Status.RESCHEDULED)
    assert line.to_json() == '{"ts":1800000000,"entry":"e001","target":"","reason":"edit","outcome":"rescheduled"}'


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"name": "renamed"},
        {"payload": "other"},
        {"if_absent": IfAbsent.NOTIFY},
        {"any_program": True},
        {"pinned": True},
        {"muted": True},
        {"wake_on": WakeOn(event=WakeEvent.AGENT_STATE_CHANGE)},
        {"schedule": Every(interval=300)},  # the same schedule, written again
    ],
)
def test_other_changes_log_nothing(change):
    assert rescheduled_line(BASE, replace(BASE, **change), NOW) is None


@pytest.mark.parametrize(
    "old, new, logs",
    [
        ("", Deliver.IMMEDIATE, False),  # "" reads as immediate: the policy did not change
        (Deliver.IMMEDIATE, "", False),
        ("", Deliver.WHEN_IDLE, True),
        (Deliver.WHEN_IDLE, "", True),
    ],
)
def test_the_deliver_policy_is_compared_not_its_spelling(old, new, logs):
    line = rescheduled_line(replace(BASE, deliver=old), replace(BASE, deliver=new), NOW)
    assert (line is not None) == logs


def test_the_rescheduled_line_cuts_the_backoff_history():
    before = [
        LogLine(NOW - 600, "e001", "%1", Reason.SCHEDULE, Status.DELIVERED),
        LogLine(NOW - 300, "e001", "%1", Reason.SCHEDULE, Status.DELIVERED),
    ]
    edit = rescheduled_line(BASE, replace(BASE, schedule=Backoff(min=60, max=1800)), NOW)
    after = [LogLine(NOW + 60, "e001", "%1", Reason.SCHEDULE, Status.DELIVERED)]
    assert LogView(before + [edit] + after).schedule_history("e001") == [NOW + 60]


def test_leaving_respawn_drops_the_respawn_command():
    respawning = replace(BASE, if_absent=IfAbsent.RESPAWN, respawn=("claude", "--resume"))
    assert with_if_absent(respawning, IfAbsent.NOTIFY) == replace(BASE, if_absent=IfAbsent.NOTIFY, respawn=())
    assert with_if_absent(respawning, IfAbsent.RESPAWN) == respawning


def test_mute_for_good_for_a_lease_and_off():
    leased = muted(BASE, NOW, 1800)
    assert (leased.muted, leased.muted_until) == (False, NOW + 1800)
    assert leased.is_muted(NOW + 1799) and not leased.is_muted(NOW + 1800)
    for_good = muted(leased, NOW)  # replaces the lease
    assert (for_good.muted, for_good.muted_until) == (True, 0)
    assert muted(for_good, NOW, 60).muted is False  # and a lease replaces it
    assert unmuted(muted(BASE, NOW, 60)) == unmuted(muted(BASE, NOW)) == BASE

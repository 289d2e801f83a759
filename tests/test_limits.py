"""Limits that stay limits: a `limit-reset` wake edge is not used up by a limit.

The pane replays the real Claude Code's limit screen (tests/fixtures/screens/
claude/limit_reached, "You've hit your session limit · resets 2:57pm") with a
`cat` named claude in front, as tests/test_look.py does. The hooks' state is
then overwritten with `idle` before the reset, as Claude's `idle_prompt`
notification did 60 s after a failed turn: the wake edge fires, the look
right before typing still sees the limit, and the fire must wait for the reset
instead of logging `skipped-limited` and spending the edge (which left nothing
to resume the agent once the limit lifted: 0 deliveries after the reset).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from test_look import FIXTURES, NOW, add, logged, option, replay, tick

from rk.core.log.delivery import LogView, Reason
from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN
from rk.core.schedule.dispose import Act, Disposition, Seen, dispose, edge_kept
from rk.core.schedule.due import Fire
from rk.core.schedule.entry import Entry, Target, TargetKind, WakeEvent, WakeOn, WakeOnly


def _printed_reset() -> int:
    screen = (FIXTURES / "claude/limit_reached.txt").read_text(encoding="utf-8")
    printed = next(line for line in screen.splitlines() if "You've hit your" in line).split("resets ")[1].split(" ")[0]
    minute = int(datetime.strptime(f"2026-12-01 {printed}", "%Y-%m-%d %I:%M%p").replace(tzinfo=UTC).timestamp())
    return minute + MINUTE + RESET_MARGIN  # rk's reset: the printed minute's end, and a margin


@pytest.mark.tmux
@pytest.mark.shell
def test_a_limit_reset_edge_that_meets_the_limit_waits_for_the_reset(env, tmux_server):
    pane, pid = replay(tmux_server, "claude/limit_reached")
    hit, reset = NOW - 60, _printed_reset()
    assert reset > NOW + 600
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"limited:{hit}:{pid}")  # StopFailure rate_limit
    waker = add(env, tmux_server, "continue", "--wake-on", "limit-reset", "--wake-debounce", "0s", "--pane", pane)
    assert tick(env, tmux_server, NOW) == {}  # the first observation: limited
    before = tmux_server.capture(pane)

    # an idle notification overwrites the limit long before the reset
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{NOW + 60}:{pid}")
    for at in (NOW + 90, NOW + 120, reset - 60):
        assert tick(env, tmux_server, at) == {waker: "held-busy: limited"}, at  # the screen still shows the limit
    assert waker not in logged(env, tmux_server)  # no skipped-limited line, nothing spent
    assert tmux_server.capture(pane) == before  # nothing typed

    after = tick(env, tmux_server, reset + 30)  # the reset has passed: resumed once
    assert after == {waker: "delivered"}
    assert tick(env, tmux_server, reset + 60) == {}
    assert tick(env, tmux_server, reset + 400) == {}
    assert logged(env, tmux_server) == {waker: ["delivered"]}
    assert option(tmux_server, pane, "@rk_pane_agent_state").startswith("idle:")


def _wake_entry(event: WakeEvent, policy: str | None = None) -> Entry:
    target = Target(TargetKind.PANE, "%1")
    return Entry("w1", WakeOnly(), target, "continue", deliver=policy, wake_on=WakeOn(event=event))


@pytest.mark.parametrize("policy", ["immediate", "when-idle", "skip-if-busy"])
def test_a_limit_holds_a_limit_reset_fire_under_every_policy_and_keeps_its_edge(policy):
    entry = _wake_entry(WakeEvent.LIMIT_RESET, policy)
    fire = Fire("w1", Reason.WAKE, "%1", 0, NOW, NOW)
    held = dispose(fire, entry, LogView([]), NOW + 7200 * 3, 30, Seen("limited", NOW + 99999))
    assert held == Disposition(Act.HOLD, held_by="limited")  # no skipped-limited, no held-expired
    assert edge_kept(entry, fire, held)


def test_only_a_limit_reset_wake_fire_keeps_its_edge():
    seen = Seen("limited", NOW + 600)
    other = _wake_entry(WakeEvent.AGENT_STATE_CHANGE)
    wake = Fire("w1", Reason.WAKE, "%1", 0, NOW, NOW)
    assert not edge_kept(other, wake, dispose(wake, other, LogView([]), NOW, 30, seen))  # skipped-limited, spent
    reset_entry = _wake_entry(WakeEvent.LIMIT_RESET)
    scheduled = Fire("w1", Reason.SCHEDULE, "%1", 0, NOW, NOW)
    assert str(dispose(scheduled, reset_entry, LogView([]), NOW, 30, seen).outcome).startswith("skipped-limited")
    idle = dispose(wake, reset_entry, LogView([]), NOW, 30, Seen("idle"))
    assert idle.act == Act.SEND and not edge_kept(reset_entry, wake, idle)

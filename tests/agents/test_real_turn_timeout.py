"""Turn timeouts with the real Claude Code, offline: the mock answers the delivered
prompt with a Bash `sleep 180` (allowed in the CLI's settings, so no dialog), the
entry has `--turn-timeout 1m --on-timeout interrupt`, and ticks run every few
seconds. Before the minute nothing happens; then `turn-timeout` is logged once,
Esc is pressed once (Claude Code fires no hook for it: the screen's `Interrupted`
ends the turn), `interrupted` is logged, and the agent is idle afterwards."""

from __future__ import annotations

import time

import pytest

from rk import logfile

pytestmark = [pytest.mark.agents, pytest.mark.slow]

TIMEOUT = 60
SLEEP = 180


def test_a_three_minute_tool_call_is_interrupted_once_after_a_minute(rig):
    r = rig("claude", allow=("Bash(sleep:*)",))
    r.run.mock.set_mode("tool", command=f"sleep {SLEEP}", after_text="Slept.")
    entry = r.add("run the long tool", "--every", "1m", "--turn-timeout", "1m", "--on-timeout", "interrupt")
    assert r.tick() == {entry: "delivered"}
    r.rk("cron", "edit", entry, "--every", "1h")  # no second fire while we watch
    log = r.state_dir / f"{r.server}.log"
    delivered = logfile.read_live(log)[0].ts
    r.run.wait_hook("PreToolUse", timeout=30)  # the sleep runs, no dialog
    r.wait_state("active", timeout=5)
    assert "Do you want to proceed" not in r.run.capture()
    assert not [e for e in r.run.hooks() if e["event"] == "PermissionRequest"]

    ticks_before = 0
    deadline = time.monotonic() + TIMEOUT + 90
    while time.monotonic() < deadline:
        now = int(time.time())
        r.tick()
        outcomes = [line.outcome for line in logfile.read_live(log)]
        if any(o.startswith("turn-timeout") for o in outcomes):
            break
        assert now - delivered < TIMEOUT + 5, outcomes  # it came late
        ticks_before += 1
        time.sleep(3)  # the ticker's poll, made short
    lines = logfile.read_live(log)
    statuses = [line.outcome.split(":")[0] for line in lines if line.outcome != "rescheduled"]
    assert statuses == ["delivered", "turn-timeout", "interrupted"], lines
    timed_out = next(line for line in lines if line.outcome.startswith("turn-timeout"))
    assert timed_out.ts - delivered >= TIMEOUT
    assert ticks_before >= 3  # ticks came before the minute and left the turn alone
    r.wait_state("idle", timeout=10)
    assert "Interrupted" in r.run.capture()
    escapes = [e for e in r.run.hooks(delivered) if e["event"] in ("Stop", "StopFailure")]
    assert escapes == []  # Claude fired nothing: the screen ended the turn

    r.tick()  # once only: the turn is over, and the delivery is handled
    assert [line.outcome.split(":")[0] for line in logfile.read_live(log)][-2:] == ["turn-timeout", "interrupted"]
    assert r.state() == "idle"
    print(f"\ntimed out {timed_out.ts - delivered} s after the delivery; {lines[-1].outcome}")

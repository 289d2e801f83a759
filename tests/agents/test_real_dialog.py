"""A dialog ends when it is answered, with the real CLIs.

No hook of Claude Code or Codex fires when a human approves a permission
dialog: the next one comes when the approved tool has finished,
so `waiting` outlived the answer by the tool's run time (18.9 s on Claude,
22.5 s on Codex in the field). While a pane that matters waits on a dialog,
the ticker looks at its screen twice a second (rk.core.pane.recheck): the state
leaves `waiting` within a second of the answer, long before PostToolUse.
"""

from __future__ import annotations

import time

import harness
import pytest

pytestmark = pytest.mark.agents

#: Claude Code in both versions the suite runs (the pinned one and the newest), and Codex.
AGENTS = [pytest.param("claude", v, id=f"claude-{v}") for v in harness.CLAUDE_VERSIONS] + [
    pytest.param("codex", "", id="codex")
]


@pytest.mark.parametrize(("agent", "version"), AGENTS)
def test_an_approved_dialog_stops_reading_waiting_within_a_second(rig, agent, version):
    r = rig(agent, version=version)
    r.run.mock.set_mode("tool", command="sleep 12 && touch approved.txt")
    first = r.add("run the tool", "--every", "1m")
    r.add("status?", "--every", "1h", "--deliver", "when-idle")  # an entry on the pane: its state matters
    assert r.tick() == {first: "delivered"}
    r.rk("cron", "rm", first)
    r.run.wait_hook("PermissionRequest", timeout=20)
    r.wait_state("waiting", timeout=3)
    r.run.wait_screen(r"Do you want to proceed|Would you like to run", timeout=10)
    r.rk("cron", "ticker", "start", "--interval", "3600")
    try:
        time.sleep(1.0)  # the ticker watches the dialog (it must not call it answered while it is up)
        assert r.option("@rk_pane_agent_state").startswith("waiting:")
        approved = r.run.enter()  # the human approves
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and r.option("@rk_pane_agent_state").startswith("waiting:"):
            time.sleep(0.02)
        left = time.time() - approved
        state = r.option("@rk_pane_agent_state")
        assert state.startswith("active:"), state
        assert r.option("@rk_pane_agent_source").startswith("screen:")  # the screen said so, not a hook
        assert not [e for e in r.run.hooks(approved) if e["event"] in ("PostToolUse", "Stop")]  # the tool still runs
        stop = r.run.wait_hook("Stop", since=approved, timeout=40)
        r.wait_state("idle", timeout=30)
    finally:
        r.rk("cron", "ticker", "stop", check=False)
    print(
        f"\n{agent} {r.run.version}: waiting → active {left:.2f} s after the approval; the turn's next hook {stop['t'] - approved:.1f} s"
    )

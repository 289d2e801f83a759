"""Turn timeouts with the real Claude Code and Codex, offline: the mock answers the
delivered prompt with a `sleep 180` tool call that runs with no dialog (Claude:
`Bash(sleep:*)` allowed in its settings; Codex, whose tool calls go to the background
after 30 s: a model reply that stalls for 3 minutes),
the entry has `--turn-timeout 1m --on-timeout interrupt`, and ticks run every few
seconds. Before the minute nothing happens; then `turn-timeout` is logged once, Esc
is pressed once (Claude Code fires no hook for it: the screen's `Interrupted` ends
the turn; Codex fires `Interrupt`), `interrupted` is logged, and the agent is idle
afterwards."""

from __future__ import annotations

import re

import harness
import pytest

from agents.timeouts import interrupted_once, ticks_once_only
from rk.store import delivery_log as logfile

pytestmark = [pytest.mark.agents, pytest.mark.slow]

TIMEOUT = 60
SLEEP = 180


def facts(r, since: int) -> str:
    """What the decision read, for a failure's message: the pane's options and journal."""
    journal = (r.state_dir / f"{r.server}.events").read_text() if (r.state_dir / f"{r.server}.events").exists() else ""
    options = {o: r.option(o) for o in ("@rk_pane_agent_state", "@rk_pane_turn_end", "@rk_pane_agent_source")}
    text = f"delivered at {since}; {options}; journal:\n{journal}\nscreen:\n{r.run.capture()}"
    print(text)
    return text


AGENTS = [pytest.param("claude", v, id=f"claude-{v}") for v in harness.CLAUDE_VERSIONS] + [
    pytest.param("codex", "", id="codex")
]


@pytest.mark.parametrize(("agent", "version"), AGENTS)
def test_a_three_minute_tool_call_is_interrupted_once_after_a_minute(rig, agent, version):
    if agent == "claude" and version == harness.CLAUDE_VERSION:
        r = rig("claude", version=version, allow=("Bash(sleep:*)",))
        r.run.mock.set_mode("tool", command=f"sleep {SLEEP}", after_text="Slept.")
    elif agent == "claude":  # 2.1.332 refuses a long `sleep` in Bash ("1 failed", no hook): the same wait in python
        r = rig("claude", version=version, allow=("Bash(python3 -c:*)",))
        r.run.mock.set_mode("tool", command=f"python3 -c 'import time; time.sleep({SLEEP})'", after_text="Slept.")
    else:
        r = rig("codex")
        # Codex's exec_command hands a command to the background after at most 30 s (the turn ends
        # with "1 background terminal running"): its long turn here is a model reply that stalls
        r.run.mock.set_mode("slow", seconds=SLEEP)
    entry = r.add("run the long tool", "--every", "1m", "--turn-timeout", "1m", "--on-timeout", "interrupt")
    assert r.tick() == {entry: "delivered"}
    r.rk("cron", "edit", entry, "--every", "1h")  # no second fire while we watch
    log = r.state_dir / f"{r.server}.log"
    delivered = logfile.read_live(log)[0].ts
    r.run.wait_hook("PreToolUse" if agent == "claude" else "UserPromptSubmit", timeout=30)  # it runs, no dialog
    r.wait_state("active", timeout=5)
    assert not re.search("Do you want to proceed|Would you like to run", r.run.capture())
    assert not [e for e in r.run.hooks() if e["event"] == "PermissionRequest"]

    lines, timed_out, _ = interrupted_once(r.tick, log, delivered, TIMEOUT, lambda: facts(r, delivered))
    r.wait_state("idle", timeout=10)
    assert re.search("Interrupted|interrupted", r.run.capture())
    ends = [e["event"] for e in r.run.hooks(delivered) if e["event"] in ("Stop", "StopFailure", "Interrupt")]
    assert ends == ([] if agent == "claude" else ["Interrupt"])  # Claude: nothing, the screen ended the turn

    ticks_once_only(r.tick, log)
    assert r.state() == "idle"
    print(f"\n{agent}: timed out {timed_out.ts - delivered} s after the delivery; {lines[-1].outcome}")

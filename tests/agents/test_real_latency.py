"""A held fire goes out within a second of the turn's end, with the real CLIs.

A human's draft holds a when-idle fire; the human sends the draft; the agent
runs the turn and its Stop hook nudges the ticker. Claude Code runs its Stop
hooks before it stops drawing the spinner, so the nudged tick sees a running
turn on screen; the recheck (rk.core.pane.recheck) ticks again until the screen
agrees. The ticker's own poll is an hour here, so a delivery can only come
from the nudge and its rechecks. The figure printed is the time from the Stop
hook to the agent's UserPromptSubmit of rk's prompt.
"""

from __future__ import annotations

import json
import re
import time

import harness
import pytest

pytestmark = pytest.mark.agents

#: Claude Code in both versions the suite runs (the pinned one and the newest), and Codex.
AGENTS = [pytest.param("claude", v, id=f"claude-{v}") for v in harness.CLAUDE_VERSIONS] + [
    pytest.param("codex", "", id="codex")
]


@pytest.mark.parametrize(("agent", "version"), AGENTS)
def test_a_fire_held_by_a_draft_goes_out_within_a_second_of_the_turn_it_started(rig, agent, version):
    r = rig(agent, version=version)
    r.run.mock.set_mode("slow", seconds=2)
    draft = "a draft the human sends later"
    r.run.keys_literal(draft)
    r.run.wait_screen(re.escape(draft), timeout=10)
    held = r.add("status?", "--every", "1m", "--deliver", "when-idle")
    # Under load Codex may still be drawing its start (no hook has set a state yet), which
    # holds the fire as `held-busy: active`; once it is at rest, the draft holds it.
    deadline = time.monotonic() + 30
    while (outcome := r.tick()) != {held: "held-busy: draft"} and time.monotonic() < deadline:
        assert outcome == {held: "held-busy: active"}, outcome
        time.sleep(0.5)
    assert outcome == {held: "held-busy: draft"}
    r.rk("cron", "ticker", "start", "--interval", "3600")
    try:
        sent = r.run.enter()  # the human sends the draft
        stop = r.run.wait_hook("Stop", since=sent, timeout=30)
        prompted = r.run.wait_hook("UserPromptSubmit", since=stop["t"], timeout=30)
        r.wait_state("idle", timeout=30)
    finally:
        r.rk("cron", "ticker", "stop", check=False)
    assert r.prompts() == [draft, "status?"]
    log = json.loads(r.rk("cron", "log", held, "--json").stdout)["result"]
    assert [line["outcome"] for line in log] == ["delivered"]
    print(f"\n{agent} {r.run.version}: Stop → rk's prompt submitted: {prompted['t'] - stop['t']:.2f} s")

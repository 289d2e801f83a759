"""Token budgets from the agent's own records, with the real Claude Code and Codex
offline (`make test-agents`): the mock reports known usage per request, rk's
hook leaves the session record's path on the pane, and `rk cron usage` equals
the mock's totals for the two turns rk started, without the human's turn in
between; the budget, reached by the second delivery, stops the third fire
(`skipped-budget` once, then silence)."""

from __future__ import annotations

import json
import time

import pytest

pytestmark = pytest.mark.agents

RK_TURN = {"input": 1000, "output": 200, "cache_read": 300, "cache_write": 40}
HUMAN_TURN = {"input": 7, "output": 3, "cache_read": 0, "cache_write": 0}


def _tick_until(r, entry: str, timeout: float = 60.0) -> str:
    """Tick (the entry fires every 5 s) until it has an outcome; that outcome."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        outcome = r.tick().get(entry)
        if outcome and not outcome.startswith("held"):
            return outcome
        time.sleep(0.5)
    raise AssertionError(f"{entry} had no outcome in {timeout}s; screen:\n{r.run.capture()}")


def _turn_done(r, prompt: str, count: int = 1, timeout: float = 60.0) -> None:
    """The `count`-th request of `prompt` reached the mock (the turn began: the hooks had
    written `active` before it went), then the turn ended. Waiting on the count, not on
    the prompt being there, keeps a repeated prompt's check from passing on the old turn
    while the new one has not written its usage yet."""
    deadline = time.monotonic() + timeout
    while r.prompts().count(prompt) < count:
        assert time.monotonic() < deadline, f"{prompt!r} never reached the mock; screen:\n{r.run.capture()}"
        time.sleep(0.1)
    r.wait_state("idle", timeout=timeout)
    r.run.wait_idle(timeout)


@pytest.mark.parametrize("agent", ("claude", "codex"))
def test_usage_counts_rk_s_turns_not_the_human_s_and_the_budget_stops_the_third_fire(rig, agent):
    r = rig(agent)
    r.run.mock.set_mode("ok", usage=RK_TURN)
    # Codex reports no cache writes: a turn of rk's is 1540 tokens in Claude, 1500 in Codex
    per_turn = sum(RK_TURN.values()) - (RK_TURN["cache_write"] if agent == "codex" else 0)
    entry = r.add("rk usage probe", "--every", "5s", "--force", "--budget", f"{per_turn * 2 - 1}/day")

    assert _tick_until(r, entry) == "delivered"
    _turn_done(r, "rk usage probe")
    r.run.mock.set_mode("ok", usage=HUMAN_TURN)  # a human's turn between rk's two
    r.run.submit("a human question")
    _turn_done(r, "a human question")
    r.run.mock.set_mode("ok", usage=RK_TURN)
    assert _tick_until(r, entry) == "delivered"  # one turn spent, under the budget
    _turn_done(r, "rk usage probe", count=2)
    assert r.prompts().count("rk usage probe") == 2

    assert _tick_until(r, entry) == "skipped-budget"  # two turns reach it: the third fire is skipped
    time.sleep(5)  # due again: silent now, until midnight
    assert entry not in r.tick()
    assert r.prompts().count("rk usage probe") == 2

    days = json.loads(r.rk("cron", "usage", "--json").stdout)["result"]
    assert [(d["entry"], d["deliveries"], d["unknown"]) for d in days] == [(entry, 2, 0)]
    want = {
        "input": 2 * RK_TURN["input"],
        "output": 2 * RK_TURN["output"],
        "cache_read": 2 * RK_TURN["cache_read"],
        "cache_write": 0 if agent == "codex" else 2 * RK_TURN["cache_write"],
    }
    assert days[0]["tokens"] == want | {"total": 2 * per_turn}  # the human's 10 tokens are not in it
    shown = r.rk("cron", "show", entry, "--json").stdout
    assert json.loads(shown)["result"]["budget_today"]["tokens"] == 2 * per_turn

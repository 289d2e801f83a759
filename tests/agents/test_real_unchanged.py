"""only_if_changed against the real Claude Code and Codex, offline: once an agent
has answered rk's prompt and sits at rest, the next fire is `skipped-unchanged`
(its real idle screen, normalised, and its hooks' turn end are as they were); a
turn a human starts makes the next fire go."""

from __future__ import annotations

import json
import time

import pytest

pytestmark = pytest.mark.agents

AGENTS = ("claude", "codex")


def turn_end(r) -> int:
    value = r.option("@rk_pane_turn_end")
    return int(value.partition(":")[2] or 0)


def wait_turn_end_after(r, since: int, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        end = turn_end(r)
        if end >= since:
            return end
        time.sleep(0.1)
    raise AssertionError(f"no turn end at or after {since} (last {r.option('@rk_pane_turn_end')!r})")


@pytest.mark.parametrize("agent", AGENTS)
def test_an_agent_at_rest_with_nothing_new_is_not_prompted_again_until_a_turn(rig, agent):
    r = rig(agent)
    r.run.mock.set_mode("ok")
    entry = r.add("anything new?", "--every", "1m", "--only-if-changed")
    t = int(time.time())
    assert r.tick(t) == {entry: "delivered"}  # the first fire always goes
    wait_turn_end_after(r, t)
    r.wait_state("idle", timeout=20)
    assert r.tick(t + 5) == {}  # not due: this tick marks the answer
    marks = json.loads((r.client().state_dir / f"{r.client().server}.unchanged.json").read_text())
    assert marks["entries"][entry]["delivered"] == t

    assert r.tick(t + 65) == {entry: "skipped-unchanged"}
    assert r.prompts() == ["anything new?"]

    r.run.submit("a human's question")
    r.run.wait_hook("Stop", timeout=20)
    wait_turn_end_after(r, t + 1)
    r.wait_state("idle", timeout=20)
    assert r.tick(t + 130) == {entry: "delivered"}  # a new turn since the answer
    r.wait_state("idle", timeout=20)
    assert r.prompts() == ["anything new?", "a human's question", "anything new?"]

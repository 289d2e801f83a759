"""The real Gemini CLI 0.61, offline: a reply quoting every working, dialog and limit pattern
rk knows (mocks.QUOTING_REPLY) leaves it idle, and the next fires are delivered (specs/screen.md)."""

from __future__ import annotations

import time

import mocks
import pytest

from agents.test_real_gemini import GeminiRig

pytestmark = pytest.mark.agents


@pytest.fixture
def gemini(tmp_path, agent_bin):
    rig = GeminiRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def test_a_reply_quoting_every_pattern_reads_idle_and_the_next_prompts_arrive(gemini):
    gemini.wait_state("idle", timeout=20)
    gemini.mock.set_mode("ok", delay=0, reply=mocks.QUOTING_REPLY)
    first = gemini.add("quote the patterns")
    assert gemini.tick() == {first: "delivered"}
    gemini.g.wait_for(lambda screen: "Rate limit reached." in screen, timeout=30)
    gemini.wait_state("idle", timeout=30)
    gemini.rk("cron", "rm", first)
    gemini.mock.set_mode("ok", reply="Hello from the mock Gemini API.")
    skip = gemini.add("after the quotes", "--deliver", "skip-if-busy")
    assert gemini.tick() == {skip: "delivered"}
    gemini.wait_state("active", timeout=10)
    gemini.wait_state("idle", timeout=30)
    gemini.rk("cron", "rm", skip)
    gemini.mock.set_mode("ok", reply=mocks.QUOTING_REPLY)
    again = gemini.add("quote them again")
    assert gemini.tick() == {again: "delivered"}
    gemini.g.wait_for(lambda screen: screen.count("Rate limit reached.") >= 1, timeout=30)
    gemini.wait_state("idle", timeout=30)
    gemini.rk("cron", "rm", again)
    held = gemini.add("when idle after the quotes", "--deliver", "when-idle")
    assert gemini.tick(now=int(time.time()) + 30) == {held: "delivered"}  # past the staleness bound: rk looks
    gemini.wait_state("idle", timeout=30)
    assert gemini.prompts() == [
        "quote the patterns",
        "after the quotes",
        "quote them again",
        "when idle after the quotes",
    ]

"""The screens rk reads, with the real CLIs offline (`make test-agents`).

A reply that quotes every working, dialog and limit pattern rk knows (mocks.QUOTING_REPLY)
leaves the agent idle: rk reads only the live frame (specs/screen.md), so a skip-if-busy
fire and `rk send` are delivered right after it. And the newest Claude Code
(harness.CLAUDE_LATEST_VERSION, installed beside the pinned one) runs a representative
set of the suite: a turn and its states, a dialog read waiting, a draft left alone, a
failed and a limited turn, payloads byte-exact, and the quoting reply.
"""

from __future__ import annotations

import json

import harness
import mocks
import pytest

from agents import test_real_agents as suite

pytestmark = pytest.mark.agents

LATEST = harness.CLAUDE_LATEST_VERSION
QUOTERS = [pytest.param("claude", v, id=f"claude-{v}") for v in harness.CLAUDE_VERSIONS] + [
    pytest.param("codex", "", id="codex")
]


@pytest.mark.parametrize("agent, version", QUOTERS)
def test_a_reply_quoting_every_pattern_reads_idle_and_the_next_prompts_arrive(rig, agent, version):
    r = rig(agent, version=version)
    r.run.mock.set_mode("ok", text=mocks.QUOTING_REPLY)
    first = r.add("quote the patterns", "--every", "1m")
    assert r.tick() == {first: "delivered"}
    r.run.wait_hook("Stop", timeout=30)
    r.wait_state("idle", timeout=10)
    r.run.wait_screen(r"^  esc to interrupt\s*$", timeout=10)  # the reply's last line, above the composer
    r.rk("cron", "rm", first)
    listed = json.loads(r.rk("agent", "list", "--json").stdout)["result"]
    assert [p["state"] for p in listed if p["pane"] == r.pane] == ["idle"], listed
    # right before typing rk looks at the screen: the quotes are not a running turn
    skip = r.add("after the quotes", "--every", "1m", "--deliver", "skip-if-busy")
    assert r.tick() == {skip: "delivered"}
    r.run.wait_hook("Stop", timeout=30, count=2)
    r.wait_state("idle", timeout=10)
    r.rk("cron", "rm", skip)
    # past the staleness bound the screen alone decides, and still reads idle
    held = r.add("when idle after the quotes", "--every", "1m", "--deliver", "when-idle")
    assert r.tick(now=suite.stale()) == {held: "delivered"}
    r.run.wait_hook("Stop", timeout=30, count=3)
    r.wait_state("idle", timeout=10)
    r.rk("cron", "rm", held)
    sent = r.rk("send", "--pane", r.pane, "--json", "sent after the quotes")
    assert json.loads(sent.stdout)["result"]["outcome"] == "delivered", sent.stdout
    r.run.wait_hook("Stop", timeout=30, count=4)
    assert r.prompts() == [
        "quote the patterns",
        "after the quotes",
        "when idle after the quotes",
        "sent after the quotes",
    ]


# -- the newest Claude Code: a representative set of the suite ------------------------------------


@pytest.fixture
def latest(rig):
    """`latest("claude", **options)`: a rig running the newest Claude Code (`latest.made`: its rigs)."""

    def make(agent: str, **kw):
        made.append(rig(agent, version=LATEST, **kw))
        return made[-1]

    made: list = []
    make.made = made  # type: ignore[attr-defined]
    return make


def test_the_newest_claude_code_is_the_version_run(latest):
    r = latest("claude")
    assert r.run.wait_screen(rf"Claude Code v{LATEST}\b", timeout=5)


def test_newest_claude_a_delivered_turn_goes_active_then_idle(latest):
    suite.test_a_delivered_turn_goes_active_then_idle_and_lands_once(latest, "claude")


def test_newest_claude_payloads_arrive_byte_exact(latest):
    """2.1.332 hands a long paste to the model wrapped in `<pasted_content id=…>` tags (the
    text inside byte-exact; mocks.pasted_text unwraps it): the 5 KB payload arrives so."""
    suite.test_payloads_arrive_byte_exact_and_exactly_once(latest, "claude")
    texts = [r["user_texts"][-1] for r in latest.made[0].run.mock.requests(main_only=True)]
    assert [t.startswith('\n\n<pasted_content id="') for t in texts] == [False] * 6 + [True]


@pytest.mark.parametrize("mode, want", [("error500", "idle"), ("error429", "limited")])
def test_newest_claude_a_failed_turn_is_reported_at_once(latest, mode, want):
    suite.test_a_failed_turn_is_reported_at_once(latest, "claude", mode, want)


def test_newest_claude_a_permission_dialog_reads_waiting(latest):
    suite.test_a_permission_dialog_reads_waiting_at_once_and_is_never_answered(latest, "claude")


def test_newest_claude_a_humans_draft_is_left_alone(latest):
    suite.test_a_humans_draft_is_left_alone(latest, "claude")

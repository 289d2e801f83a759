"""A draft typed while the agent works, on each real CLI (issue 26, "Drafts in every agent").

The human's prompt goes in, and while the agent works on it they type the next one
and do not send it. When the turn ends, every fire is held by that draft (`held-busy:
draft`, `skipped-busy: draft`), `rk send` is refused, and the draft is neither sent
nor cleared: the model hears the first prompt only. Claude Code, Codex, Gemini CLI
and OpenCode run offline against their mocks, their states from rk's own hooks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.test_real_gemini import GeminiRig
from agents.test_real_opencode import OpenCodeRig

pytestmark = pytest.mark.agents

DRAFT = "half-typed thought"


def _held_through_the_turn(
    r,
    start_turn: Callable[[], None],
    type_draft: Callable[[], None],
    draft_shown: Callable[[], object],
    capture: Callable[[], str],
    sent: Callable[[], list[str]],
) -> None:
    """The scenario on one rig: `sent()` lists the prompts the model heard."""
    start_turn()
    r.wait_state("active", timeout=30)
    type_draft()
    draft_shown()
    assert _state(r) == "active", "the draft was not typed while the agent worked"
    r.wait_state("idle", timeout=60)
    assert DRAFT in capture()

    now = r.add("status?")
    skip = r.add("status?", "--deliver", "skip-if-busy")
    assert r.tick() == {now: "held-busy: draft", skip: "skipped-busy: draft"}
    once = r.rk("send", "--pane", r.pane, "SECOND", check=False)
    assert once.returncode == 1, once.stdout + once.stderr
    assert DRAFT in capture() and "SECOND" not in capture()  # neither sent nor cleared
    assert sent() == ["first prompt"]
    log = r.rk("cron", "log").stdout
    print(f"\n--- rk send: {once.stdout.strip()} {once.stderr.strip()}\n--- rk cron log:\n{log}")
    assert "skipped-busy: draft" in log


def _state(r) -> str:
    """The pane's state word, as rk's hooks wrote it."""
    value = (
        r.oc.rk_state()
        if isinstance(r, OpenCodeRig)
        else r.option("@rk_pane_agent_state")
        if hasattr(r, "option")
        else r.state()
    )
    return value.split(":")[0]


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_draft_typed_while_claude_or_codex_works_is_held(rig, agent):
    r = rig(agent)
    r.add_flags = ("--every", "1m")
    r.run.mock.set_mode("slow", seconds=6)

    def start() -> None:
        r.run.keys_literal("first prompt")
        r.run.wait_screen("first prompt", timeout=10)
        time.sleep(0.3)
        r.run.enter()

    _held_through_the_turn(
        r,
        start,
        lambda: r.run.keys_literal(DRAFT),
        lambda: r.run.wait_screen(DRAFT, timeout=10),
        r.run.capture,
        r.prompts,
    )


@pytest.fixture
def gemini(tmp_path, agent_bin):
    rig = GeminiRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def test_a_draft_typed_while_gemini_works_is_held(gemini):
    g = gemini
    g.wait_state("idle", timeout=20)
    g.mock.set_mode("slow", delay=6)

    def start() -> None:
        g.g.submit("first prompt")

    _held_through_the_turn(
        g, start, lambda: g.g.type(DRAFT), lambda: g.g.wait_composer_text(DRAFT, timeout=15), g.g.capture, g.prompts
    )


@pytest.fixture
def opencode(tmp_path, agent_bin):
    rig = OpenCodeRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def _opencode_prompts(oc: OpenCodeRig) -> list[str]:
    """The user prompts the mock heard (one per turn; the title call and tool follow-ups aside)."""
    path = Path(oc.oc.mock_log)
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    seen = [row["prompt"].replace(" mock:slow=8", "") for row in rows if row.get("kind") == "reply"]
    return list(dict.fromkeys(seen))


def test_a_draft_typed_while_opencode_works_is_held(opencode):
    oc = opencode

    def start() -> None:
        oc.oc.type_text("first prompt mock:slow=8")
        oc.oc.wait_screen(lambda s: "mock:slow=8" in s, timeout=10)
        time.sleep(0.3)
        oc.oc.send_keys("Enter")

    def type_draft() -> None:
        # the first prompt switches OpenCode to its session view: keys typed before it shows are lost
        oc.oc.wait_screen(lambda s: "esc interrupt" in s and "mock:slow=8" in s, timeout=15)
        oc.oc.type_text(DRAFT)

    _held_through_the_turn(
        oc,
        start,
        type_draft,
        lambda: oc.oc.wait_screen(lambda s: DRAFT in s, timeout=15),
        oc.oc.capture,
        lambda: _opencode_prompts(oc),
    )

"""`--fresh` with the real Claude Code and Codex, offline against the mock API.

Facts these tests stand on (seen here, 2.1.197 and 0.171.0): Claude's `/clear` fires
SessionEnd (reason clear) and SessionStart (source clear) with a new session id, and no
model request; its `/compact` makes one request, fires PreCompact, SessionStart (source
compact, same session) and PostCompact, shows `Compacted`, and no Stop. Codex's `/new`
fires no hook at all (the screen is redrawn empty); its `/compact` fires PreCompact,
PreModelRequest, PostModelRequest and PostCompact and shows `Context compacted`.

Each test: the command goes before the payload, and the request the payload makes
carries no earlier turn (clear) or only the summary (compact); a human's turn since
the entry's last delivery withholds it. The measurement (20 fires with and without,
tokens from Claude's transcripts) is `fresh_measure`'s, printed here and by bench/fresh.py.
"""

from __future__ import annotations

import json
import time

import harness
import pytest

from agents.fresh_measure import fires

pytestmark = [pytest.mark.agents, pytest.mark.slow]

CLEAR = {"claude": "/clear", "codex": "/new"}
AGENTS = [pytest.param("claude", harness.CLAUDE_VERSION, id="claude"), pytest.param("codex", "", id="codex")]


def user_texts(rig) -> list[list[str]]:
    """The texts of the turns each main request carried (earlier ones too), oldest request first."""
    return [r.get("context_texts", []) for r in rig.run.mock.requests(main_only=True)]


def made_now(rig, payload: str, *flags: str) -> str:
    """An entry created now (`rig.add`'s are a minute old, so due at once)."""
    out = rig.rk("cron", "add", *flags, "--pane", rig.pane, "--json", "--", payload, now=int(time.time()))
    return json.loads(out.stdout)["result"]["id"]


def earlier_turns(rig, texts: list[str]) -> None:
    """Turns before the entry exists: a human's, each waited out."""
    for text in texts:
        before = time.time()
        rig.run.submit(text)
        rig.run.wait_hook("Stop", since=before, timeout=60)
    rig.wait_state("idle", timeout=15)
    # Claude Code 2.1.197 now and then shows the last prompt again in the composer after its turn
    # (a draft rk rightly never types over): the human clears it, as they would
    rig.run.clear_composer()
    rig.run.wait_idle(timeout=15)


@pytest.mark.parametrize(("agent", "version"), AGENTS)
def test_clear_runs_first_and_the_payload_lands_in_a_fresh_context(rig, agent, version):
    r = rig(agent, version=version) if version else rig(agent)
    r.run.mock.set_mode("ok")
    earlier_turns(r, ["remember the word kiwi", "and the word plum"])
    assert any("kiwi" in t for t in user_texts(r)[-1])  # the session so far carries both turns
    entry = made_now(r, "status?", "--every", "1m", "--fresh", "clear")  # the turns above were before it
    before = time.time()
    outcome = r.tick(now=int(time.time()) + 61)[entry]
    assert outcome == f"delivered (after {CLEAR[agent]})", outcome
    r.run.wait_hook("Stop", since=before, timeout=60)
    last = user_texts(r)[-1]
    assert any("status?" in t for t in last), last
    assert not any("kiwi" in t or "plum" in t for t in last), last  # nothing of the earlier turns
    typed = [t for t in last if not t.lstrip().startswith("<") and len(t) < 200]
    print(f"\n{agent}: {outcome}; the payload's request carried the typed texts {typed}")


@pytest.mark.parametrize(("agent", "version"), AGENTS)
def test_a_humans_turn_withholds_clear_and_the_context_stays(rig, agent, version):
    r = rig(agent, version=version) if version else rig(agent)
    r.run.mock.set_mode("ok")
    entry = r.add("status?", "--every", "1m", "--fresh", "clear")  # made a minute ago
    earlier_turns(r, ["remember the word kiwi"])  # a human's turn since its creation
    before = time.time()
    outcome = r.tick()[entry]
    assert outcome == "delivered (fresh withheld: a human typed since the last fire)", outcome
    r.run.wait_hook("Stop", since=before, timeout=60)
    last = user_texts(r)[-1]
    assert any("kiwi" in t for t in last) and any("status?" in t for t in last), last
    assert CLEAR[agent] not in " ".join(t for texts in user_texts(r) for t in texts)


@pytest.mark.parametrize(("agent", "version"), AGENTS)
def test_compact_is_waited_out_before_the_payload(rig, agent, version):
    r = rig(agent, version=version) if version else rig(agent)
    r.run.mock.set_mode("ok")
    earlier_turns(r, ["remember the word kiwi", "and the word plum"])
    entry = made_now(r, "status?", "--every", "1m", "--fresh", "compact")
    before = time.time()
    outcome = r.tick(now=int(time.time()) + 61)[entry]
    assert outcome == "delivered (after /compact)", (outcome, r.run.hook_timeline(before), r.run.capture())
    compacted = r.run.wait_hook("PostCompact", since=before, timeout=30)
    prompt = r.run.wait_hook("UserPromptSubmit", since=before, timeout=30)
    assert prompt["t"] > compacted["t"]  # the payload was submitted once the compaction was over
    r.run.wait_hook("Stop", since=before, timeout=60)
    last = user_texts(r)[-1]
    assert any("status?" in t for t in last), last
    if agent == "claude":  # the earlier prompts are in the summary only (Codex keeps recent ones verbatim)
        assert not any(t.strip() in ("remember the word kiwi", "and the word plum") for t in last), last


def test_tokens_per_fire_with_and_without_fresh_clear(rig):
    """20 fires of one heartbeat each way on the real Claude; the figures are printed."""
    plain = fires(rig("claude"), "", 20)
    fresh = fires(rig("claude"), "clear-always", 20)
    print(f"\n{plain.line('without --fresh')}\n{fresh.line('with --fresh clear')}")
    assert fresh.last < plain.last  # a fresh context does not grow with the fires
    assert max(fresh.per_fire) - min(fresh.per_fire) < plain.last - plain.per_fire[0]

"""`--deliver replace` with the real Claude Code and Codex, offline. The mock answers a
prompt with a three-minute turn (Claude: a `sleep 180` tool call allowed in its
settings; Codex: a reply that stalls for 3 minutes, as in test_real_turn_timeout.py).

Its own turn: the entry's first fire starts the long turn; at its next fire the turn
still runs, so the tick presses the agent's interrupt key, sees the agent rest, and
types the new prompt, which the model receives. A human's turn: the fire is held (the
decision says `replace: turn not ours, waiting for idle`), no key is pressed, the
turn goes on. Claude stopped before its reply began puts the prompt back in its composer:
rk clears its own text, so the new prompt is not glued to it (`claude-stalled-reply`)."""

from __future__ import annotations

import time

import harness
import pytest

from rk.store import delivery_log as logfile

pytestmark = [pytest.mark.agents, pytest.mark.slow]

SLEEP = 180
EVERY = 30

AGENTS = [pytest.param("claude", id="claude"), pytest.param("codex", id="codex")]
#: Claude with no tool call: its turn waits on the model's reply (no output yet when the Esc comes).
KINDS = [*AGENTS, pytest.param("claude-slow", id="claude-stalled-reply")]


def long_turns(rig, agent: str):
    """A rig whose every prompt starts a turn of SLEEP seconds with no dialog."""
    if agent == "claude":
        r = rig("claude", version=harness.CLAUDE_VERSION, allow=("Bash(sleep:*)",))
        r.run.mock.set_mode("tool", command=f"sleep {SLEEP}", after_text="Slept.")
    elif agent == "claude-slow":
        r = rig("claude", version=harness.CLAUDE_VERSION)
        r.run.mock.set_mode("slow", seconds=SLEEP)
    else:
        r = rig("codex")
        r.run.mock.set_mode("slow", seconds=SLEEP)
    return r


def running(r, agent: str, since: float) -> None:
    """Wait until the turn started at `since` runs (the tool call under way, for Claude)."""
    r.run.wait_hook("PreToolUse" if agent == "claude" else "UserPromptSubmit", since=since, timeout=30)
    r.wait_state("active", timeout=10)


@pytest.mark.parametrize("agent", KINDS)
def test_its_own_long_turn_is_interrupted_and_the_new_prompt_lands(rig, agent):
    r = long_turns(rig, agent)
    entry = r.add("first question", "--every", f"{EVERY}s", "--deliver", "replace")
    started = time.time()
    assert r.tick() == {entry: "delivered"}
    log = r.state_dir / f"{r.server}.log"
    delivered = logfile.read_live(log)[0].ts
    running(r, agent, started)
    second = "first question" if agent == "claude-slow" else "second question"
    if second != "first question":
        r.rk("cron", "edit", entry, "--prompt", second)  # the same schedule: no `rescheduled`
    harness.until(lambda: time.time() >= delivered + EVERY + 1, EVERY + 5, "the next fire due")
    assert r.state() == "active"  # the first turn still runs

    began = time.time()
    out = r.tick()
    assert out == {entry: "delivered"}, (logfile.read_live(log), r.run.capture())
    took = time.time() - began
    lines = [line for line in logfile.read_live(log) if line.outcome != "rescheduled"]
    assert [line.outcome.split(":")[0] for line in lines] == ["delivered", "interrupted", "delivered"], lines
    assert lines[1].outcome.startswith("interrupted: replace: ")
    running(r, agent, began)  # the new prompt started a turn of its own
    if agent == "claude-slow":  # Claude put the stopped prompt back in the composer: cleared, not glued to ours
        harness.until(lambda: len(r.prompts()) >= 2, 15, "the new prompt at the model")
        assert [p.strip() for p in r.prompts()] == ["first question", "first question"], r.prompts()
        assert "put back in the composer" in lines[1].outcome
    else:
        harness.until(lambda: any("second question" in p for p in r.prompts()), 15, "the new prompt at the model")
        assert sum("first question" in p for p in r.prompts()) == 1  # nothing typed twice
    r.rk("cron", "rm", entry)
    print(f"\n{agent}: {lines[1].outcome}; the replacing tick took {took:.1f} s")


@pytest.mark.parametrize("agent", AGENTS)
def test_a_humans_long_turn_is_left_alone(rig, agent):
    r = long_turns(rig, agent)
    started = time.time()
    r.run.submit("my own question")
    running(r, agent, started)
    entry = r.add("status?", "--every", f"{EVERY}s", "--deliver", "replace")

    for _ in range(3):  # every tick holds it; none presses a key
        assert r.tick() == {entry: "held-busy: active; replace: turn not ours, waiting for idle"}
        time.sleep(1)
    assert logfile.read_live(r.state_dir / f"{r.server}.log") == []
    assert r.state() == "active"
    assert harness.busy(r.run.capture())
    assert not [e for e in r.run.hooks(started) if e["event"] in ("Stop", "StopFailure", "Interrupt")]
    assert not any("status?" in p for p in r.prompts())
    r.rk("cron", "rm", entry)

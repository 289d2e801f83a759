"""Resets to the second, with the real Claude Code offline: a reset printed to the minute.

Claude prints a limit's reset to the minute ("Your limit resets at 14:05 UTC");
the limit itself ends at some second of that minute. rk used to take the
minute's first second as the reset and typed `continue` up to a minute early:
refused with a 429, and nothing typed after the reset. Now a minute is over at
its end plus `RESET_MARGIN`. Here the mock refuses every request until the
real reset, placed at second 0, 30 and 59 of a minute, and answers from then
on; rk ticks on the real clock every TICK_EVERY seconds. Each run: `continue`
typed once, after the real reset, nothing before; the mock saw the refused
prompt and the resume only. API-key mode: Claude does not continue by itself
there (its auto-continue is for subscription logins), so rk's resume is the
only one.
"""

from __future__ import annotations

import json
import time

import harness
import pytest

from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.long(120)]  # about two minutes each on the real clock

#: The printed minute starts at least this far after the run begins: the first turn is
#: refused and the limit read before the minute comes.
LEAD = 40
#: The ticks on the real clock come this often (the ticker's poll, made short).
TICK_EVERY = 2.0


def main_requests(r) -> list[dict]:
    return r.run.mock.requests(main_only=True)


#: Each second with one version, each version at least once: the version decides the banner
#: rk reads, the second only rk's own arithmetic (the same for both); each pair waits ~2 minutes.
PAIRS = [(harness.CLAUDE_LATEST_VERSION, 0), (harness.CLAUDE_VERSION, 30), (harness.CLAUDE_LATEST_VERSION, 59)]


@pytest.mark.parametrize(
    ("version", "second"), PAIRS, ids=lambda v: f"claude-{v}" if isinstance(v, str) else f"reset-at-second-{v}"
)
def test_a_reset_printed_to_the_minute_is_resumed_once_after_the_real_reset(rig, version, second):
    r = rig("claude", version=version)
    minute = (int(time.time()) + LEAD) // MINUTE * MINUTE + MINUTE
    reset = minute + second  # the real reset; Claude prints only its minute
    said = time.strftime("%H:%M UTC", time.gmtime(reset))
    r.run.mock.set_mode("error429_reset", reset_at=reset, unified=False, until=reset)
    first = r.add("work on the task", "--every", "1m")
    assert r.tick() == {first: "delivered"}
    failed = r.run.wait_hook("StopFailure", timeout=30)
    assert f"resets at {said}" in failed["payload"]["last_assistant_message"]
    state = r.wait_state("limited", timeout=10)
    epoch = int(state.split(":")[1])
    over = minute + MINUTE + RESET_MARGIN  # the printed minute's end, and the margin
    assert r.option("@rk_pane_agent_source") == f"hook:{epoch}:{over}"
    r.rk("cron", "rm", first)
    resume = r.add("continue", "--wake-on", "limit-reset", "--wake-debounce", "0s")

    ticks: list[tuple[float, dict]] = []  # (when, outcomes) of every tick on the real clock
    while not any(resume in outcomes for _, outcomes in ticks) and time.time() < over + 60:
        ticks.append((time.time(), r.tick()))
        time.sleep(TICK_EVERY)
    delivered_at, outcomes = ticks[-1]
    assert outcomes == {resume: "delivered"}, ticks[-3:]
    early = [(at, out) for at, out in ticks if at < reset]
    assert early and all(out == {} for _, out in early), early  # nothing typed, nothing logged
    assert delivered_at >= reset
    submitted = r.run.wait_hook("UserPromptSubmit", since=delivered_at, timeout=30)
    r.run.wait_hook("Stop", since=delivered_at, timeout=30)
    r.wait_state("idle", timeout=30)
    for _ in range(3):  # once only: later ticks leave it alone
        time.sleep(TICK_EVERY)
        assert resume not in r.tick()
    statuses = [q["status"] for q in main_requests(r)]
    assert statuses == [429, 200], statuses  # the refused prompt, then the resume: none before the reset
    assert r.prompts() == ["work on the task", "continue"]
    log = json.loads(r.rk("cron", "log", resume, "--json").stdout)["result"]
    assert [line["outcome"] for line in log] == ["delivered"]
    print(
        f"\nclaude {version}, reset at second {second} ({said} printed): {len(early)} ticks before the reset "
        f"typed nothing; main requests {statuses}; `continue` typed at reset + {delivered_at - reset:.1f} s, "
        f"submitted at reset + {submitted['t'] - reset:.1f} s; deliveries: {len(log)}"
    )


@pytest.mark.parametrize(
    "version", [harness.CLAUDE_LATEST_VERSION, harness.CLAUDE_VERSION], ids=lambda v: f"claude-{v}"
)
@pytest.mark.long(240)  # two resets
def test_a_refused_resume_is_retried_at_the_next_reset_the_new_banner_names(rig, version):
    """The limit outlasts the reset first printed (hit again): rk's resume is refused with a
    banner naming a later reset, and typed again after that one; it is never lost."""
    r = rig("claude", version=version)
    first_minute = (int(time.time()) + LEAD) // MINUTE * MINUTE + MINUTE
    then_minute = first_minute + 2 * MINUTE
    reset, then = first_minute + 30, then_minute + 30
    said, then_said = (time.strftime("%H:%M UTC", time.gmtime(t)) for t in (reset, then))
    r.run.mock.set_mode("error429_reset", reset_at=reset, then_reset_at=then, unified=False, until=then)
    first = r.add("work on the task", "--every", "1m")
    assert r.tick() == {first: "delivered"}
    failed = r.run.wait_hook("StopFailure", timeout=30)
    assert f"resets at {said}" in failed["payload"]["last_assistant_message"]
    r.wait_state("limited", timeout=10)
    r.rk("cron", "rm", first)
    resume = r.add("continue", "--wake-on", "limit-reset", "--wake-debounce", "0s")

    typed: list[float] = []  # when each tick that typed the resume began
    while len(typed) < 2 and time.time() < then_minute + MINUTE + RESET_MARGIN + 60:
        began = time.time()
        outcomes = r.tick()
        if resume in outcomes:
            assert outcomes[resume] == "delivered", outcomes
            typed.append(began)
            if len(typed) == 1:  # refused: the new banner names the later reset
                refused = r.run.wait_hook("StopFailure", since=began, timeout=30)
                assert f"resets at {then_said}" in refused["payload"]["last_assistant_message"]
        time.sleep(TICK_EVERY)
    assert len(typed) == 2, typed
    assert first_minute + MINUTE <= typed[0] < then  # after the first reset rk read (its minute's end); refused
    assert typed[1] >= then  # after the reset the refusal named: answered
    r.run.wait_hook("Stop", since=typed[1], timeout=30)
    r.wait_state("idle", timeout=30)
    for _ in range(3):
        time.sleep(TICK_EVERY)
        assert resume not in r.tick()
    statuses = [q["status"] for q in main_requests(r)]
    assert statuses == [429, 429, 200], statuses
    assert r.prompts() == ["work on the task", "continue", "continue"]
    log = json.loads(r.rk("cron", "log", resume, "--json").stdout)["result"]
    assert [line["outcome"] for line in log] == ["delivered", "delivered"]
    print(
        f"\nclaude {version}, limit hit again: first resume at reset + {typed[0] - reset:.1f} s refused "
        f"(banner {said} → {then_said}); second at the new reset + {typed[1] - then:.1f} s, answered; "
        f"main requests {statuses}"
    )

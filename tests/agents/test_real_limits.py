"""`--wake-on limit-reset` in API-key mode, with the real Claude Code offline (both versions).

A 429 with no reset printed (only the API's retry-after): StopFailure says
`limited`; the idle_prompt Notification ~60 s later used to overwrite it with
`idle`, so the wake edge fired before the reset, met the limit, was logged
`skipped-limited` and spent (0 deliveries after the reset); with a generic 429
the wake then typed `continue` every minute, each one another refused request.
Now the limit holds through the notice, nothing is typed while it lasts, and
once the retry delay has passed (no reset known: rk.core.pane.look.LIMIT_RETRY) the
resume is typed exactly once.

A 429 whose message names the reset (`API Error: Request rejected (429) · … Your
limit resets at 14:05 UTC.`), on the real clock: the mock refuses until that
minute and answers from then on; rk reads `limited` with that reset (the minute's
end plus `RESET_MARGIN`), the notice does not clear it, and the first tick past
it types `continue` once.
(Subscription mode is test_real_agents.test_a_limited_agent_is_not_prompted_and_resumes_after_its_reset.)
"""

from __future__ import annotations

import json
import time

import harness
import pytest

from rk.core.pane.look import LIMIT_RETRY
from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN

pytestmark = pytest.mark.agents

VERSIONS = [pytest.param(v, id=f"claude-{v}") for v in harness.CLAUDE_VERSIONS]


@pytest.mark.parametrize("version", VERSIONS)
def test_limit_reset_resumes_an_api_key_claude_once_after_a_429_without_a_reset(rig, version):
    r = rig("claude", version=version)
    r.run.mock.set_mode("error429")
    first = r.add("work on the task", "--every", "1m")
    assert r.tick() == {first: "delivered"}
    failed = r.run.wait_hook("StopFailure", timeout=30)
    epoch = int(r.wait_state("limited", timeout=10).split(":")[1])
    r.rk("cron", "rm", first)
    resume = r.add("continue", "--wake-on", "limit-reset", "--wake-debounce", "0s")
    assert r.tick() == {}  # the first observation of the target: limited
    notice = r.run.wait_hook("Notification", since=failed["t"], timeout=90)
    assert (notice["payload"] or {}).get("notification_type") == "idle_prompt"
    assert r.option("@rk_pane_agent_state").startswith("limited:")
    for at in (epoch + 120, epoch + LIMIT_RETRY // 2, epoch + LIMIT_RETRY - 60):
        assert r.tick(now=at) == {}, at  # still limited: nothing typed, nothing logged
    assert r.prompts() == ["work on the task"]
    r.run.mock.set_mode("ok")
    after = epoch + LIMIT_RETRY + 30
    assert r.tick(now=after) == {resume: "delivered"}
    r.run.wait_hook("Stop", since=notice["t"], timeout=30)
    r.wait_state("idle", timeout=30)
    assert resume not in r.tick(now=after + 60)
    assert resume not in r.tick(now=after + 3600)
    assert r.prompts() == ["work on the task", "continue"]
    log = json.loads(r.rk("cron", "log", resume, "--json").stdout)["result"]
    assert [line["outcome"] for line in log] == ["delivered"]


#: The printed reset is a whole minute at least this far ahead of the delivery: past the
#: idle_prompt notice (60 s after the failed turn), so the notice meets the limit.
RESET_LEAD = 70
#: The ticks on the real clock come this often (the ticker's poll, made short).
TICK_EVERY = 2.0


def main_requests(r) -> list[dict]:
    return r.run.mock.requests(main_only=True)


@pytest.mark.slow  # about two minutes on the real clock
@pytest.mark.long(160)
@pytest.mark.parametrize("version", VERSIONS)
def test_limit_reset_resumes_an_api_key_claude_once_after_the_reset_it_printed(rig, version):
    r = rig("claude", version=version)
    reset = (int(time.time()) + RESET_LEAD) // 60 * 60 + 60
    said = time.strftime("%H:%M UTC", time.gmtime(reset))
    # API-key mode (no subscription headers); refused until the reset, answered from then on
    r.run.mock.set_mode("error429_reset", reset_at=reset, unified=False, until=reset)
    first = r.add("work on the task", "--every", "1m")
    assert r.tick() == {first: "delivered"}
    failed = r.run.wait_hook("StopFailure", timeout=30)
    assert failed["payload"]["error"] == "rate_limit"
    assert f"resets at {said}" in failed["payload"]["last_assistant_message"]
    r.run.wait_screen(rf"Request rejected \(429\) · .*resets at {said}", timeout=10)
    state = r.wait_state("limited", timeout=10)
    epoch = int(state.split(":")[1])
    over = reset + MINUTE + RESET_MARGIN  # the printed minute's end, and the margin
    assert r.option("@rk_pane_agent_source") == f"hook:{epoch}:{over}"  # the printed reset, read
    r.rk("cron", "rm", first)
    resume = r.add("continue", "--wake-on", "limit-reset", "--wake-debounce", "0s")

    ticks: list[tuple[float, dict]] = []  # (when, outcomes) of every tick on the real clock
    notice = None
    while not any(resume in outcomes for _, outcomes in ticks) and time.time() < over + 30:
        ticks.append((time.time(), r.tick()))
        if notice is None:
            notice = next((e for e in r.run.hooks(failed["t"]) if e["event"] == "Notification"), None)
            if notice is not None:
                assert (notice["payload"] or {}).get("notification_type") == "idle_prompt"
                state_after_notice = r.option("@rk_pane_agent_state")
                assert state_after_notice == state, state_after_notice  # the notice left the limit alone
        time.sleep(TICK_EVERY)
    assert notice is not None and notice["t"] < reset  # the notice came while the limit held
    early = [(at, outcomes) for at, outcomes in ticks if at < reset]
    assert early and all(outcomes == {} for _, outcomes in early), early  # nothing typed, nothing logged
    delivered_at, outcomes = ticks[-1]
    requests_while_limited = len([q for q in main_requests(r) if q["t"] < delivered_at])
    assert requests_while_limited == 1  # the refused prompt only
    assert outcomes == {resume: "delivered"}, ticks[-3:]
    assert delivered_at >= over
    submitted = r.run.wait_hook("UserPromptSubmit", since=delivered_at, timeout=30)
    r.run.wait_hook("Stop", since=delivered_at, timeout=30)
    r.wait_state("idle", timeout=30)
    for _ in range(3):  # once only: later ticks leave it alone
        time.sleep(TICK_EVERY)
        assert resume not in r.tick()
    assert resume not in r.tick(now=reset + 3600)
    assert r.prompts() == ["work on the task", "continue"]
    assert [q["status"] for q in main_requests(r)] == [429, 200]
    log = json.loads(r.rk("cron", "log", resume, "--json").stdout)["result"]
    assert [line["outcome"] for line in log] == ["delivered"]
    print(
        f"\nclaude {version}: printed reset {said} ({reset - failed['t']:.0f} s after the 429); "
        f"idle notice {notice['t'] - failed['t']:.1f} s after it, state kept {state}; "
        f"{len(early)} ticks before the reset typed nothing, main requests while limited: {requests_while_limited}; "
        f"delivered {delivered_at - reset:.1f} s after the reset, submitted {submitted['t'] - reset:.1f} s after it; "
        f"deliveries: {len(log)}, prompts: {r.prompts()}"
    )

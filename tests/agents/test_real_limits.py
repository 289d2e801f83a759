"""`--wake-on limit-reset` in API-key mode, with the real Claude Code offline.

A 429 with no reset printed (only the API's retry-after): StopFailure says
`limited`; the idle_prompt Notification ~60 s later used to overwrite it with
`idle`, so the wake edge fired before the reset, met the limit, was logged
`skipped-limited` and spent (0 deliveries after the reset); with a generic 429
the wake then typed `continue` every minute, each one another refused request.
Now the limit holds through the notice, nothing is typed while it lasts, and
once the retry delay has passed (no reset known: rk.core.look.LIMIT_RETRY) the
resume is typed exactly once. (Subscription mode, with a printed reset, is
test_real_agents.test_a_limited_agent_is_not_prompted_and_resumes_after_its_reset.)
"""

from __future__ import annotations

import json

import pytest

from rk.core.look import LIMIT_RETRY

pytestmark = pytest.mark.agents


def test_limit_reset_resumes_an_api_key_claude_once_after_a_429_without_a_reset(rig):
    r = rig("claude")
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

"""rk's hooks against the real Claude Code and Codex CLIs, offline (`make test-agents`).

What the hooks can and cannot know, pinned on the real CLIs: an answered
permission dialog fires no hook until the approved tool has finished (so a
hook cannot end `waiting` at the answer: the screen must), and Claude's
idle_prompt notification, a minute after a turn that hit a rate limit, leaves
the pane `limited`.
"""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.agents

AGENTS = ("claude", "codex")
DIALOG = r"Do you want to proceed|Would you like to run"
#: What the screen shows while an approved tool runs (Claude `⎿  Running…`, Codex `• Running`).
RUNNING = r"Running"
#: Seconds the approved tool takes: long enough to see that nothing fires while it runs.
TOOL_SECONDS = 4


@pytest.mark.parametrize("agent", AGENTS)
def test_no_hook_fires_between_a_dialogs_answer_and_the_end_of_its_tool(rig, agent, tmp_path):
    """Claude 2.1.197 and Codex 0.171 fire PermissionRequest when the dialog opens,
    then nothing until PostToolUse when the approved tool finishes: while it runs
    the hooks have left the pane `waiting`."""
    r = rig(agent)
    marker = tmp_path / f"{agent}-tool-ran"
    r.run.mock.set_mode("tool", command=f"sleep {TOOL_SECONDS} && touch {marker}")
    entry = r.add("run the tool", "--every", "1m")
    assert r.tick() == {entry: "delivered"}
    asked = r.run.wait_hook("PermissionRequest", timeout=30)
    r.wait_state("waiting", timeout=3)
    r.run.wait_screen(DIALOG, timeout=10)
    r.rk("cron", "rm", entry)
    answered = r.run.enter()  # the human approves
    r.run.wait_screen(RUNNING, timeout=10)
    assert not marker.exists()  # the tool is still running ...
    assert r.state() == "waiting"  # ... and no hook has said so
    post = r.run.wait_hook("PostToolUse", since=answered, timeout=30)
    finished = marker.stat().st_mtime
    timeline = r.run.hook_timeline(asked["t"])
    print(
        f"\n{agent}: answered at +{round((answered - asked['t']) * 1000)} ms, tool done at "
        f"+{round((finished - asked['t']) * 1000)} ms; hooks since PermissionRequest: {timeline}"
    )
    between = [e["event"] for e in r.run.hooks(answered) if e["t"] < finished]
    assert between == [] or (agent == "claude" and set(between) <= {"Notification"}), between
    assert post["t"] >= finished  # PostToolUse is the first word after the answer
    r.wait_state("active", timeout=5)
    r.wait_state("idle", timeout=30)


def test_claudes_idle_notice_after_a_rate_limit_leaves_it_limited(rig):
    """API-key mode, a 429 with no reset printed: StopFailure says `limited`, and the
    idle_prompt Notification ~60 s later (which used to write `idle`) keeps it."""
    r = rig("claude")
    r.run.mock.set_mode("error429")
    entry = r.add("work on the task", "--every", "1m")
    assert r.tick() == {entry: "delivered"}
    failed = r.run.wait_hook("StopFailure", timeout=30)
    limited = r.wait_state("limited", timeout=10)
    r.rk("cron", "rm", entry)
    session = r.option("@rk_pane_agent_session")
    r.run.tmux.run("set-option", "-pu", "-t", r.pane, "@rk_pane_agent_session")  # the notice's hook stamps it again
    notice = r.run.wait_hook("Notification", since=failed["t"], timeout=90)
    assert (notice["payload"] or {}).get("notification_type") == "idle_prompt"
    wait_option(lambda: r.option("@rk_pane_agent_session"), session)  # rk's idle-notice hook has run
    print(
        f"\nidle_prompt {notice['t'] - failed['t']:.1f} s after StopFailure; state {r.option('@rk_pane_agent_state')}"
    )
    assert r.option("@rk_pane_agent_state") == limited
    r.run.mock.set_mode("ok")
    r.run.submit("try again")  # a human's prompt ends the limit at once
    r.wait_state("active", timeout=10)
    r.wait_state("idle", timeout=30)


def wait_option(read, want: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while read() != want:
        if time.monotonic() > deadline:
            raise AssertionError(f"never {want!r} (last {read()!r})")
        time.sleep(0.05)


def test_the_reset_a_subscriptions_limit_prints_is_noted_by_the_hook(rig):
    """A subscription: Claude's StopFailure carries "You've hit your session limit ·
    resets <time> (<zone>)" as `last_assistant_message`; the hook notes that reset
    beside `limited` (`hook:<epoch>:<reset>`), so an idle notice cannot end the
    limit before it, and rk knows it without a look at the screen."""
    r = rig(
        "claude",
        extra_env={"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-mock-token", "CLAUDE_CODE_SUBSCRIPTION_TYPE": "max"},
        drop_env=("ANTHROPIC_API_KEY",),
    )
    r.run.mock.set_mode("error429_reset", resets_in=3600)
    entry = r.add("work on the task", "--every", "1m")
    started = int(time.time())
    assert r.tick() == {entry: "delivered"}
    failed = r.run.wait_hook("StopFailure", timeout=30)
    epoch = int(r.wait_state("limited", timeout=10).split(":")[1])
    r.rk("cron", "rm", entry)
    message = failed["payload"]["last_assistant_message"]
    source, noted, reset = r.option("@rk_pane_agent_source").split(":")
    print(f"\nStopFailure: {message!r}; note {source}:{noted}:{reset} (+{int(reset) - epoch} s)")
    assert (source, int(noted)) == ("hook", epoch)
    assert started + 3600 - 120 <= int(reset) <= started + 3600 + 120  # the printed minute of the mock's reset

"""How a turn of the real Gemini CLI 0.61 ended, offline against its mock.

Gemini's hooks end every turn with AfterAgent, errors and Esc included; for a
turn that gave no text its `prompt_response` is "[no response text]" and no
payload says why (AfterModel does not fire on an API error). rk's hook then
reads the screen, which the CLI draws ~0.1 s after AfterAgent: `✕ [API
Error: …]` is `failed` (a quota error `limited`), `ℹ Request cancelled.` is
`interrupted`. And `--turn-timeout 1m --on-timeout interrupt` presses Esc once
into a reply that stalls, which ends the turn `interrupted`.
"""

from __future__ import annotations

import time

import pytest

from agents.mock_gemini import DEFAULT_REPLY
from agents.rkclient import listed
from agents.test_real_gemini import GeminiRig
from agents.timeouts import interrupted_once, ticks_once_only
from rk.store import delivery_log as logfile

pytestmark = pytest.mark.agents


@pytest.fixture
def gemini(tmp_path, agent_bin):
    rig = GeminiRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def wait_turn_end(rig: GeminiRig, after: float, timeout: float = 30.0) -> tuple[str, float]:
    """(the pane's turn end, seconds from `after` until it was written) once one is newer than `after`."""
    deadline = time.monotonic() + timeout
    while True:
        end, _, epoch = rig.g.tmux("show-options", "-pqv", "-t", rig.pane, "@rk_pane_turn_end").strip().partition(":")
        if end and epoch.isdigit() and int(epoch) >= int(after):
            return end, time.time() - after
        if time.monotonic() > deadline:
            raise AssertionError(f"no turn end after {after}: {end}:{epoch}\n{rig.g.capture()}")
        time.sleep(0.05)


def after_agent(rig: GeminiRig, since: float) -> float:
    """When AfterAgent fired (its payload is checked: the turn gave no text)."""
    hook = rig.g.wait_event("AfterAgent", 30, after=since)
    assert hook.payload["prompt_response"] == "[no response text]", hook.payload
    return hook.t


def test_an_api_error_that_ends_the_turn_is_failed(gemini):
    gemini.wait_state("idle", timeout=20)
    gemini.mock.set_mode("error400")  # INVALID_ARGUMENT: not retried, the turn ends on it
    entry = gemini.add("this request is invalid")
    sent = time.time()
    assert gemini.tick() == {entry: "delivered"}
    fired = after_agent(gemini, sent)
    end, took = wait_turn_end(gemini, sent)
    assert end == "failed"
    assert "[API Error:" in gemini.g.capture()
    assert not [h for h in gemini.g.hooks() if h.event == "AfterModel" and h.t >= sent]  # no model reply
    row = listed(gemini)
    assert (row["state"], row["turn_end"]) == ("idle", "failed")
    print(
        f"\n400: AfterAgent +{fired - sent:.2f}s after the tick, turn end failed +{took - (fired - sent):.2f}s after it"
    )


def test_a_server_error_the_human_stops_is_failed(tmp_path, agent_bin):
    """A 500 is retried for ever by default; with one attempt and full error verbosity the
    CLI asks ("● 1. Keep trying / 2. Stop"), and Stop ends the turn on the error."""
    rig = GeminiRig(tmp_path, agent_bin, {"general": {"maxAttempts": 1}, "ui": {"errorVerbosity": "full"}})
    try:
        rig.wait_state("idle", timeout=20)
        rig.mock.set_mode("error500")
        entry = rig.add("this will fail with 500")
        assert rig.tick() == {entry: "delivered"}
        rig.g.wait_for(lambda screen: "experiencing high demand" in screen, timeout=30)
        rig.g.keys("Down")
        rig.g.wait_for(lambda screen: "● 2. Stop" in screen, timeout=5)
        stop = rig.g.enter()
        fired = after_agent(rig, stop)
        end, took = wait_turn_end(rig, stop)
        assert end == "failed"
        assert '"code":500' in rig.g.capture()
        row = listed(rig)
        assert (row["state"], row["turn_end"]) == ("idle", "failed")
        print(
            f"\n500: AfterAgent +{fired - stop:.2f}s after Stop, turn end failed +{took - (fired - stop):.2f}s after it"
        )
    finally:
        rig.close()


def test_a_reply_quoting_an_api_error_is_ok(gemini):
    gemini.wait_state("idle", timeout=20)
    quote = '✕ [API Error: {"error":{"code":500}}]\nℹ Request cancelled.'
    gemini.mock.set_mode("ok", reply=f"The log said:\n{quote}\nThat was yesterday.")
    entry = gemini.add("what did the log say?")
    sent = time.time()
    assert gemini.tick() == {entry: "delivered"}
    end, _ = wait_turn_end(gemini, sent)
    assert end == "ok"
    print(gemini.g.wait_for(lambda screen: "That was yesterday" in screen, timeout=10))
    assert "[API Error:" in gemini.g.capture()
    assert listed(gemini)["turn_end"] == "ok"


def test_a_daily_quota_error_is_limited(gemini):
    gemini.wait_state("idle", timeout=20)
    gemini.mock.set_mode("error429")
    entry = gemini.add("work on the task")
    sent = time.time()
    assert gemini.tick() == {entry: "delivered"}
    gemini.g.wait_for(lambda screen: "Usage limit reached" in screen, timeout=30)
    gemini.g.keys("Down")  # "2. Stop": the turn ends on the quota error
    gemini.g.wait_for(lambda screen: "● 2. Stop" in screen, timeout=5)
    stop = gemini.g.enter()
    fired = after_agent(gemini, stop)
    end, took = wait_turn_end(gemini, stop)
    assert end == "limited"
    row = listed(gemini)
    assert (row["state"], row["turn_end"]) == ("limited", "limited")
    print(f"\n429: AfterAgent +{fired - stop:.2f}s after Stop, turn end limited +{took - (fired - stop):.2f}s after it")
    assert sent < stop


def test_esc_ends_the_turn_interrupted(gemini):
    gemini.wait_state("idle", timeout=20)
    gemini.mock.set_mode("slow", delay=60)
    entry = gemini.add("take your time")
    assert gemini.tick() == {entry: "delivered"}
    gemini.g.wait_for(lambda screen: "esc to cancel" in screen, timeout=20)
    pressed = gemini.g.esc()
    fired = after_agent(gemini, pressed)
    end, took = wait_turn_end(gemini, pressed)
    assert end == "interrupted"
    assert listed(gemini)["turn_end"] == "interrupted"
    print(f"\nEsc: AfterAgent +{fired - pressed:.2f}s after it, turn end interrupted +{took:.2f}s after Esc")


def test_a_stalled_reply_is_interrupted_once_after_a_minute(gemini):
    timeout, stall = 60, 180
    gemini.wait_state("idle", timeout=20)
    gemini.mock.set_mode("slow", delay=stall)
    entry = gemini.add("answer slowly", "--turn-timeout", "1m", "--on-timeout", "interrupt")
    assert gemini.tick() == {entry: "delivered"}
    gemini.rk("cron", "edit", entry, "--every", "1h")  # no second fire while we watch
    log = gemini.state_dir / f"{gemini.g.socket}.log"
    delivered = logfile.read_live(log)[0].ts
    gemini.wait_state("active", timeout=15)

    lines, timed_out, _ = interrupted_once(gemini.tick, log, delivered, timeout, gemini.g.capture)
    gemini.wait_state("idle", timeout=10)
    assert "Request cancelled." in gemini.g.capture()
    ends = [h.event for h in gemini.g.hooks() if h.event == "AfterAgent" and h.t >= delivered]
    assert ends == ["AfterAgent"]  # Esc ended the turn once
    assert listed(gemini)["turn_end"] == "interrupted"
    stream = [r for r in gemini.mock.model_requests() if r["kind"] == "stream"]
    assert len(stream) == 1  # the stalled request was not retried after the Esc

    ticks_once_only(gemini.tick, log)
    assert gemini.state().split(":")[0] == "idle"
    assert DEFAULT_REPLY not in gemini.g.capture()
    print(f"\ngemini: timed out {timed_out.ts - delivered} s after the delivery; {lines[-1].outcome}")

"""A held fire goes out soon after the turn's end, with the real Gemini CLI and OpenCode.

The same question as test_real_latency.py asks of Claude Code and Codex: a
when-idle entry comes due while the agent works, so the tick holds it as
`active`; the turn ends, the agent's end-of-turn hook (Gemini's AfterAgent,
OpenCode's session.idle through rk's plugin) writes `idle` and nudges the
ticker, and the nudged tick (with its rechecks while the screen lags) types
the prompt. The ticker's own poll is an hour here, so a delivery can only come
from the nudge. The turn is made long by the mock: Gemini's `slow` mode,
OpenCode's `mock:slow=N` marker. The figures printed run from the end-of-turn
hook as the logging hook saw it to the held prompt's request at the mock and
to the moment rk's `delivered` line is in the log.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import harness
import pytest

from agents.test_real_gemini import GeminiRig
from agents.test_real_opencode import OpenCodeRig

pytestmark = pytest.mark.agents

HELD = "status?"


class DeliveredWatch:
    """When the entry's `delivered` line first shows in the server's delivery log,
    polled every 20 ms from a thread (the line may land before or after the
    prompt reaches the model, so the watch starts before the turn ends)."""

    def __init__(self, log: Path, entry: str) -> None:
        self.log, self.entry = log, entry
        self.seen: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                lines = self.log.read_text().splitlines()
            except FileNotFoundError:
                lines = []
            for raw in lines:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if line.get("entry") == self.entry and line.get("outcome") == "delivered":
                    self.seen = time.time()
                    return
            self._stop.wait(0.02)

    def wait(self, timeout: float) -> float:
        self._thread.join(timeout)
        self._stop.set()
        assert self.seen is not None, f"no delivered line for {self.entry} within {timeout}s"
        return self.seen


def outcomes(rig, entry: str) -> list[str]:
    log = json.loads(rig.rk("cron", "log", entry, "--json").stdout)["result"]
    return [line["outcome"] for line in log]


def report(agent: str, end: float, request: float, delivered: float) -> None:
    print(
        f"\n{agent}: turn end → held prompt at the mock {request - end:.2f} s, "
        f"→ rk's delivered line {delivered - end:.2f} s"
    )


@pytest.fixture
def gemini(tmp_path, agent_bin):
    rig = GeminiRig(tmp_path, agent_bin)
    yield rig
    rig.close()


@pytest.fixture
def opencode(tmp_path, agent_bin):
    rig = OpenCodeRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def wait_for(find, timeout: float, what: str, detail=lambda: ""):
    """The first truthy `find()`, polled every 50 ms; `detail()` says more on a timeout."""
    deadline = time.monotonic() + timeout
    while not (found := find()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen within {timeout}s\n{detail()}")
        time.sleep(0.05)
    return found


def diagnosis(rig, entry: str, screen) -> str:
    """What rk logged and decided, and the screen, for a delivery that did not come."""
    ticker = rig.state_dir / "ticker.log"
    return "\n".join(
        [
            "cron log: " + rig.rk("cron", "log", entry, "--json", check=False).stdout.strip(),
            "state: " + rig.rk("agent", "list", "--json", check=False).stdout.strip(),
            "ticker.log:\n" + (ticker.read_text()[-3000:] if ticker.exists() else "(none)"),
            "screen:\n" + screen(),
        ]
    )


def test_gemini_a_fire_held_through_a_turn_goes_out_after_after_agent(gemini):
    g = gemini.g

    def streamed(text: str) -> list[dict]:
        return [r for r in gemini.mock.model_requests() if r["kind"] == "stream" and r["last_user_text"].endswith(text)]

    def turn_ended(after: float) -> list:
        return [h for h in g.hooks() if h.event == "AfterAgent" and h.t >= after]

    gemini.wait_state("idle", timeout=20)
    gemini.mock.set_mode("slow", delay=20)  # long enough for an add and a tick on a loaded machine
    task = "a long task"
    sent = g.submit(task)
    wait_for(lambda: streamed(task), 30, "the turn's model request")
    gemini.mock.set_mode("ok")  # the stalled reply stays stalled; the held prompt's is answered at once
    gemini.wait_state("active", timeout=10)
    held = gemini.add(HELD, "--deliver", "when-idle")
    assert gemini.tick() == {held: "held-busy: active"}
    assert not turn_ended(sent)  # held while the turn ran, not after it
    watch = DeliveredWatch(gemini.state_dir / f"{g.socket}.log", held)
    gemini.rk("cron", "ticker", "start", "--interval", "3600")
    try:
        end = wait_for(lambda: turn_ended(sent), 30, "AfterAgent")[0].t
        request = wait_for(
            lambda: streamed(HELD), 30, "the held prompt at the mock", lambda: diagnosis(gemini, held, g.capture)
        )[0]["t"]
        delivered = watch.wait(30)
        wait_for(
            lambda: turn_ended(request), 30, "the held prompt's AfterAgent", lambda: diagnosis(gemini, held, g.capture)
        )
    finally:
        gemini.rk("cron", "ticker", "stop", check=False)
    assert request > end
    assert gemini.prompts() == [task, HELD]
    assert outcomes(gemini, held) == ["delivered"]
    report(f"gemini {harness.GEMINI_VERSION}", end, request, delivered)


def test_opencode_a_fire_held_through_a_turn_goes_out_after_session_idle(opencode):
    oc = opencode.oc

    def replies(text: str) -> list[dict]:
        try:
            lines = oc.mock_log.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [r for r in map(json.loads, lines) if r.get("kind") == "reply" and r.get("prompt", "").endswith(text)]

    def turn_ended(after: float) -> list[dict]:
        return [e for e in oc.events(noisy=True) if e.get("type") == "session.idle" and e["t"] >= after]

    task = "a long task mock:slow=20"  # long enough for an add and a tick on a loaded machine
    sent = oc.send_prompt(task)
    wait_for(lambda: replies(task), 60, "the turn's model request")
    opencode.wait_state("active", timeout=30)
    held = opencode.add(HELD, "--deliver", "when-idle")
    assert opencode.tick() == {held: "held-busy: active"}
    assert not turn_ended(sent)  # held while the turn ran, not after it
    watch = DeliveredWatch(opencode.state_dir / f"{oc.socket}.log", held)
    opencode.rk("cron", "ticker", "start", "--interval", "3600")
    try:
        end = wait_for(lambda: turn_ended(sent), 60, "session.idle")[0]["t"]
        request = wait_for(
            lambda: replies(HELD), 30, "the held prompt at the mock", lambda: diagnosis(opencode, held, oc.capture)
        )[0]["t"]
        delivered = watch.wait(30)
        wait_for(lambda: turn_ended(request), 30, "the held prompt's session.idle")
    finally:
        opencode.rk("cron", "ticker", "stop", check=False)
    assert request > end
    assert [r["prompt"] for r in replies("")] == [task, HELD]
    assert outcomes(opencode, held) == ["delivered"]
    report(f"opencode {harness.OPENCODE_VERSION}", end, request, delivered)

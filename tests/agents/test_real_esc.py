"""Esc in a running turn, with NO ticker: `rk agent await` returns within a second, with
the real CLIs (issue 28, item 1).

Claude Code fires no hook on Esc: the wait sees the turn end on the screen itself
(`rk.channels.waiter` runs the watch step, `rk.tmux.watch`, while its target is
`active` and no ticker serves the server). Codex fires its Interrupt hook, Gemini
its AfterAgent, OpenCode a session.error: the hook's journal line wakes the wait.
Each test presses Esc in RUNS turns and prints each latency, from the key to the
wait's exit (a whole `rk agent await` process, as the MCP `agent_await` runs it).

Measured on the 2-core test machine with up to 7 other suites beside it, Esc to the
wait's exit, s (glimpses every 0.25 s; each group one test run):
  Claude 2.1.332  0.95 0.88 1.05 | 0.64 0.74 0.85 | 0.70 0.70 0.69
                  (at 0.5 s glimpses: 1.11 1.24 1.05, which is why they are 0.25 s)
  Claude 2.1.197  0.86 0.79 0.58
  Codex 0.171.0   0.63 0.95 0.64 (a bench running beside) | 0.39 0.37 0.39   (its Interrupt hook)
  Gemini 0.61.0   1.41 0.81 1.28 (0.5 s, a bench beside) | 0.79 0.64 0.80   (AfterAgent)
  OpenCode 1.18.33  1.58 0.90 0.78 | 0.88 0.77 0.70                         (session.error on Esc Esc)
  Copilot 1.0.102   0.73 0.74 0.75 | 1.10 0.87 0.51 (CI beside)           (the watch: no hook on Esc Esc)
The bound asserted is 1.5 s (2.5 s for OpenCode, whose own event came 1.58 s late once):
room for the loaded machine, not the figure aimed at.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import harness
import pytest

pytestmark = pytest.mark.agents

RUNS = 3
#: The bound asserted (how fast is printed): `harness.SEEN_WITHOUT_A_TICK`.
WITHIN = harness.SEEN_WITHOUT_A_TICK

AGENTS = [pytest.param("claude", v, id=f"claude-{v}") for v in harness.CLAUDE_VERSIONS] + [
    pytest.param("codex", "", id="codex")
]


def start_await(rk_env: dict, server: str, pane: str, state_dir: Path) -> subprocess.Popen:
    """`rk agent await --until idle` on the pane, once its wake socket is bound."""
    waits = state_dir / "await"
    before = set(waits.iterdir()) if waits.is_dir() else set()
    argv = [sys.executable, "-m", "rk", "-L", server, "agent", "await", "--pane", pane]
    proc = subprocess.Popen(
        [*argv, "--until", "idle", "--timeout", "30s", "--json"], env=rk_env, stdout=subprocess.PIPE, text=True
    )
    harness.until(lambda: waits.is_dir() and set(waits.iterdir()) - before, 20, "the wait's socket")
    return proc


def wait_watched(read_state) -> None:
    """Until the pane's `active` is old enough to be watched (`rk.core.pane.watch.WATCH_AFTER`)."""
    from rk.core.pane.watch import WATCH_AFTER

    harness.until(lambda: int(time.time()) - int(read_state().split(":")[1]) >= WATCH_AFTER, 10, "a watched turn")


def awaited(proc: subprocess.Popen, pressed: float) -> float:
    out, _ = proc.communicate(timeout=40)
    took = time.time() - pressed
    assert proc.returncode == 0, out
    assert json.loads(out)["result"]["condition"] == "idle", out
    return took


@pytest.mark.parametrize(("agent", "version"), AGENTS)
def test_esc_with_no_ticker_ends_an_await_within_a_second(rig, agent, version):
    r = rig(agent, version=version)
    r.run.mock.set_mode("slow", seconds=120, partial="I will take my time. ")
    took = []
    for turn in range(RUNS):
        entry = r.add(f"take your time {turn}", "--every", "1m")
        assert r.tick() == {entry: "delivered"}  # one tick, and no ticker
        r.rk("cron", "rm", entry)
        r.wait_state("active", timeout=15)
        r.run.wait_screen(r"take my time|Working|esc to interrupt", timeout=20)
        wait_watched(lambda: r.option("@rk_pane_agent_state"))
        proc = start_await(r._env(), r.server, r.pane, r.state_dir)
        try:
            took.append(awaited(proc, r.run.esc()))
        finally:
            proc.kill()
        r.wait_state("idle", timeout=5)
        r.run.clear_composer()  # Claude puts an interrupted prompt back in the composer
        r.run.wait_screen(lambda s: not harness.busy(s), timeout=10)
    print(f"\n{agent} {r.run.version}: Esc → rk agent await returned: " + " ".join(f"{t:.2f}" for t in took))
    assert max(took) < WITHIN, took


def test_esc_with_no_ticker_ends_an_await_within_a_second_gemini(tmp_path, agent_bin):
    from agents.test_real_gemini import GeminiRig

    gemini = GeminiRig(tmp_path, agent_bin)
    try:
        client, took = gemini.client(), []
        gemini.wait_state("idle", timeout=20)
        gemini.mock.set_mode("slow", delay=60)
        for turn in range(RUNS):
            entry = gemini.add(f"take your time {turn}")
            assert gemini.tick() == {entry: "delivered"}
            gemini.rk("cron", "rm", entry)
            gemini.g.wait_for(lambda screen: "esc to cancel" in screen, timeout=20)
            gemini.wait_state("active", timeout=10)
            proc = start_await(client.env(), client.server, gemini.pane, gemini.state_dir)
            try:
                took.append(awaited(proc, gemini.g.esc()))
            finally:
                proc.kill()
            gemini.g.keys("C-u")  # Gemini may put the cancelled prompt back in its composer
            gemini.g.wait_for(lambda screen: "esc to cancel" not in screen, timeout=10)
    finally:
        gemini.close()
    print(f"\ngemini {harness.GEMINI_VERSION}: Esc → rk agent await returned: " + " ".join(f"{t:.2f}" for t in took))
    assert max(took) < WITHIN, took


def test_esc_esc_with_no_ticker_ends_an_await_within_a_second_opencode(tmp_path, agent_bin):
    from agents.test_real_opencode import OpenCodeRig
    from agents.test_real_opencode_turns import press_until_aborted

    oc = OpenCodeRig(tmp_path, agent_bin)
    try:
        client, took = oc.client(), []
        for turn in range(RUNS):
            started = time.time()
            entry = oc.add(f"stream slowly {turn} mock:slow=120")
            assert oc.tick() == {entry: "delivered"}
            oc.rk("cron", "rm", entry)
            oc.wait_state("active", timeout=30)
            oc.oc.wait_event(
                "message.part.updated",
                after=started,
                timeout=30,
                pred=lambda e: (e["p"].get("part") or {}).get("type") == "text",
            )
            oc.oc.wait_screen(lambda s: "esc interrupt" in s, timeout=15)  # where Esc Esc aborts
            proc = start_await(client.env(), client.server, oc.pane, oc.state_dir)
            try:
                pressed = press_until_aborted(oc, "opencode", started)
                took.append(awaited(proc, pressed))
            finally:
                proc.kill()
            oc.settle()
    finally:
        oc.close()
    print(
        f"\nopencode {harness.OPENCODE_VERSION}: Esc Esc → rk agent await returned: "
        + " ".join(f"{t:.2f}" for t in took)
    )
    assert max(took) < WITHIN, took


def test_esc_esc_and_a_failed_turn_with_no_ticker_end_an_await_within_a_second_copilot(tmp_path, agent_bin):
    """Copilot CLI fires no hook on Esc Esc nor on a failed turn (only errorOccurred, also
    fired for each retry): the wait's own watch reads both ends from the screen."""
    from agents.copilot_launch import at_rest
    from agents.test_real_copilot import CopilotRig

    cp = CopilotRig(tmp_path, agent_bin)
    try:
        client, took = cp.client(), []
        for turn in range(RUNS):
            cp.cp.send_prompt(f"long one {turn} mock:slow=60")
            cp.cp.wait_screen(lambda s: "esc esc interrupt" in s, timeout=20)
            cp.wait_state("active", timeout=5)
            wait_watched(cp.cp.rk_state)
            proc = start_await(client.env(), client.server, cp.pane, cp.state_dir)
            try:
                took.append(awaited(proc, cp.cp.esc_esc()))
            finally:
                proc.kill()
            cp.cp.wait_screen(at_rest, timeout=10)
        cp.cp.send_prompt("fail please mock:status=400")
        cp.wait_state("active", timeout=10)
        wait_watched(cp.cp.rk_state)
        proc = start_await(client.env(), client.server, cp.pane, cp.state_dir)
        try:
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0 and json.loads(out)["result"]["condition"] == "idle", out
        finally:
            proc.kill()
        end = cp.cp.tmux("show-options", "-p", "-v", "-q", "-t", cp.pane, "@rk_pane_turn_end").strip()
        assert end.startswith("failed:"), end  # the screen's last entry is Copilot's red `✗`
    finally:
        cp.close()
    print("\ncopilot: Esc Esc → rk agent await returned: " + " ".join(f"{t:.2f}" for t in took))
    assert max(took) < WITHIN, took

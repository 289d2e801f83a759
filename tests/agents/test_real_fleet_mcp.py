"""A real Claude Code operator on host A schedules and awaits a worker on host B, through
`rk mcp`, offline (`make test-agents`).

Host A is the rig: the real Claude Code in a private tmux, its mock model answering in
tool calls, rk's MCP server registered by the real `rk agent setup claude --mcp`, its
window given the role operator. Host B is a loopback sshd (tests/sshd.py) with its own
tmux server, state dir and ticker; its worker is the demo's stand-in agent, which reports
`active` and `idle` as the hooks would. A's config names host b and grants the operator
b's worker windows. The operator's model calls cron_add (host b, the worker's pane, a
one-shot a minute out) and then agent_await (host b, that pane, until idle, after
active); B's ticker fires the entry, the worker's turn runs and ends, and the await
returns to A's model. Measured: the tool call to the entry existing in B's entries file,
and B's turn end (its idle write, polled) to the tool result reaching A's model.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import harness
import pytest

from agents.test_real_mcp import _call, _connected

pytestmark = pytest.mark.agents

FAKE_AGENT = Path(__file__).resolve().parents[2] / "demo" / "fake_agent.py"


class HostB:
    """Host b's tmux server (the stand-in worker in a window with the role worker) and ticker."""

    def __init__(self, world) -> None:
        self.host = world.host("b")
        self.env = self.host.env
        agent = f"{sys.executable} {FAKE_AGENT} worker --work 1.5 1.5 --seed 1"
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "work", "-x", "160", "-y", "40", agent)
        self.worker = self.tmux("display", "-p", "-t", "work:", "#{pane_id}").strip()
        self.tmux("set-option", "-w", "-t", self.worker, "@rk_win_role", "worker")
        harness.until(lambda: "demo>" in self.capture(), 30, "b's worker prompt", self.capture)
        self.ticker = subprocess.Popen(
            [sys.executable, "-m", "rk", "cron", "ticker"], env=self.env, stderr=subprocess.DEVNULL
        )

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", *args], env=self.env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def capture(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.worker)

    def state(self) -> str:
        return self.tmux("show-options", "-pqv", "-t", self.worker, "@rk_pane_agent_state").strip().split(":")[0]

    def entry_ids(self) -> list[str]:
        from ruamel.yaml import YAML

        path = self.host.state / "default.yaml"
        try:
            doc = YAML(typ="safe").load(path.read_text()) or {}
        except (OSError, ValueError):
            return []
        return [str(e.get("id")) for e in doc.get("entries", []) or []]

    def close(self) -> None:
        self.ticker.terminate()
        try:
            self.ticker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.ticker.kill()
        subprocess.run(["tmux", "kill-server"], env=self.env, capture_output=True)


class Watch(threading.Thread):
    """Polls `probe` every few ms and keeps the first time it was true."""

    def __init__(self, probe, interval: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.probe, self.interval, self.at, self.stop = probe, interval, 0.0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and not self.at:
            try:
                if self.probe():
                    self.at = time.time()
            except Exception:  # a file half-written, tmux busy: look again
                pass
            time.sleep(self.interval)


def test_a_real_claude_operator_schedules_and_awaits_a_worker_on_another_host(rig, world, tmp_path):
    b = HostB(world)
    try:
        config = tmp_path / "operator-config.yaml"
        r = rig("claude", mcp=True, extra_env={"RK_CONFIG": str(config), "RK_SSH_CONFIG": str(world.config)})
        a_env = {**r.client().env(), "RK_CONFIG": str(config), "RK_SSH_CONFIG": str(world.config)}
        added = subprocess.run(
            [sys.executable, "-m", "rk", "host", "add", "b", "b"], env=a_env, capture_output=True, text=True
        )
        assert added.returncode == 0, added.stderr
        grant = {"who": {"role": "operator"}, "where": {"host": "b", "role": "worker"}, "may": ["schedule", "await"]}
        config.write_text(config.read_text() + "mcp:\n  grants: " + json.dumps([grant]) + "\n")
        r.run.tmux.run("set-option", "-w", "-t", r.pane, "@rk_win_role", "operator")
        _connected(r)

        # 1. the operator schedules b's worker: a one-shot a minute out (rk mcp's floor)
        appeared = Watch(lambda: b.entry_ids())
        appeared.start()
        r.run.mock.set_mode(
            "tool",
            **_call("claude", "cron_add"),
            tool_input={"prompt": "run the tests", "in": "1m", "pane": b.worker, "host": "b"},
            after_text="Scheduled.",
        )
        r.run.mock.clear()
        r.rk("send", "--pane", r.pane, "--json", "--", "schedule the worker on b")
        reqs = harness.until(lambda: len(q := r.run.mock.requests(main_only=True)) >= 2 and q, 90, "cron_add's result")
        result = reqs[-1]["tool_results"][-1]
        assert not result["error"], result
        eid = harness.tool_doc(result["text"])["result"]["id"]
        assert b.entry_ids() == [eid]
        assert json.loads(r.rk("cron", "list", "--json").stdout)["result"] == []  # nothing of it on A
        called = reqs[0]["t"]  # the model's answer to this request was the tool call
        harness.until(lambda: appeared.at, 10, "the entry seen on b")
        r.wait_state("idle", timeout=60)

        # 2. the operator awaits the worker's turn on b, which b's ticker starts with the entry's fire
        active = Watch(lambda: b.state() == "active", interval=0.1)  # only the start of the turn: coarse
        r.run.mock.set_mode(
            "tool",
            **_call("claude", "agent_await"),
            tool_input={"pane": b.worker, "host": "b", "until": ["idle"], "after_active": True, "timeout": "5m"},
            after_text="The worker on b is done.",
        )
        r.run.mock.clear()
        r.rk("send", "--pane", r.pane, "--json", "--", "wait for the worker on b")
        active.start()
        harness.until(lambda: active.at, 150, "b's worker active (the entry fired)", b.capture)
        ended = Watch(lambda: b.state() == "idle")
        ended.start()
        reqs = harness.until(
            lambda: len(q := r.run.mock.requests(main_only=True)) >= 2 and q, 90, "agent_await's result", b.capture
        )
        result = reqs[-1]["tool_results"][-1]
        assert not result["error"], result
        doc = harness.tool_doc(result["text"])["result"]
        assert doc["condition"] == "idle" and doc["panes"][0]["pane"] == b.worker, doc
        assert ended.at, "the await returned before b's worker was seen idle"
        assert "run the tests" in b.capture()
        log = [json.loads(line) for line in (r.state_dir / "mcp.log").read_text().splitlines()]
        assert [(x["tool"], x.get("host"), x["outcome"]) for x in log] == [("cron_add", "b", "ok")]
        print(
            f"operator on A -> entry on b: {appeared.at - called:.3f} s from the model's tool call;"
            f" b's turn end -> await result at A's model: {reqs[-1]['t'] - ended.at:.3f} s"
        )
        r.wait_state("idle", timeout=60)
    finally:
        b.close()

"""The real Claude Code and Codex, offline, acting through `rk mcp` (`make test-agents`).

The mock model answers a prompt with one call of an rk tool (Claude's
`mcp__rk__<tool>`, Codex's `<tool>` in the namespace `mcp__rk`); the CLI
starts `rk mcp` as registered by the real `rk agent setup --mcp`,
runs the call, and the mock then ends the turn. So what is checked is the
whole path an operator agent takes: its CLI's MCP client, the server, the
guardrails, the entries file.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import harness
import pytest

pytestmark = pytest.mark.agents

#: The operator agents; the awaited worker is a second real Claude Code in each.
AGENTS = ("claude", "codex")


def _call(agent: str, tool: str) -> dict:
    """The mock's options for a call of rk's `tool` as `agent` names it."""
    if agent == "codex":
        return {"tool_name": tool, "tool_namespace": "mcp__rk"}
    return {"tool_name": f"mcp__rk__{tool}"}


def _offered(agent: str, names: set[str], tool: str) -> bool:
    return (f"mcp__rk/{tool}" if agent == "codex" else f"mcp__rk__{tool}") in names


def _send(r, prompt: str, requests: int) -> list[dict]:
    """Type `prompt` into the agent (rk send) and wait until the model got `requests` main
    requests and the turn ended (Stop: idle); those requests."""
    r.run.mock.clear()
    sent = r.rk("send", "--pane", r.pane, "--json", "--", prompt, check=False)
    assert sent.returncode == 0, f"{sent.stdout}\n{r.run.capture()}"
    got = harness.until(
        lambda: len(reqs := r.run.mock.requests(main_only=True)) >= requests and reqs, 60, f"{requests} requests"
    )
    r.wait_state("idle", timeout=60)
    return got


def _turn(r, tool: str, arguments: dict, prompt: str) -> dict:
    """One turn in which the model calls `tool`; the tool's result as the model got it."""
    r.run.mock.set_mode("tool", **_call(r.agent, tool), tool_input=arguments, after_text="Done.")
    reqs = _send(r, prompt, 2)  # the call, then its result
    results = reqs[-1].get("tool_results") or []
    assert results, reqs
    return results[-1]


def _composer_ready(screen: str) -> bool:
    return "Starting MCP" not in screen and ("›" in screen or "❯" in screen)


def _connected(r) -> None:
    """Plain turns until the model is offered rk's tools (Claude connects MCP servers in the background)."""
    r.run.mock.set_mode("ok")
    # Codex draws "Starting MCP servers" in its composer area while it connects: typing then races it
    harness.until(lambda: _composer_ready(r.run.capture()), 60, "a quiet composer")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        names = {n for req in _send(r, "hello", 1) for n in req.get("tool_names", [])}
        if _offered(r.agent, names, "cron_add"):
            assert all(_offered(r.agent, names, t) for t in ("cron_mute", "cron_list", "agent_await", "pane_read"))
            return
    raise AssertionError(f"{r.agent} never offered rk's tools to the model")


@pytest.mark.parametrize("agent", AGENTS)
def test_the_agent_schedules_mutes_and_lists_through_rk_mcp(rig, agent):
    r = rig(agent, mcp=True)
    _connected(r)
    added = _turn(r, "cron_add", {"prompt": "look at the workers", "every": "10m"}, "schedule yourself")
    assert not added["error"], added
    eid = harness.tool_doc(added["text"])["result"]["id"]
    entry = {e["id"]: e for e in json.loads(r.rk("cron", "list", "--json").stdout)["result"]}[eid]
    assert entry["created_by"]["pane"] == r.pane and entry["created_by"]["via"] == "mcp"
    assert entry["target"] == f"pane:{r.pane}"  # its own pane: a session target only when asked (follow_session)

    muted = _turn(r, "cron_mute", {"id": eid, "for": "30m"}, "mute it")
    assert not muted["error"] and harness.tool_doc(muted["text"])["result"]["muted"] is True, muted
    listed = _turn(r, "cron_list", {}, "list them")
    assert [e["id"] for e in harness.tool_doc(listed["text"])["result"]] == [eid]
    refused = _turn(r, "cron_add", {"prompt": "too often", "every": "10s"}, "again, faster")
    assert "refused: every 10s is more often than rk mcp allows" in refused["text"], refused
    if agent == "codex":  # Codex 0.171 drops the tool error flag: the refusal is an output like any other
        assert not refused["error"] and set(refused["item"]) == set(added["item"]), (refused, added)
        assert not {"success", "is_error", "status", "error"} & set(refused["item"]), refused
    else:  # Claude passes the tool error on as one
        assert refused["error"], refused


class Worker:
    """A second real Claude Code in a window of the operator's tmux server, with its own
    home, mock model and rk's hooks (the real `rk agent setup claude`), writing into the
    operator's state directory: its turns end with its own Stop hook."""

    def __init__(self, r, agent_bin) -> None:
        self.run = harness.AgentRun(
            "claude",
            launch=False,
            bin_dir=agent_bin,
            extra_env={"RK_STATE_DIR": str(r.state_dir)},
            hook_events=("SessionStart", "UserPromptSubmit", "Stop", "StopFailure"),
        )
        self.pane = ""
        self._tmux = r.run.tmux
        try:
            setup = subprocess.run(
                [sys.executable, "-m", "rk", "agent", "setup", "claude", "--yes"],
                env={**r.client().env(), "HOME": str(self.run.home)},
                capture_output=True,
                text=True,
                timeout=60,
                cwd=Path(__file__).resolve().parents[2],
                stdin=subprocess.DEVNULL,
            )
            assert setup.returncode == 0, setup.stderr
            argv = ["new-window", "-d", "-P", "-F", "#{pane_id}", "-c", str(self.run.work)]
            for k, v in self.run.agent_env().items():
                argv += ["-e", f"{k}={v}"]
            # tmux gives a new pane the PATH of the client that asks for it, over `-e`
            command = ["env", f"PATH={self.run.agent_env()['PATH']}", *self.run.command_line()]
            self.pane = self._tmux.run(*argv, shlex.join(command)).strip()
            try:
                harness.until(lambda: harness.claude_composer_ready(self.capture()), 60, "the worker's composer")
            except AssertionError as exc:
                raise AssertionError(f"{exc}; its screen:\n{self.capture()}") from None
            r.wait_state("idle", timeout=60, pane=self.pane)  # its SessionStart, through rk's hook
        except BaseException:
            self.close()
            raise

    def capture(self) -> str:
        return self._tmux.run("capture-pane", "-p", "-t", self.pane, check=False)

    def stop_times(self) -> list[float]:
        return [h["t"] for h in self.run.hooks() if h["event"] == "Stop"]

    def close(self) -> None:
        pids: list[int] = []
        if self.pane:
            pid = self._tmux.run("display", "-p", "-t", self.pane, "#{pane_pid}", check=False).strip()
            if pid.isdigit():
                pids = [int(pid), *(p.pid for p in harness.descendants(int(pid)))]
            self._tmux.run("kill-pane", "-t", self.pane, check=False)
        harness._kill_pids(harness._wait_gone(pids, 3), signal.SIGKILL)
        self.run.close()


@pytest.mark.parametrize("agent", AGENTS)
def test_the_agent_awaits_a_worker_through_rk_mcp(rig, agent, agent_bin):
    """agent_await inside a real tool call returns `idle` when the worker's turn ends.
    The worker is a second real Claude Code in the operator's tmux server; the test
    starts its turn (rk send) and its mock model ends it, so its own Stop hook writes
    `idle`. The wait is seen started (its socket in the state dir) first."""
    r = rig(agent, mcp=True)
    _connected(r)
    worker = Worker(r, agent_bin)
    try:
        r.run.mock.set_mode(
            "tool",
            **_call(agent, "agent_await"),
            tool_input={"pane": worker.pane, "until": ["idle", "failed"], "after_active": True, "timeout": "2m"},
            after_text="The worker is done.",
        )
        r.run.mock.clear()
        r.rk("send", "--pane", r.pane, "--json", "--", "wait for the worker")
        waiting = r.state_dir / "await"
        harness.until(lambda: waiting.is_dir() and any(waiting.glob("*.sock")), 60, "the await's socket")
        worker.run.mock.set_mode("ok", text="Work done.", delay=1.5)  # its turn runs a while
        sent = r.rk("send", "--pane", worker.pane, "--json", "--", "do the work", check=False)
        assert sent.returncode == 0, f"{sent.stdout}\n{worker.capture()}"
        idle_seen = _idle_write(r, worker.pane)
        reqs = harness.until(
            lambda: len(reqs := r.run.mock.requests(main_only=True)) >= 2 and reqs, 60, "the tool result"
        )
        result = reqs[-1]["tool_results"][-1]
        assert not result["error"], result
        doc = harness.tool_doc(result["text"])["result"]
        assert doc["condition"] == "idle" and doc["panes"][0]["pane"] == worker.pane, doc
        assert worker.run.mock.prompts() == ["do the work"]
        # the idle that ended the wait is the worker's own Stop, through rk's hook
        events = [json.loads(line) for line in r.rk("events", "--json", "--pane", worker.pane).stdout.splitlines()]
        changes = [(e["to"], e["source"], e["turn_end"]) for e in events if e["kind"] == "state"]
        assert changes[-2:] == [("active", "hook", None), ("idle", "hook", "ok")], events
        stop = harness.until(worker.stop_times, 30, "the worker's Stop hook")[-1]
        print(
            f"{agent} awaits a real Claude Code: its Stop hook -> tool result at the model {reqs[-1]['t'] - stop:.3f} s;"
            f" its idle write seen -> tool result {reqs[-1]['t'] - idle_seen:.3f} s"
        )
        r.wait_state("idle", timeout=60)
    finally:
        worker.close()


def _idle_write(r, pane: str) -> float:
    """When `pane`'s `@rk_pane_agent_state` turned from active to idle (polled)."""
    r.wait_state("active", timeout=60, pane=pane)
    r.wait_state("idle", timeout=60, pane=pane)
    return time.time()

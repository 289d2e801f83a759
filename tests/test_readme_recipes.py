"""Every recipe in the README runs as written: each command line of each recipe is run
(parsed as a shell would, never through one) in a pane of a private tmux server whose
pane %3 is the worker the recipes name, and each recipe's effect is checked: the
entries it made, the operator it woke, the message its channel received, the MCP
server it registered. The README changes only together with this test.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import wait_for
from newcomer import readme_recipes
from test_notify import Receiver
from test_quick_start import stand_in_claude

pytestmark = pytest.mark.shell

RECIPES = readme_recipes()


def test_the_readme_has_the_recipes_the_first_hour_needs_and_the_long_run_ones():
    assert list(RECIPES) == [
        "A heartbeat after quiet",
        "Wake the operator when a worker finishes",
        "Dialogs and limits on your phone",
        "Quiet heartbeats that cost nothing",
        "An operator that schedules its own follow-ups",
        "Resume after a usage limit",
        "Heartbeats that stop when nobody answers",
        "Wake on CI, a push or a file",
    ]
    assert all(recipe.get("sh") for recipe in RECIPES.values())


class Desk:
    """A user's tmux server: %0 (the fixture's), and windows up to %3, the worker."""

    def __init__(self, tmp_path: Path, server, env: dict[str, str]) -> None:
        self.server = server
        self.prompts = tmp_path / "prompts"
        bin_dir = self.bin_dir = stand_in_claude(tmp_path / "agent-bin")
        self.env = {**env, "PATH": f"{bin_dir}:{env['PATH']}", "FAKE_CLAUDE_LOG": str(self.prompts)}
        server.run("set-environment", "-g", "FAKE_CLAUDE_LOG", str(self.prompts))  # for the agents tmux starts
        while "%3" not in server.run("list-panes", "-a", "-F", "#{pane_id}"):
            server.run("new-window", "-d", "-t", "main:", "cat")
        self.worker = "%3"

    def run(self, line: str, pane: str | None = None, answer: str = "") -> subprocess.CompletedProcess[str]:
        """One README line, as typed in `pane` (the worker's by default)."""
        argv = shlex.split(line, comments=True)
        assert argv[0] == "rk", line
        if answer.startswith("y"):  # the user answers setup's y/N: --yes, as there is no terminal here
            argv.append("--yes")
        pane = pane or self.worker
        caller = {**self.env, "TMUX": f"{self.server.path},1,0", "TMUX_PANE": pane}
        argv = [sys.executable, "-m", "rk", *argv[1:]]
        proc = subprocess.run(argv, env=caller, input=answer, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"{line}\n{proc.stdout}{proc.stderr}"
        return proc

    def entries(self) -> list[dict]:
        out = self.run("rk cron list --json")
        return json.loads(out.stdout)["result"]

    def added(self, recipe: str) -> list[dict]:
        before = {e["id"] for e in self.entries()}
        for line in RECIPES[recipe]["sh"]:
            self.run(line)
        return [e for e in self.entries() if e["id"] not in before]


@pytest.fixture
def desk(tmp_path, tmux_server, env):
    d = Desk(tmp_path, tmux_server, env)
    yield d
    subprocess.run([sys.executable, "-m", "rk", "cron", "ticker", "stop"], env=d.env, capture_output=True)


def test_a_heartbeat_after_quiet(desk):
    quiet, ladder = desk.added("A heartbeat after quiet")
    assert quiet["schedule"]["kind"] == "backoff" and quiet["schedule"]["min"] == quiet["schedule"]["max"]
    assert quiet["target"] == f"pane:{desk.worker}"  # the pane it was typed in
    assert ladder["deliver"] == "skip-if-busy" and ladder["target"] == "pane:%3"


def test_quiet_heartbeats_that_cost_nothing(desk):
    changed, capped = desk.added("Quiet heartbeats that cost nothing")
    assert changed["only_if_changed"] and changed["schedule_summary"] == "every 10m"
    assert capped["max_per_day"] == 20 and capped["budget"]


def test_resume_after_a_usage_limit(desk):
    (entry,) = desk.added("Resume after a usage limit")
    assert entry["wake_on"]["event"] == "limit-reset"


def test_wake_the_operator_when_a_worker_finishes(desk):
    """The recipe end to end: the operator it starts is woken, with the placeholders
    filled in, when the worker's turn ends."""
    desk.run("rk role worker")  # "in each worker's tmux window"
    (entry,) = desk.added("Wake the operator when a worker finishes")
    assert entry["target"] == "role:operator" and entry["wake_on"]["event"] == "agent-state-change"
    operator = desk.server.run("list-panes", "-a", "-f", "#{==:#{window_name},operator}", "-F", "#{pane_id}").split()
    assert len(operator) == 1
    screen = lambda: desk.server.run("capture-pane", "-p", "-t", operator[0])  # noqa: E731
    wait_for(lambda: "? for shortcuts" in screen(), 20, message="the operator's composer")
    desk.run("rk agent state idle", pane=operator[0])
    desk.run("rk agent state active")
    desk.run("rk cron tick")  # the ticker sees the worker at work
    desk.run("rk agent state idle")  # its turn ends
    desk.run("rk cron tick")
    log = lambda: desk.run("rk cron log").stdout + desk.run("rk events").stdout  # noqa: E731
    wait_for(lambda: desk.prompts.exists() and desk.prompts.read_text(), 20, message=f"the operator's prompt {log()}")
    assert desk.prompts.read_text().startswith(f"{desk.worker} is idle ("), desk.prompts.read_text()


def test_dialogs_and_limits_on_your_phone(desk, tmp_path):
    """The recipe's config with its URL swapped for a local receiver (the phone)."""
    receiver = Receiver()
    try:
        (config,) = RECIPES["Dialogs and limits on your phone"]["yaml"]
        assert "ntfy://ntfy.sh/my-rk-alerts" in config
        path = Path(desk.env["XDG_CONFIG_HOME"]) / "rk" / "config.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config.replace("ntfy://ntfy.sh/my-rk-alerts", receiver.url))
        for line in RECIPES["Dialogs and limits on your phone"]["sh"]:
            desk.run(line)
        assert receiver.bodies and "rk" in json.dumps(receiver.bodies[0]).lower()
    finally:
        receiver.close()


def test_an_operator_that_schedules_its_own_follow_ups(desk):
    home = Path(desk.env["HOME"])
    lines = RECIPES["An operator that schedules its own follow-ups"]["sh"]
    desk.run(lines[0], answer="y")
    registered = json.loads((home / ".claude.json").read_text())["mcpServers"]["rk"]
    assert registered["args"][-1] == "mcp" or "mcp" in registered.get("args", []), registered
    allow = json.loads((home / ".claude" / "settings.json").read_text())["permissions"]["allow"]
    assert "mcp__rk__cron_add" in allow
    for line in lines[1:]:
        desk.run(line)
    assert desk.server.run("list-windows", "-a", "-F", "#{window_name}").split().count("operator") == 1


def worker_runs_claude(desk: Desk) -> None:
    """The worker %3 runs the stand-in Claude Code, at rest (as after its first turn)."""
    desk.server.run("respawn-pane", "-k", "-t", desk.worker, str(desk.bin_dir / "claude"))
    screen = lambda: desk.server.run("capture-pane", "-p", "-t", desk.worker)  # noqa: E731
    wait_for(lambda: "? for shortcuts" in screen(), 20, message="the worker's composer")
    desk.run("rk agent state idle")


def test_heartbeats_that_stop_when_nobody_answers(desk):
    worker_runs_claude(desk)
    lines = RECIPES["Heartbeats that stop when nobody answers"]["sh"]
    before = {e["id"] for e in desk.entries()}
    desk.run(lines[0])
    (entry,) = [e for e in desk.entries() if e["id"] not in before]
    assert entry["fresh"] == "clear" and entry["schedule_summary"] == "every 5m" and entry["dormant"] is False
    assert lines[1].split("#")[0].split() == ["rk", "cron", "runs", "--since", "1d"]
    runs = desk.run("rk cron runs --since 1d --json")
    assert json.loads(runs.stdout)["result"] == []  # no fire yet: no run


def test_wake_on_ci_a_push_or_a_file(desk):
    worker_runs_claude(desk)
    add_signal, send, add_file = RECIPES["Wake on CI, a push or a file"]["sh"]
    desk.run(add_signal)
    sent = desk.run(send)
    assert "no entry listens" not in sent.stderr
    desk.run("rk cron tick")
    wait_for(lambda: desk.prompts.exists() and desk.prompts.read_text(), 20, message="the worker's prompt")
    assert desk.prompts.read_text().startswith("CI finished: abc123 failure. Read the failures"), (
        desk.prompts.read_text()
    )
    desk.run(add_file)
    (watch,) = [e for e in desk.entries() if str(e["wake_on"] and e["wake_on"]["event"]).startswith("file:")]
    assert watch["wake_on"]["event"] == "file:" + str(Path(desk.env["HOME"]) / "spec.md")

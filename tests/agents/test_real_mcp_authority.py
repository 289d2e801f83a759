"""A real Claude Code operator and a real Claude Code worker, offline, with the permissions
`rk agent setup claude --mcp` writes and the flags `rk operator` launches the operator with
(`make test-agents`).

Both run under one HOME (one user), so one settings.json holds the allow rules; the
worker is the rig's first pane, the operator the window `rk operator` starts in the same
session. Each agent's mock model answers a prompt with one call of an rk tool; what is
checked is who gets a permission dialog (Claude's PermissionRequest hook, its screen) and
what rk did (the entries, `mcp.log`, the operator's turns):

* the operator schedules the worker and pauses the server with no dialog;
* the worker calling `cron_pause` gets Claude's dialog (the rules allow it only the tools
  rk scopes itself), and nothing is paused when it is declined;
* the worker's `send` into the operator is refused by rk itself, with no dialog, and
  nothing reaches the operator (this needs rk's scopes: a worker sends only into its own
  pane).

The same pair of real Codex CLIs checks Codex's spelling of the rules: a worker's
`cron_add` runs unasked, the operator's `cron_pause` too, a worker's `cron_resume` waits
for Codex's approval.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import harness
import pytest

from agents.rkclient import RkClient, wait_option_state

pytestmark = pytest.mark.agents

REPO = Path(__file__).resolve().parents[2]
#: Claude Code's permission dialog, as its screen shows it.
DIALOG = "Do you want to proceed?"
#: Codex's approval of an MCP tool call (0.171).
CODEX_DIALOG = "Allow the rk MCP server to run tool"


class Pair:
    """The worker (the rig's pane, the CLI started by the harness) and the operator
    (`rk operator` running the same CLI), sharing HOME, mock model and hook log."""

    def __init__(
        self,
        agent: str,
        root: Path,
        agent_bin: Path,
        extra_env: dict[str, str] | None = None,
        version: str | None = None,
    ) -> None:
        self.agent = agent
        self.state_dir = root / "rk-state"
        self.rk_home = root / "rk-home"
        self.rk_home.mkdir(parents=True)
        extra_env = {"RK_STATE_DIR": str(self.state_dir), **(extra_env or {})}
        self.run = harness.AgentRun(
            agent, launch=False, root=root / agent, bin_dir=agent_bin, extra_env=extra_env, version=version
        )
        self.worker = self.run.pane
        self.operator = ""
        try:
            for extra in ((), ("--mcp",)):  # rk's hooks, then its MCP server and allow rules
                setup = self.rk("agent", "setup", agent, *extra, "--yes", home=self.run.home)
                assert setup.returncode == 0, setup.stderr
            self._prepare()
            self.run.launch()
            if agent == "claude":  # its SessionStart, through rk's hook (Codex's comes with the first prompt)
                self.wait_state("idle", self.worker)
            command = [str(self.run.root / "bin" / agent), *self.run.command_line()[1:]]
            started = self.rk("operator", "--command", shlex.join(command), "--json", home=self.run.home)
            assert started.returncode == 0, started.stderr
            window = json.loads(started.stdout)["result"]["window"]
            self.operator = self.run.tmux.run("display", "-p", "-t", window, "#{pane_id}").strip()
            harness.until(
                lambda: self.run.is_ready(self.capture(self.operator)),
                60,
                "the operator's composer",
                lambda: self.capture(self.operator),
            )
            if agent == "claude":
                self.wait_state("idle", self.operator)
        except BaseException:
            self.close()
            raise

    def _prepare(self) -> None:
        """Codex's new-model announcement marked seen (it animates over the screen once per
        HOME). Nothing is trusted by hand: the operator starts in rk's own directory, which
        `rk agent setup claude --mcp` marks trusted (Codex asks only in a git repository)."""
        if self.agent == "codex":
            path = self.run.home / ".codex" / "config.toml"
            path.write_text(path.read_text() + '\n[tui.model_availability_nux]\n"gpt-6.1-sol" = 1\n')

    def client(self) -> RkClient:
        return RkClient(self.run.tmux.name, self.worker, self.state_dir, str(self.run.tmux.sockdir), self.rk_home)

    def rk(self, *args: str, home: Path | None = None):
        import subprocess
        import sys

        env = self.client().env()
        if home is not None:
            env["HOME"] = str(home)
        return subprocess.run(
            [sys.executable, "-m", "rk", "-L", self.run.tmux.name, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )

    def capture(self, pane: str) -> str:
        return self.run.tmux.run("capture-pane", "-p", "-t", pane, check=False)

    def wait_state(self, state: str, pane: str, timeout: float = 60) -> str:
        def read() -> str:
            return self.run.tmux.run("show-options", "-pqv", "-t", pane, "@rk_pane_agent_state").strip()

        return wait_option_state(read, state, timeout, lambda: self.capture(pane))

    def prompt(self, pane: str, text: str) -> float:
        """Type `text` into `pane` (rk send); when."""
        self.run.mock.clear()
        at = time.time()
        sent = self.rk("send", "--pane", pane, "--json", "--", text)
        assert sent.returncode == 0, f"{sent.stdout}{sent.stderr}\n{self.capture(pane)}"
        return at

    def turn(self, pane: str, text: str, requests: int, watch: list[str]) -> list[dict]:
        """One turn of `pane` to its end (idle), its `requests` main model requests; every
        screen seen on the way is appended to `watch` (a dialog would show there)."""
        self.prompt(pane, text)

        def done():
            watch.append(self.capture(pane))
            if DIALOG in watch[-1] or CODEX_DIALOG in watch[-1]:
                raise AssertionError(f"a permission dialog in {pane}:\n{watch[-1]}")
            reqs = self.run.mock.requests(main_only=True)
            return len(reqs) >= requests and reqs

        reqs = harness.until(done, 60, f"{requests} model requests", lambda: self.capture(pane))
        self.wait_state("idle", pane)
        return reqs

    def connect(self, pane: str) -> None:
        """Plain turns until the model is offered rk's tools (the CLIs connect MCP servers in the background)."""
        self.run.mock.set_mode("ok")
        harness.until(
            lambda: "Starting MCP" not in self.capture(pane), 60, "a quiet composer", lambda: self.capture(pane)
        )
        offered = "mcp__rk/cron_add" if self.agent == "codex" else "mcp__rk__cron_add"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = {n for req in self.turn(pane, "hello", 1, []) for n in req.get("tool_names", [])}
            if offered in names:
                return
        raise AssertionError(f"{pane} never offered rk's tools to the model")

    def tool(self, tool: str) -> dict:
        """The mock's options for a call of rk's `tool` as the CLI names it."""
        if self.agent == "codex":
            return {"tool_name": tool, "tool_namespace": "mcp__rk"}
        return {"tool_name": f"mcp__rk__{tool}"}

    def call(self, pane: str, tool: str, arguments: dict, watch: list[str]) -> dict:
        """One turn in which `pane`'s model calls rk's `tool`; the result as the model got it."""
        self.run.mock.set_mode("tool", **self.tool(tool), tool_input=arguments, after_text="Done.")
        reqs = self.turn(pane, f"call {tool}", 2, watch)
        results = reqs[-1].get("tool_results") or []
        assert results, reqs
        return results[-1]

    def permission_requests(self, since: float) -> list[dict]:
        return [h for h in self.run.hooks(since) if h["event"] == "PermissionRequest"]

    def mcp_log(self) -> list[dict]:
        path = self.state_dir / "mcp.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def close(self) -> None:
        self.run.close()


@pytest.fixture
def pair(tmp_path, agent_bin):
    made = Pair("claude", tmp_path, agent_bin)
    yield made
    made.close()


def _settings(pair: Pair) -> dict:
    return json.loads((pair.run.home / ".claude" / "settings.json").read_text())


def test_the_operator_acts_unattended_and_a_worker_asks_a_person_for_the_server_tools(pair):
    allow = _settings(pair)["permissions"]["allow"]
    assert "mcp__rk__cron_add" in allow and "mcp__rk__cron_pause" not in allow and "mcp__rk" not in allow
    pair.connect(pair.operator)
    pair.connect(pair.worker)

    since, screens = time.time(), []
    added = pair.call(pair.operator, "cron_add", {"prompt": "status?", "every": "10m", "pane": pair.worker}, screens)
    assert not added["error"], added
    eid = harness.tool_doc(added["text"])["result"]["id"]
    entry = {e["id"]: e for e in json.loads(pair.rk("cron", "list", "--json").stdout)["result"]}[eid]
    assert entry["target"] == f"pane:{pair.worker}" and entry["created_by"]["pane"] == pair.operator
    assert not pair.permission_requests(since) and not any(DIALOG in s for s in screens), screens[-1]

    # the worker: rk's rules do not cover the server tools, so Claude asks a person
    since = time.time()
    pair.run.mock.set_mode("tool", tool_name="mcp__rk__cron_pause", tool_input={}, after_text="Done.")
    pair.prompt(pair.worker, "pause everything")
    asked = pair.run.wait_hook("PermissionRequest", since=since, timeout=60)
    assert asked["payload"]["tool_name"] == "mcp__rk__cron_pause", asked
    harness.until(lambda: DIALOG in pair.capture(pair.worker), 15, "the dialog", lambda: pair.capture(pair.worker))
    pair.run.tmux.run("send-keys", "-t", pair.worker, "Escape")  # declined
    harness.until(
        lambda: DIALOG not in pair.capture(pair.worker), 15, "the dialog closed", lambda: pair.capture(pair.worker)
    )
    assert len(pair.run.mock.requests(main_only=True)) == 1  # the call never ran: no result went back
    assert not [rec for rec in pair.mcp_log() if rec["tool"] == "cron_pause"]

    # the operator: `rk operator` started it with pause/resume allowed for it alone
    since, screens = time.time(), []
    paused = pair.call(pair.operator, "cron_pause", {"for": "5m"}, screens)
    assert not paused["error"], paused
    assert not pair.permission_requests(since) and not any(DIALOG in s for s in screens), screens[-1]
    log = [rec for rec in pair.mcp_log() if rec["tool"] == "cron_pause"]
    assert [(rec["pane"], rec["outcome"]) for rec in log] == [(pair.operator, "ok")], log


def test_a_workers_send_into_the_operator_is_refused_by_rk_without_a_dialog(pair):
    pair.connect(pair.worker)
    since, screens = time.time(), []
    sent = pair.call(pair.worker, "send", {"prompt": "drop everything", "pane": pair.operator}, screens)
    assert not pair.permission_requests(since) and not any(DIALOG in s for s in screens), screens[-1]
    assert sent["error"] and "refused" in sent["text"], sent  # rk's own refusal, as a tool error
    log = [rec for rec in pair.mcp_log() if rec["tool"] == "send"]
    assert [(rec["pane"], rec["outcome"]) for rec in log] == [(pair.worker, "refused")], log
    # a delivery is confirmed inside the tool call (the turn it starts): none came
    prompts = [h["payload"].get("prompt") for h in pair.run.hooks(since) if h["event"] == "UserPromptSubmit"]
    assert prompts == ["call send"], prompts
    assert "drop everything" not in pair.capture(pair.operator)


def test_codex_runs_the_scoped_tools_unasked_and_only_its_operator_the_server_tools(tmp_path, agent_bin):
    """The same rules in Codex's words: the per-tool approvals in rk's config.toml block,
    and the `-c` overrides `rk operator` adds for pause and resume."""
    pair = Pair("codex", tmp_path, agent_bin)
    try:
        pair.connect(pair.worker)
        screens: list[str] = []
        added = pair.call(pair.worker, "cron_add", {"prompt": "look again", "every": "10m"}, screens)
        assert '"ok": true' in added["text"], added
        assert [(r["pane"], r["outcome"]) for r in pair.mcp_log() if r["tool"] == "cron_add"] == [(pair.worker, "ok")]

        pair.connect(pair.operator)
        paused = pair.call(pair.operator, "cron_pause", {"for": "5m"}, [])
        assert '"ok": true' in paused["text"], paused
        log = [(r["pane"], r["outcome"]) for r in pair.mcp_log() if r["tool"] == "cron_pause"]
        assert log == [(pair.operator, "ok")], log

        pair.run.mock.set_mode("tool", **pair.tool("cron_resume"), tool_input={}, after_text="Done.")
        pair.prompt(pair.worker, "resume everything")
        harness.until(
            lambda: f'{CODEX_DIALOG} "cron_resume"' in pair.capture(pair.worker),
            60,
            "Codex's approval",
            lambda: pair.capture(pair.worker),
        )
        assert len(pair.run.mock.requests(main_only=True)) == 1  # the call waits for a person
        assert not [r for r in pair.mcp_log() if r["tool"] == "cron_resume"]
    finally:
        pair.close()

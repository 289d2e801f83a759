"""Fixtures of the real-agent suite (`make test-agents`).

Each test gets a `Rig`: the real Claude Code or Codex CLI (pinned versions,
installed by npm into a cache outside the repository; an install failure
fails the suite, it never skips) running in a private tmux server against a
local mock of its model API, with rk's hooks installed by the real
`rk agent setup` (beside a logging hook for every event, which the tests use
to wait on the agent), and `rk` pointed at that server and a private state
directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE))  # harness and mocks import each other plainly

import harness  # noqa: E402

REPO = HERE.parent.parent


@pytest.fixture(scope="session")
def agent_bin() -> Path:
    """The pinned CLIs (installed once per cache; AgentInstallError fails loudly)."""
    return harness.ensure_agents()


class Rig:
    """One real agent CLI with rk's hooks, and rk pointed at its tmux server."""

    def __init__(self, agent: str, root: Path, bin_dir: Path, *, paste_burst: bool = True, **kw) -> None:
        self.agent = agent
        self.state_dir = root / "rk-state"
        self.rk_home = root / "rk-home"
        self.rk_home.mkdir(parents=True, exist_ok=True)
        extra_env = {"RK_STATE_DIR": str(self.state_dir), **kw.pop("extra_env", {})}
        self.run = harness.AgentRun(agent, launch=False, bin_dir=bin_dir, extra_env=extra_env, **kw)
        try:
            if agent == "codex" and paste_burst:  # Codex as users run it: paste-burst detection on
                config = self.run.home / ".codex" / "config.toml"
                config.write_text(config.read_text().replace("disable_paste_burst = true\n", ""))
            setup = subprocess.run(
                [sys.executable, "-m", "rk", "agent", "setup", agent, "--yes"],
                env={**self._env(), "HOME": str(self.run.home)}, capture_output=True, text=True, timeout=60,
                cwd=REPO, stdin=subprocess.DEVNULL,
            )
            assert setup.returncode == 0, setup.stderr
            self.run.launch()
        except BaseException:
            self.run.close()
            raise

    @property
    def pane(self) -> str:
        return self.run.pane

    @property
    def server(self) -> str:
        return self.run.tmux.name

    def _env(self, now: int | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
        env.update(RK_STATE_DIR=str(self.state_dir), HOME=str(self.rk_home), XDG_CONFIG_HOME=str(self.rk_home / "cfg"),
                   TMUX_TMPDIR=str(self.run.tmux.sockdir), TZ="UTC")
        if now is not None:
            env["RK_NOW"] = str(now)
        return env

    def rk(self, *args: str, now: int | None = None, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "rk", "-L", self.server, *args], env=self._env(now),
                              capture_output=True, text=True, timeout=120, cwd=REPO)
        if check and proc.returncode != 0:
            raise AssertionError(f"rk {args} failed ({proc.returncode}): {proc.stderr}")
        return proc

    def add(self, payload: str, *flags: str, pane: str | None = None) -> str:
        """An entry created a minute ago, so an `--every 1m` one is due now."""
        out = self.rk("cron", "add", *flags, "--pane", pane or self.pane, "--json", "--", payload, now=int(time.time()) - 60)
        return json.loads(out.stdout)["result"]["id"]

    def tick(self, now: int | None = None) -> dict[str, str]:
        out = self.rk("cron", "tick", "--json", now=now if now is not None else int(time.time()))
        return {d["entry"]: d["outcome"] for d in json.loads(out.stdout)["result"]["decisions"]}

    def option(self, name: str, pane: str | None = None) -> str:
        return self.run.tmux.run("show-options", "-pqv", "-t", pane or self.pane, name).strip()

    def state(self, pane: str | None = None) -> str:
        return self.option("@rk_pane_agent_state", pane).split(":")[0]

    def wait_state(self, state: str, timeout: float = 15.0, pane: str | None = None) -> str:
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            value = self.option("@rk_pane_agent_state", pane)
            if not seen or seen[-1] != value:
                seen.append(value)
            if value.split(":")[0] == state:
                return value
            time.sleep(0.02)
        raise AssertionError(f"state {state!r} not reached in {timeout}s; seen {seen}; screen:\n{self.run.capture()}")

    def prompts(self) -> list[str]:
        return self.run.mock.prompts()

    def close(self) -> None:
        try:
            self.rk("cron", "ticker", "stop", check=False)
        finally:
            self.run.close()


@pytest.fixture
def rig(request, tmp_path, agent_bin):
    """`rig(agent, **options)` starts one; every rig is closed afterwards."""
    made: list[Rig] = []

    def make(agent: str, **kw) -> Rig:
        r = Rig(agent, tmp_path / f"{agent}-{len(made)}", agent_bin, **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()

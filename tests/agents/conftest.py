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

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE))  # harness and mocks import each other plainly

import harness  # noqa: E402

from agents.rkclient import ClientRig, RkClient, wait_option_state  # noqa: E402
from agents.session_rig import agent_setup  # noqa: E402


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short directory of the test's own, removed afterwards. Under pytest-xdist pytest's
    is <basetemp>/popen-gw<N>/<test name>, and rk's unix sockets in a state dir below it
    (`ticker.sock`, an await's socket) would pass the 107 bytes a socket's path may have."""
    path = Path(tempfile.mkdtemp(prefix="rka-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def agent_bin() -> Path:
    """The pinned CLIs (installed once per cache; AgentInstallError fails loudly)."""
    return harness.ensure_agents()


class Rig(ClientRig):
    """One real agent CLI with rk's hooks, and rk pointed at its tmux server."""

    def __init__(
        self,
        agent: str,
        root: Path,
        bin_dir: Path,
        *,
        paste_burst: bool = True,
        mcp: bool = False,
        allow: tuple[str, ...] = (),
        **kw,
    ) -> None:
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
            agent_setup(agent, {**self._env(), "HOME": str(self.run.home)})
            if mcp:  # `rk mcp` registered by the real `rk agent setup --mcp`, its tools allowed
                self._register_mcp()
            if allow:  # Claude Code permission rules (`Bash(sleep:*)`): those tools run with no dialog
                self._allow(allow)
            self.run.launch()
        except BaseException:
            self.run.close()
            raise

    def _register_mcp(self) -> None:
        agent_setup(self.agent, {**self._env(), "HOME": str(self.run.home)}, "--mcp")
        # the allow rules are setup's own (rk's scoped tools run unasked; pause and resume ask)
        if self.agent == "codex":
            path = self.run.home / ".codex" / "config.toml"
            text = path.read_text()
            # the new-model announcement Codex 0.171 animates over the screen once per HOME (an
            # animation that a delivery reads as typing), marked as seen as Codex does after it
            path.write_text(text + '\n[tui.model_availability_nux]\n"gpt-6.1-sol" = 1\n')

    def _allow(self, rules: tuple[str, ...]) -> None:
        import json

        assert self.agent == "claude", "permission rules are Claude Code's settings"
        path = self.run.home / ".claude" / "settings.json"
        settings = json.loads(path.read_text())
        settings.setdefault("permissions", {}).setdefault("allow", []).extend(rules)
        path.write_text(json.dumps(settings, indent=1))

    @property
    def pane(self) -> str:
        return self.run.pane

    @property
    def server(self) -> str:
        return self.run.tmux.name

    def client(self) -> RkClient:
        return RkClient(self.run.tmux.name, self.run.pane, self.state_dir, str(self.run.tmux.sockdir), self.rk_home)

    def _env(self, now: int | None = None) -> dict:
        return self.client().env(now)

    def option(self, name: str, pane: str | None = None) -> str:
        return self.run.tmux.run("show-options", "-pqv", "-t", pane or self.pane, name).strip()

    def state(self, pane: str | None = None) -> str:
        return self.option("@rk_pane_agent_state", pane).split(":")[0]

    def wait_state(self, state: str, timeout: float = 15.0, pane: str | None = None, since: int = 0) -> str:
        read = lambda: self.option("@rk_pane_agent_state", pane)  # noqa: E731
        return wait_option_state(read, state, timeout, self.run.capture, since)

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

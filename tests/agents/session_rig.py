"""rk beside one real CLI that runs in a session rig of its own (GeminiSession, QwenSession,
VibeSession): rk's hooks installed by the real `rk agent setup`, the CLI started, and rk's
options on its pane read back, the same way for each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.rkclient import ClientRig, RkClient, wait_option_state

REPO = Path(__file__).resolve().parent.parent.parent


def agent_setup(agent: str, env: dict[str, str], *flags: str) -> None:
    """The real `rk agent setup <agent> [flags] --yes` in `env` (the CLI's HOME in it)."""
    setup = subprocess.run(
        [sys.executable, "-m", "rk", "agent", "setup", agent, *flags, "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    assert setup.returncode == 0, setup.stderr


class SessionRig(ClientRig):
    """A CLI's `session` (its `socket`, `tmux()` and `capture()`) on `pane`, with rk pointed at
    its server and at `state_dir`; `add` makes an entry created a minute ago, so due now."""

    add_flags = ("--every", "1m")
    session: Any  # the CLI's session rig
    state_dir: Path
    pane: str

    def launch(self, agent: str, setup_env: dict[str, str], ready: Callable[[], object]) -> None:
        """`rk agent setup <agent>` with `setup_env`, then the session started and `ready()`
        waited for; the rig closed (and the error raised) when any of it fails."""
        try:
            agent_setup(agent, {**os.environ, **setup_env})
            self.session.start()
            ready()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.session.stop()

    def client(self) -> RkClient:
        return RkClient(self.session.socket, self.pane, self.state_dir)

    def option(self, name: str) -> str:
        """rk's pane option `name` ("" when unset)."""
        return self.session.tmux("show-options", "-pqv", "-t", self.pane, name).strip()

    def state(self) -> str:
        return self.option("@rk_pane_agent_state")

    def wait_state(self, state: str, timeout: float = 20.0) -> str:
        return wait_option_state(self.state, state, timeout, self.session.capture)

    def turn_end(self) -> str:
        return self.option("@rk_pane_turn_end").split(":")[0]

    def await_idle_after(self, press: Callable[[], float], watch_after: float = 0.0) -> tuple[float, float]:
        """`press()` (it returns its time) while an `rk agent await --until idle` waits on the
        pane (its socket up, then `watch_after` seconds); the press's time and the seconds
        from it to the await's return. The await must return true."""
        waiter = subprocess.Popen(
            [sys.executable, "-m", "rk", "-L", self.session.socket, "agent", "await", "--pane", self.pane]
            + ["--until", "idle", "--timeout", "30s", "--json"],
            env=self.client().env(),
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 20
            while not any((self.state_dir / "await").glob("*.sock")) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(watch_after)
            pressed = press()
            out, _ = waiter.communicate(timeout=30)
            returned = time.time()
        finally:
            waiter.kill()
        assert waiter.returncode == 0, out
        assert json.loads(out)["result"], out
        return pressed, returned - pressed

    def fire_at_a_draft(self, draft: str) -> None:
        """A human's `draft` typed into the composer, then two fires ticked: the default one
        held and a skip-if-busy one skipped, both for the draft."""
        self.session.type(draft)
        self.session.wait_composer_text(draft)
        now = self.add("status?")
        skip = self.add("status?", "--deliver", "skip-if-busy")
        assert self.tick() == {now: "held-busy: draft", skip: "skipped-busy: draft"}

    def doctor_checks(self, bin_dir: Path, **env: str) -> dict[str, dict]:
        """`rk doctor --json` with the CLI's `bin_dir` first on PATH, in its HOME (and `env`):
        each check by its name."""
        env = {**self.client().env(), "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", **env}
        out = subprocess.run(
            [sys.executable, "-m", "rk", "doctor", "--json"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return {c["name"]: c for c in json.loads(out.stdout)["result"]}

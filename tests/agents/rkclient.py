"""rk pointed at one agent's private tmux server, for the real-agent tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


class RkClient:
    """`rk -L <server>` with a private state directory; entries on `pane` by default.

    `tmux_tmpdir` is the socket directory of the server (None: tmux's default)."""

    def __init__(
        self, server: str, pane: str, state_dir: Path, tmux_tmpdir: str | None = None, home: Path | None = None
    ) -> None:
        self.server, self.pane, self.state_dir = server, pane, state_dir
        self.tmux_tmpdir, self.home = tmux_tmpdir, home

    def env(self, now: int | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW", "TMUX_TMPDIR")}
        env.update(RK_STATE_DIR=str(self.state_dir), TZ="UTC")
        if self.home is not None:
            env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / "cfg"))
        if self.tmux_tmpdir:
            env["TMUX_TMPDIR"] = self.tmux_tmpdir
        if now is not None:
            env["RK_NOW"] = str(now)
        return env

    def rk(self, *args: str, now: int | None = None, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, "-m", "rk", "-L", self.server, *args],
            env=self.env(now),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"rk {args} failed ({proc.returncode}): {proc.stderr or proc.stdout}")
        return proc

    def add(self, payload: str, *flags: str, pane: str | None = None) -> str:
        """An entry created a minute ago (so an `--every 1m` one is due now); the payload
        goes after `--`, so a leading dash is text."""
        out = self.rk(
            "cron", "add", *flags, "--pane", pane or self.pane, "--json", "--", payload, now=int(time.time()) - 60
        )
        return json.loads(out.stdout)["result"]["id"]

    def tick(self, now: int | None = None) -> dict[str, str]:
        out = self.rk("cron", "tick", "--json", now=now if now is not None else int(time.time()))
        return {d["entry"]: d["outcome"] for d in json.loads(out.stdout)["result"]["decisions"]}


class ClientRig:
    """What every rig forwards to its RkClient (`client()` names the server, the pane and
    the state directory); `add_flags` start every `add` of the rig."""

    add_flags: tuple[str, ...] = ()

    def client(self) -> RkClient:
        raise NotImplementedError

    def rk(self, *args: str, now: int | None = None, check: bool = True) -> subprocess.CompletedProcess:
        return self.client().rk(*args, now=now, check=check)

    def add(self, payload: str, *flags: str, pane: str | None = None) -> str:
        return self.client().add(payload, *self.add_flags, *flags, pane=pane)

    def tick(self, now: int | None = None) -> dict[str, str]:
        return self.client().tick(now)


def wait_option_state(read, state: str, timeout: float, screen=lambda: "", since: int = 0) -> str:
    """Poll `read()` (an `@rk_pane_agent_state` value) until its state is `state`, written
    at `since` (unix seconds) or later: a turn rk just typed may not be stamped yet."""
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        value = read()
        if not seen or seen[-1] != value:
            seen.append(value)
        parts = value.split(":")
        if parts[0] == state and (not since or (len(parts) > 1 and parts[1].isdigit() and int(parts[1]) >= since)):
            return value
        time.sleep(0.02)
    raise AssertionError(f"state {state!r} not reached in {timeout}s; seen {seen}; screen:\n{screen()}")


def listed(rig) -> dict:
    """The row of `rk agent list --json` for the pane of `rig` (any rig with `rk()` and `pane`)."""
    rows = json.loads(rig.rk("agent", "list", "--json").stdout)["result"]
    return next(row for row in rows if row["pane"] == rig.pane)

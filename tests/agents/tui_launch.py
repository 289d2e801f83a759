"""A real terminal agent CLI in a private tmux server: the rig the Qwen Code and Mistral Vibe
sessions (qwen_launch.py, vibe_launch.py) share. Each CLI's subclass writes its own config,
starts its own mock and says when its screen is ready; this class makes the throwaway root
(HOME, a work directory, the harness's logging hook), starts the CLI as the pane's process,
and reads the screen, the hooks and the keys the same way for both."""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

from harness import HOOK_SH, clean_env, read_hooks

_counter = itertools.count(1)


class TuiSession:
    """One CLI in a private tmux server (session `window`), with its own mock (the subclass's)."""

    #: the command that starts the CLI, and the `rk-<name>-` of its root and tmux socket
    program: str
    #: the tmux session (and its one window) the CLI runs in
    window: str
    #: every hook event the CLI fires
    all_events: tuple[str, ...]
    #: how long `wait_hook` waits by default
    hook_timeout: float = 15.0
    #: the live composer's first line on a screen ("" when empty), None when none shows
    read_composer: Callable[[str], str | None]

    def __init__(
        self,
        root: str | Path | None = None,
        cols: int = 120,
        rows: int = 40,
        log_events: tuple[str, ...] | None = None,
        env: dict | None = None,
        bin_dir: Path | None = None,
    ) -> None:
        """A throwaway root unless `root`; a logging hook for `log_events` (every event of the
        CLI when None); `env` over the CLI's environment; the pinned CLI unless `bin_dir`."""
        self.root = Path(root) if root else Path(tempfile.mkdtemp(prefix=f"rk-{self.program}-"))
        self._own_root = root is None
        self.root.mkdir(parents=True, exist_ok=True)
        self.cols, self.rows = cols, rows
        self.bin_dir = Path(bin_dir) if bin_dir else self.ensure()
        self.home, self.work = self.root / "home", self.root / "work"
        for d in (self.home, self.work):
            d.mkdir(parents=True, exist_ok=True)
        self.hook_log, self.hook_jsonl = self.root / "hooks.log", self.root / "hooks.jsonl"
        self.hook_sh = self.root / "hook.sh"
        self.hook_sh.write_text(HOOK_SH.replace("@LOG@", str(self.hook_log)).replace("@JSONL@", str(self.hook_jsonl)))
        self.hook_sh.chmod(0o755)
        self.socket = f"rk-{self.program}-{os.getpid()}-{next(_counter)}"
        self.env = {
            "HOME": str(self.home),
            "PATH": f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "TERM": "tmux-256color",
            "COLORTERM": "truecolor",
            "LANG": "C.UTF-8",
            **self.configure(self.all_events if log_events is None else tuple(log_events)),
            **(env or {}),
        }
        self.pane = ""
        self.pane_pid = 0
        self.t_launch = 0.0

    # -- what each CLI does its own way --------------------------------------------------------
    @staticmethod
    def ensure() -> Path:
        """The directory that holds the pinned CLI (installed when missing)."""
        raise NotImplementedError

    def configure(self, log_events: tuple[str, ...]) -> dict[str, str]:
        """Write the CLI's config (its logging hooks for `log_events`) and start its mock; the
        environment the CLI needs for them."""
        raise NotImplementedError

    def stop_mock(self) -> None:
        raise NotImplementedError

    def wait_ready(self, timeout: float) -> str:
        raise NotImplementedError

    # -- tmux ------------------------------------------------------------------------------
    def tmux(self, *a: str, check: bool = True) -> str:
        r = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *a],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=20,
        )
        if check and r.returncode:
            raise RuntimeError(f"tmux {a!r}: {r.stderr.strip()}")
        return r.stdout

    def start(self, args: tuple[str, ...] = ()) -> Self:
        """`exec env … <program>` as the pane's process."""
        env_args = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        cmd = f"exec env {env_args} {self.program} {' '.join(map(shlex.quote, args))}"
        size = ("-x", str(self.cols), "-y", str(self.rows))
        self.tmux("new-session", "-d", "-s", self.window, *size, "-c", str(self.work), "sleep 86400")
        self.tmux("set-option", "-g", "default-terminal", "tmux-256color")
        self.tmux("set-option", "-g", "remain-on-exit", "on")
        self.tmux("set-option", "-g", "history-limit", "5000")
        self.t_launch = time.time()
        self.tmux("respawn-pane", "-k", "-t", self.window, "-c", str(self.work), cmd)
        info = self.tmux("display", "-p", "-t", self.window, "#{pane_id} #{pane_pid}").split()
        self.pane, self.pane_pid = info[0], int(info[1])
        return self

    def stop(self) -> None:
        self.tmux("kill-server", check=False)
        deadline = time.monotonic() + 5  # the CLI writes its session files as it dies
        while self.pane_pid and Path(f"/proc/{self.pane_pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.stop_mock()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def capture(self, ansi: bool = False) -> str:
        return self.tmux("capture-pane", "-p", "-J", *(["-e"] if ansi else []), "-t", self.window)

    def info(self) -> dict:
        fmt = "#{pane_current_command}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_title}"
        cc, dead, status, title = self.tmux("display", "-p", "-t", self.window, fmt).rstrip("\n").split("\t")
        return {"pane_current_command": cc, "dead": dead == "1", "dead_status": status, "title": title}

    # -- waiting ---------------------------------------------------------------------------
    def wait_for(self, pred: Callable[[str], object] | str, timeout: float = 15.0, interval: float = 0.05) -> str:
        end = time.monotonic() + timeout
        while True:
            s = self.capture()
            if pred(s) if callable(pred) else re.search(pred, s, re.M):
                return s
            if time.monotonic() > end:
                raise TimeoutError(f"screen did not match within {timeout}s:\n{s}")
            time.sleep(interval)

    def wait_composer_text(self, text: str, timeout: float = 10.0) -> str:
        return self.wait_for(lambda s: (self.read_composer(s) or "").startswith(text), timeout)

    def hooks(self, since: float | None = None) -> list[dict]:
        evs = read_hooks(self.hook_jsonl)
        return evs if since is None else [e for e in evs if e.get("t") is not None and e["t"] >= since - 0.0005]

    def wait_hook(self, event: str, since: float | None = None, timeout: float | None = None, kind: str = "") -> dict:
        """The first `event` hook at/after `since` (a Notification of `kind`, when given)."""
        timeout = self.hook_timeout if timeout is None else timeout
        end = time.monotonic() + timeout
        while True:
            for e in self.hooks(since):
                payload = e.get("payload") or {}
                if e["event"] == event and (not kind or payload.get("notification_type") == kind):
                    return e
            if time.monotonic() > end:
                what = f"{event} {kind}" if kind else event
                raise TimeoutError(f"no {what} hook within {timeout}s; got {[e['event'] for e in self.hooks()]}")
            time.sleep(0.02)

    # -- input -----------------------------------------------------------------------------
    def type(self, text: str) -> float:
        self.tmux("send-keys", "-t", self.window, "-l", "--", text)
        return time.time()

    def keys(self, *keys: str) -> float:
        self.tmux("send-keys", "-t", self.window, *keys)
        return time.time()

    def enter(self) -> float:
        return self.keys("Enter")

    def esc(self) -> float:
        return self.keys("Escape")

    def submit(self, text: str) -> float:
        """Type `text`, wait for its echo in the composer, press Enter; the Enter's time."""
        self.type(text)
        self.wait_composer_text(text)
        time.sleep(0.1)
        return self.enter()

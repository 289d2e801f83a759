"""The private tmux server and the one session a real-CLI rig drives (OpenCode, Kilo Code,
Copilot CLI): commands run with the agents' clean environment (`harness.clean_env`)."""

from __future__ import annotations

import subprocess
import time

from harness import clean_env

AGENT_ENV = clean_env()


class TmuxPane:
    """Mixed into a rig that sets `socket` (its `tmux -L` name) and `target` (its session)."""

    socket: str
    target: str

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            check=True,
            capture_output=True,
            text=True,
            env=AGENT_ENV,
        ).stdout

    _tmux = tmux  # the OpenCode rig's older name

    def display(self, fmt: str) -> str:
        return self.tmux("display-message", "-p", "-t", self.target, fmt).strip()

    def capture(self, ansi: bool = False) -> str:
        return self.tmux("capture-pane", "-p", "-J", *(["-e"] if ansi else []), "-t", self.target)

    def send_keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", self.target, *(["-l"] if literal else []), *keys)

    def type_text(self, text: str) -> None:
        self.send_keys(text, literal=True)

    def wait_screen(self, pred, timeout: float = 30.0, interval: float = 0.1) -> str:
        """The screen once `pred(screen)` holds, polled every `interval` s; TimeoutError with
        the last screen after `timeout` s."""
        end = time.time() + timeout
        while True:
            s = self.capture()
            if pred(s):
                return s
            if time.time() > end:
                raise TimeoutError("screen condition not met; last screen:\n" + s)
            time.sleep(interval)

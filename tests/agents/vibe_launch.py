"""The real Mistral Vibe (PyPI `mistral-vibe` 3.0.2) offline in a private tmux server, against
rk's OpenAI chat-completions mock (mock_opencode.py).

Vibe needs Python >= 3.12 (every release; 3.0.3's exact pins do not resolve on the index,
3.0.2's do). The machine's python may be older, so the pinned CLI goes into its own venv in
the agents' cache (``<cache>/vibe/venv``), made by a Python >= 3.12 found here
(`find_python`): ``RK_VIBE_PYTHON``, else a ``python3.12``/``python3.13``/``python3.14`` on
PATH, else one of pyenv's versions (the machine images rk is tested on ship pyenv's 3.12).
No registry ships a CPython that installs without a download of its own, so none is fetched.
An interpreter or an install missing fails the run (AgentInstallError), never skips it.

The venv's ``bin/vibe`` is a Python script that execs the native TUI ``vibe/_bin/vibe-rs``
(``pane_current_command`` `vibe-rs`), which starts its Python app server
(``vibe-app-server``, same venv) as a child; the app server runs the hooks.

Offline: ``$VIBE_HOME/config.toml`` (``VIBE_HOME`` is the session's own) names a generic
provider whose ``api_base`` is the mock, a model of it as the active one, and turns off what
would make network traffic (update checks, telemetry, connectors). Hooks are
``$VIBE_HOME/hooks.toml`` ``[[hooks]]`` tables: a logging hook for each of ``post_agent``,
``pre_tool`` and ``post_tool`` here; rk's (``rk agent setup vibe``) beside them in tests.

Typical use::

    with VibeSession() as v:            # throwaway VIBE_HOME + tmux -L rk-vibe-<pid>-<n> + its mock
        v.start(); v.wait_ready()
        t = v.submit("hello")
        v.wait_hook("post_agent", since=t)
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from harness import AgentInstallError, cache_dir, install_lock
from mock_opencode import start_mock
from tui_launch import TuiSession

VIBE_DIST, VIBE_VERSION = "mistral-vibe", "3.0.2"
#: The hook types of Vibe 3.0 (vibe/core/hooks/models.py HookType).
ALL_EVENTS = ("post_agent", "pre_tool", "post_tool")
#: Interpreters tried on PATH, newest last.
PYTHON_NAMES = ("python3.12", "python3.13", "python3.14")

#: A running turn: `⣤  Generating… (2s Esc/Ctrl+C to interrupt)` above the composer.
BUSY_RE = re.compile(r"Esc/Ctrl\+C to interrupt\)")
#: The live composer's line: `>` at the margin between two rules.
COMPOSER_RE = re.compile(r"^> ?(.*)$")


def vibe_root() -> Path:
    return Path(os.environ.get("RK_VIBE_DIR") or cache_dir() / "vibe")


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30
        ).stdout.split()
        return int(out[0]), int(out[1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def find_python() -> str:
    """A Python >= 3.12 to make Vibe's venv with (see the module docstring)."""
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [os.environ.get("RK_VIBE_PYTHON", "")]
    candidates += [shutil.which(name) or "" for name in PYTHON_NAMES]
    candidates += sorted(glob.glob(f"{pyenv}/versions/3.1[2-9].*/bin/python3"))
    for python in candidates:
        if python and (_version_of(python) or (0, 0)) >= (3, 12):
            return python
    raise AgentInstallError("no Python >= 3.12 found for Mistral Vibe (set RK_VIBE_PYTHON, or put python3.12 on PATH)")


def installed_version(venv: Path) -> str | None:
    """The mistral-vibe version in `venv` (its dist-info), None when it has none."""
    found = sorted(venv.glob("lib/python3*/site-packages/mistral_vibe-*.dist-info"))
    return found[-1].name.removeprefix("mistral_vibe-").removesuffix(".dist-info") if found else None


def ensure_vibe(root: Path | None = None) -> Path:
    """The venv ``bin`` holding the pinned ``vibe`` (made and installed by pip when missing
    or another version; AgentInstallError when that fails: never a skip)."""
    venv = Path(root or vibe_root()) / "venv"
    with install_lock(venv):
        return _install_vibe(venv)


def _install_vibe(venv: Path) -> Path:
    """`ensure_vibe` under its lock."""
    bin_dir = venv / "bin"
    if installed_version(venv) == VIBE_VERSION and (bin_dir / "vibe").exists():
        return bin_dir
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        [find_python(), "-m", "venv", str(venv)],
        [str(bin_dir / "python"), "-m", "pip", "install", "--no-input", "-q", f"{VIBE_DIST}=={VIBE_VERSION}"],
    ]
    for cmd in steps:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise AgentInstallError(f"{' '.join(cmd)} failed: {e}") from e
        if r.returncode != 0:
            raise AgentInstallError(f"{' '.join(cmd)} failed (rc={r.returncode}):\n{r.stderr[-4000:]}")
    if installed_version(venv) != VIBE_VERSION or not (bin_dir / "vibe").exists():
        raise AgentInstallError(f"pip did not install {VIBE_DIST}=={VIBE_VERSION} into {venv}")
    return bin_dir


def base_config(api_base: str) -> str:
    """``$VIBE_HOME/config.toml`` for a quiet offline run against the mock at `api_base`."""
    return (
        'active_model = "mock"\n'
        "enable_update_checks = false\nenable_auto_update = false\nenable_telemetry = false\n"
        "enable_notifications = false\nenable_connectors = false\ndisable_welcome_banner_animation = true\n"
        "api_retry_max_elapsed_time = 2.0\n\n"
        f'[[providers]]\nname = "mock"\napi_base = {json.dumps(api_base)}\napi_key_env_var = ""\n\n'
        '[[models]]\nname = "mock-model"\nprovider = "mock"\nalias = "mock"\n'
    )


def logging_hooks(hook_sh: Path, events=ALL_EVENTS) -> str:
    """``[[hooks]]`` tables that log each event with the harness's logging hook."""
    return "".join(
        f'[[hooks]]\nname = "log-{ev}"\ntype = "{ev}"\ncommand = {json.dumps(f"{hook_sh} {ev}")}\n\n' for ev in events
    )


def composer(screen: str) -> str | None:
    """The live composer's first line ("" when empty), or None when none shows: the last
    `>` line at the margin right below a rule."""
    lines = screen.splitlines()
    for i in range(len(lines) - 1, 0, -1):
        m = COMPOSER_RE.match(lines[i].rstrip())
        if m and lines[i - 1].lstrip().startswith("─"):
            return m.group(1).strip()
    return None


class VibeSession(TuiSession):
    """The real Mistral Vibe in a private tmux server (window `v`; `vibe` execs `vibe-rs`), with its own mock."""

    program, window = "vibe", "v"
    hook_timeout = 30.0
    all_events = ALL_EVENTS
    ensure = staticmethod(ensure_vibe)
    read_composer = staticmethod(composer)

    def configure(self, log_events: tuple[str, ...]) -> dict[str, str]:
        self.vibe_home = self.home / ".vibe"
        self.vibe_home.mkdir(parents=True, exist_ok=True)
        self.mock_log = self.root / "mock.jsonl"
        self.mock = start_mock(0, str(self.mock_log))
        (self.vibe_home / "config.toml").write_text(base_config(self.mock.base_url))
        self.hooks_path = self.vibe_home / "hooks.toml"
        self.hooks_path.write_text(logging_hooks(self.hook_sh, log_events))
        return {"VIBE_HOME": str(self.vibe_home)}

    def stop_mock(self) -> None:
        self.mock.shutdown()
        self.mock.server_close()

    def wait_ready(self, timeout: float = 90.0) -> str:
        """The composer drawn, the app server up, no turn running."""
        return self.wait_for(
            lambda s: composer(s) is not None and not BUSY_RE.search(s) and "Starting" not in s, timeout
        )

    def requests(self) -> list[dict]:
        """The mock's log: one record per request."""
        try:
            return [json.loads(line) for line in self.mock_log.read_text().splitlines() if line.strip()]
        except OSError:
            return []

"""Run the real Claude Code / Codex CLIs offline in a private tmux server.

Standard library only; importable without pytest. The pieces:

* ``ensure_agents()``: install the pinned CLIs with npm into a cache outside
  the repo (``${XDG_CACHE_HOME:-$HOME/.cache}/rk-test-agents/``), reusing a
  matching install. Raises ``AgentInstallError`` when npm fails; never skips.
* ``AgentRun``: one agent session. It makes a throwaway root (HOME, work dir,
  hook logs), starts the mock model API (``mocks.py``) in a child process,
  writes the pre-made configs with a *logging* hook for every hook event the
  CLI knows, starts a private tmux server (``tmux -L rk-agents-<pid>-<n> -f
  /dev/null``) whose pane runs ``bash``, types the CLI's name into that shell,
  and waits for the composer. Then: ``type``/``paste``/``enter``/``esc``/
  ``keys``, ``capture``/``capture_both``, ``wait_screen``, ``hooks``/
  ``wait_hook``, ``pane_info``/``proc_tree``, and ``close()`` which kills
  everything it started (tmux server, agent processes, mock, codex daemons).

Example::

    from harness import AgentRun
    with AgentRun("claude") as run:
        run.mock.set_mode("ok")
        t = run.submit("hello")
        run.wait_hook("Stop", since=t)
        print(run.capture())
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mocks

CLAUDE_PKG, CLAUDE_VERSION = "@anthropic-ai/claude-code", "2.1.197"
CODEX_PKG, CODEX_VERSION = "@openai/codex", "0.171.0"
GEMINI_PKG, GEMINI_VERSION = "@google/gemini-cli", "0.61.0"
OPENCODE_PKG, OPENCODE_VERSION = "opencode-ai", "1.18.33"
PINNED = {
    CLAUDE_PKG: CLAUDE_VERSION,
    CODEX_PKG: CODEX_VERSION,
    GEMINI_PKG: GEMINI_VERSION,
    OPENCODE_PKG: OPENCODE_VERSION,
}
# GitHub Copilot CLI: an npm loader that runs the native @github/copilot-linux-x64 (copilot_launch.py).
COPILOT_PKG, COPILOT_VERSION = "@github/copilot", "1.0.102"
PINNED[COPILOT_PKG] = COPILOT_VERSION
#: The bound a real-CLI test puts on rk's seeing a turn end by itself (its watch, a hook, an
#: await): well under a tick (30 s) and under the reply left streaming (a minute or more),
#: so a pass proves the end was seen without a tick and before the turn ended of itself.
#: How fast is printed, not asserted: a loaded machine stretches every figure (the
#: quiet-machine figures are in the README and docs/clis.md).
SEEN_WITHOUT_A_TICK = 10.0

#: Kilo Code CLI: the newest whose native package (@kilocode/cli-linux-x64) is on the registry
#: (7.8.1's launcher is, its native binaries stop at 7.7.9; 7.7.9's launcher is not).
KILO_PKG, KILO_VERSION = "@kilocode/cli", "7.7.7"
PINNED[KILO_PKG] = KILO_VERSION
#: The newest Claude Code on the registry, installed beside the pinned one in the same cache
#: (an npm alias, so one `npm install` does both) and run by a representative set of tests.
CLAUDE_LATEST_VERSION = "2.1.332"
CLAUDE_LATEST_ALIAS = "claude-code-latest"
ALIASES = {CLAUDE_LATEST_ALIAS: (CLAUDE_PKG, CLAUDE_LATEST_VERSION)}
#: Every Claude Code version the suite runs: the pinned one first.
CLAUDE_VERSIONS = (CLAUDE_VERSION, CLAUDE_LATEST_VERSION)
#: Executables in node_modules/.bin that two packages claim (both Claude Codes are `claude`):
#: each is linked to its own package's binary after the install.
CLAUDE_BINARIES = {
    "claude": "../@anthropic-ai/claude-code/bin/claude.exe",
    "claude-latest": f"../{CLAUDE_LATEST_ALIAS}/bin/claude.exe",
}

# Every hook event name found in the 2.1.197 binary.
CLAUDE_HOOK_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
)
# Hook events of codex 0.171.0: the ``<event>.command.input`` JSON schemas in
# the native binary (hooks/src/events/*.rs), plus PreModelRequest and
# PostModelRequest (hooks/src/events/model_request.rs; listed in the binary's
# managed-hooks requirements, and they do fire for user hooks). A made-up name
# such as ``TurnError`` in hooks.json is accepted silently and never fires.
CODEX_HOOK_EVENTS = (
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "Interrupt",
    "PreModelRequest",
    "PostModelRequest",
)

_counter = itertools.count()


class AgentInstallError(RuntimeError):
    pass


# --------------------------------------------------------------------------
# install


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rk-test-agents"


@contextmanager
def install_lock(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``.<name>.lock`` beside ``root`` while checking or installing
    into it: each pytest-xdist worker runs the session fixtures, and two npm or pip installs
    into one directory at once leave it broken. The lock goes with the process."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _installed_version(root: Path, pkg: str) -> str | None:
    try:
        return json.loads((root / "node_modules" / pkg / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _versions_ok(root: Path) -> bool:
    if any(_installed_version(root, p) != v for p, v in PINNED.items()):
        return False
    return all(_installed_version(root, alias) == v for alias, (_pkg, v) in ALIASES.items())


def _link_claude_binaries(root: Path) -> None:
    """Point `.bin/claude` at the pinned Claude Code and `.bin/claude-latest` at the alias
    (npm links `claude` to whichever of the two it installed last)."""
    bin_dir = root / "node_modules" / ".bin"
    for name, target in CLAUDE_BINARIES.items():
        link = bin_dir / name
        if link.is_symlink() and os.readlink(link) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)


def _install_ok(root: Path) -> bool:
    if not _versions_ok(root):
        return False
    _link_claude_binaries(root)
    return all(
        (root / "node_modules" / ".bin" / b).exists()
        for b in ("claude", "claude-latest", "codex", "gemini", "opencode")
    )


def ensure_agents(root: Path | None = None) -> Path:
    """Return the ``node_modules/.bin`` directory holding the pinned CLIs (and the newest
    Claude Code as ``claude-latest``).

    ``RK_TEST_AGENTS_DIR`` (a directory with ``node_modules``) overrides the
    cache location; it is used as-is if it holds the pinned versions, else
    installed into like the cache.
    """
    if root is None:
        env = os.environ.get("RK_TEST_AGENTS_DIR")
        root = Path(env) if env else cache_dir()
    root = Path(root)
    with install_lock(root):
        _install(root)
    return root / "node_modules" / ".bin"


def _install(root: Path) -> None:
    """Install the pinned CLIs into ``root`` unless they are there (the caller holds the lock)."""
    if _install_ok(root):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise AgentInstallError("npm not found on PATH: cannot install the agent CLIs")
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "package.json").exists():
        (root / "package.json").write_text('{"name": "rk-test-agents", "private": true}\n')
    specs = [f"{p}@{v}" for p, v in PINNED.items()]
    specs += [f"{alias}@npm:{p}@{v}" for alias, (p, v) in ALIASES.items()]
    cmd = [npm, "install", "--no-audit", "--no-fund", *specs]
    try:
        r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise AgentInstallError(f"{' '.join(cmd)} failed in {root}: {e}") from e
    if r.returncode != 0 or not _install_ok(root):
        raise AgentInstallError(
            f"{' '.join(cmd)} failed in {root} (rc={r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
        )


# --------------------------------------------------------------------------
# tmux


#: Variables that would make an agent CLI think it runs headless or under CI (Gemini CLI
#: refuses its interactive UI when CI=true or GITHUB_ACTIONS=true) or reach a real account.
_FOREIGN = (
    "TMUX",
    "CLAUDE",
    "ANTHROPIC",
    "OPENAI",
    "CODEX",
    "GEMINI",
    "GOOGLE",
    "OPENCODE",
    "COPILOT",
    "CI_",
    "GITHUB_",
    "CONTINUOUS_INTEGRATION",
    "BUILD_NUMBER",
    "RUN_ID",
)


def clean_env(extra: dict | None = None) -> dict:
    """This process's environment without CI markers and agent credentials: what a tmux
    server started for an agent inherits, as on a user's machine."""
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(_FOREIGN)}
    env.update(extra or {})
    return env


class Tmux:
    """A private tmux server: ``tmux -L <name> -f /dev/null``; TMUX_TMPDIR private too."""

    def __init__(self, sockdir: Path, name: str | None = None, env: dict | None = None):
        self.name = name or f"rk-agents-{os.getpid()}-{next(_counter)}"
        self.sockdir = Path(sockdir)
        self.sockdir.mkdir(parents=True, exist_ok=True)
        self.env = clean_env(env)
        self.env["TMUX_TMPDIR"] = str(self.sockdir)

    def run(self, *args: str, input: str | None = None, check: bool = True) -> str:
        r = subprocess.run(
            ["tmux", "-L", self.name, "-f", "/dev/null", *args],
            env=self.env,
            input=input,
            capture_output=True,
            text=True,
            timeout=20,
        )
        if check and r.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {r.stderr.strip()}")
        return r.stdout

    def server_pid(self) -> int | None:
        try:
            return int(self.run("display", "-p", "#{pid}").strip())
        except (RuntimeError, ValueError):
            return None

    def kill(self) -> None:
        self.run("kill-server", check=False)


# --------------------------------------------------------------------------
# /proc helpers


@dataclass
class Proc:
    pid: int
    ppid: int
    pgrp: int
    session: int
    tty_nr: int
    tpgid: int
    state: str
    comm: str
    cmdline: str

    @property
    def in_foreground(self) -> bool:
        """True when this process's group is the tty's foreground group."""
        return self.pgrp == self.tpgid


def read_proc(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    f = stat[stat.rindex(")") + 2 :].split()
    # fields after comm: state ppid pgrp session tty_nr tpgid ...
    return Proc(pid, int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5]), f[0], comm, cmd)


def all_procs() -> list[Proc]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            p = read_proc(int(d))
            if p:
                out.append(p)
    return out


def descendants(root_pid: int, procs: list[Proc] | None = None) -> list[Proc]:
    procs = procs if procs is not None else all_procs()
    kids: dict[int, list[Proc]] = {}
    for p in procs:
        kids.setdefault(p.ppid, []).append(p)
    out, stack = [], [root_pid]
    root = next((p for p in procs if p.pid == root_pid), None)
    if root:
        out.append(root)
    while stack:
        for c in sorted(kids.get(stack.pop(), []), key=lambda p: p.pid):
            out.append(c)
            stack.append(c.pid)
    return out


def format_tree(procs: Iterable[Proc]) -> str:
    lines = [f"{'PID':>7} {'PPID':>7} {'PGID':>7} {'TPGID':>7} S  COMM             CMD"]
    for p in procs:
        lines.append(f"{p.pid:>7} {p.ppid:>7} {p.pgrp:>7} {p.tpgid:>7} {p.state}  {p.comm:<16} {p.cmdline[:70]}")
    return "\n".join(lines)


def _kill_pids(pids: Iterable[int], sig=signal.SIGTERM) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    pids = list(pids)
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if (info := read_proc(p)) is not None and info.state != "Z"]
        if pids:
            time.sleep(0.05)
    return pids


# --------------------------------------------------------------------------
# hooks


HOOK_SH = r"""#!/bin/sh
# logging hook: $1 = event name. Appends "EVENT epoch.ms" to hooks.log and
# {"event","t","proc","payload"} to hooks.jsonl. Never blocks the agent, exits 0.
# "proc": this hook's pid/pgrp/tpgid and its parent and grandparent (pid comm).
t=$(date +%s.%3N)
if [ -t 0 ]; then p=null; else p=$(cat | tr -d '\n\r'); fi
[ -n "$p" ] || p=null
set -- "$1" $(sed 's/.*) //' /proc/$$/stat 2>/dev/null)
pp=$PPID; pc=$(cat /proc/$pp/comm 2>/dev/null)
gp=$(sed 's/.*) //' /proc/$pp/stat 2>/dev/null | cut -d' ' -f2); gc=$(cat /proc/$gp/comm 2>/dev/null)
printf '%s %s\n' "$1" "$t" >> '@LOG@'
printf '{"event":"%s","t":%s,"proc":{"pid":%s,"pgrp":%s,"tpgid":%s,"ppid":%s,"pcomm":"%s","gppid":%s,"gpcomm":"%s"},"payload":%s}\n' \
  "$1" "$t" "$$" "${4:-0}" "${7:-0}" "$pp" "$pc" "${gp:-0}" "$gc" "$p" >> '@JSONL@'
exit 0
"""

NOTIFY_SH = r"""#!/bin/sh
# codex notify program: argv[1] is a JSON object.
t=$(date +%s.%3N)
p=$(printf '%s' "$1" | tr -d '\n\r')
[ -n "$p" ] || p=null
printf '%s %s\n' notify "$t" >> '@LOG@'
printf '{"event":"%s","t":%s,"payload":%s}\n' notify "$t" "$p" >> '@JSONL@'
exit 0
"""


def read_hooks(jsonl: Path) -> list[dict]:
    out = []
    try:
        text = Path(jsonl).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            ev, _, _rest = line.partition('","t":')
            out.append({"event": ev.split('"')[-1], "t": None, "payload": None, "raw": line})
    return out


# --------------------------------------------------------------------------
# screen predicates

_SGR = re.compile(r"\x1b\[[0-9;:?]*[a-zA-Z]")


def strip_ansi(s: str) -> str:
    return _SGR.sub("", s)


def claude_composer_ready(screen: str) -> bool:
    """An ``❯`` composer line between two rule lines (not a ``❯ 1.`` menu)."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^❯(\s|$)", line) and not re.match(r"^❯\s*\d+\.", line):
            if i > 0 and lines[i - 1].startswith("─"):
                return True
    return False


def codex_composer_ready(screen: str) -> bool:
    """A ``›`` composer line (not a ``› 1.`` menu) with Codex's footer or placeholder."""
    return any(re.match(r"^›(\s|$)", line) and not re.match(r"^›\s*\d+\.", line) for line in screen.splitlines())


def busy(screen: str) -> bool:
    return "esc to interrupt" in screen or "esc to interrupt" in screen.lower()


# --------------------------------------------------------------------------
# agent session


class AgentRun:
    """One agent CLI in a private tmux pane, with its mock API and hook logs.

    ``agent``: ``"claude"`` or ``"codex"``. ``root``: the throwaway directory
    (default: a fresh ``/tmp/rk-agents-*``; removed by ``close()`` unless
    ``keep=True``). ``launch=False`` sets everything up but does not start the
    CLI (call ``launch()``). ``shell=False`` runs the CLI as the pane's own
    process instead of typing it into ``bash``. ``version``: for Claude, one of
    ``CLAUDE_VERSIONS`` (default the pinned one); the pane still runs ``claude``.
    """

    def __init__(
        self,
        agent: str,
        width: int = 120,
        height: int = 40,
        root: str | Path | None = None,
        keep: bool = False,
        launch: bool = True,
        shell: bool = True,
        extra_args: Iterable[str] = (),
        extra_env: dict | None = None,
        mock_mode: dict | None = None,
        bin_dir: Path | None = None,
        term: str = "tmux-256color",
        ready_timeout: float = 20.0,
        hook_events: Iterable[str] | None = None,
        mock_port: int = 0,
        drop_env: Iterable[str] = (),
        version: str = "",
    ):
        if agent not in ("claude", "codex"):
            raise ValueError("agent must be 'claude' or 'codex'")
        self.version = version or (CLAUDE_VERSION if agent == "claude" else CODEX_VERSION)
        if self.version not in (CLAUDE_VERSIONS if agent == "claude" else (CODEX_VERSION,)):
            raise ValueError(f"no {agent} {self.version} in the test cache")
        #: the executable in the cache's .bin that this run's `claude`/`codex` links to
        self.executable = "claude-latest" if self.version == CLAUDE_LATEST_VERSION else agent
        self.agent, self.width, self.height = agent, width, height
        self.keep, self.shell, self.term = keep, shell, term
        self.extra_args, self.extra_env = list(extra_args), dict(extra_env or {})
        self.drop_env = tuple(drop_env)
        self.ready_timeout = ready_timeout
        self.hook_events = (
            tuple(hook_events)
            if hook_events is not None
            else (CLAUDE_HOOK_EVENTS if agent == "claude" else CODEX_HOOK_EVENTS)
        )
        self.bin_dir = Path(bin_dir) if bin_dir else ensure_agents()
        if root is None:
            self.root = Path(tempfile.mkdtemp(prefix=f"rk-agents-{agent}-", dir="/tmp"))
        else:
            self.root = Path(root)
            if self.root.exists():
                shutil.rmtree(self.root)
            self.root.mkdir(parents=True)
        self.home = self.root / "home"
        self.work = self.root / "work"
        self.hook_log = self.root / "hooks.log"
        self.hook_jsonl = self.root / "hooks.jsonl"
        for d in (self.home, self.work, self.root / "bin"):
            d.mkdir(parents=True, exist_ok=True)
        self.mock: mocks.MockHandle | None = None
        self.tmux: Tmux | None = None
        self.sockdir: Path | None = None
        self.pane = ""
        self.pane_pid: int | None = None
        self.agent_pid: int | None = None
        self.launch_time: float | None = None
        self.ready_time: float | None = None
        self.boot_frames: list[tuple[float, str]] = []
        self._seen_pids: set[int] = set()
        self._closed = False
        try:
            flavor = "anthropic" if agent == "claude" else "openai"
            try:
                self.mock = mocks.start_mock(flavor, port=mock_port, subprocess=True, mode=mock_mode)
            except RuntimeError:
                if not mock_port:
                    raise
                self.mock = mocks.start_mock(flavor, subprocess=True, mode=mock_mode)
            self._write_hook_scripts()
            self._write_config()
            self._start_tmux()
            if launch:
                self.launch()
        except BaseException:
            self.close()
            raise

    # -- setup ---------------------------------------------------------------
    def _write_hook_scripts(self) -> None:
        for name, body in (("hook.sh", HOOK_SH), ("notify.sh", NOTIFY_SH)):
            p = self.root / name
            p.write_text(body.replace("@LOG@", str(self.hook_log)).replace("@JSONL@", str(self.hook_jsonl)))
            p.chmod(0o755)
        target = self.bin_dir / self.executable
        link = self.root / "bin" / self.agent
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)

    def _hook_cmd(self, event: str) -> str:
        return f"{self.root / 'hook.sh'} {event}"

    def _write_config(self) -> None:
        if self.agent == "claude":
            self.api_key = "sk-ant-api03-mock-" + "0123456789abcdefghijklmnop"
            claude_json = {
                "hasCompletedOnboarding": True,
                "lastOnboardingVersion": self.version,
                "theme": "dark",
                "numStartups": 1,
                "customApiKeyResponses": {"approved": [self.api_key[-20:]], "rejected": []},
                "hasSeenAutoDefaultNudge": True,  # 2.1.332: else "Make auto mode your default…?" at launch
                "projects": {str(self.work): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
            }
            (self.home / ".claude.json").write_text(json.dumps(claude_json, indent=1))
            settings = {
                # 2.1.332 starts in "auto mode" (a model call judges each tool use); the tests
                # want the permission dialog users get in the default mode, as in 2.1.197
                "permissions": {"defaultMode": "default"},
                "hooks": {
                    ev: [{"hooks": [{"type": "command", "command": self._hook_cmd(ev)}]}] for ev in self.hook_events
                },
            }
            (self.home / ".claude").mkdir(exist_ok=True)
            (self.home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=1))
        else:
            self.api_key = "sk-mock-codex-0123456789"
            codex = self.home / ".codex"
            codex.mkdir(exist_ok=True)
            (codex / "config.toml").write_text(
                'model = "gpt-5"\n'
                'model_provider = "mock"\n'
                "check_for_update_on_startup = false\n"
                "disable_paste_burst = true\n"
                f'notify = ["{self.root / "notify.sh"}"]\n'
                "\n"
                f'[projects."{self.work}"]\n'
                'trust_level = "trusted"\n'
                "\n"
                "[model_providers.mock]\n"
                'name = "mock"\n'
                f'base_url = "http://127.0.0.1:{self.mock.port}/v1"\n'
                'wire_api = "responses"\n'
                'env_key = "OPENAI_API_KEY"\n'
                "request_max_retries = 0\n"
                "stream_max_retries = 0\n"
            )
            hooks = {
                "hooks": {
                    ev: [{"hooks": [{"type": "command", "command": self._hook_cmd(ev)}]}] for ev in self.hook_events
                }
            }
            (codex / "hooks.json").write_text(json.dumps(hooks, indent=1))

    def agent_env(self) -> dict:
        env = {
            "HOME": str(self.home),
            "PATH": f"{self.root / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "LANG": "C.UTF-8",
            "PS1": "$ ",
            "HISTFILE": "/dev/null",
            "SHELL": "/bin/bash",
        }
        if self.agent == "claude":
            env.update(
                {
                    "ANTHROPIC_API_KEY": self.api_key,
                    "ANTHROPIC_BASE_URL": self.mock.base_url,
                    "DISABLE_AUTOUPDATER": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "CLAUDE_CODE_MAX_RETRIES": "0",
                }
            )
        else:
            env.update({"OPENAI_API_KEY": self.api_key})
        env.update(self.extra_env)
        for k in self.drop_env:
            env.pop(k, None)
        return env

    def command_line(self) -> list[str]:
        if self.agent == "claude":
            return ["claude", *self.extra_args]
        return ["codex", "--no-daemon", "--dangerously-bypass-hook-trust", *self.extra_args]

    def _start_tmux(self) -> None:
        env = self.agent_env()
        # not under root: a pytest-xdist worker's tmp_path (popen-gw1/<test>/…) can push
        # <sockdir>/tmux-<uid>/<name> past the 107 bytes a unix socket's path may have
        self.sockdir = Path(tempfile.mkdtemp(prefix="rk-tmux-", dir="/tmp"))
        self.tmux = Tmux(self.sockdir, env=env)
        first = ["bash", "--norc", "--noprofile"]  # direct mode respawns the pane in launch()
        self.tmux.run(
            "new-session",
            "-d",
            "-s",
            "agents",
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            "-c",
            str(self.work),
            *first,
        )
        self.tmux.run("set-option", "-g", "default-terminal", self.term, check=False)
        self.tmux.run("set-option", "-g", "history-limit", "5000", check=False)
        info = self.tmux.run("display", "-p", "-t", "agents", "#{pane_id} #{pane_pid}").split()
        self.pane, self.pane_pid = info[0], int(info[1])
        self.tmux.run("set-option", "-w", "-t", "agents", "window-size", "manual", check=False)

    def _direct_argv(self) -> list[str]:
        # one shell-command string, as `tmux new-window claude` would get: tmux
        # runs it with `$SHELL -c`, which execs a lone simple command.
        return [" ".join(shlex.quote(a) for a in self.command_line())]

    def launch(self, wait: bool = True, frame_interval: float = 0.03, ansi_frames: bool = False) -> float:
        """Start the CLI (type it into the pane's shell) and wait for its composer.

        Frames seen before the composer are kept in ``boot_frames`` as
        ``(epoch, plain, ansi_or_None)``."""
        if self.shell:
            self._wait(lambda: self.capture().strip().startswith("$"), 5, "shell prompt")
            self.launch_time = time.time()
            self.keys_literal(" ".join(shlex.quote(a) for a in self.command_line()))
            self.keys("Enter")
        else:
            self.tmux.run("set-option", "-w", "-t", "agents", "remain-on-exit", "on", check=False)
            self.launch_time = time.time()
            self.tmux.run("respawn-pane", "-k", "-t", self.pane, "-c", str(self.work), *self._direct_argv())
            self.pane_pid = int(self.tmux.run("display", "-p", "-t", self.pane, "#{pane_pid}").strip())
        if wait:
            self.wait_ready(frame_interval=frame_interval, ansi_frames=ansi_frames)
        return self.launch_time

    def is_ready(self, screen: str | None = None) -> bool:
        screen = self.capture() if screen is None else screen
        return claude_composer_ready(screen) if self.agent == "claude" else codex_composer_ready(screen)

    def is_idle(self, screen: str | None = None) -> bool:
        """Composer visible and no turn running in the live frame: no ``esc to interrupt``
        below the composer (Claude's footer) and no spinner or ``Working`` line at the
        margin right above it. A reply above may quote those texts."""
        screen = self.capture() if screen is None else screen
        if not self.is_ready(screen):
            return False
        lines = screen.rstrip("\n").splitlines()
        glyph = "❯" if self.agent == "claude" else "›"
        comp = max(
            i
            for i, ln in enumerate(lines)
            if re.match(rf"^{glyph}(\s|$)", ln) and not re.match(rf"^{glyph}\s*\d+\.", ln)
        )
        if any("esc to interrupt" in ln for ln in lines[comp + 1 :]):
            return False
        # Claude: past the rule, blanks and indented hints to the spinner at the margin;
        # Codex: past blanks and the queued inputs to the line right above
        passed = ("─", " ") if self.agent == "claude" else ("• Queued follow-up inputs", "  ↳", "    ")
        for ln in reversed(lines[max(0, comp - 8) : comp]):
            if not ln.strip() or ln.startswith(passed):
                continue
            return not re.match(r"^[✻✶✽✢✳·*] \S[^…]*…|^[•◦] Working \(", ln)
        return True

    def wait_idle(self, timeout: float = 15.0) -> str:
        return self.wait_screen(self.is_idle, timeout)

    def wait_ready(self, timeout: float | None = None, frame_interval: float = 0.03, ansi_frames: bool = False) -> str:
        deadline = time.monotonic() + (timeout or self.ready_timeout)
        last = None
        while time.monotonic() < deadline:
            if ansi_frames:
                s, a = self.capture_both()
            else:
                s, a = self.capture(), None
            if s != last:
                self.boot_frames.append((time.time(), s, a))
                last = s
            if self.is_ready(s):
                self.ready_time = time.time()
                self._note_agent_pid()
                return s
            time.sleep(frame_interval)
        raise TimeoutError(
            f"{self.agent} composer did not appear within {timeout or self.ready_timeout}s; screen:\n{last}"
        )

    def _note_agent_pid(self) -> None:
        tree = descendants(self.pane_pid)
        self._seen_pids.update(p.pid for p in tree)
        name = "claude" if self.agent == "claude" else "codex"
        # the agent: the native binary (codex's node wrapper spawns it)
        cands = [p for p in tree if p.comm == name or p.cmdline.split(" ")[0].endswith("/" + name)]
        if cands:
            self.agent_pid = cands[-1].pid if self.agent == "codex" else cands[0].pid

    # -- input ---------------------------------------------------------------
    def keys(self, *keys: str) -> None:
        self.tmux.run("send-keys", "-t", self.pane, *keys)

    def keys_literal(self, text: str) -> None:
        self.tmux.run("send-keys", "-t", self.pane, "-l", "--", text)

    type = keys_literal

    def paste(self, text: str, bracketed: bool = True) -> None:
        buf = f"rk{next(_counter)}"
        self.tmux.run("load-buffer", "-b", buf, "-", input=text)
        self.tmux.run("paste-buffer", "-d", *(["-p"] if bracketed else []), "-b", buf, "-t", self.pane)

    def enter(self) -> float:
        t = time.time()
        self.keys("Enter")
        return t

    def esc(self) -> float:
        t = time.time()
        self.keys("Escape")
        return t

    def clear_composer(self) -> None:
        self.keys("C-u")

    def submit(self, text: str, gap: float = 0.15) -> float:
        """Type ``text``, wait ``gap`` s, press Enter; return the Enter time."""
        self.keys_literal(text)
        time.sleep(gap)
        return self.enter()

    # -- output --------------------------------------------------------------
    def capture(self, ansi: bool = False) -> str:
        return self.tmux.run("capture-pane", "-p", "-J", *(["-e"] if ansi else []), "-t", self.pane)

    def capture_both(self) -> tuple[str, str]:
        """Plain and ``-e`` captures taken in one tmux command sequence."""
        sep = f"@@RK-SPLIT-{os.getpid()}@@"
        out = self.tmux.run(
            "capture-pane",
            "-p",
            "-J",
            "-t",
            self.pane,
            ";",
            "display-message",
            "-p",
            sep,
            ";",
            "capture-pane",
            "-p",
            "-J",
            "-e",
            "-t",
            self.pane,
        )
        plain, _, ansi = out.partition(sep + "\n")
        return plain, ansi

    def _wait(self, pred: Callable[[], object], timeout: float, what: str, interval: float = 0.05):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(interval)
        raise TimeoutError(f"timed out after {timeout}s waiting for {what}; screen:\n{self.capture()}")

    def wait_screen(self, pattern: str | Callable[[str], object], timeout: float = 15.0, interval: float = 0.05) -> str:
        """Poll the screen until ``pattern`` (regex, multiline) matches or the callable is truthy."""
        if callable(pattern):
            test = pattern
            what = getattr(pattern, "__name__", "screen condition")
        else:
            rx = re.compile(pattern, re.M)
            test = rx.search
            what = f"/{pattern}/"

        def pred():
            s = self.capture()
            return s if test(s) else None

        return self._wait(pred, timeout, what, interval)

    def wait_not_screen(self, pattern: str, timeout: float = 15.0) -> str:
        rx = re.compile(pattern, re.M)

        def pred():
            s = self.capture()
            return s if not rx.search(s) else None

        return self._wait(pred, timeout, f"not /{pattern}/")

    def resize(self, width: int, height: int) -> None:
        self.tmux.run("resize-window", "-t", "agents", "-x", str(width), "-y", str(height))
        self.width, self.height = width, height

    # -- hooks -----------------------------------------------------------------
    def hooks(self, since: float | None = None) -> list[dict]:
        evs = read_hooks(self.hook_jsonl)
        if since is not None:
            evs = [e for e in evs if e.get("t") is not None and e["t"] >= since - 0.0005]
        return evs

    def wait_hook(self, event: str, since: float | None = None, timeout: float = 15.0, count: int = 1) -> dict:
        def pred():
            hits = [e for e in self.hooks(since) if e["event"] == event]
            return hits[count - 1] if len(hits) >= count else None

        return self._wait(pred, timeout, f"hook {event} x{count}", interval=0.02)

    def hook_timeline(self, since: float) -> list[tuple[str, float]]:
        """(event, ms after ``since``) for each hook that fired at/after ``since``."""
        return [(e["event"], round((e["t"] - since) * 1000)) for e in self.hooks(since)]

    # -- processes ---------------------------------------------------------------
    def pane_info(self) -> dict:
        out = self.tmux.run(
            "display",
            "-p",
            "-t",
            self.pane,
            "#{pane_current_command}\t#{pane_pid}\t#{pane_tty}\t#{alternate_on}\t#{pane_dead}\t#{pane_title}",
        )
        cmd, pid, tty, alt, dead, title = out.rstrip("\n").split("\t", 5)
        return {
            "pane_current_command": cmd,
            "pane_pid": int(pid),
            "pane_tty": tty,
            "alternate_on": alt == "1",
            "pane_dead": dead == "1",
            "pane_title": title,
        }

    def proc_tree(self) -> list[Proc]:
        tree = descendants(self.pane_pid)
        self._seen_pids.update(p.pid for p in tree)
        return tree

    def foreground(self) -> list[Proc]:
        """Processes of the pane tty's foreground process group."""
        tree = self.proc_tree()
        root = tree[0] if tree else None
        return [p for p in tree if root and p.pgrp == root.tpgid]

    # -- teardown ------------------------------------------------------------------
    def codex_daemons(self) -> list[Proc]:
        """``codex app-server`` processes started for this run (HOME inside root)."""
        out = []
        for p in all_procs():
            if "app-server" in p.cmdline and "codex" in p.cmdline:
                try:
                    env = Path(f"/proc/{p.pid}/environ").read_bytes()
                except OSError:
                    continue
                if f"HOME={self.home}".encode() in env or str(self.root).encode() in env:
                    out.append(p)
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.tmux is not None and self.pane_pid:
            try:
                self.proc_tree()
            except Exception:
                pass
        if self.tmux is not None:
            self.tmux.kill()
        leftovers = [p for p in self._seen_pids if p != os.getpid()]
        left = _wait_gone(leftovers, 3)
        _kill_pids(left, signal.SIGTERM)
        left = _wait_gone(left, 2)
        _kill_pids(left, signal.SIGKILL)
        if self.agent == "codex":
            daemons = [p.pid for p in self.codex_daemons()]
            _kill_pids(daemons, signal.SIGTERM)
            _kill_pids(_wait_gone(daemons, 2), signal.SIGKILL)
        if self.mock is not None:
            self.mock.stop()
        if self.sockdir is not None:
            shutil.rmtree(self.sockdir, ignore_errors=True)
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def until(predicate, timeout: float, what: str, screen=lambda: ""):
    """Poll `predicate` every 0.1 s until it is truthy (its value); fail naming `what`
    and, when given, the screen at the end."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    shown = screen()
    raise AssertionError(f"{what} not within {timeout}s" + (f"; screen:\n{shown}" if shown else ""))


def tool_doc(text: str) -> dict:
    """The CLI document in an rk tool result (Codex prefixes `Wall time: … Output:`)."""
    return json.loads(text[text.index("Output:") + len("Output:") :] if text.startswith("Wall time:") else text)

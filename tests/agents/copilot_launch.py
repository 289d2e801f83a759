"""Run the real GitHub Copilot CLI TUI offline in a private tmux server, against a local mock.

Stdlib only. Needs `copilot` (npm `@github/copilot`, whose loader runs the 197 MB native
`@github/copilot-linux-x64`; give its path with COPILOT_BIN or put it on PATH) and tmux.

What makes it run offline (Copilot 1.0.102): COPILOT_OFFLINE=true (no GitHub login, no
telemetry, no update check) with a BYOK provider, COPILOT_PROVIDER_BASE_URL pointing at
mock_opencode.py's Chat Completions API (Copilot's default wire API) and COPILOT_MODEL
naming its model. COPILOT_HOME is a throwaway dir; COPILOT_CACHE_HOME is one persistent
dir (the first launch unpacks ~245 MB there, later ones reuse it). The folder-trust modal
is skipped by seeding config.json's `trustedFolders` with the work dir.

The mock's markers (mock:slow=N, mock:status=CODE, mock:bash=CMD, ...) are mock_opencode's:
Copilot's shell tool is also called `bash` with a `command`. One more, here:
`mock:limit=CODE` answers HTTP CODE with GitHub's rate-limit message ("Sorry, you've hit
a rate limit ... Please try again in 2 hours. ..."); Copilot retries a 429 five times
(about a minute), a 400 not at all.

Every Copilot hook event is logged to `hooks.jsonl` ({"t", "event", "payload"}) by a
logging hook file; `hooks` adds more hook files (rk's own, from `rk agent setup copilot`).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import clean_env, install_lock
from mock_opencode import MODEL_ID, MockHandler, MockServer
from tmux_pane import TmuxPane

AGENT_ENV = clean_env()
COLS, ROWS = 120, 40

#: GitHub's rate-limit text as users report it (github/copilot-cli#2144).
LIMIT_MESSAGE = (
    "Sorry, you've hit a rate limit that restricts the number of Copilot model requests you can make "
    "within a specific time period. Please try again in 2 hours. Please review our Terms of Service."
)

#: Every hook event of Copilot 1.0.102 (its settings schema).
HOOK_EVENTS = (
    "sessionStart",
    "sessionEnd",
    "userPromptSubmitted",
    "userPromptTransformed",
    "preToolUse",
    "preMcpToolCall",
    "permissionRequest",
    "postToolUse",
    "postToolUseFailure",
    "notification",
    "errorOccurred",
    "agentStop",
    "subagentStart",
    "subagentStop",
    "preCompact",
)

LOG_HOOK = r"""import json, sys, time
data = sys.stdin.read()
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"t": time.time(), "event": sys.argv[2], "payload": data}) + "\n")
"""


class CopilotMockHandler(MockHandler):
    """mock_opencode's handler, plus `mock:limit=CODE` (GitHub's rate-limit message)."""

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        m = re.search(rb"mock:limit=(\d{3})", raw)
        if m:
            code = int(m.group(1))
            self._log(kind="error", status=code, prompt="mock:limit")
            body = {"error": {"message": LIMIT_MESSAGE, "type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}}
            return self._json(code, body)
        self.rfile = io.BytesIO(raw)
        return super().do_POST()


def start_mock(log_path: str | None = None) -> MockServer:
    import threading

    srv = MockServer(0, log_path)
    srv.RequestHandlerClass = CopilotMockHandler
    threading.Thread(target=srv.serve_forever, name="mock-copilot", daemon=True).start()
    return srv


def find_copilot() -> str | None:
    return os.environ.get("COPILOT_BIN") or shutil.which("copilot")


def cache_home() -> Path:
    """One COPILOT_CACHE_HOME for every run (the unpacked package, ~245 MB, reused)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rk-test-agents" / "copilot-cache"


_warmed: set[tuple[str, Path]] = set()


def warm_cache(binary: str, cache: Path) -> None:
    """Unpack the native package into `cache` before a TUI starts, once per process and under
    the cache's lock: parallel test workers each start Copilot, and two first starts would
    unpack ~245 MB into one directory at once. `copilot --version` unpacks it, or finds it there."""
    if (binary, cache) in _warmed:
        return
    env = {**AGENT_ENV, "COPILOT_CACHE_HOME": str(cache), "COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false"}
    with install_lock(cache), tempfile.TemporaryDirectory(prefix="rk-cp-warm-") as home:
        env.update(HOME=home, COPILOT_HOME=os.path.join(home, ".copilot"))
        subprocess.run(
            [binary, "--version"], env=env, capture_output=True, timeout=300, stdin=subprocess.DEVNULL, check=True
        )
    _warmed.add((binary, cache))


class CopilotRun(TmuxPane):
    """One Copilot TUI in a private tmux server (`tmux -L rk-cp-<pid>-<n> -f /dev/null`)."""

    _counter = 0

    def __init__(
        self,
        root: str | None = None,
        binary: str | None = None,
        hooks: dict[str, dict] | None = None,
        extra_env: dict | None = None,
        cols: int = COLS,
        rows: int = ROWS,
    ):
        CopilotRun._counter += 1
        self.binary = binary or find_copilot()
        if not self.binary:
            raise FileNotFoundError("copilot not found (npm install @github/copilot; set COPILOT_BIN)")
        self.root = Path(root or tempfile.mkdtemp(prefix="rk-cp-"))
        self.socket = f"rk-cp-{os.getpid()}-{CopilotRun._counter}"
        self.target = "cp"
        self.home, self.work = self.root / "home", self.root / "work"
        self.copilot_home = self.home / ".copilot"
        self.hooks_path = self.root / "hooks.jsonl"
        self.mock_log = self.root / "mock.jsonl"
        self.hooks, self.extra_env, self.cols, self.rows = hooks or {}, extra_env or {}, cols, rows
        self.mock: MockServer | None = None
        self.pane_pid = 0

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        (self.copilot_home / "hooks").mkdir(parents=True, exist_ok=True)
        cache = cache_home()
        cache.mkdir(parents=True, exist_ok=True)
        warm_cache(self.binary, cache)
        self.mock = start_mock(str(self.mock_log))
        (self.copilot_home / "config.json").write_text(json.dumps({"trustedFolders": [str(self.work)]}))
        script = self.root / "log_hook.py"
        script.write_text(LOG_HOOK)
        log = {
            "version": 1,
            "hooks": {
                e: [{"type": "command", "bash": f"{sys.executable} {script} {self.hooks_path} {e}", "timeoutSec": 10}]
                for e in HOOK_EVENTS
            },
        }
        (self.copilot_home / "hooks" / "zz-log.json").write_text(json.dumps(log, indent=1))
        for name, doc in self.hooks.items():
            (self.copilot_home / "hooks" / name).write_text(json.dumps(doc, indent=1))
        env = {
            "HOME": str(self.home),
            "COPILOT_HOME": str(self.copilot_home),
            "COPILOT_CACHE_HOME": str(cache),
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": self.mock.base_url,
            "COPILOT_MODEL": MODEL_ID,
            "TERM": "xterm-256color",
            **self.extra_env,
        }
        cmd = ["env", *(f"{k}={v}" for k, v in env.items()), self.binary]
        self.tmux(
            "new-session", "-d", "-s", "cp", "-x", str(self.cols), "-y", str(self.rows), "-c", str(self.work), *cmd
        )
        self.pane_pid = int(self.display("#{pane_pid}"))

    def stop(self) -> None:
        pid = self.pane_pid
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, env=AGENT_ENV)
        for _ in range(50):  # the loader and its native child exit on SIGHUP
            if not pid or not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.1)
        if self.mock:
            self.mock.shutdown()
            self.mock.server_close()
            self.mock = None

    # -- tmux ------------------------------------------------------------------------
    def send_prompt(self, text: str, gap: float = 0.3) -> float:
        """Type text, wait `gap`, press Enter; the time of the Enter."""
        self.type_text(text)
        time.sleep(gap)
        self.send_keys("Enter")
        return time.time()

    def esc_esc(self, window: float = 0.4, tries: int = 3) -> float:
        """Copilot's interrupt: a first Escape arms it (`esc again to interrupt`), a second
        within 500 ms fires it. Two Escapes sent together arrive as ESC ESC, which Copilot
        reads as one key (and a loaded Copilot may read two close ones in one chunk the
        same way), so the second goes once the screen shows the first armed. The time of
        the second."""
        for _ in range(tries):
            self.send_keys("Escape")
            end = time.time() + window
            while time.time() < end:
                if "esc again to interrupt" in self.capture():
                    self.send_keys("Escape")
                    return time.time()
                time.sleep(0.02)
            time.sleep(0.6)  # the first was missed or expired: let the window close, then again
        raise TimeoutError("Copilot never showed `esc again to interrupt`:\n" + self.capture())

    # -- hooks -----------------------------------------------------------------------
    def hook_events(self) -> list[dict]:
        try:
            lines = self.hooks_path.read_text().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            rec = json.loads(line)
            try:
                rec["payload"] = json.loads(rec["payload"])
            except ValueError:
                pass
            out.append(rec)
        return out

    def wait_hook(self, event: str, after: float = 0.0, timeout: float = 30.0) -> dict:
        end = time.time() + timeout
        while time.time() < end:
            for rec in self.hook_events():
                if rec["event"] == event and rec["t"] >= after:
                    return rec
            time.sleep(0.1)
        raise TimeoutError(f"no {event} hook after {after}; hooks: {[r['event'] for r in self.hook_events()]}")

    def rk_state(self) -> str:
        """`@rk_pane_agent_state` of the pane ("" if unset)."""
        return self.tmux("show-options", "-p", "-v", "-q", "-t", "cp", "@rk_pane_agent_state").strip()


def at_rest(screen: str) -> bool:
    """The composer is drawn with the idle footer (`/ commands` or, with a draft, `@ files`)."""
    return "/ commands · ? help" in screen or "@ files · # issues" in screen

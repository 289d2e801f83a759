"""Shared helpers for the benchmarks: a private sandbox (temporary HOME,
RK_STATE_DIR and TMUX_TMPDIR), private tmux servers on `-L rk-bench-<pid>-<tag>`
sockets, the rk command line, /proc sampling and percentiles.

Nothing here touches the user's default tmux server or state: every tmux
command names its own socket inside a private TMUX_TMPDIR, and everything is
killed/removed by `Sandbox.close()` (use it as a context manager).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rk.tmux.server import Server, child_env  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def percentile(values, q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    data = sorted(values)
    if not data:
        return float("nan")
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def met(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def wait_for(predicate, timeout: float, interval: float = 0.02, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")


class Sandbox:
    """A temporary directory with a private HOME, RK_STATE_DIR and TMUX_TMPDIR,
    and the tmux servers / processes started in it (all ended by `close`)."""

    def __init__(self, prefix: str) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix=f"rk-bench-{prefix}-"))
        self.home = self.tmp / "home"
        self.home.mkdir()
        self.sockets = self.tmp / "tmux"
        self.sockets.mkdir(mode=0o700)
        self.state = self.tmp / "state"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RK_")}
        for key in ("TMUX", "TMUX_PANE", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "PYTHONDONTWRITEBYTECODE"):
            env.pop(key, None)
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            TMUX_TMPDIR=str(self.sockets),
            RK_STATE_DIR=str(self.state),
            # bytecode goes to a private cache, never into the source tree
            PYTHONPYCACHEPREFIX=str(self.tmp / "pycache"),
        )
        self.env = env
        self.servers: list[Server] = []
        self.procs: list[subprocess.Popen] = []
        self.pids: list[int] = []  # pids of processes we started indirectly (background ticker)

    # -- tmux

    def server(self, tag: str, first_command: str = "cat", width: int = 200, height: int = 50) -> Server:
        name = f"rk-bench-{os.getpid()}-{tag}"
        server = Server(name=name, env=self.env)
        subprocess.run(
            server.argv(
                "-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", str(width), "-y", str(height), first_command
            ),
            check=True,
            env=child_env(self.env),
        )
        self.servers.append(server)
        return server

    def socket_path(self, server: Server) -> str:
        return str(server.path)

    # -- rk

    def rk(
        self, *args: str, env: dict | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, "-m", "rk", *args],
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(ROOT),
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"rk {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def rk_json(self, *args: str, env: dict | None = None) -> dict:
        out = self.rk(*args, "--json", env=env)
        return json.loads(out.stdout)["result"]

    def popen(self, argv: list[str], **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(argv, **kwargs)
        self.procs.append(proc)
        return proc

    # -- the end

    def close(self) -> None:
        for pid in self.pids:
            _kill_pid(pid)
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(10)
                except (OSError, subprocess.TimeoutExpired):
                    proc.kill()
                    proc.wait(5)
        for server in self.servers:
            subprocess.run(server.argv("kill-server"), env=child_env(self.env), capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _kill_pid(pid: int) -> None:
    """SIGTERM one process we started (by its id), then SIGKILL if it lingers."""
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or proc_stat(pid).get("state") == "Z":
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def proc_stat(pid: int) -> dict:
    """utime, stime, cutime, cstime (seconds) and state from /proc/<pid>/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return {}
    after = text.rsplit(")", 1)[1].split()
    # after[0] is field 3 (state); utime is field 14 → after[11]
    return {
        "state": after[0],
        "utime": int(after[11]) / CLK_TCK,
        "stime": int(after[12]) / CLK_TCK,
        "cutime": int(after[13]) / CLK_TCK,
        "cstime": int(after[14]) / CLK_TCK,
    }


def proc_status_kb(pid: int, field: str) -> int:
    """A `kB` field of /proc/<pid>/status (VmRSS, VmHWM…), 0 if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0

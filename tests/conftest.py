"""Shared fixtures. tests/ is on sys.path so helper modules import plainly.

Integration tests run a private tmux server per test on socket
`rk-test-<pid>-<n>`; the fixture creates it and kills it, and never touches
the user's default server.

Before anything is collected, `pytest_configure` takes the session out of the
user's world: no TMUX/TMUX_PANE (rk would fall back to the caller's server and
pane), no RK_* settings, and HOME, the XDG directories, RK_STATE_DIR and
TMUX_TMPDIR in a temporary directory of this process (each xdist worker has its
own). A code path that falls back to "the caller's server" or "the default state
dir" lands there, never in the user's pane or state (tests/test_isolation.py).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sshd import client as client  # the fleet's fixtures: hosts on loopback sshd (tests/sshd.py)
from sshd import world as world

from rk.tmux.server import Server, child_env

_counter = itertools.count()

#: Variables that point a process at the user's tmux server, pane, state, config or
#: desktop (RK_* too, except the suite's own RK_TEST_* knobs).
_USER_VARIABLES = (
    "TMUX",
    "TMUX_PANE",
    "TMUX_TMPDIR",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
)

_session_root: str | None = None


def _private_environment(environ: dict[str, str], root: Path) -> dict[str, str]:
    """`environ` without the user's tmux, rk and config variables, with every place
    rk writes by default under `root`. The download cache (npm, pip: the agent
    suite's installed CLIs) stays where it was: nothing of rk's goes there."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    out = {
        k: v
        for k, v in environ.items()
        if k not in _USER_VARIABLES and not (k.startswith("RK_") and not k.startswith("RK_TEST_"))
    }
    places = {
        "HOME": root / "home",
        "XDG_CONFIG_HOME": root / "home" / ".config",
        "XDG_STATE_HOME": root / "home" / ".local" / "state",
        "XDG_DATA_HOME": root / "home" / ".local" / "share",
        "XDG_RUNTIME_DIR": root / "run",
        "RK_STATE_DIR": root / "state",
        "TMUX_TMPDIR": root / "tmux",
    }
    for name, path in places.items():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        out[name] = str(path)
    out["XDG_CACHE_HOME"] = cache
    return out


def pytest_configure(config):
    """Scrub the user's environment from this process before any test module is imported."""
    global _session_root
    _session_root = tempfile.mkdtemp(prefix="rk-suite-")
    private = _private_environment(dict(os.environ), Path(_session_root))
    os.environ.clear()
    os.environ.update(private)


def pytest_unconfigure(config):
    """Remove the session's directory, first stopping any tmux server a test left in it."""
    if _session_root is not None:
        _remove_with_its_servers(Path(_session_root))


def _remove_with_its_servers(directory: Path) -> None:
    """Kill every tmux server whose socket is under `directory` (a server whose socket
    is deleted would run on, unreachable), then remove the directory."""
    for sock in directory.rglob("tmux-*/*"):
        if sock.is_socket():
            subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, env=child_env(os.environ))
    shutil.rmtree(directory, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Every test that uses a tmux server (the fixture, directly or through another
    fixture) carries the `tmux` marker, and every hypothesis test the `slow` one, so
    `-m 'not tmux and not slow'` (`make test-fast`) is the pure suite in seconds.
    The `long` tests go first: xdist hands tests out in this order, and one of them
    started last keeps the run going minutes after the other workers are done."""
    for item in items:
        if "tmux_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.tmux)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.slow)
    items.sort(key=_expected_seconds, reverse=True)  # stable: the rest keep their order


def _expected_seconds(item) -> float:
    """A `long` test's expected wall time (`@pytest.mark.long(240)`; a minute when unsaid), 0 for the rest."""
    marker = item.get_closest_marker("long")
    if marker is None:
        return 0.0
    return float(marker.args[0]) if marker.args else 60.0


def wait_for(predicate, timeout: float = 5.0, interval: float = 0.02, message: str = "condition"):
    """Poll `predicate` until it returns a truthy value; fail the test on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message} (last: {last!r})")


def _new_server_name() -> str:
    return f"rk-test-{os.getpid()}-{next(_counter)}"


@pytest.fixture
def tmux_server(tmp_path, monkeypatch):
    """A private tmux server with session `main` whose first pane runs `cat`.

    Yields an `rk.tmux.server.Server`; the server is killed afterwards. TMUX_TMPDIR
    is a directory of this test's own, so no socket of the user's is ever visible.
    """
    if shutil.which("tmux") is None:
        pytest.fail("tmux is required for integration tests")
    # Not under tmp_path: an xdist worker's tmp_path is long enough to push a socket's
    # path past the 107 bytes a unix socket's name may have.
    sockdir = Path(tempfile.mkdtemp(prefix="s", dir=_session_root))
    monkeypatch.setenv("TMUX_TMPDIR", str(sockdir))
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("TMUX_PANE", raising=False)
    name = _new_server_name()
    env = dict(os.environ)
    server = Server(name=name, env=env)
    subprocess.run(
        server.argv("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "cat"),
        check=True,
        env=child_env(env),
    )
    try:
        yield server
    finally:
        subprocess.run(server.argv("kill-server"), env=child_env(env), capture_output=True)
        _remove_with_its_servers(sockdir)


def default_sigint() -> None:
    """A Popen `preexec_fn`: SIGINT does its default in the child. A suite started with
    SIGINT ignored (a non-interactive shell's `&`, `nohup`) passes that on, and a child
    that a test stops with SIGINT (Ctrl-C) would never stop."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_rk(args, env, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -m rk ARGS` as a real process; with `check`, a failure fails the test."""
    proc = subprocess.run([sys.executable, "-m", "rk", *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"rk {args} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture
def env(tmp_path, tmux_server):
    """rk's environment beside the `tmux_server` fixture: private state, home and
    config, UTC, no TMUX of the caller's and no RK_NOW."""
    home = tmp_path / "home"
    home.mkdir()
    e = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
    e.update(RK_STATE_DIR=str(tmp_path / "state"), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), TZ="UTC")
    return e

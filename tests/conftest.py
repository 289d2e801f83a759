"""Shared fixtures. tests/ is on sys.path so helper modules import plainly.

Integration tests run a private tmux server per test on socket
`rk-test-<pid>-<n>`; the fixture creates it and kills it, and never touches
the user's default server.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rk.tmux.server import Server, child_env

_counter = itertools.count()


def pytest_collection_modifyitems(config, items):
    """Every test that uses a tmux server (the fixture, directly or through another
    fixture) carries the `tmux` marker, and every hypothesis test the `slow` one, so
    `-m 'not tmux and not slow'` (`make test-fast`) is the pure suite in seconds."""
    for item in items:
        if "tmux_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.tmux)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.slow)


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
    points into tmp_path so no socket of the user's is ever visible.
    """
    if shutil.which("tmux") is None:
        pytest.fail("tmux is required for integration tests")
    sockdir = tmp_path / "tmux-sockets"
    sockdir.mkdir()
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

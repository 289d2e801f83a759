"""The real-agent suite runs on parallel workers (`make test-agents`), where pytest's own
tmp_path is <basetemp>/popen-gw<N>/<test name>: rk's unix sockets in a rig's state dir
(`ticker.sock`, an await's `<pid>-<hex>.sock`) and each run's tmux socket must still fit
the 107 bytes a socket's path may have. No agent CLI starts here."""

from __future__ import annotations

import os
import socket

import harness
import pytest

pytestmark = pytest.mark.agents


def _bind(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(path)
    os.unlink(path)


def test_a_rigs_state_dir_has_room_for_rks_sockets(tmp_path):
    assert len(str(tmp_path)) <= 40, tmp_path  # whatever the worker and the test's name
    state = tmp_path / "claude-10" / "rk-state"  # conftest's Rig: <tmp_path>/<agent>-<n>/rk-state
    state.mkdir(parents=True)
    _bind(str(state / f"{4194304}-{'f' * 8}.sock"))  # the longest pid, rk's waiter's name
    _bind(str(state / "ticker.sock"))


def test_a_runs_tmux_socket_is_short_whatever_its_root(tmp_path):
    root = tmp_path / ("x" * 60) / "claude"  # a root as deep as a worker's tmp_path can be
    run = harness.AgentRun("claude", launch=False, root=root, bin_dir=tmp_path)
    try:
        assert run.tmux is not None and run.tmux.server_pid() is not None  # its server started
        assert len(str(run.tmux.sockdir)) <= 40, run.tmux.sockdir
    finally:
        run.close()

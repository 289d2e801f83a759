"""No symbolic link is followed anywhere in the state directory, and the hook
refuses a state directory the CLI refuses.

A link planted at a directory rk keeps there (`<slug>.intents`, `<slug>.claims`,
`locks`, the state directory itself) is refused with a one-line error, never
followed and never chmod-ed; a link planted at a file (`mcp.log`, a pending
marker) is never written through (`rk.host.private`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rk.agent import hook
from rk.host import private
from rk.store import config
from tests.cli_helpers import make_env, one_line_error, run_in, snapshot


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _elsewhere(tmp_path: Path) -> Path:
    """A directory of the user's outside the state dir, open to the group, with a file in it."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    target.chmod(0o750)
    (target / "precious.lock").write_text("precious\n")
    (target / "e001.json").write_text('{"entry": "e001", "ts": 1, "phase": "enter", "pane": "%0"}\n')
    return target


def _state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    return state


# -- directories -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["default.intents", "default.claims", "locks", "await"])
def test_a_symlinked_directory_in_the_state_dir_is_refused_not_followed_nor_chmodded(tmp_path, name):
    state = _state(tmp_path)
    target = _elsewhere(tmp_path)
    (state / name).symlink_to(target)
    before = snapshot(target)
    with pytest.raises(config.ConfigError) as caught:
        config.ensure_private_dir(state / name)
    message = str(caught.value)
    assert message == (
        f"state directory {state / name} is a symbolic link to {str(target)!r}, and rk follows none in its state; "
        "fix: replace it with a directory (or set RK_STATE_DIR to the one it points to)"
    )
    with pytest.raises(private.UnsafeDir):
        private.listdir(state / name)
    assert snapshot(target) == before and _mode(target) == 0o750


def test_the_state_dir_itself_a_symlink_is_refused_by_the_cli(tmp_path):
    env = make_env(tmp_path)
    target = _elsewhere(tmp_path)
    Path(env["RK_STATE_DIR"]).symlink_to(target)
    before = snapshot(target)
    res = run_in(["cron", "add", "x", "--every", "5m", "--pane", "%0"], env)
    assert res.code == 1, res
    assert one_line_error(res).startswith(f"state directory {env['RK_STATE_DIR']} is a symbolic link")
    assert snapshot(target) == before and _mode(target) == 0o750


def test_a_private_dir_is_made_0700_through_its_own_descriptor(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    assert config.ensure_private_dir(state) == state and _mode(state) == 0o700
    fresh = tmp_path / "a" / "b"
    assert private.ensure_dir(fresh) == "" and _mode(fresh) == 0o700


def test_the_locks_dir_planted_as_a_symlink_is_refused(tmp_path, monkeypatch):
    from rk.host import lock

    state = _state(tmp_path)
    target = _elsewhere(tmp_path)
    (state / "locks").symlink_to(target)
    monkeypatch.setenv("RK_STATE_DIR", str(state))
    before = snapshot(target)
    with pytest.raises(OSError, match="is a symbolic link"):
        lock.lock_dir()
    with pytest.raises(OSError, match="is a symbolic link"), lock.exclusive("pane %0", 0.1, 0.01):
        pass
    assert snapshot(target) == before and _mode(target) == 0o750
    (state / "locks").unlink()
    assert lock.lock_dir() == str(state / "locks") and _mode(state / "locks") == 0o700


def test_stale_claims_in_a_symlinked_claims_dir_are_not_removed(tmp_path):
    from rk.engine.gate import Claims

    state = _state(tmp_path)
    target = _elsewhere(tmp_path)
    files = config.ServerFiles(state, "default")
    files.claims.symlink_to(target)
    before = snapshot(target)
    assert Claims(files, dry_run=False).busy() == set()
    with pytest.raises(config.ConfigError, match="symbolic link"):
        Claims(files, dry_run=False).take("e001")
    assert snapshot(target) == before


def test_journals_in_a_symlinked_intents_dir_are_not_recovered(tmp_path):
    from rk.engine.recovery import _journal_names
    from rk.engine.result import ServerTick

    state = _state(tmp_path)
    target = _elsewhere(tmp_path)
    files = config.ServerFiles(state, "default")
    files.intents.symlink_to(target)
    out = ServerTick("default")
    assert _journal_names(files, out) == []
    assert any("rk follows none" in d.detail for d in out.diagnostics), out.diagnostics
    files.intents.unlink()
    assert _journal_names(files, ServerTick("default")) == []  # absent: nothing, and nothing said


# -- files ---------------------------------------------------------------------------


def test_a_private_line_is_never_appended_through_a_symlink(tmp_path):
    state = _state(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    (state / "mcp.log").symlink_to(victim)
    with pytest.raises(OSError):
        private.append_line(state, "mcp.log", '{"tool": "cron_add"}')
    assert victim.read_text() == "precious\n" and _mode(victim) == 0o644
    (state / "mcp.log").unlink()
    private.append_line(state, "mcp.log", "one\nline")
    private.append_line(state, "mcp.log", "two")
    assert (state / "mcp.log").read_text() == "one line\ntwo\n" and _mode(state / "mcp.log") == 0o600
    os.mkfifo(state / "fifo")
    with pytest.raises(OSError):
        private.append_line(state, "fifo", "x")  # never blocks on a FIFO, never writes into one
    state.chmod(0o777)
    with pytest.raises(private.UnsafeDir, match="writable by others"):
        private.append_line(state, "mcp.log", "three")
    (state / "plain").mkdir()
    with pytest.raises(OSError, match="not a regular file"):
        private.open_file(state / "plain", os.O_RDONLY)
    assert (state / "mcp.log").read_text() == "one line\ntwo\n"


def test_the_pending_marker_is_never_written_through_a_symlink(tmp_path):
    from rk.act.intents import mark_pending

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    marker = tmp_path / "m.pending"
    marker.symlink_to(victim)
    with pytest.raises(OSError):
        mark_pending(str(marker))
    assert victim.read_text() == "precious\n"
    marker.unlink()
    mark_pending(str(marker))
    assert marker.read_text() == str(os.getpid()) and _mode(marker) == 0o600


# -- the hook ------------------------------------------------------------------------


def _pane(server) -> str:
    return server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()


def _hook(server, pane: str, state: Path, token: str) -> int:
    env = dict(os.environ, TMUX=f"{server.path},{os.getpid()},0", TMUX_PANE=pane, RK_STATE_DIR=str(state))
    env["RK_NOW"] = "1751790000"
    fd = os.open(os.devnull, os.O_RDONLY)
    try:
        return hook.run(["--agent", "claude", token], env=env, stdin_fd=fd)
    finally:
        os.close(fd)


@pytest.mark.tmux
@pytest.mark.parametrize("unsafe", ["world-writable", "symlink"])
def test_the_hook_writes_nothing_into_a_state_dir_the_cli_refuses(tmux_server, tmp_path, unsafe, capfd):
    pane = _pane(tmux_server)
    state = tmp_path / "state"
    if unsafe == "world-writable":
        state.mkdir()
        state.chmod(0o777)
        look = state
    else:
        look = _elsewhere(tmp_path)
        state.symlink_to(look)
    before = snapshot(look)
    assert _hook(tmux_server, pane, state, "active") == 0
    assert _hook(tmux_server, "%999", state, "idle") == 0  # a failed write would be logged: not here
    assert snapshot(look) == before
    assert capfd.readouterr() == ("", "")  # nothing said to the agent
    # the pane's own option is tmux's, not the state dir's: still written
    assert tmux_server.run("show-options", "-pqv", "-t", pane, "@rk_pane_agent_state").strip() == "active:1751790000"
    ok, message = hook.set_state("idle", pane, dict(os.environ, RK_STATE_DIR=str(state)), socket=str(tmux_server.path))
    assert not ok and message == private.refusal(state)
    assert snapshot(look) == before


@pytest.mark.tmux
def test_the_hook_journals_into_a_private_state_dir(tmux_server, tmp_path):
    pane = _pane(tmux_server)
    state = tmp_path / "state"
    assert _hook(tmux_server, pane, state, "active") == 0
    assert _mode(state) == 0o700
    journal = state / f"{tmux_server.path.name}.events"
    assert journal.exists() and _mode(journal) == 0o600
    assert _hook(tmux_server, "%999", state, "idle") == 0
    assert "no state written" in (state / hook.HOOK_LOG).read_text()


def test_the_hook_log_is_not_written_into_a_world_writable_state_dir(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    hook.log_line({"RK_STATE_DIR": str(state)}, "%1 claude idle: something")
    assert not (state / hook.HOOK_LOG).exists()
    state.chmod(0o700)
    hook.log_line({"RK_STATE_DIR": str(state)}, "%1 claude idle: something")
    assert (state / hook.HOOK_LOG).exists()


def test_the_await_wake_never_goes_through_a_symlinked_await_dir(tmp_path):
    import socket

    from rk.store import state_journal

    state = _state(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(str(target / "1-dead.sock"))
    stale.close()  # its file stays; a datagram to it is refused, and the wake removes such a socket
    (state / "await").symlink_to(target)
    state_journal.wake({"RK_STATE_DIR": str(state)})
    assert (target / "1-dead.sock").exists()
    (state / "await").unlink()
    (state / "await").mkdir(mode=0o700)
    os.rename(target / "1-dead.sock", state / "await" / "1-dead.sock")
    state_journal.wake({"RK_STATE_DIR": str(state)})
    assert not (state / "await" / "1-dead.sock").exists()  # in its own dir, a dead await's socket is swept


@pytest.mark.tmux
def test_an_await_never_binds_its_wake_in_a_symlinked_await_dir(tmux_server, tmp_path):
    """`rk agent await` refuses a planted `await` link in one line; nothing is bound there."""
    state = _state(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (state / "await").symlink_to(target)
    env = make_env(tmp_path)
    env["RK_STATE_DIR"] = str(state)
    pane = tmux_server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()
    res = run_in(["agent", "await", "--pane", pane, "--until", "idle", "--timeout", "1s", "-L", tmux_server.name], env)
    assert res.code != 0 and "symbolic link" in one_line_error(res), res
    assert list(target.iterdir()) == []

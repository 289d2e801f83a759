"""The status line (`rk status --format tmux|json`): the glance's rules, the ticker's
share of `ticker.status`, and a real tmux client whose rendered status-right shows
the segment and changes when a pane goes waiting."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import wait_for
from test_ticker import FakeDelivery, entry, make_ticker, pane_of, run_in_thread, write_entries

from rk.core.channels.glance import Glance, PaneGlance, parse_pane, short_wait, tmux_text
from rk.tmux.server import child_env

ROOT = Path(__file__).resolve().parent.parent
NOW = 1_800_000_000


# -- the pure glance


def test_a_ticker_down_leads_in_red():
    seen = Glance.of(ticker=False, next_due=NOW + 60, now=NOW, panes=[])
    assert seen.tmux() == "#[fg=red]rk✗#[default]"
    assert seen.next_due is None  # a dead ticker fires nothing: no next fire is promised


def test_waiting_limited_paused_muted_and_next_fire():
    panes = [
        PaneGlance("waiting", NOW - 9),
        PaneGlance("waiting", NOW - 3),
        PaneGlance("limited", NOW - 5, reset_at=NOW + 3600),
        PaneGlance("idle", NOW),
    ]
    seen = Glance.of(ticker=True, next_due=NOW + 170, now=NOW, panes=panes, paused=1, muted=2)
    assert seen.plain("15:00") == "✋2 ⛔15:00 ⏸1 🔇2 ⏱ 3m"
    assert seen.tmux("15:00").startswith("#[fg=yellow]✋2 #[fg=red]⛔15:00 ")
    assert seen.to_dict("15:00")["class"] == "waiting" and seen.limited_until == NOW + 3600


def test_a_quiet_rk_shows_only_the_next_fire():
    assert Glance.of(ticker=True, next_due=NOW + 45, now=NOW, panes=[PaneGlance("idle")]).tmux() == "⏱ 45s#[default]"
    assert Glance.of(ticker=True, next_due=None, now=NOW, panes=[]).tmux() == ""


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (59, "59s"), (60, "1m"), (61, "2m"), (7300, "2h"), (90000, "1d")]
)
def test_short_wait(seconds, text):
    assert short_wait(seconds) == text


def test_hash_is_doubled_so_tmux_runs_nothing():
    assert tmux_text("#(touch /tmp/x) #[fg=red] #{pane_id}") == "##(touch /tmp/x) ##[fg=red] ##{pane_id}"


def test_pane_options_parse_and_a_note_of_another_epoch_gives_no_reset():
    assert parse_pane("limited:100:42", "hook:100:4000") == PaneGlance("limited", 100, 4000, 42)
    assert parse_pane("limited:100", "screen:99:4000") == PaneGlance("limited", 100, 0)
    assert parse_pane("bogus:100") is None and parse_pane("") is None and parse_pane("waiting:x") is None


# -- the shell: the ticker's record, one list-panes per server


@pytest.mark.shell
def test_the_ticker_records_next_due_paused_and_muted(tmp_path, tmux_server):
    state = tmp_path / "state"
    pane = pane_of(tmux_server)
    now = int(time.time())
    muted = entry("e002", pane, 7200, now)
    muted = type(muted)(**{**muted.__dict__, "muted": True})
    write_entries(state, tmux_server.name, [entry("e001", pane, 3600, now), muted])
    loop = make_ticker(state, tmux_server, time.time, FakeDelivery(), 30)
    thread = run_in_thread(loop)
    try:
        record = wait_for(lambda: _status(state).get("next_due"), message="next_due in ticker.status")
    finally:
        loop.stop()
        thread.join(10)
    full = _status(state)
    assert now < record <= now + 3600 + 5
    assert full["muted"] == 1 and full["paused"] == 0


@pytest.mark.shell
def test_a_paused_server_is_counted_and_shown(tmp_path, tmux_server):
    from rk.store.config import ServerFiles
    from rk.store.pause import write_pause

    state = tmp_path / "state"
    now = int(time.time())
    write_entries(state, tmux_server.name, [entry("e001", pane_of(tmux_server), 3600, now)])
    write_pause(ServerFiles(state, tmux_server.name).pause, now, 0)
    loop = make_ticker(state, tmux_server, time.time, FakeDelivery(), 30)
    thread = run_in_thread(loop)
    try:
        wait_for(lambda: _status(state).get("paused") == 1, message="paused in ticker.status")
        env = {**_rk_env(tmp_path, tmux_server), "RK_STATE_DIR": str(state)}
        run = [sys.executable, "-m", "rk", "status", "--format", "tmux"]
        out = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    finally:
        loop.stop()
        thread.join(10)
    assert "⏸1" in out and "rk✗" not in out  # the ticker (this test's thread) is up: its pid file says so


def _status(state: Path) -> dict:
    try:
        return json.loads((state / "ticker.status").read_text())
    except (OSError, ValueError):
        return {}


def _rk_env(tmp_path, tmux_server) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
    env.update(RK_STATE_DIR=str(tmp_path / "state"), TZ="UTC", PYTHONPATH=str(ROOT))
    env["TMUX"] = f"{tmux_server.path},1,0"  # as tmux sets it for a #() job
    return env


@pytest.mark.shell
def test_json_counts_a_waiting_pane_of_the_callers_server(tmp_path, tmux_server):
    env = _rk_env(tmp_path, tmux_server)
    pane = pane_of(tmux_server)
    run = [sys.executable, "-m", "rk", "status", "--format", "json"]
    before = json.loads(subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout)
    assert before["waiting"] == 0 and before["ticker"] is False and before["class"] == "down"
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", f"waiting:{int(time.time())}")
    after = json.loads(subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout)
    assert after["waiting"] == 1 and after["text"] == "rk✗ ✋1"
    # a state whose agent pid is dead is no one waiting
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", f"waiting:{int(time.time())}:4194303")
    stale = json.loads(subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout)
    assert stale["waiting"] == 0


@pytest.mark.shell
def test_the_segment_reaches_a_pipe_though_the_process_skips_its_teardown(tmp_path):
    """`rk.__main__` ends the status line's process with os._exit: a block-buffered
    stdout (a pipe, no PYTHONUNBUFFERED) must be flushed first."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "TMUX", "TMUX_PANE")}
    proc = subprocess.run(
        [sys.executable, "-m", "rk", "status", "--format", "tmux"],
        env={**env, "RK_STATE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stdout == "#[fg=red]rk✗#[default]\n"


@pytest.mark.shell
def test_an_unknown_format_is_a_usage_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "rk", "status", "--format", "xml"],
        env={**os.environ, "RK_STATE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "tmux or json" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.shell
def test_an_attached_client_renders_the_segment_and_it_changes_when_a_pane_waits(tmp_path, tmux_server):
    """A real client on a pty, status-right = #(rk status --format tmux), redrawn every second."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    command = f"RK_STATE_DIR={state} PYTHONPATH={ROOT} {sys.executable} -m rk status --format tmux"
    tmux_server.run("set-option", "-g", "status-interval", "1")
    tmux_server.run("set-option", "-g", "status-right", f"#({command})")
    tmux_server.run("set-option", "-g", "status-right-length", "80")
    screen = _attach(tmux_server)
    try:
        wait_for(lambda: "rk✗" in screen.text(), timeout=15, message="the segment on the status line")
        assert "✋" not in screen.text()
        pane = pane_of(tmux_server)
        tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", f"waiting:{int(time.time())}")
        wait_for(lambda: "✋1" in screen.text(), timeout=15, message="the waiting pane on the status line")
    finally:
        screen.close()


class _Screen:
    """What a pty-attached tmux client drew, as text (escape sequences left in)."""

    def __init__(self, proc: subprocess.Popen, leader: int) -> None:
        self.proc, self.leader = proc, leader
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.leader, 65536)
            except OSError:
                return
            if not data:
                return
            self.chunks.append(data)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        os.close(self.leader)


def _attach(server) -> _Screen:
    import fcntl
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = {**child_env(server.env), "TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    proc = subprocess.Popen(
        server.argv("-u", "attach-session", "-t", "main"),
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        start_new_session=True,
    )
    os.close(follower)
    return _Screen(proc, leader)


@pytest.mark.shell
def test_doctor_says_whether_the_callers_tmux_shows_the_segment(tmp_path, tmux_server):
    env = _rk_env(tmp_path, tmux_server)
    run = [sys.executable, "-m", "rk", "doctor", "--json"]

    def line_check() -> dict:
        out = json.loads(subprocess.run(run, env=env, capture_output=True, text=True).stdout)
        return next(c for c in out["result"] if c["name"] == "status line")

    assert line_check()["level"] == "warn" and line_check()["fix"] == "rk agent setup tmux"
    tmux_server.run("set-option", "-g", "status-right", "#(rk status --format tmux) %H:%M")
    assert line_check()["level"] == "ok"

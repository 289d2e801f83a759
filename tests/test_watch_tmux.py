"""The watch of active agent panes on a private tmux server, with a stand-in agent that
replays Claude Code 2.1.332's screens and whose turn ends on Esc with no hook
(tests/fixtures/esc_agent.py): the end is seen within about a second with no tick,
by `rk agent await` alone when no ticker runs, by the ticker when one serves the
server (with no entry on the pane); a pane still drawing its spinner stays
`active`; a quiet one costs one capture; and the watch never types into a pane."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC
from pathlib import Path

import pytest
from conftest import wait_for

from rk.core.pane.watch import LOOK_EVERY
from rk.tmux.watch import Watch

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCREENS = FIXTURES / "screens" / "claude-2.1.332"
#: How long after the Esc the turn's end must be seen. The watch's own figure is about a
#: second (a glimpse every LOOK_EVERY s, then a settled look); the slack is for a busy machine.
WITHIN = 2.5


def stand_in(tmux_server, tmp_path: Path, period: float, after: str, *busy: str) -> tuple[str, Path]:
    """A window running the stand-in as `claude`, its state `active` since 5 s ago (a
    hook's write), and the file of the keys it read."""
    keys = tmp_path / f"keys-{len(list(tmp_path.glob('keys-*')))}"
    keys.touch()
    screens = " ".join(str(SCREENS / f"{name}.ansi") for name in busy)
    argv = f"{FIXTURES / 'esc_agent.py'} {keys} {period} {SCREENS / (after + '.ansi')} {screens}"
    pane = tmux_server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", f"exec -a claude {sys.executable} {argv}"
    ).strip()
    wait_for(lambda: tmux_server.display(pane, "#{pane_current_command}") == "claude", message="the stand-in")
    wait_for(lambda: "─────" in tmux_server.capture(pane), message="its busy screen")
    pid = tmux_server.display(pane, "#{pane_pid}")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{int(time.time()) - 5}:{pid}")
    return pane, keys


def state_of(tmux_server, pane: str) -> str:
    return tmux_server.display(pane, "#{@rk_pane_agent_state}").split(":")[0]


def esc(tmux_server, pane: str) -> float:
    tmux_server.send_keys(pane, "Escape")
    return time.monotonic()


@pytest.mark.shell
def test_await_with_no_ticker_sees_an_esc_within_a_second(tmp_path, tmux_server, env):
    pane, _ = stand_in(tmux_server, tmp_path, 0.2, "interrupted", "working_1", "working_2")
    argv = [sys.executable, "-m", "rk", "agent", "await", "-L", tmux_server.name, "--pane", pane]
    proc = subprocess.Popen(
        [*argv, "--until", "idle", "--timeout", "15s", "--json"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        waits = Path(env["RK_STATE_DIR"]) / "await"
        wait_for(lambda: waits.is_dir() and any(waits.iterdir()), timeout=20, message="the wait's socket")
        time.sleep(0.3)  # not a synchronisation: the Esc lands while the wait already watches
        assert proc.poll() is None, "the wait returned before the Esc"
        pressed = esc(tmux_server, pane)
        out, _ = proc.communicate(timeout=30)
        took = time.monotonic() - pressed
    finally:
        proc.kill()
    print(f"await returned {took:.2f}s after the Esc")
    assert proc.returncode == 0, out
    assert json.loads(out)["result"]["condition"] == "idle"
    assert took < WITHIN
    assert tmux_server.display(pane, "#{@rk_pane_turn_end}").startswith("interrupted:")


@pytest.mark.shell
def test_the_ticker_sees_an_esc_on_a_pane_no_entry_touches(tmp_path, tmux_server, env):
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700)
    (state / f"{tmux_server.name}.yaml").write_text('{"entries": []}\n')  # a served server, no entry
    pane, _ = stand_in(tmux_server, tmp_path, 0.2, "interrupted", "working_1", "working_2")
    ticker = subprocess.Popen([sys.executable, "-m", "rk", "cron", "ticker"], env=env, stderr=subprocess.PIPE)
    try:
        status = state / "ticker.status"
        wait_for(lambda: status.exists() and tmux_server.name in status.read_text(), timeout=20, message="a tick")
        assert state_of(tmux_server, pane) == "active"
        pressed = esc(tmux_server, pane)
        wait_for(lambda: state_of(tmux_server, pane) == "idle", timeout=10, interval=0.01, message="idle")
        took = time.monotonic() - pressed
    finally:
        ticker.terminate()
        ticker.communicate(timeout=30)
    print(f"the ticker wrote idle {took:.2f}s after the Esc")
    assert took < WITHIN
    assert tmux_server.display(pane, "#{@rk_pane_agent_source}").startswith("screen:")


def steps(watch: Watch, count: int) -> list[str]:
    """`count` watch steps a glimpse apart; the panes each captured."""
    captured: list[str] = []
    for _ in range(count):
        captured += watch.step(int(time.time())).captured
        time.sleep(LOOK_EVERY)  # the watch's own cadence, as the ticker paces it
    return captured


@pytest.mark.shell
def test_a_pane_still_drawing_its_spinner_stays_active(tmp_path, tmux_server):
    pane, keys = stand_in(tmux_server, tmp_path, 0.1, "interrupted", "working_1", "working_2", "working_partial")
    watch = Watch(tmux_server, UTC)
    captured = steps(watch, 8)
    assert captured.count(pane) >= 6  # its frame moves: looked at at nearly every glimpse
    assert state_of(tmux_server, pane) == "active"
    assert keys.read_bytes() == b""


@pytest.mark.shell
def test_a_quiet_active_pane_costs_one_capture(tmp_path, tmux_server):
    pane, _ = stand_in(tmux_server, tmp_path, 0, "interrupted", "working_1")
    watch = Watch(tmux_server, UTC)
    now = int(time.time())
    assert watch.step(now).captured == [pane]
    later = now + 3  # its last output was in the second of that capture, or before: once more
    assert watch.step(later, wall=later).captured in ([], [pane])
    for _ in range(3):  # then nothing drawn since: no capture
        assert watch.step(later, wall=later).captured == []
    pressed = esc(tmux_server, pane)  # its frame moves: captured, and its end written
    wait_for(lambda: watch.step(int(time.time())).corrected, timeout=10, message="the end")
    assert time.monotonic() - pressed < WITHIN
    assert state_of(tmux_server, pane) == "idle"


@pytest.mark.shell
def test_the_watch_never_types_over_a_draft(tmp_path, tmux_server):
    pane, keys = stand_in(tmux_server, tmp_path, 0.2, "draft", "busy_draft")
    watch = Watch(tmux_server, UTC)
    steps(watch, 3)
    esc(tmux_server, pane)
    wait_for(lambda: watch.step(int(time.time())).corrected, timeout=10, message="the end")
    steps(watch, 3)
    assert state_of(tmux_server, pane) == "idle"
    assert keys.read_bytes() == b"\x1b"  # the Esc pressed; nothing of the watch's
    assert "a draft a human typed" in tmux_server.capture(pane)


@pytest.mark.shell
def test_a_young_active_state_and_other_panes_are_not_captured(tmp_path, tmux_server):
    pane, _ = stand_in(tmux_server, tmp_path, 0.2, "interrupted", "working_1", "working_2")
    idle, _ = stand_in(tmux_server, tmp_path, 0.2, "interrupted", "working_1", "working_2")
    now = int(time.time())
    tmux_server.set_pane_option(idle, "@rk_pane_agent_state", f"idle:{now - 5}:{os.getpid()}")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{now}")
    watch = Watch(tmux_server, UTC)
    assert watch.step(now).captured == []  # a turn that just began: its first frame may not be drawn
    assert watch.step(now + 2).captured == [pane]
    assert Watch(tmux_server, UTC, only=[idle]).step(now + 2).captured == []

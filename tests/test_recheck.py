"""A held fire goes out within a second of the turn's end, even when the screen
lags the hook; a dialog's answer is seen within a second, though no hook fires.

Claude Code runs its Stop hooks before it stops drawing the spinner, so the
tick that the Stop hook's nudge starts reads `idle` from the hook and a running
turn from the screen, and holds a when-idle fire as `active`. Before the
recheck, nothing ticked that server again until the next poll (2–29 s late on
the real CLI). Here a fake agent (a Python program running as `claude`)
replays the real CLI's working screen, the hook's `idle` is written and the
ticker nudged as the hook does, and only then the idle screen is drawn: the
ticker, whose poll is an hour, must deliver within a few seconds of the redraw.
"""

from __future__ import annotations

import textwrap
import threading
import time
from datetime import UTC
from pathlib import Path

import pytest
from conftest import wait_for

from rk.core.pane.facts import PaneFact
from rk.core.pane.look import needs_look
from rk.core.pane.recheck import DIALOG_WATCH, RECHECK_WINDOW, wants_recheck, watching_dialog
from rk.core.schedule.dispose import Act, Disposition
from rk.core.schedule.entry import Deliver, Every
from rk.engine.runtime import Runtime
from rk.engine.ticker import Clocks, Ticker
from rk.host import nudge
from rk.store.config import Settings
from rk.store.delivery_log import read_live
from tests.standin import program_window, write_entry

SCREENS = Path(__file__).resolve().parent / "fixtures" / "screens" / "claude"

#: Draws the working screen, waits for the go file, draws the idle screen, then
#: records every line it reads (the prompt rk types), as an agent's composer would.
FAKE = textwrap.dedent(
    """
    import os, sys, time
    working, idle, go, received = sys.argv[1:5]
    sys.stdout.write(open(working).read()); sys.stdout.flush()
    while not os.path.exists(go):
        time.sleep(0.01)
    sys.stdout.write("\\x1b[2J\\x1b[H" + open(idle).read()); sys.stdout.flush()
    with open(received, "a") as out:
        for line in sys.stdin:
            out.write(line); out.flush()
    """
)


def _fake_agent(tmux_server, tmp_path, first: str, then: str) -> tuple[str, int, Path]:
    """A pane whose fake agent shows screen `first` until the go file exists, then `then`."""
    fake, go, received = tmp_path / "fake.py", tmp_path / "go", tmp_path / "received"
    fake.write_text(FAKE)
    args = f"{fake} {SCREENS / (first + '.ansi')} {SCREENS / (then + '.ansi')} {go} {received}"
    pane = program_window(tmux_server, args)
    return pane, int(tmux_server.display(pane, "#{pane_pid}")), go


def _ticker_for(tmux_server, state: Path, pane: str, *, interval: int, created: int) -> tuple[Ticker, threading.Thread]:
    """A running ticker (its own poll an hour) over one when-idle entry on `pane`."""
    fields = {"schedule": Every(interval=interval), "payload": "status?", "deliver": Deliver.WHEN_IDLE}
    write_entry(state, tmux_server.name, pane, created, **fields)
    runtime = Runtime(state_dir=state, settings=Settings(), environ=dict(tmux_server.env), zone=UTC, clock=lambda: 0)
    loop = Ticker(runtime, interval=3600, clocks=Clocks(wall=time.time, mono=time.monotonic))
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    return loop, thread


@pytest.mark.tmux
@pytest.mark.shell
def test_a_held_fire_goes_out_within_a_second_when_the_screen_catches_up(tmp_path, tmux_server):
    pane, pid, go = _fake_agent(tmux_server, tmp_path, "working_1", "idle_after_turn")
    received = tmp_path / "received"
    wait_for(lambda: "esc to interrupt" in tmux_server.capture(pane), message="the working screen")
    now = int(time.time())
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{now}:{pid}")

    state = tmp_path / "state"
    loop, thread = _ticker_for(tmux_server, state, pane, interval=60, created=now - 120)
    try:
        wait_for(lambda: loop.ticks >= 1, timeout=10, message="the first tick (held: active)")
        # the Stop hook: idle, then the nudge; the screen still shows the turn running
        tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{int(time.time())}:{pid}")
        ticks = loop.ticks
        assert nudge.send(tmux_server.name, {"RK_STATE_DIR": str(state)})  # one nudge, as one Stop hook sends
        wait_for(lambda: loop.ticks > ticks, timeout=10, message="the nudged tick (held: the screen says active)")
        wait_for(lambda: loop.rechecks, timeout=5, message="the held fire asks for a recheck")
        ticks = loop.ticks
        wait_for(lambda: loop.ticks >= ticks + 2, timeout=10, message="rechecks while the screen lags")
        assert not received.exists()
        go.touch()
        drawn = time.monotonic()
        wait_for(lambda: received.exists() and received.read_text() == "status?\n", timeout=10, message="delivered")
        latency = time.monotonic() - drawn
    finally:
        loop.stop()
        thread.join(10)
    lines = read_live(state / f"{tmux_server.name}.log")
    assert [line.outcome for line in lines] == ["delivered"]
    print(f"delivered {latency:.2f}s after the screen showed the turn's end")


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.parametrize(("answer", "after"), [("approved_running", "active"), ("denied_esc", "idle")])
def test_a_dialogs_answer_is_seen_within_a_second_without_a_hook(tmp_path, tmux_server, answer, after):
    """Claude Code and Codex fire no hook when a human answers a dialog: the next
    hook comes when the approved tool has finished (~20 s later in the field)."""
    pane, pid, go = _fake_agent(tmux_server, tmp_path, "permission_dialog", answer)
    wait_for(lambda: "Do you want to proceed?" in tmux_server.capture(pane), message="the dialog")
    opened = int(time.time())
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"waiting:{opened}:{pid}")  # PermissionRequest
    state = tmp_path / "state"
    loop, thread = _ticker_for(tmux_server, state, pane, interval=3600, created=opened)
    option = lambda: tmux_server.run("show-options", "-pqv", "-t", pane, "@rk_pane_agent_state").strip()  # noqa: E731
    try:
        wait_for(lambda: loop.ticks >= 3, timeout=10, message="ticks twice a second while the dialog is up")
        assert option() == f"waiting:{opened}:{pid}"  # the dialog is still up: no correction
        go.touch()  # the human answers
        answered = time.monotonic()
        wait_for(lambda: option().startswith(f"{after}:"), timeout=10, message=f"the state {after}")
        latency = time.monotonic() - answered
    finally:
        loop.stop()
        thread.join(10)
    source = tmux_server.run("show-options", "-pqv", "-t", pane, "@rk_pane_agent_source").strip()
    assert source.startswith("screen:")
    print(f"{answer}: {after} {latency:.2f}s after the answer")


def test_a_dialog_is_watched_for_five_minutes_then_paced_by_the_poll():
    now = 10_000
    assert watching_dialog(PaneFact("%1", state="waiting", epoch=now), now)
    assert watching_dialog(PaneFact("%1", state="waiting", epoch=now - DIALOG_WATCH), now)
    assert not watching_dialog(PaneFact("%1", state="waiting", epoch=now - DIALOG_WATCH - 1), now)
    assert not watching_dialog(PaneFact("%1", state="active", epoch=now), now)
    fresh = PaneFact("%1", state="waiting", epoch=now - 1, pid=42, source="hook")
    assert needs_look(fresh, now)  # within the staleness bound, but a dialog's answer fires no hook
    assert not needs_look(PaneFact("%1", state="active", epoch=now - 1, pid=42, source="hook"), now)


def _held(by: str) -> Disposition:
    return Disposition(Act.HOLD, held_by=by)


def test_only_a_fresh_idle_hook_under_a_busy_screen_asks_for_a_recheck():
    now = 10_000
    idle = PaneFact("%1", state="idle", epoch=now - 1)
    assert wants_recheck(idle, _held("active"), now)
    assert wants_recheck(PaneFact("%1", state="idle", epoch=now - RECHECK_WINDOW), _held("active"), now)
    assert not wants_recheck(PaneFact("%1", state="idle", epoch=now - RECHECK_WINDOW - 1), _held("active"), now)
    assert not wants_recheck(PaneFact("%1", state="active", epoch=now), _held("active"), now)  # the hook agrees
    assert not wants_recheck(idle, _held("draft"), now)  # a human's draft: their business, no spin
    assert not wants_recheck(idle, _held("waiting"), now)
    assert not wants_recheck(idle, Disposition(Act.SEND), now)
    assert not wants_recheck(None, _held("active"), now)

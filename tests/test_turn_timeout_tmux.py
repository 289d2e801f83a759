"""Turn timeouts against a real tmux server: a fake agent (a Python program running
as `claude`, replaying the real CLI's screens) that stays busy until it reads an
Esc, then shows Claude Code's `Interrupted` screen and, like the real CLI, writes
no hook. The tick must log `turn-timeout` once, press Esc once, see the turn end
on the screen, log `interrupted`; and never press for a human's turn, over a
draft, or in copy-mode."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from datetime import UTC
from pathlib import Path

import pytest
from conftest import wait_for

from rk.core.log.delivery import LogLine
from rk.core.log.states import render
from rk.core.schedule.entry import CreatedBy, Entry, Every, OnTimeout, Target
from rk.engine.runtime import Runtime
from rk.engine.tick import tick_server
from rk.store import delivery_log as logfile
from rk.store import state_journal as statejournal
from rk.store.config import Settings

SCREENS = Path(__file__).resolve().parent / "fixtures" / "screens" / "claude"
TIMEOUT = 60

#: Draws the busy screen; on each Esc it reads, records one line and draws the next screen.
FAKE = textwrap.dedent(
    """
    import os, sys, tty
    busy, after, keys = sys.argv[1:4]
    tty.setcbreak(0)
    os.write(1, open(busy, "rb").read())
    while True:
        data = os.read(0, 64)
        if not data:
            break
        for _ in range(data.count(b"\\x1b")):
            with open(keys, "a") as out:
                out.write("Escape\\n")
            os.write(1, b"\\x1b[2J\\x1b[H" + open(after, "rb").read())
    """
)


def fake_claude(tmux_server, tmp_path: Path, busy: str) -> tuple[str, int, Path]:
    fake, keys = tmp_path / "fake.py", tmp_path / "keys"
    fake.write_text(FAKE)
    args = f"{fake} {SCREENS / (busy + '.ansi')} {SCREENS / 'interrupted.ansi'} {keys}"
    pane = tmux_server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", f"exec -a claude {sys.executable} {args}"
    ).strip()
    wait_for(lambda: tmux_server.display(pane, "#{pane_current_command}") == "claude", message="the fake agent")
    wait_for(lambda: "─────" in tmux_server.capture(pane), message="its busy screen")
    return pane, int(tmux_server.display(pane, "#{pane_pid}")), keys


def rig(tmux_server, tmp_path: Path, pane: str, pid: int, journal: list[tuple[int, str, str]], delivered: int):
    """The entry (every 1h, turn_timeout 60s, interrupt), its delivered line, the pane's
    state and journal; a runtime whose notifications are recorded."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    entry = Entry(
        id="e1",
        schedule=Every(interval=3600),
        target=Target("pane", pane),
        payload="status?",
        turn_timeout=TIMEOUT,
        on_timeout=OnTimeout.INTERRUPT,
        created_by=CreatedBy(at=delivered - 10),
    )
    slug = tmux_server.name
    (state / f"{slug}.yaml").write_text(json.dumps({"entries": [entry.to_yaml()]}))
    logfile.append_lines(state / f"{slug}.log", [LogLine(delivered, "e1", pane, "schedule", "delivered")])
    env = dict(tmux_server.env) | {"RK_STATE_DIR": str(state)}
    for ts, to, end in journal:
        statejournal.append(env, slug, render(ts, pane, to, end, "hook", "claude"))
    last_ts, last_to, _ = journal[-1]
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"{last_to}:{last_ts}:{pid}")
    told: list[tuple[str, str]] = []
    runtime = Runtime(
        state_dir=state,
        settings=Settings(),
        environ=env,
        zone=UTC,
        clock=lambda: int(time.time()),
        notify=lambda server, title, body, environ: told.append((title, body)) or "",
    )
    return runtime, state / f"{slug}.log", told


def outcomes(log: Path) -> list[str]:
    return [line.outcome.split(":")[0] for line in logfile.read_live(log)]


@pytest.mark.tmux
@pytest.mark.shell
def test_a_turn_past_its_timeout_is_interrupted_once(tmp_path, tmux_server):
    pane, pid, keys = fake_claude(tmux_server, tmp_path, "working_1")
    t = int(time.time()) - TIMEOUT - 5
    journal = [(t - 300, "active", ""), (t - 100, "idle", "ok"), (t + 1, "active", "")]
    runtime, log, told = rig(tmux_server, tmp_path, pane, pid, journal, delivered=t)

    tick_server(runtime, tmux_server.name)
    assert outcomes(log) == ["delivered", "turn-timeout", "interrupted"], logfile.read_live(log)
    assert keys.read_text() == "Escape\n"
    assert len(told) == 1 and "still active 1m after the delivery" in told[0][1]
    # the screen's verdict is written as a look writes it: the turn ended, interrupted
    assert tmux_server.display(pane, "#{@rk_pane_agent_state}").startswith("idle:")
    assert tmux_server.display(pane, "#{@rk_pane_turn_end}").startswith("interrupted:")

    tick_server(runtime, tmux_server.name)  # and once only
    assert outcomes(log) == ["delivered", "turn-timeout", "interrupted"]
    assert keys.read_text() == "Escape\n"
    print(logfile.read_live(log)[-1].outcome)


@pytest.mark.tmux
@pytest.mark.shell
def test_a_channel_that_hears_turn_timeouts_tells_instead_of_the_tmux_message(tmp_path, tmux_server):
    from rk.core.channels.notice import TURN_TIMEOUT, Memory, events_of, message

    pane, pid, _ = fake_claude(tmux_server, tmp_path, "working_1")
    t = int(time.time()) - TIMEOUT - 5
    runtime, log, told = rig(tmux_server, tmp_path, pane, pid, [(t - 100, "idle", "ok"), (t + 1, "active", "")], t)
    assert outcomes(log) == ["delivered"]
    runtime.heard = frozenset({TURN_TIMEOUT})  # as the ticker sets it for its notify: channels

    result = tick_server(runtime, tmux_server.name)
    assert not told  # no tmux message: the channel says it
    decisions = [(d.entry, d.pane, d.outcome) for d in result.decisions]
    events = [e for e in events_of(tmux_server.name, decisions, [], t + TIMEOUT, Memory()) if e.kind == TURN_TIMEOUT]
    assert [(e.entry, e.pane) for e in events] == [("e1", pane)]
    title, body = message(events[0], t + TIMEOUT, UTC)
    assert "turn timeout" in title and "still active 1m after the delivery" in body and pane in body


@pytest.mark.tmux
@pytest.mark.shell
def test_a_humans_turn_is_never_interrupted(tmp_path, tmux_server):
    """Our turn ended a few seconds after the delivery; the busy one is the human's next."""
    pane, pid, keys = fake_claude(tmux_server, tmp_path, "working_1")
    t = int(time.time()) - TIMEOUT - 30
    journal = [(t - 100, "idle", "ok"), (t + 1, "active", ""), (t + 5, "idle", "ok"), (t + 10, "active", "")]
    runtime, log, told = rig(tmux_server, tmp_path, pane, pid, journal, delivered=t)
    tmux_server.set_pane_option(pane, "@rk_pane_turn_end", f"ok:{t + 5}")

    tick_server(runtime, tmux_server.name)
    assert outcomes(log) == ["delivered"]
    assert not keys.exists() and not told


@pytest.mark.tmux
@pytest.mark.shell
def test_an_immediate_prompt_into_a_busy_agent_is_never_its_turn(tmp_path, tmux_server):
    pane, pid, keys = fake_claude(tmux_server, tmp_path, "working_1")
    t = int(time.time()) - TIMEOUT - 30
    journal = [(t - 100, "idle", "ok"), (t - 20, "active", ""), (t + 3, "active", "")]
    runtime, log, told = rig(tmux_server, tmp_path, pane, pid, journal, delivered=t)

    tick_server(runtime, tmux_server.name)
    assert outcomes(log) == ["delivered"]
    assert not keys.exists() and not told


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.parametrize(
    ("screen", "state", "why", "shown"),
    [
        ("busy_draft", "active", "a draft is in the composer", "draft typed while busy"),
        ("permission_dialog", "waiting", "a dialog is open", "Do you want to proceed?"),
    ],
)
def test_a_draft_or_a_dialog_is_never_pressed_over(tmp_path, tmux_server, screen, state, why, shown):
    pane, pid, keys = fake_claude(tmux_server, tmp_path, screen)
    t = int(time.time()) - TIMEOUT - 5
    journal = [(t - 100, "idle", "ok"), (t + 1, "active", ""), (t + 2, state, "")]
    runtime, log, told = rig(tmux_server, tmp_path, pane, pid, journal, t)

    tick_server(runtime, tmux_server.name)
    lines = logfile.read_live(log)
    assert [line.outcome for line in lines[1:]] == [
        f"turn-timeout: still {state} 1m after the delivery",
        f"interrupt-failed: not pressed: {why}",
    ]
    assert not keys.exists() and len(told) == 1
    assert shown in tmux_server.capture(pane)


@pytest.mark.tmux
@pytest.mark.shell
def test_copy_mode_is_left_alone(tmp_path, tmux_server):
    pane, pid, keys = fake_claude(tmux_server, tmp_path, "working_1")
    t = int(time.time()) - TIMEOUT - 5
    runtime, log, _ = rig(tmux_server, tmp_path, pane, pid, [(t - 100, "idle", "ok"), (t + 1, "active", "")], t)
    tmux_server.run("copy-mode", "-t", pane)

    tick_server(runtime, tmux_server.name)
    assert logfile.read_live(log)[-1].outcome == "interrupt-failed: not pressed: the pane is in copy-mode"
    assert not keys.exists()
    assert tmux_server.display(pane, "#{pane_in_mode}") == "1"


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.slow
def test_mcp_cron_add_and_edit_take_the_timeout(tmux_server, env):
    from test_mcp import serve

    socket = tmux_server.display("main:", "#{socket_path}").strip()
    pane = tmux_server.display("main:", "#{pane_id}").strip()
    caller = dict(env, TMUX=f"{socket},1,0", TMUX_PANE=pane)

    def body(s):
        eid = s.call("cron_add", prompt="status?", every="10m", turn_timeout="20m", on_timeout="interrupt").result()[
            "id"
        ]
        shown = s.call("cron_show", id=eid).result()
        s.call("cron_edit", id=eid, turn_timeout="off").result()
        return shown, s.call("cron_show", id=eid).result(), s.call("cron_edit", id=eid, on_timeout="kill")

    shown, after, bad = serve(caller, body)
    assert (shown["turn_timeout"], shown["on_timeout"]) == ("20m0s", "interrupt")
    assert "turn_timeout" not in after
    assert "--on-timeout must be one of notify, interrupt" in bad.text

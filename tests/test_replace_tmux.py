"""`deliver: replace` on a private tmux server, with a stand-in Claude Code
(tests/fixtures/fake_claude.py) whose turn runs until an Esc, as Claude's does, and whose
hooks are rk's own (`rk agent setup claude`). Its own turn still running at the next fire
is interrupted and the new prompt lands; a human's turn is left alone; an agent that
does not stop gets nothing typed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.log.delivery import LogLine
from rk.core.log.states import render
from rk.core.schedule.entry import Deliver, Every
from rk.core.schedule.replace import turn_is_ours
from rk.engine.runtime import Runtime
from rk.engine.tick import tick_server
from rk.store import delivery_log as logfile
from rk.store import state_journal as statejournal
from rk.store.pane_history import journal_of
from tests.standin import program_window, stand_in_window, tick_runtime, write_entry

pytestmark = [pytest.mark.tmux, pytest.mark.shell]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCREENS = FIXTURES / "screens" / "claude"
EVERY = 4


def stand_in(env, server, tmp_path: Path, turn: int = 120, put_back: bool = False) -> str:
    """A pane running the stand-in `claude` with rk's hooks, each turn `turn` seconds long unless Esc'd."""
    run_rk(["agent", "setup", "claude", "--yes"], env, check=True)
    environ = {"HOME": env["HOME"], "RK_STATE_DIR": env["RK_STATE_DIR"], "FAKE_CLAUDE_TURN": str(turn)}
    environ["FAKE_CLAUDE_LOG"] = str(tmp_path / "prompts")
    if put_back:
        environ["FAKE_CLAUDE_PUT_BACK"] = "1"
    return stand_in_window(server, environ)


def prompts(tmp_path: Path) -> list[str]:
    path = tmp_path / "prompts"
    return path.read_text().splitlines() if path.exists() else []


def rig(env, server, pane: str, created: int) -> tuple[Runtime, Path]:
    """A `replace` entry on the pane, every EVERY s, due at once; the tick's runtime."""
    state = Path(env["RK_STATE_DIR"])
    fields = {"schedule": Every(interval=EVERY), "payload": "latest?", "deliver": Deliver.REPLACE}
    write_entry(state, server.name, pane, created, **fields)
    return tick_runtime(server, state), state / f"{server.name}.log"


def state_of(server, pane: str) -> str:
    return server.display(pane, "#{@rk_pane_agent_state}").split(":")[0]


@pytest.mark.parametrize("put_back", [False, True], ids=["composer-empty", "prompt-put-back"])
def test_its_own_running_turn_is_interrupted_and_the_new_prompt_lands(env, tmux_server, tmp_path, put_back):
    """With `put_back`, the agent puts the stopped prompt back in the composer (Claude does
    before its reply began): rk's own text, cleared; the new prompt is not glued to it."""
    pane = stand_in(env, tmux_server, tmp_path, put_back=put_back)
    runtime, log = rig(env, tmux_server, pane, int(time.time()) - EVERY)
    tick_server(runtime, tmux_server.name)
    assert [line.outcome for line in logfile.read_live(log)] == ["delivered"]
    wait_for(lambda: state_of(tmux_server, pane) == "active", timeout=10, message="the hook's active")
    first = logfile.read_live(log)[0]
    wait_for(lambda: time.time() >= first.ts + EVERY + 1, timeout=EVERY + 3, message="the next fire due")
    assert "esc to interrupt" in tmux_server.capture(pane)  # our turn still runs

    result = tick_server(runtime, tmux_server.name)
    lines = logfile.read_live(log)
    assert [line.outcome.split(":")[0] for line in lines] == ["delivered", "interrupted", "delivered"], lines
    assert lines[1].outcome.startswith("interrupted: replace: ")
    assert ("put back in the composer cleared" in lines[1].outcome) == put_back
    assert prompts(tmp_path) == ["latest?", "latest?"]
    assert [d.outcome for d in result.decisions][-1] == "delivered"
    wait_for(lambda: state_of(tmux_server, pane) == "active", timeout=10, message="the new turn")
    # the new line is stamped after the interrupted turn ended: the new turn is this delivery's
    journal = journal_of(str(runtime.state_dir), tmux_server.name)[pane]
    rested = max(s.ts for s in journal if s.to == "idle")
    assert lines[2].ts >= rested
    wait_for(
        lambda: turn_is_ours(
            "e1", logfile_view(log), pane, journal_of(str(runtime.state_dir), tmux_server.name)[pane], 0
        ),
        timeout=10,
        message="the new turn seen as the entry's",
    )


def logfile_view(log: Path):
    from rk.core.log.delivery import LogView

    return LogView(logfile.read_live(log))


def test_a_humans_turn_is_left_alone_and_the_fire_waits(env, tmux_server, tmp_path):
    pane = stand_in(env, tmux_server, tmp_path, turn=10)
    tmux_server.run("send-keys", "-t", pane, "-l", "my own question")
    tmux_server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: state_of(tmux_server, pane) == "active", timeout=10, message="the human's turn")
    runtime, log = rig(env, tmux_server, pane, int(time.time()) - EVERY)

    result = tick_server(runtime, tmux_server.name)
    assert logfile.read_live(log) == []  # a hold is not logged
    assert [d.outcome for d in result.decisions] == ["held-busy: active; replace: turn not ours, waiting for idle"]
    assert "esc to interrupt" in tmux_server.capture(pane)
    assert prompts(tmp_path) == ["my own question"]
    # and once the human's turn has ended (its Stop hook), the fire goes in
    wait_for(lambda: state_of(tmux_server, pane) == "idle", timeout=20, message="the human's turn over")
    wait_for(
        lambda: tick_server(runtime, tmux_server.name) and logfile.read_live(log),
        timeout=20,
        interval=0.5,
        message="the fire delivered",
    )
    assert [line.outcome for line in logfile.read_live(log)] == ["delivered"]
    assert prompts(tmp_path) == ["my own question", "latest?"]


def test_an_agent_that_does_not_stop_gets_nothing_typed(env, tmux_server, tmp_path):
    """A turn of ours (the journal says so) in an agent that ignores Esc: `failed:
    replace: agent did not stop`, and nothing but the Esc reaches it."""
    keys = tmp_path / "keys"
    busy = SCREENS / "working_1.ansi"
    argv = f"{FIXTURES / 'esc_agent.py'} {keys} 0 {busy} {busy}"
    pane = program_window(tmux_server, argv)
    wait_for(lambda: "─────" in tmux_server.capture(pane), message="its busy screen")
    pid = int(tmux_server.display(pane, "#{pane_pid}"))
    t = int(time.time()) - 20
    runtime, log = rig(env, tmux_server, pane, t - EVERY)
    logfile.append_lines(log, [LogLine(t, "e1", pane, "schedule", "delivered")])
    for ts, to in ((t - 100, "idle"), (t + 1, "active")):
        statejournal.append(runtime.environ, tmux_server.name, render(ts, pane, to, "", "hook", "claude"))
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{t + 1}:{pid}")

    tick_server(runtime, tmux_server.name)
    lines = logfile.read_live(log)
    assert [line.outcome for line in lines] == ["delivered", "failed: replace: agent did not stop"], lines
    assert keys.read_bytes() == b"\x1b"  # the one Esc; no paste, no Enter

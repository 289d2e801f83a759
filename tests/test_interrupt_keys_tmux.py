"""An interrupt of several keys reaches the agent as separate keys: OpenCode 1.18
takes two Escapes that arrive together (one `send-keys Escape Escape`) as one key
and keeps running, so rk sends them `KEY_GAP` apart inside one tmux call. A fake
agent records each read it makes of its terminal."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import wait_for

from rk.act.interrupt import press_commands
from rk.core.cost.turn_timeout import INTERRUPT_KEYS, KEY_GAP
from rk.tmux.server import Command

#: Records each read of its terminal (time, bytes as hex), one JSON line each.
READER = textwrap.dedent(
    """
    import json, os, sys, time, tty
    out = sys.argv[1]
    tty.setraw(0)
    open(out, "w").close()
    while True:
        data = os.read(0, 64)
        if not data:
            break
        with open(out, "a") as f:
            f.write(json.dumps([time.monotonic(), data.hex()]) + "\\n")
    """
)


@pytest.mark.tmux
@pytest.mark.shell
def test_opencodes_two_escapes_reach_the_agent_as_two_keys(tmp_path: Path, tmux_server):
    reader, reads = tmp_path / "reader.py", tmp_path / "reads"
    reader.write_text(READER)
    pane = tmux_server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", f"{sys.executable} {reader} {reads}"
    ).strip()
    wait_for(lambda: reads.exists(), message="the reader")
    tmux_server.run(*Command.unless_mode(pane, *press_commands(pane, INTERRUPT_KEYS["opencode"])))
    wait_for(lambda: reads.read_text().count("\n") >= 2, message="two reads")
    got = [json.loads(line) for line in reads.read_text().splitlines()]
    assert [data for _, data in got] == ["1b", "1b"]
    print(f"the two Escapes came {got[1][0] - got[0][0]:.3f} s apart (KEY_GAP {KEY_GAP} s)")


def test_one_key_is_one_send_keys():
    assert press_commands("%1", ("Escape",)) == [["send-keys", "-t", "%1", "Escape"]]
    assert press_commands("%1", ("Escape", "Escape"), gap=0.5) == [
        ["send-keys", "-t", "%1", "Escape"],
        ["run-shell", "-d", "0.5", ""],
        ["send-keys", "-t", "%1", "Escape"],
    ]


@pytest.mark.tmux
@pytest.mark.shell
def test_copilots_two_escapes_come_apart_and_within_its_window(tmp_path: Path, tmux_server):
    """Copilot CLI interrupts on a second Esc within 500 ms of the first, and reads two that
    arrive together as one: its gap is its own (`key_gap`), apart yet inside that window."""
    from rk.core.cost.turn_timeout import key_gap

    reader, reads = tmp_path / "reader.py", tmp_path / "reads"
    reader.write_text(READER)
    pane = tmux_server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", f"{sys.executable} {reader} {reads}"
    ).strip()
    wait_for(lambda: reads.exists(), message="the reader")
    keys = INTERRUPT_KEYS["copilot"]
    tmux_server.run(*Command.unless_mode(pane, *press_commands(pane, keys, key_gap("copilot"))))
    wait_for(lambda: reads.read_text().count("\n") >= 2, message="two reads")
    got = [json.loads(line) for line in reads.read_text().splitlines()]
    assert [data for _, data in got] == ["1b", "1b"]
    assert 0.1 < key_gap("copilot") < 0.5 - 0.2  # room for a loaded machine inside the window
    assert key_gap("opencode") == KEY_GAP

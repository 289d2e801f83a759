"""A key a human presses while rk delivers: rk's look, then their key, then rk's
paste (or the paste, then their key) leaves two texts in one composer. Enter would
send them as one prompt, so the echo check sees the text that is not rk's and
presses no Enter: it backs out only its own text when that is safe, and never
clears theirs. The interleave is made exact on a real tmux pane: the guard (which
runs on the look, right before the paste) or the paste itself types the key."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest
from conftest import wait_for
from test_delivery import Agent

from rk.act import keys
from rk.act.deliver import deliver
from rk.act.echo import NOT_ALONE, Echo
from rk.act.intents import pending_path
from rk.core.pane.payload import foreign, needle_for
from rk.tmux.frame import Frame

PROMPT = "status of the build?"


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RK_STATE_DIR", str(tmp_path / "state"))


def test_foreign_text_before_and_after_the_payload():
    assert foreign("status of the build?", PROMPT) == ("", "")
    assert foreign("xstatus of the build?", PROMPT) == ("x", "")
    assert foreign("status of the build?y", PROMPT) == ("", "y")
    assert foreign("of the build?", PROMPT) == ("", "")  # not wholly seen: not judged here


def _human_types(server, pane: str, key: str):
    """A guard that lets the human press `key` after rk's look, before its paste."""

    def guard(frame):
        server.run("send-keys", "-t", pane, "-l", key)
        wait_for(lambda: f"> {key}" in server.capture(pane), message="the human's key on screen")
        return None

    return guard


@pytest.mark.tmux
@pytest.mark.shell
def test_a_key_typed_between_the_look_and_the_paste_is_not_submitted_with_rks_prompt(tmux_server, tmp_path):
    agent = Agent(tmux_server, tmp_path)
    result = deliver(tmux_server, agent.pane, PROMPT, guard=_human_types(tmux_server, agent.pane, "x"))
    assert not result.ok
    assert str(result.outcome) == f"failed: {NOT_ALONE}; rk's text was backed out, theirs is kept"
    assert agent.submissions() == []
    wait_for(lambda: "> x\n" in tmux_server.capture(agent.pane) + "\n", message="the human's key alone")
    assert not os.path.exists(pending_path(tmux_server, agent.pane))  # no blind C-u next time
    tmux_server.run("send-keys", "-t", agent.pane, "Enter")  # the human sends what they typed
    wait_for(lambda: agent.submissions() == ["x"], message="their text, alone")


@pytest.mark.tmux
@pytest.mark.shell
def test_a_key_typed_after_the_paste_leaves_both_texts_and_no_enter(tmux_server, tmp_path, monkeypatch):
    agent = Agent(tmux_server, tmp_path)
    paste = keys.Run.paste

    def paste_then_a_key(self, pane, text):
        paste(self, pane, text)
        wait_for(lambda: PROMPT in tmux_server.capture(pane), message="rk's paste")
        tmux_server.run("send-keys", "-t", pane, "-l", "y")
        wait_for(lambda: PROMPT + "y" in tmux_server.capture(pane), message="the human's key after it")

    monkeypatch.setattr(keys.Run, "paste", paste_then_a_key)
    result = deliver(tmux_server, agent.pane, PROMPT)
    assert str(result.outcome) == f"failed: {NOT_ALONE}; rk's text is left beside theirs (it is not last on the line)"
    assert agent.submissions() == []
    assert f"> {PROMPT}y" in tmux_server.capture(agent.pane)  # nothing of theirs cleared
    assert not os.path.exists(pending_path(tmux_server, agent.pane))


@pytest.mark.tmux
@pytest.mark.shell
def test_a_cat_pane_gets_the_same_care(tmux_server, tmp_path):
    """A canonical tty (cat): the key is echoed, rk's text is erased by the tty's own
    BackSpace, and the line cat finally reads is the human's alone."""
    out = tmp_path / "got"
    pane = tmux_server.run("new-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", f"exec cat > {out}").strip()
    wait_for(lambda: tmux_server.display(pane, "#{pane_current_command}") == "cat", message="cat")

    def guard(frame):
        tmux_server.run("send-keys", "-t", pane, "-l", "x")
        wait_for(lambda: tmux_server.capture(pane).startswith("x"), message="the key echoed")
        return None

    result = deliver(tmux_server, pane, PROMPT, guard=guard)
    assert str(result.outcome) == f"failed: {NOT_ALONE}; rk's text was backed out, theirs is kept"
    tmux_server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: out.exists() and out.read_text() == "x\n", message="cat read the human's line alone")


@pytest.mark.tmux
@pytest.mark.shell
def test_without_a_foreign_key_the_delivery_goes_through(tmux_server, tmp_path):
    agent = Agent(tmux_server, tmp_path)
    assert deliver(tmux_server, agent.pane, PROMPT).ok
    wait_for(lambda: agent.submissions() == [PROMPT], message="submitted")


SCREENS = Path(__file__).resolve().parent / "fixtures" / "screens" / "claude"


def _claude_frame(name: str, draft: str | None = None) -> Frame:
    styled = (SCREENS / f"{name}.ansi").read_text()
    if draft is not None:
        styled = styled.replace("a draft a human typed but did not send", draft)
    return Frame("%1", False, False, "0,0", re.sub(r"\x1b\[[0-9;:?]*[@-~]", "", styled), styled)


def test_the_composer_reading_of_a_known_cli_finds_a_key_beside_the_payload():
    """Claude Code's composer, read by its layout (the fixtures of the real CLI)."""
    echo = Echo.of(_claude_frame("idle_fresh"), needle_for(PROMPT), False)
    assert echo.agent == "claude"
    alone = _claude_frame("draft", PROMPT)
    assert echo.where(alone) == "composer" and echo.beside(alone, PROMPT) == ("", "", "")
    assert echo.beside(_claude_frame("draft", "x" + PROMPT), PROMPT) == ("composer", "x", "")
    assert echo.beside(_claude_frame("draft", PROMPT + " and y"), PROMPT) == ("composer", "", "andy")
    assert echo.alone(_claude_frame("draft", "x"), "composer") == "x"  # after the back-out: theirs alone


#: A program that redraws its whole screen on SIGUSR1: its banner grows or shrinks by
#: one row, so its composer line moves (as Codex's does while its startup screen
#: settles). It takes bracketed pastes, BackSpace, and C-j (a newline in the composer,
#: each of its lines drawn after `> `), and submits on Enter.
REDRAWING_APP = r"""
import json, os, signal, sys, tty

out, pid_file, rows, step = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
START, END = b"\x1b[200~", b"\x1b[201~"
tty.setraw(0)
buf = bytearray()


def draw():
    composer = ["> " + line for line in buf.decode("utf-8", "replace").split("\n")]
    lines = ["redrawing app"] + [f"~ banner {i}" for i in range(rows)] + composer
    os.write(1, ("\x1b[H\x1b[2J" + "\r\n".join(lines)).encode("utf-8"))


def redraw(*_):
    global rows
    rows += step
    draw()


signal.signal(signal.SIGUSR1, redraw)
os.write(1, b"\x1b[?2004h")
draw()
with open(pid_file, "w") as fh:
    fh.write(str(os.getpid()))
pending = b""
while True:
    data = os.read(0, 65536)
    if not data:
        break
    pending += data
    pending = pending.replace(START, b"").replace(END, b"")
    for b in pending:
        if b == 0x0D and buf:
            with open(out, "a") as fh:
                fh.write(json.dumps(buf.decode("utf-8", "replace")) + "\n")
            buf.clear()
        elif b == 0x7F:
            buf[:] = buf.decode("utf-8", "replace")[:-1].encode("utf-8")
        elif b >= 0x20 or b == 0x0A:
            buf.append(b)
    pending = b""
    draw()
"""


def _redrawing_app(server, tmp_path, rows: int, step: int):
    script, out, pid = tmp_path / "redrawing.py", tmp_path / "redrawing-out.jsonl", tmp_path / "redrawing.pid"
    script.write_text(REDRAWING_APP)
    command = f"exec {sys.executable} {script} {out} {pid} {rows} {step}"
    pane = server.run("new-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", command).strip()
    wait_for(lambda: pid.exists() and pid.read_text() and "> " in server.capture(pane), message="the app drawn")

    def submissions() -> list[str]:
        return [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []

    return pane, int(pid.read_text()), submissions


def _redraws_then(server, pane: str, pid: int, key: str = ""):
    """A guard: after rk's look the app redraws its screen (its line moves a row), and
    then, with `key`, the human presses it; both shown before rk's paste."""

    def guard(frame):
        row = frame.cursor.partition(",")[2]
        os.kill(pid, signal.SIGUSR1)
        wait_for(lambda: server.display(pane, "#{cursor_y}") != row, message="the redraw")
        if key:
            server.run("send-keys", "-t", pane, "-l", key)
            wait_for(lambda: f"> {key}" in server.capture(pane), message="the human's key on screen")
        return None

    return guard


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.parametrize("step", [1, -1], ids=["line-moves-down", "line-moves-up"])
def test_a_program_redrawing_its_own_screen_is_no_key_typed(tmux_server, tmp_path, step):
    """The cursor reading spans the screen from where the cursor stood at rk's look to
    where it stands after the paste; a redraw that moved the line (Codex's startup
    screen) put the redraw's text in that span, read as a human's key. The line is
    found again by what it held up to the cursor (`> `): ours alone, so Enter."""
    pane, pid, submissions = _redrawing_app(tmux_server, tmp_path, 3, step)
    guard = _redraws_then(tmux_server, pane, pid)
    result = deliver(tmux_server, pane, PROMPT, guard=guard)
    assert result.ok, result.outcome
    wait_for(lambda: submissions() == [PROMPT], message="rk's prompt submitted alone")


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.parametrize("step", [1, -1], ids=["line-moves-down", "line-moves-up"])
def test_a_key_typed_while_the_program_redraws_is_still_not_submitted(tmux_server, tmp_path, step):
    """The same redraw, and a human's key between rk's look and its paste: the moved
    line shows their key beside rk's text, so no Enter; rk's text is backed out."""
    pane, pid, submissions = _redrawing_app(tmux_server, tmp_path, 3, step)
    guard = _redraws_then(tmux_server, pane, pid, key="x")
    result = deliver(tmux_server, pane, PROMPT, guard=guard)
    assert str(result.outcome) == f"failed: {NOT_ALONE}; rk's text was backed out, theirs is kept"
    wait_for(lambda: tmux_server.capture(pane).rstrip().endswith("> x"), message="the human's key alone")
    tmux_server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: submissions() == ["x"], message="their text, alone")


@pytest.mark.tmux
@pytest.mark.shell
def test_a_second_composer_line_is_no_moved_line(tmux_server, tmp_path):
    """A human's `x` and a newline (C-j) between rk's look and its paste: rk's text
    lands on a second `> ` line, which begins like the line rk looked at. That is no
    redraw (the old row still begins so): the span from the old cursor decides, and
    shows their text, so no Enter."""
    pane, _, submissions = _redrawing_app(tmux_server, tmp_path, 3, 0)

    def guard(frame):
        tmux_server.run("send-keys", "-t", pane, "-l", "x")
        tmux_server.run("send-keys", "-t", pane, "C-j")
        wait_for(lambda: "> x\n> \n" in tmux_server.capture(pane) + "\n", message="their line and a new one")
        return None

    result = deliver(tmux_server, pane, PROMPT, guard=guard)
    assert str(result.outcome).startswith(f"failed: {NOT_ALONE}"), result.outcome
    tmux_server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: submissions() and "x" in submissions()[0], message="their text submitted by them")
    assert PROMPT not in submissions()[0]

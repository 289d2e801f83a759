"""An Enter close behind its paste, in a composer that takes it as a newline (Gemini CLI).

Gemini 0.61, in a terminal it does not trust with pastes (tmux), turns an Enter that
comes within 40 ms of a paste into a newline; C-u then stops at the empty row below
the text. In CI a held fire into Gemini was logged `failed: submit not confirmed` with
`status?` left in the composer above an empty row: the Enter had come inside the
window, and no clear reached the text. These tests drive a stand-in that draws
Gemini's frame and keeps both habits (`tests/fixtures/paste_window_app.py`), in a
real tmux server.
"""

from __future__ import annotations

import sys
from datetime import UTC
from pathlib import Path

import pytest
from conftest import wait_for

from rk.act.deliver import deliver
from rk.act.keys import Timing
from rk.core.pane.screen import LAYOUTS, classify

pytestmark = pytest.mark.tmux

FIXTURES = Path(__file__).parent / "fixtures"
PAYLOAD = "status?"
#: The ladder shortened where every Enter is a newline: nothing lands late in the stand-in.
QUICK = Timing(observe=(0.04, 0.08, 0.16, 0.32), retry_observe=0.32)


def start(server, tmp_path, window: float) -> tuple[str, Path]:
    """The first pane runs the stand-in with this paste window; (pane, the submissions file)."""
    received = tmp_path / "submitted.txt"
    pane = server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    app = FIXTURES / "paste_window_app.py"
    server.run("respawn-pane", "-k", "-t", pane, f"exec {sys.executable} {app} {received} {window}")
    wait_for(lambda: "Type your message" in server.capture(pane), message="the stand-in drawn")
    return pane, received


def read(server, pane):
    styled = server.run("capture-pane", "-p", "-e", "-t", pane)
    return classify(styled, LAYOUTS, now=0, zone=UTC)


def submissions(received: Path) -> list[str]:
    return received.read_text().splitlines() if received.exists() else []


def test_the_stand_in_reads_as_gemini_with_an_empty_composer(tmux_server, tmp_path):
    pane, _ = start(tmux_server, tmp_path, window=0.0)
    screen = read(tmux_server, pane)
    assert (screen.agent, screen.state, screen.draft) == ("gemini", "idle", "")


def test_the_enter_keeps_behind_the_paste_and_submits_at_the_first_try(tmux_server, tmp_path):
    # A 0.2 s window: rk's Enter, pressed as soon as the echo shows (~0.1 s after the
    # paste), would fall inside it; Gemini's layout keeps it 0.25 s behind.
    pane, received = start(tmux_server, tmp_path, window=0.2)
    result = deliver(tmux_server, pane, PAYLOAD)
    assert (str(result.outcome), result.detail) == ("delivered", "")
    assert submissions(received) == [PAYLOAD]
    assert read(tmux_server, pane).draft == ""


def test_an_enter_taken_as_a_newline_is_cleared_back_to_an_empty_composer(tmux_server, tmp_path):
    # Every Enter is a newline here: the delivery fails, and the clear must reach the
    # text above the empty row (C-u alone stops there), so no payload is left behind.
    pane, received = start(tmux_server, tmp_path, window=3600.0)
    result = deliver(tmux_server, pane, PAYLOAD, timing=QUICK)
    assert str(result.outcome) == "failed: submit not confirmed"
    assert result.detail == "Enter had no visible effect twice; cleared=True"
    assert submissions(received) == []
    assert read(tmux_server, pane).draft == ""

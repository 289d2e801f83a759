"""The echo probe waits for a paste that is still being drawn (rk/act/deliver.py,
`Timing.probe_drawing`): on a loaded machine a long paste can take seconds to
show, and calling its echo lost after the first eight captures failed a
delivery that was arriving (the 20 KB paste under CI's load). The probe goes on
while the screen still moves, and stops once it stood still for
`Timing.probe_still` (0.3 s)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import wait_for

from rk.act.deliver import deliver
from rk.act.keys import Timing

FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: Drawn one character per 20 ms: about 1.6 s for the whole text, well past the
#: first eight captures (settle + 7 × 0.08 s ≈ 0.64 s) and inside probe_drawing.
PROMPT = "please summarise what changed in the scheduler since yesterday, file by file"
STEP = 0.02

pytestmark = [pytest.mark.shell, pytest.mark.tmux]


@pytest.fixture
def slow_app(tmux_server, tmp_path):
    received = tmp_path / "submitted.txt"
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    tmux_server.run(
        "respawn-pane", "-k", "-t", pane, f"exec {sys.executable} {FIXTURES / 'slow_draw_app.py'} {received} {STEP}"
    )
    wait_for(lambda: tmux_server.capture(pane).startswith(">"), message="the composer drawn")
    return pane, received


def test_a_paste_still_being_drawn_is_waited_for_and_submitted_once(tmux_server, slow_app):
    pane, received = slow_app
    result = deliver(tmux_server, pane, PROMPT)
    assert str(result.outcome) == "delivered", result
    assert received.read_text().splitlines() == [PROMPT]


def test_without_the_drawing_wait_the_same_paste_is_called_lost_and_nothing_is_sent(tmux_server, slow_app):
    """The rule is what delivers it: with no wait beyond the first captures the
    echo is not seen in time, the outcome is a failure and no Enter is pressed."""
    pane, received = slow_app
    result = deliver(tmux_server, pane, PROMPT, timing=Timing(probe_drawing=0.0))
    assert result.outcome.status == "failed", result
    assert not received.exists() or received.read_text() == ""

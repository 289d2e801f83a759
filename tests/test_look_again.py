"""The last look before typing takes another frame when an agent's screen matches none
of its layouts: a TUI caught mid-redraw reads so for a moment (`rk.act.deliver.LookAgain`).

Seen in CI with the real Mistral Vibe: a tick's last look caught its screen being drawn
again (the banner and the composer there, the rows between them half-blank), read it as no
layout, and held the fire `held-busy: unreadable` though Vibe sat idle. Here the stand-in
Claude Code blanks its screen (SIGUSR1) right before the delivery's first frame: blank for
half a second, the fire is typed after a second look, under every policy; blank for longer
than the looks, nothing is typed and the fire is held (or skipped) as before.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.act.deliver import deliver
from rk.act.keys import Timing
from rk.core.schedule.entry import Deliver, Every
from rk.engine.tick import tick_server
from tests.standin import stand_in_window, tick_runtime, write_entry

pytestmark = [pytest.mark.tmux, pytest.mark.shell]


def _blanking_stand_in(env, tmux_server, prompts: Path, blank: float) -> tuple[str, int]:
    """The stand-in Claude Code with rk's hooks, blanking its screen for `blank` s on SIGUSR1; its pane and pid."""
    run_rk(["agent", "setup", "claude", "--yes"], env, check=True)
    environ = {
        "HOME": env["HOME"],
        "RK_STATE_DIR": env["RK_STATE_DIR"],
        "FAKE_CLAUDE_LOG": str(prompts),
        "FAKE_CLAUDE_BLANK": str(blank),
    }
    pane = stand_in_window(tmux_server, environ)
    wait_for(lambda: tmux_server.display(pane, "#{@rk_pane_agent_state}").startswith("idle:"), message="idle")
    return pane, int(tmux_server.display(pane, "#{pane_pid}"))


def _tick_with_a_redraw(env, tmux_server, pane: str, pid: int, policy: Deliver) -> tuple[str, int]:
    """One tick whose delivery starts while the stand-in's screen is blank: the fire's
    outcome and how many frames the delivery took before it typed or gave up."""
    state = Path(env["RK_STATE_DIR"])
    write_entry(
        state, tmux_server.name, pane, int(time.time()) - 3600, payload="status?", schedule=Every(60), deliver=policy
    )
    runtime = tick_runtime(tmux_server, state)
    frames = []

    def blanked_first(server, target, payload, guard=None, intent=None):
        os.kill(pid, signal.SIGUSR1)
        wait_for(lambda: "? for shortcuts" not in server.capture(target), message="the screen blank")

        def counted(frame):
            frames.append(frame)
            return guard(frame)

        return deliver(server, target, payload, guard=counted, intent=intent, timing=Timing())

    runtime.deliver = blanked_first
    out = tick_server(runtime, tmux_server.name)
    (decision,) = out.decisions
    return decision.outcome, len(frames)


@pytest.mark.parametrize("policy", [Deliver.IMMEDIATE, Deliver.WHEN_IDLE, Deliver.SKIP_IF_BUSY])
def test_a_screen_caught_mid_redraw_is_looked_at_again_and_the_prompt_typed(env, tmux_server, tmp_path, policy):
    prompts = tmp_path / "prompts"
    pane, pid = _blanking_stand_in(env, tmux_server, prompts, blank=0.5)
    outcome, frames = _tick_with_a_redraw(env, tmux_server, pane, pid, policy)
    assert outcome == "delivered"
    assert 2 <= frames <= 1 + Timing.look_again_tries
    wait_for(lambda: prompts.exists() and prompts.read_text().splitlines() == ["status?"], timeout=10)


@pytest.mark.parametrize(
    ("policy", "said"),
    [(Deliver.WHEN_IDLE, "held-busy: unreadable"), (Deliver.SKIP_IF_BUSY, "skipped-busy: unreadable")],
)
def test_a_screen_that_stays_unread_gets_nothing_typed(env, tmux_server, tmp_path, policy, said):
    prompts = tmp_path / "prompts"
    pane, pid = _blanking_stand_in(env, tmux_server, prompts, blank=30)
    outcome, frames = _tick_with_a_redraw(env, tmux_server, pane, pid, policy)
    assert outcome == said
    assert frames == 1 + Timing.look_again_tries
    assert not prompts.exists()
    assert tmux_server.capture(pane).strip() == ""  # nothing typed into the blank screen

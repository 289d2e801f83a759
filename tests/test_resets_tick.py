"""Resets to the second, through the tick, with a stand-in agent on a real tmux server.

A pane replays a screen captured from Claude Code 2.1.332 ("resets 10:18am (UTC)") with
a `cat` named claude in front (tests/test_look.py); `rk cron tick` runs at chosen
instants. A `--wake-on limit-reset` entry types "continue" only once the printed
minute is over (its end plus RESET_MARGIN), and, while the footer says Claude will
continue by itself ("Continuing shortly"), only SELF_RESUME_GRACE after that.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import wait_for
from test_look import FIXTURES, add, logged, tick

from rk.core.pane.look import SELF_RESUME_GRACE
from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN

pytestmark = [pytest.mark.tmux, pytest.mark.shell]

#: "resets 10:18am (UTC)", the day after the entries are made (test_look.NOW)
MINUTE_PRINTED = int(datetime(2026, 12, 2, 10, 18, tzinfo=UTC).timestamp())
OVER = MINUTE_PRINTED + MINUTE + RESET_MARGIN
HIT = MINUTE_PRINTED - 3600


def replay_text(server, text: str, tmp_path: Path) -> tuple[str, int]:
    """A pane showing `text` (a Claude screen) with a `cat` named claude in front: (pane, its pid)."""
    screen = tmp_path / "screen.ansi"
    screen.write_text(text, encoding="utf-8")
    pane = server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", f"bash -c 'cat {screen}; exec -a claude cat'"
    ).strip()
    wait_for(lambda: server.display(pane, "#{pane_current_command}") == "claude", message="the replayed agent")
    return pane, int(server.display(pane, "#{pane_pid}"))


def limited(server, pane: str, pid: int) -> None:
    """As Claude's StopFailure hook leaves it: limited since HIT, the reset not yet learnt."""
    server.set_pane_option(pane, "@rk_pane_agent_state", f"limited:{HIT}:{pid}")


def test_a_reset_printed_to_the_minute_is_resumed_after_the_minute_not_in_it(env, tmux_server, tmp_path):
    text = (FIXTURES / "claude-2.1.332/limit_reached.ansi").read_text(encoding="utf-8")  # Esc: no auto-continue
    pane, pid = replay_text(tmux_server, text, tmp_path)
    limited(tmux_server, pane, pid)
    waker = add(env, tmux_server, "continue", "--wake-on", "limit-reset", "--wake-debounce", "0s", "--pane", pane)
    assert tick(env, tmux_server, HIT + 60) == {}  # the first observation: limited
    before = tmux_server.capture(pane)
    for at in (MINUTE_PRINTED, MINUTE_PRINTED + 30, MINUTE_PRINTED + 59, OVER - 1):
        assert waker not in tick(env, tmux_server, at), at  # the minute may still be the limit's
    assert tmux_server.capture(pane) == before and waker not in logged(env, tmux_server)
    assert tick(env, tmux_server, OVER) == {waker: "delivered"}
    assert waker not in tick(env, tmux_server, OVER + 60)
    assert logged(env, tmux_server) == {waker: ["delivered"]}


def test_rk_waits_while_claude_says_continuing_shortly_then_resumes_it_once(env, tmux_server, tmp_path):
    auto = (FIXTURES / "claude-2.1.332/limit_reached_autocontinue.ansi").read_text(encoding="utf-8")
    pane, pid = replay_text(
        tmux_server, auto.replace("Continuing automatically at 10:18am", "Continuing shortly"), tmp_path
    )
    limited(tmux_server, pane, pid)
    waker = add(env, tmux_server, "continue", "--wake-on", "limit-reset", "--wake-debounce", "0s", "--pane", pane)
    assert tick(env, tmux_server, HIT + 60) == {}
    before = tmux_server.capture(pane)
    for at in (OVER, OVER + 60, OVER + SELF_RESUME_GRACE):
        assert waker not in tick(env, tmux_server, at), at  # Claude's own resume comes first
    assert tmux_server.capture(pane) == before and waker not in logged(env, tmux_server)
    assert tick(env, tmux_server, OVER + SELF_RESUME_GRACE + 30) == {waker: "delivered"}  # it did not: rk, once
    assert waker not in tick(env, tmux_server, OVER + SELF_RESUME_GRACE + 90)

"""An agent that continues by itself at its limit's reset gets no "continue" from rk.

Claude Code 2.1.332 on a subscription limit shows "Continuing automatically at
10:18am · Esc to cancel" in its footer and resumes the conversation itself at the
reset; a `--wake-on limit-reset` "continue" typed then would be a second prompt
beside its own. While the screen says so (and for SELF_RESUME_GRACE past the
reset), the limit is not over for rk; once a human cancels it ("Automatic
continue cancelled"), or the agent did not resume after the grace, the usual
limit-reset applies.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC

import pytest
from test_look import FIXTURES, add, logged, replay, tick

from rk.core.pane.facts import PaneFact, Source
from rk.core.pane.look import SELF_RESUME_GRACE, correction, resumes_itself, seen_before_typing
from rk.core.pane.screen import LAYOUTS, classify

SCREENS = "claude-2.1.332"


def _screen(name: str, now: int):
    text = (FIXTURES / SCREENS / f"{name}.ansi").read_text(encoding="utf-8")
    return classify(text, LAYOUTS, now=now, zone=UTC, hint="claude")


RESET = _screen("limit_reached_autocontinue", 1_796_200_000).reset_at


def test_the_footer_that_promises_to_continue_is_read():
    assert RESET > 0
    auto = _screen("limit_reached_autocontinue", RESET - 600)
    assert (auto.state, auto.resumes) == ("limited", True)
    cancelled = _screen("limit_reached", RESET - 600)  # Esc: "Automatic continue cancelled"
    assert (cancelled.state, cancelled.resumes) == ("limited", False)
    assert not _screen("idle_after_turn", RESET).resumes


def test_the_limit_is_not_over_while_the_agent_is_to_continue_by_itself():
    pane = PaneFact("%1", state="limited", epoch=RESET - 3600, pid=42, source=str(Source.HOOK), reset_at=RESET)
    for now in (RESET + 30, RESET + SELF_RESUME_GRACE):
        screen = _screen("limit_reached_autocontinue", now)
        assert resumes_itself(pane, screen, now)
        assert correction(pane, screen, now, settled=True) is None  # no idle written
        assert seen_before_typing(pane, screen, now).state == "limited"  # nothing typed
    late = RESET + SELF_RESUME_GRACE + 1  # it did not continue: the usual rules again
    screen = _screen("limit_reached_autocontinue", late)
    assert not resumes_itself(pane, screen, late)
    assert correction(pane, screen, late, settled=True).state == "idle"
    cancelled = _screen("limit_reached", RESET + 30)
    assert correction(pane, cancelled, RESET + 30, settled=True).state == "idle"
    assert seen_before_typing(replace(pane, state="idle"), cancelled, RESET + 30).state == "idle"


@pytest.mark.tmux
@pytest.mark.shell
def test_limit_reset_types_no_continue_beside_the_agents_own(env, tmux_server):
    pane, pid = replay(tmux_server, f"{SCREENS}/limit_reached_autocontinue")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"limited:{RESET - 3600}:{pid}")
    tmux_server.set_pane_option(pane, "@rk_pane_agent_source", f"hook:{RESET - 3600}:{RESET}")
    waker = add(env, tmux_server, "continue", "--wake-on", "limit-reset", "--wake-debounce", "0s", "--pane", pane)
    assert tick(env, tmux_server, RESET - 600) == {}  # the first observation: limited
    before = tmux_server.capture(pane)
    for at in (RESET + 30, RESET + 120, RESET + SELF_RESUME_GRACE - 30):
        assert waker not in tick(env, tmux_server, at), at  # Claude continues by itself: rk waits
    assert tmux_server.capture(pane) == before and waker not in logged(env, tmux_server)
    after = tick(env, tmux_server, RESET + SELF_RESUME_GRACE + 60)  # it did not: rk resumes it, once
    assert after == {waker: "delivered"}
    assert waker not in tick(env, tmux_server, RESET + SELF_RESUME_GRACE + 120)

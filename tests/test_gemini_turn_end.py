"""How a Gemini CLI turn that gave no text ended, read from its screen by rk's
AfterAgent hook (the payload says only "[no response text]"): the screens are
the real CLI's (tests/fixtures/screens/gemini, `gemini_launch.py --turn-ends`)."""

from __future__ import annotations

import time
from datetime import timezone
from pathlib import Path

import pytest

from rk.agent import hook_turn_end
from rk.core.pane.screen.gemini import turn_end_of
from rk.core.pane.turn import GEMINI_NO_RESPONSE, reads_gemini_screen
from tests.test_agent_hook import hook_env, option, pane_of, run_hook

SCREENS = Path(__file__).parent / "fixtures" / "screens" / "gemini"
NOW = 1796300000


def screen(name: str, styled: bool = True) -> str:
    return (SCREENS / f"{name}.{'ansi' if styled else 'txt'}").read_text()


@pytest.mark.parametrize(
    ("name", "end"),
    [
        ("error400", "failed"),  # ✕ [API Error: {"error":{"code":400,…}}]
        ("error500", "failed"),  # a 500 the human stopped retrying (full verbosity)
        ("error400_after_quote", "failed"),  # below a reply that quoted the error
        ("error429", "limited"),  # ✕ [API Error: You have exhausted your daily quota on this model.]
        ("error429_full", "limited"),
        ("esc_interrupted", "interrupted"),  # ℹ Request cancelled.
        ("esc_interrupted_settled", "interrupted"),
        ("error500_retrying_esc", "interrupted"),
        ("error400_at_hook", ""),  # the screen as AfterAgent fires: not drawn yet
        ("reply_quotes_error", ""),  # a reply quoting "✕ [API Error: …]" and "ℹ Request cancelled."
        ("idle_after_turn", ""),
        ("tool_approved", ""),
        ("error429_dialog", ""),  # a dialog is up: an older turn's "Request cancelled." is not this one's
        ("error500_dialog", ""),
        ("tool_confirm", ""),
        ("working_1", ""),
    ],
)
def test_the_screen_says_how_a_textless_turn_ended(name, end):
    assert turn_end_of(screen(name), NOW, timezone.utc) == (end, 0)


def test_an_error_in_the_default_ink_is_no_error():
    """The plain capture has no colours: the CLI's red `✕` is what makes it its error."""
    assert turn_end_of(screen("error400", styled=False), NOW, timezone.utc) == ("", 0)


@pytest.mark.parametrize(
    ("provider", "token", "payload", "reads"),
    [
        ("gemini", "idle", {"hook_event_name": "AfterAgent", "prompt_response": GEMINI_NO_RESPONSE}, True),
        ("gemini", "idle", {"hook_event_name": "AfterAgent", "prompt_response": "Hello."}, False),
        ("gemini", "idle", {"hook_event_name": "SessionEnd", "prompt_response": GEMINI_NO_RESPONSE}, False),
        ("gemini", "active", {"hook_event_name": "AfterAgent", "prompt_response": GEMINI_NO_RESPONSE}, False),
        ("claude", "idle", {"hook_event_name": "AfterAgent", "prompt_response": GEMINI_NO_RESPONSE}, False),
        ("gemini", "idle", None, False),
    ],
)
def test_only_a_textless_gemini_turn_end_reads_the_screen(provider, token, payload, reads):
    assert reads_gemini_screen(provider, token, payload) is reads


def textless(session: str = "s-1") -> dict:
    return {"session_id": session, "hook_event_name": "AfterAgent", "prompt_response": GEMINI_NO_RESPONSE}


@pytest.mark.shell
@pytest.mark.parametrize(
    ("screens", "state", "end"),
    [
        (["error400_at_hook", "error400"], "idle", "failed"),  # drawn just after the hook starts
        (["error400_at_hook", "error429"], "limited", "limited"),
        (["esc_interrupted"], "idle", "interrupted"),
        (["reply_quotes_error"], "idle", "ok"),  # nothing shows within the wait: an empty reply
    ],
)
def test_a_textless_gemini_turn_writes_what_its_screen_shows(tmux_server, tmp_path, monkeypatch, screens, state, end):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1796300000")
    shown = [screen(name) for name in screens]
    monkeypatch.setattr(hook_turn_end, "capture", lambda *a, **k: shown.pop(0) if len(shown) > 1 else shown[0])
    monkeypatch.setattr(hook_turn_end, "GEMINI_SCREEN_WAIT", 0.2)
    run_hook(["--agent", "gemini", "idle"], env, tmp_path, textless())
    assert option(tmux_server, pane, "@rk_pane_agent_state").split(":")[:2] == [state, "1796300000"]
    assert option(tmux_server, pane, "@rk_pane_turn_end") == f"{end}:1796300000"


@pytest.mark.shell
def test_a_gemini_reply_with_text_is_ok_without_a_look(tmux_server, tmp_path, monkeypatch):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1796300000")
    monkeypatch.setattr(hook_turn_end, "capture", lambda *a, **k: pytest.fail("the screen was read"))
    run_hook(["--agent", "gemini", "idle"], env, tmp_path, {**textless(), "prompt_response": "Hello."})
    assert option(tmux_server, pane, "@rk_pane_turn_end") == "ok:1796300000"


@pytest.mark.shell
def test_the_hook_captures_the_pane(tmux_server):
    pane = pane_of(tmux_server)
    tmux_server.run("send-keys", "-t", pane, "-l", "a line the cat echoes")
    sock = str(tmux_server.path)
    deadline = time.monotonic() + 5
    while "a line the cat echoes" not in hook_turn_end.capture(sock, pane, {}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "a line the cat echoes" in hook_turn_end.capture(sock, pane, {})
    assert hook_turn_end.capture(sock, "%999", {}) == ""  # no such pane: nothing

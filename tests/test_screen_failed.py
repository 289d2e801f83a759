"""A failed turn read from the screen: the last turn's last entry is the CLI's error
entry (its mark, in its colour) and not a limit. A screen correction then records the
turn `failed`, not `ok` (Copilot CLI fires no hook for a failed turn)."""

from __future__ import annotations

from datetime import timezone
from pathlib import Path

import pytest

from rk.core.pane.screen import LAYOUTS, classify
from rk.core.pane.turn import FAILED, INTERRUPTED, OK, screen_turn_end
from tests.test_screen import quoting_bases, with_reply
from tests.test_screen import read as read_fixture

NOW = 1764597600
SCREENS = Path(__file__).resolve().parent / "fixtures" / "screens"

#: Every captured screen whose last entry is an error that is not a limit (read with the
#: pane's program as the hint). Codex's interrupts are `■` entries too: the interrupt
#: mark decides those first.
FAILED_SCREENS = {
    "codex/denied_esc",
    "codex/error_500",
    "codex/error_503_capacity",
    "codex/interrupted",
    "codex/interrupted_before_output",
    "codex/paste_multiline",
    "copilot/error_400",
    "gemini/error400",
    "gemini/error400_after_quote",
    "gemini/error500",
}


def screen_of(name: str):
    agent = name.split("/")[0].split("-")[0]
    text = (SCREENS / f"{name}.ansi").read_text(encoding="utf-8")
    return classify(text, LAYOUTS, now=NOW, since=NOW, zone=timezone.utc, hint=agent)


def test_the_screens_read_as_failed_are_the_error_ends():
    names = sorted(f"{p.parent.name}/{p.stem}" for p in SCREENS.glob("*/*.ansi"))
    assert {n for n in names if screen_of(n).failed} == FAILED_SCREENS


def test_a_limit_or_a_busy_screen_is_never_failed():
    for name in ("copilot/error_429", "codex/error_429_quota", "gemini/error429", "gemini/error500_retrying"):
        assert not screen_of(name).failed, name


@pytest.mark.parametrize("name", [n for n in quoting_bases() if n not in FAILED_SCREENS])  # others end on an error
def test_a_reply_quoting_an_error_is_no_failure(name):
    """A reply whose text is every CLI's error mark and words stays a reply (on the
    screens whose last entry is that reply)."""
    quoted = ["✗ 400 mock error 400", "■ stream disconnected before completion", "✕ [API Error: 500]"]
    agent = name.split("/")[0].split("-")[0]
    for ink in ("", "38;5;153"):
        got = classify(
            with_reply(read_fixture(name), quoted, ink=ink), LAYOUTS, now=NOW, since=NOW, zone=timezone.utc, hint=agent
        )
        assert not got.failed, (name, ink)


def test_the_turn_end_of_a_correction():
    assert screen_turn_end("active", "idle", "● done", failed=True) == FAILED
    assert screen_turn_end("active", "idle", "■ Conversation interrupted - tell the model", failed=True) == INTERRUPTED
    assert screen_turn_end("active", "idle", "● done") == OK
    assert screen_turn_end("idle", "idle", "● done", failed=True) == ""


def test_an_error_mark_not_in_the_clis_error_colour_is_no_failure():
    """Copilot draws its error's `✗` red: the same mark in the default ink is text."""
    text = (SCREENS / "copilot" / "error_400.ansi").read_text(encoding="utf-8")
    assert "\x1b[31m✗\x1b[39m" in text
    plain = text.replace("\x1b[31m✗\x1b[39m", "✗")
    assert not classify(plain, LAYOUTS, now=NOW, since=NOW, zone=timezone.utc, hint="copilot").failed

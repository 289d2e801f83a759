"""GitHub Copilot CLI 1.0.102's screen, read from captures of the real CLI
(tests/fixtures/screens/copilot/, recorded by tests/agents/copilot_launch.py
against the Chat Completions mock): at rest, working, after one Esc and after
Esc Esc, a permission dialog, a failed turn, a retried 429 and GitHub's rate
limit with its relative reset. test_screen.py reads every one of them through
`COPILOT_EXPECTED` too (with and without the pane's provider as a hint)."""

from __future__ import annotations

from datetime import timezone
from pathlib import Path

import pytest

from rk.core.pane.screen import LAYOUTS, classify
from rk.core.pane.screen.resets import RESET_MARGIN

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "screens" / "copilot"
NOW = 1764597600  # 2025-12-01T14:00:00Z (test_screen's NOW)

IDLE, A, W, L = "idle", "active", "waiting", "limited"

#: fixture → (state, draft, reset as HH:MM UTC or ""), as in test_screen.EXPECTED.
COPILOT_EXPECTED: dict[str, tuple[str, str, str]] = {
    "copilot/busy": (A, "", ""),  # `○ Working · 5 B esc esc interrupt` in place of the footer
    "copilot/dialog": (W, "", ""),  # `Do you want to run this command?` replaces the composer
    "copilot/draft": (IDLE, "half-typed draft", ""),
    "copilot/error_400": (IDLE, "", ""),  # `✗ 400 mock error 400`: a failed turn, not a limit
    "copilot/folder_trust": (W, "", ""),  # `Confirm folder trust` at the first launch in a folder
    "copilot/error_429": (L, "", ""),  # `✗ Failed … retried 5 times … Last error: 429 …`: no reset printed
    "copilot/esc_once": (A, "", ""),  # `esc again to interrupt`: one Esc only arms the interrupt
    "copilot/idle": (IDLE, "", ""),
    "copilot/idle_home": (IDLE, "", ""),
    "copilot/interrupted": (IDLE, "", ""),  # `● Operation cancelled by user` after Esc Esc
    "copilot/limit": (L, "", "16:00"),  # `Please try again in 2 hours.`
    "copilot/tool_running": (A, "", ""),  # a shell tool running after its approval
}


def read(name: str) -> str:
    return (FIXTURES / f"{name}.ansi").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(COPILOT_EXPECTED))
def test_a_copilot_screen_is_copilots_and_not_claudes(name):
    """Claude Code also draws a `❯` composer between two rules: with no hint, Copilot's
    footer words must win, or a Copilot pane would be read with Claude's rules."""
    got = classify(read(name.split("/")[1]), LAYOUTS, now=NOW, since=NOW, zone=timezone.utc)
    assert got.agent == "copilot", got


def test_the_capi_limit_names_its_reset_in_seconds():
    """Copilot's other limit text: `Please retry after N seconds.` (CAPI's session limit)."""
    screen = (
        read("limit")
        .replace("Please try again in 2 hours.", "Please retry after 2733 seconds.")
        .replace("hit a rate limit that restricts", "exceeded your 5 hour session limits; it restricts")
    )
    got = classify(screen, LAYOUTS, now=NOW, since=NOW, zone=timezone.utc, hint="copilot")
    assert (got.state, got.reset_at) == (L, NOW + 2733 + RESET_MARGIN), got  # to the second, plus the margin


def test_a_reply_quoting_a_limit_is_no_limit():
    """A `●` reply (not a red `✗` error) that quotes the limit text leaves the pane idle."""
    screen = read("idle").replace("Hello from the mock API.", "you've hit a rate limit. try again in 2 hours")
    assert "rate limit" in screen
    got = classify(screen, LAYOUTS, now=NOW, since=NOW, zone=timezone.utc, hint="copilot")
    assert got.state == IDLE, got


def test_a_past_prompt_is_not_the_composer():
    """Past prompts are drawn ` ❯ text` (indented): a draft is only what the live `❯` holds."""
    got = classify(read("idle"), LAYOUTS, now=NOW, since=NOW, zone=timezone.utc, hint="copilot")
    assert (got.state, got.draft) == (IDLE, ""), got


def test_another_clis_reply_quoting_copilots_words_leaves_its_screen_its_own():
    """Copilot's layout is tried first when the pane names no agent. Every other captured
    screen with a reply in it, that reply quoting Copilot's footer, status and dialog words
    (mocks.QUOTING_LINES), is still read as its own CLI's: only Copilot's frame, drawn one
    space in or at the margin of a box, says Copilot."""
    from agents.mocks import QUOTING_LINES

    from tests.test_screen import EXPECTED, HINTED_ONLY, quoting_bases, with_reply
    from tests.test_screen import read as read_any

    wrong = []
    for name in quoting_bases():
        agent = name.split("/")[0].split("-")[0]
        if not EXPECTED[name][0] or agent in HINTED_ONLY:  # read as theirs only with the pane's program
            continue
        for text in (
            with_reply(read_any(name), list(QUOTING_LINES)),
            with_reply(read_any(name), ["a reply", *QUOTING_LINES], ink="38;5;153"),
        ):
            got = classify(text, LAYOUTS, now=NOW, since=NOW, zone=timezone.utc)
            if got.agent != agent:
                wrong.append((name, got.agent, got.state))
    assert wrong == []

"""The screen classifier against screens captured from the real agent CLIs
(tests/fixtures/screens/<agent>/, recorded by tests/agents/capture.py,
gemini_launch.py and opencode_launch.py), the reset-time reader, and the
rules of when a look happens and what it corrects."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from rk.core.pane.facts import PaneFact, PaneKind, Source
from rk.core.pane.look import LIMIT_RETRY, STALE_AFTER, Correction, correction, needs_look
from rk.core.pane.screen import LAYOUTS, Screen, classify
from rk.core.pane.screen.engine import parse_line
from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN, read_reset, reset_instant
from tests.test_copilot_screen import COPILOT_EXPECTED

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "screens"
NOW = 1764597600  # 2025-12-01T14:00:00Z, before every reset time the fixtures print

I, A, W, L, U = "idle", "active", "waiting", "limited", ""

#: fixture → (state, draft, reset as HH:MM UTC or ""). A screen a human would
#: read as "idle" with text in the composer has that text as its draft.
EXPECTED: dict[str, tuple[str, str, str]] = {
    # Claude Code 2.1.197
    "claude/after_approved_turn": (I, "", ""),
    "claude/after_queued_turns": (I, "", ""),
    "claude/approved_running": (A, "", ""),
    "claude/boot": (U, "", ""),  # nothing drawn yet: nothing claimed
    "claude/boot_first_composer": (I, "", ""),
    "claude/busy_draft": (A, "draft typed while busy", ""),
    "claude/busy_queued": (A, "", ""),  # "Press up to edit queued messages" is a faint hint
    "claude/denied_esc": (I, "", ""),
    "claude/denied_no": (I, "", ""),
    "claude/draft": (I, "a draft a human typed but did not send", ""),
    "claude/draft_80x24": (I, "a draft a human typed but did not send", ""),
    "claude/error_429": (L, "", ""),
    "claude/error_429_reset_text": (L, "", "15:04"),
    "claude/error_429_subscription": (L, "", ""),  # the last turn's 429, not the older "resets" above it
    "claude/error_500": (I, "", ""),
    "claude/error_529": (I, "", ""),
    "claude/idle_after_turn": (I, "", ""),
    "claude/idle_fresh": (I, "", ""),
    "claude/idle_fresh_80x24": (I, "", ""),
    "claude/idle_fresh_subscription": (I, "", ""),
    "claude/interrupted": (I, "", ""),
    "claude/interrupted_before_output": (I, "take your time", ""),  # Esc put the prompt back: a draft
    "claude/limit_reached": (L, "", "15:06"),
    "claude/limit_reached_dialog": (L, "", "15:06"),
    "claude/paste_long_chip": (I, "[Pasted text #1 +39 lines]", ""),
    "claude/paste_multiline": (I, "line one of paste\nline two of paste\nline three", ""),
    "claude/permission_dialog": (W, "", ""),
    "claude/usage_warning_banner": (I, "", ""),  # "You've used 92%…" is a warning, not a limit
    "claude/working_1": (A, "", ""),
    "claude/working_2": (A, "", ""),
    "claude/working_partial": (A, "", ""),
    "claude/reply_quoting": (I, "", ""),  # a reply quoting every pattern (mocks.QUOTING_REPLY)
    "claude/reply_quoting_80x24": (I, "", ""),  # its end right above the composer
    # Claude Code 2.1.332 (the newest on the registry)
    "claude-2.1.332/after_approved_turn": (I, "", ""),
    "claude-2.1.332/after_queued_turns": (I, "", ""),
    "claude-2.1.332/approved_running": (A, "", ""),
    "claude-2.1.332/auto_mode_nudge": (W, "", ""),  # "Make auto mode your default…?" at launch
    "claude-2.1.332/boot": (U, "", ""),
    "claude-2.1.332/boot_first_composer": (I, "", ""),
    "claude-2.1.332/busy_draft": (A, "draft typed while busy", ""),
    "claude-2.1.332/busy_queued": (A, "", ""),  # the queued prompt at the margin, over the spinner
    "claude-2.1.332/denied_esc": (I, "", ""),
    "claude-2.1.332/denied_no": (I, "", ""),
    "claude-2.1.332/draft": (I, "a draft a human typed but did not send", ""),
    "claude-2.1.332/draft_80x24": (I, "a draft a human typed but did not send", ""),
    "claude-2.1.332/error_429": (L, "", ""),
    "claude-2.1.332/error_429_reset_text": (L, "", "10:16"),  # the mock names a reset an hour ahead
    "claude-2.1.332/error_500": (I, "", ""),  # "Resend your message to try again" is a faint hint
    "claude-2.1.332/error_529": (I, "", ""),
    "claude-2.1.332/error_429_subscription": (L, "", ""),
    "claude-2.1.332/limit_reached": (L, "", "10:18"),  # under "Automatic continue cancelled", a grey note
    "claude-2.1.332/limit_reached_autocontinue": (L, "", "10:18"),  # "⚠ Usage limit reached · limit resets …"
    "claude-2.1.332/idle_after_turn": (I, "", ""),
    "claude-2.1.332/idle_fresh": (I, "", ""),
    "claude-2.1.332/idle_fresh_80x24": (I, "", ""),
    "claude-2.1.332/idle_fresh_subscription": (I, "", ""),
    "claude-2.1.332/interrupted": (I, "", ""),
    "claude-2.1.332/interrupted_before_output": (I, "take your time", ""),
    "claude-2.1.332/paste_long_chip": (I, "[Pasted text #1 +39 lines]", ""),
    "claude-2.1.332/paste_multiline": (I, "line one of paste\nline two of paste\nline three", ""),
    "claude-2.1.332/permission_dialog": (W, "", ""),
    "claude-2.1.332/reply_quoting": (I, "", ""),
    "claude-2.1.332/reply_quoting_80x24": (I, "", ""),
    "claude-2.1.332/usage_warning_banner": (I, "", ""),
    "claude-2.1.332/working_1": (A, "", ""),
    "claude-2.1.332/working_2": (A, "", ""),
    "claude-2.1.332/working_partial": (A, "", ""),
    # Codex 0.171.0
    "codex/after_approved_turn": (I, "", ""),
    "codex/after_queued_turns": (I, "", ""),
    "codex/approved_running": (A, "", ""),
    "codex/boot": (U, "", ""),
    "codex/boot_first_composer": (I, "", ""),
    "codex/busy_draft": (A, "draft typed while busy", ""),
    "codex/busy_queued": (A, "", ""),
    "codex/busy_steer": (A, "", ""),
    "codex/denied_esc": (I, "", ""),
    "codex/draft": (I, "a draft a human typed but did not send", ""),
    "codex/draft_80x24": (I, "a draft a human typed but did not send", ""),
    "codex/error_429_quota": (L, "", ""),
    "codex/error_429_retry_limit": (L, "", ""),
    "codex/error_500": (I, "", ""),
    "codex/error_503_capacity": (I, "", ""),
    "codex/exited": (U, "", ""),  # back at the shell
    "codex/idle_after_turn": (I, "", ""),
    "codex/idle_fresh": (I, "", ""),
    "codex/idle_fresh_80x24": (I, "", ""),
    "codex/interrupted": (I, "", ""),
    "codex/interrupted_before_output": (I, "", ""),
    "codex/paste_long_chip": (I, "[Pasted Content 1639 chars]", ""),
    "codex/paste_multiline": (I, "line one of paste\nline two of paste\nline three", ""),
    "codex/permission_dialog": (W, "", ""),
    "codex/usage_limit": (L, "", "15:07"),
    "codex/usage_limit_popup": (L, "", "13:35"),  # the limit, and a "switch model?" popup over the composer
    "codex/usage_warning": (I, "", ""),
    "codex/usage_warning_popup": (W, "", ""),  # a modal that would eat a typed prompt
    "codex/working_1": (A, "", ""),
    "codex/working_2": (A, "", ""),
    "codex/working_partial": (I, "", ""),  # a stalled stream looks idle; the title says otherwise (below)
    "codex/reply_quoting": (I, "", ""),  # the reply starts "• Working (7s • esc to interrupt)"
    "codex/reply_quoting_80x24": (I, "", ""),
    # Gemini CLI 0.61.0
    "gemini/boot": (I, "", ""),
    "gemini/draft": (I, "refactor the retry loop in rk/delivery.py so it backs off", ""),
    "gemini/draft_256color": (I, "refactor the retry loop in rk/delivery.py so it backs off", ""),
    "gemini/draft_80x24": (I, "refactor the retry loop in rk/delivery.py so it backs off", ""),
    "gemini/error400": (I, "", ""),
    "gemini/error400_after_quote": (I, "", ""),
    "gemini/error400_at_hook": (A, "", ""),  # AfterAgent fired; the error is not drawn yet
    "gemini/error429": (L, "", ""),
    "gemini/error429_dialog": (L, "", ""),
    "gemini/error429_full": (L, "", ""),
    "gemini/error500": (I, "", ""),
    "gemini/error500_dialog": (W, "", ""),
    "gemini/error500_retrying": (A, "", ""),
    "gemini/error500_retrying_esc": (I, "", ""),
    "gemini/esc_interrupted": (I, "", ""),
    "gemini/esc_interrupted_settled": (I, "", ""),
    "gemini/idle_after_turn": (I, "", ""),
    "gemini/idle_after_turn_80x24": (I, "", ""),
    "gemini/idle_after_turn_longlabel": (I, "", ""),
    "gemini/idle_after_turn_longlabel_hookrunning": (I, "", ""),
    "gemini/idle_fresh": (I, "", ""),
    "gemini/idle_fresh_256color": (I, "", ""),
    "gemini/idle_fresh_80x24": (I, "", ""),
    "gemini/idle_fresh_longlabel": (I, "", ""),
    "gemini/idle_fresh_longlabel_hookrunning": (I, "", ""),
    "gemini/paste_multiline": (I, "first line of a pasted prompt\nsecond line of it\nthird and last line", ""),
    "gemini/reply_quotes_error": (I, "", ""),  # a reply quoting "✕ [API Error: …]" and "ℹ Request cancelled."
    "gemini/tool_approved": (I, "", ""),
    "gemini/tool_confirm": (W, "", ""),
    "gemini/tool_running": (A, "", ""),
    "gemini/working_1": (A, "", ""),
    "gemini/working_2": (A, "", ""),
    "gemini/working_hook_label": (A, "", ""),
    "gemini/working_longlabel": (I, "", ""),  # an unnamed hook's label garbles the line; rk names its hooks
    # OpenCode 1.18.33
    "opencode/busy": (A, "", ""),
    "opencode/dialog": (W, "", ""),
    "opencode/draft": (I, "half-typed draft", ""),
    "opencode/draft_home": (I, "half-typed draft", ""),
    "opencode/error_429": (L, "", ""),
    "opencode/error_500": (I, "", ""),
    "opencode/esc_once": (A, "", ""),
    "opencode/idle": (I, "", ""),
    "opencode/idle_home": (I, "", ""),  # the grey "Ask anything…" example is a placeholder
    "opencode/interrupted": (I, "", ""),
    "opencode/paste_chip": (I, "[Pasted ~3 lines]", ""),
    "opencode/queued": (A, "", ""),
    "opencode/retry": (A, "", ""),
    "opencode/tool_running": (A, "", ""),
    # Kilo Code CLI 7.7.7 (OpenCode's TUI in another theme)
    "kilo/after_dialog": (I, "", ""),
    "kilo/busy": (A, "", ""),
    "kilo/dialog": (W, "", ""),
    "kilo/draft": (I, "half-typed draft", ""),
    "kilo/draft_home": (I, "half-typed draft", ""),
    "kilo/error_429": (L, "", ""),
    "kilo/error_500": (I, "", ""),
    "kilo/esc_once": (A, "", ""),
    "kilo/idle": (I, "", ""),
    "kilo/idle_home": (I, "", ""),  # the grey `Ask anything...` example is a placeholder
    "kilo/interrupted": (I, "", ""),
    "kilo/retry": (A, "", ""),
    "vibe/busy": (A, "", ""),
    "vibe/busy_draft": (A, "a draft a human typed but did not send", ""),
    "vibe/draft": (I, "a draft a human typed but did not send", ""),
    "vibe/draft_fresh": (I, "a draft a human typed but did not send", ""),
    "vibe/idle": (I, "", ""),  # past prompts are `> ` lines too: only the lowest, between the rules, is live
    "vibe/idle_fresh": (I, "", ""),
    "vibe/interrupted": (I, "", ""),  # `⎣ Interrupted · What should Vibe do instead?`
}
EXPECTED.update(COPILOT_EXPECTED)
#: Agents whose screens only the pane's program tells apart (Kilo draws OpenCode's TUI): read
#: with that hint only (tests/test_kilo.py: without it, rk never types there).
HINTED_ONLY = {"kilo"}

#: Limits shown with a dialog over them (what to do about the limit): a dialog all the same.
LIMIT_DIALOGS = {"claude/limit_reached_dialog", "codex/usage_limit_popup", "gemini/error429_dialog"}

#: Screens the classifier is not asked about: Claude's old screen above the shell it exited to
#: (the pane is a shell by then, and shells are never looked at).
NOT_ASKED = {"claude/exited", "claude-2.1.332/exited"}


def fixture_names() -> list[str]:
    return sorted(f"{p.parent.name}/{p.stem}" for p in FIXTURES.glob("*/*.ansi"))


def printed_minute(reset_at: int) -> str:
    """The minute a screen printed (HH:MM UTC), from the reset rk reads: that minute's end plus the margin."""
    return datetime.fromtimestamp(reset_at - MINUTE - RESET_MARGIN, timezone.utc).strftime("%H:%M") if reset_at else ""


def read(name: str, kind: str = "ansi") -> str:
    return (FIXTURES / f"{name}.{kind}").read_text(encoding="utf-8")


def test_every_captured_screen_has_an_expectation():
    names = set(fixture_names())
    assert names, "no screen fixtures"
    assert names - NOT_ASKED == set(EXPECTED), (
        sorted(names - NOT_ASKED - set(EXPECTED)),
        sorted(set(EXPECTED) - names),
    )
    folders = {"claude", "claude-2.1.332", "codex", "copilot", "gemini", "kilo", "opencode", "vibe"}
    assert {n.split("/")[0] for n in names} == folders


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_captured_screen_is_read_as_a_human_would(name):
    agent = name.split("/")[0].split("-")[0]  # claude-2.1.332/… is Claude's
    state, draft, reset = EXPECTED[name]
    for hint in (agent, "")[: 1 if agent in HINTED_ONLY else 2]:  # the pane's provider, else every layout
        got = classify(read(name), LAYOUTS, now=NOW, since=NOW, zone=timezone.utc, hint=hint)
        assert (got.state, got.draft) == (state, draft), (hint, got)
        assert got.agent == (agent if state else ""), (
            got
        )  # a screen read is the right agent's; an unread one names none
        when = printed_minute(got.reset_at)
        assert when == reset, got
        assert got.dialog == (state == W or name in LIMIT_DIALOGS), got  # keys typed now would answer a dialog


def test_the_placeholder_is_told_from_a_draft_only_by_its_style():
    """Codex's placeholder and a draft with the same words differ only by SGR 2."""
    placeholder = classify(
        "\x1b[1m›\x1b[0m \x1b[2mAsk Codex to do anything\n\n  gpt-5 default · /w\n", LAYOUTS, now=NOW, zone=timezone.utc
    )
    typed = classify(
        "\x1b[1m›\x1b[0m Ask Codex to do anything\n\n  gpt-5 default · /w\n", LAYOUTS, now=NOW, zone=timezone.utc
    )
    assert (placeholder.agent, placeholder.state, placeholder.draft) == ("codex", "idle", "")
    assert (typed.state, typed.draft) == ("idle", "Ask Codex to do anything")


def test_a_title_spinner_says_busy_where_the_screen_looks_idle():
    stalled = read("codex/working_partial")
    assert classify(stalled, LAYOUTS, now=NOW, zone=timezone.utc, hint="codex").state == "idle"
    busy = classify(stalled, LAYOUTS, now=NOW, zone=timezone.utc, hint="codex", title="⠙ say hello | work")
    assert busy.state == "active"
    dialog = classify(
        read("codex/idle_after_turn"),
        LAYOUTS,
        now=NOW,
        zone=timezone.utc,
        hint="codex",
        title="[ . ] Action Required | say hello | work",
    )
    assert dialog.state == "waiting"
    assert (
        classify(read("claude/idle_fresh"), LAYOUTS, now=NOW, zone=timezone.utc, title="✳ Claude Code").state == "idle"
    )
    assert (
        classify(read("claude/idle_fresh"), LAYOUTS, now=NOW, zone=timezone.utc, title="⠂ Claude Code").state
        == "active"
    )


def test_a_screen_no_layout_knows_claims_nothing():
    for text in ("", "$ ls\nfile\n$ ", ">>> print(1)\n1\n>>> "):
        assert classify(text, LAYOUTS, now=NOW, zone=timezone.utc) == Screen()


def test_sgr_parsing_keeps_faint_under_bold_and_reads_colours():
    line = parse_line("\x1b[1;2m› \x1b[0m\x1b[38;5;248mgrey\x1b[38;2;1;2;3m rgb\x1b[7mX\x1b[27m\xa0end")
    assert line.plain == "› grey rgbX end"
    assert line.style_at(0).dim and not line.style_at(2).dim
    assert line.style_at(2).fg == "5;248" and line.style_at(7).fg == "2;1;2;3"
    assert line.style_at(10).reverse and not line.style_at(11).reverse


# -- reset times ----------------------------------------------------------------------------------

UTC = UTC
T = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # 10:00 UTC


def ts(hhmm: str, day: int = 1, zone=UTC) -> int:
    h, m = map(int, hhmm.split(":"))
    return int(datetime(2026, 12, day, h, m, tzinfo=zone).timestamp())


@pytest.mark.parametrize(
    "text, want",
    [
        ("You've hit your session limit · resets 2:57pm (UTC)", ts("14:57")),
        ("Usage limit reached for your plan. Your limit resets at 14:56 UTC.", ts("14:56")),
        ("… or try again at 3:07 PM.", ts("15:07")),
        (
            "Claude usage limit reached. Your limit will reset at 3pm (America/New_York).",
            ts("15:00", zone=ZoneInfo("America/New_York")),
        ),
        ("Access resets at 12:34 PM PST", ts("12:34", zone=ZoneInfo("America/Los_Angeles"))),
        ("resets 9am", ts("09:00", day=2)),  # already past today: the next one
        ("try again in 2 hours 5 minutes", int(T.timestamp()) + 7500),
        ("rate limited; retry after 45s", int(T.timestamp()) + 45),
        ("resets in 4h 59m", int(T.timestamp()) + 4 * 3600 + 59 * 60),
        ("Claude AI usage limit reached|1764601200", 1764601200),
        ("limit until 2026-12-01T15:00:00Z", ts("15:00")),
        ("Please try again later.", 0),
        ("resets 5", 0),  # a bare number is not a time
    ],
)
def test_reset_instant_reads_each_form_agents_print(text, want):
    """The instant printed (`Reset.at`); rk waits for `Reset.over` (tests/test_resets.py)."""
    reset = read_reset(text, int(T.timestamp()), UTC)
    assert (reset.at if reset else 0) == want
    assert reset_instant(text, int(T.timestamp()), UTC) == (reset.over if reset else 0)


def printed(text: str, since: int, now: int) -> int:
    reset = read_reset(text, since, UTC, now=now)
    return reset.at if reset else 0


def test_a_reset_time_without_a_date_is_read_against_when_the_limit_began():
    banner = "You've hit your session limit · resets 3pm (UTC)"
    began = ts("10:00")
    # seen at 16:00 (after the reset): still today's 15:00, not tomorrow's
    assert printed(banner, began, ts("16:00")) == ts("15:00")
    # with no idea when it began, the occurrence nearest to now
    assert printed(banner, 0, ts("16:00")) == ts("15:00")
    assert printed(banner, 0, ts("11:00")) == ts("15:00")
    assert printed("resets 1am (UTC)", 0, ts("23:00")) == ts("01:00", day=2)


# -- when to look, and what a look corrects -----------------------------------------------------


def pane(state="", epoch=0, pid=0, source="", reset_at=0, kind=PaneKind.AGENT, command="claude") -> PaneFact:
    if state and not source:
        source = Source.HOOK
    return PaneFact(
        "%1", state=state, epoch=epoch, pid=pid, source=str(source), reset_at=reset_at, kind=kind, command=command
    )


def test_a_fresh_hook_state_costs_no_look():
    now = 10_000
    assert not needs_look(pane("idle", now - 3600, 42), now)
    assert not needs_look(pane("active", now - STALE_AFTER, 42), now)
    assert needs_look(pane("active", now - STALE_AFTER - 1, 42), now)
    assert needs_look(pane("waiting", now - STALE_AFTER - 1, 42), now)
    assert needs_look(pane(), now)  # no state at all
    assert needs_look(pane("idle", now - 5, 0, Source.SCREEN), now)  # an agent without hooks: the screen is its source
    assert not needs_look(pane("idle", now - 5, 42, Source.SCREEN), now)  # hooked (a pid): hooks come back
    assert not needs_look(pane(kind=PaneKind.SHELL, command="bash"), now)
    assert not needs_look(pane(kind=PaneKind.PROGRAM, command="vim"), now)
    assert not needs_look(pane(kind=PaneKind.PROGRAM, command="node"), now)  # an npm agent is judged by its processes
    limited = pane("limited", now - 5, 42, reset_at=now + 600)
    assert not needs_look(limited, now)
    assert needs_look(pane("limited", now - 5, 42, reset_at=now - 1), now)  # the reset passed
    assert needs_look(pane("limited", now - STALE_AFTER - 1, 42), now)  # reset unknown: look for it


def test_corrections():
    now = 10_000
    stuck = pane("active", now - 300, 42)
    rest = Screen("claude", "idle")
    assert correction(stuck, rest, now, settled=False) is None  # one frame is not enough
    assert correction(stuck, rest, now, settled=True) == Correction("idle", now, 42)
    assert correction(stuck, Screen("claude", "active"), now, settled=True) is None  # confirmed: keep the hook's epoch
    assert correction(stuck, Screen(), now, settled=True) is None  # unreadable: claims nothing
    assert correction(pane("active", now - 300, 42), Screen("claude", "waiting"), now, False) == Correction(
        "waiting", now, 42
    )
    assert correction(pane(), rest, now, settled=False) == Correction("idle", now, 0)  # a hookless agent gets a state
    hit = correction(pane("active", now - 30, 42), Screen("claude", "limited", reset_at=now + 3600), now, False)
    assert hit == Correction("limited", now, 42, now + 3600)
    assert hit.value == f"limited:{now}:42" and hit.note == f"screen:{now}:{now + 3600}"
    # a limit message whose reset has passed is an old one
    assert correction(pane("idle", now - 30, 42), Screen("claude", "limited", reset_at=now - 10), now, True) is None
    # a hook's limited state learns its reset from the screen, keeping its epoch
    hooked = pane("limited", now - 30, 42)
    assert correction(hooked, Screen("claude", "limited", reset_at=now + 99), now, False) == Correction(
        "limited", now - 30, 42, now + 99
    )
    # past the reset (or the retry delay), a settled screen at rest ends the limit
    over = pane("limited", now - 30, 42, reset_at=now - 1)
    assert correction(over, Screen("claude", "limited", reset_at=now - 1), now, True) == Correction("idle", now, 42)
    assert correction(over, Screen("claude", "limited", reset_at=now - 1), now, False) is None
    unknown = pane("limited", now - LIMIT_RETRY, 42)
    assert correction(unknown, Screen("claude", "limited"), now, True) == Correction("idle", now, 42)
    assert correction(pane("limited", now - 60, 42), Screen("claude", "limited"), now, True) is None
    assert correction(pane("limited", now - 60, 42), rest, now, True) == Correction(
        "idle", now, 42
    )  # the banner is gone


def test_what_a_pane_shows_right_before_typing():
    from rk.core.pane.look import seen_before_typing

    now = 10_000
    limited = pane("limited", now - 60, 42)
    banner = Screen("codex", "limited", reset_at=now + 600, dialog=True)
    assert (seen_before_typing(limited, banner, now).state, seen_before_typing(limited, banner, now).dialog) == (
        "limited",
        True,
    )
    # the reset passed: the message is old; the dialog over it still stops the keys
    over = Screen("codex", "limited", reset_at=now - 1, dialog=True)
    assert seen_before_typing(limited, over, now).state == "waiting"
    assert seen_before_typing(limited, Screen("codex", "limited", reset_at=now - 1), now).state == "idle"
    # a message without a reset on a pane already called idle is old; one with a coming reset is not
    rested = pane("idle", now - 5, 42, Source.SCREEN)
    assert seen_before_typing(rested, Screen("opencode", "limited"), now).state == "idle"
    assert seen_before_typing(rested, Screen("codex", "limited", reset_at=now + 60), now).state == "limited"
    # a fresh busy hook state beats one idle frame; a stale one does not
    assert seen_before_typing(pane("active", now - 5, 42), Screen("claude", "idle"), now).state == "active"
    assert seen_before_typing(pane("active", now - 60, 42), Screen("claude", "idle"), now).state == "idle"
    # a limit that has not reset beats a screen at rest (the banner may have scrolled away)
    assert seen_before_typing(limited, Screen("claude", "idle"), now).state == "limited"
    # an agent rk can read whose screen matches no layout: unreadable, nothing typed blind
    claude = PaneFact("%1", state="idle", epoch=1, source="hook", command="claude", kind=PaneKind.AGENT)
    assert seen_before_typing(claude, Screen(), now).unreadable
    assert not seen_before_typing(PaneFact("%1", command="aider", kind=PaneKind.AGENT), Screen(), now).unreadable
    assert seen_before_typing(claude, Screen("claude", "idle", draft="mine"), now).draft


# -- only the live frame is read: replies that quote every pattern ------------------------------

from agents.mocks import QUOTING_LINES  # noqa: E402  (the reply the real-agent tests make the mock send)

#: Where a fixture's last reply is: its text (drawn in the reply's style, after the reply's mark).
REPLY_MARKERS = ("Hello from the mock API.", "Hello from the mock Gemini API.", "I will take my time.")


_SGR = re.compile(r"\x1b\[[0-9;]*m")


def with_reply(text: str, reply: list[str], ink: str = "", full: bool = False) -> str:
    """The captured screen with its last reply's text replaced by `reply`, drawn the way
    that CLI draws a reply: the first line after the reply's mark, the others under it
    (in the SGR colour `ink`, as a code block is drawn, when given). `full`: as on a full
    screen, no run of blank lines between the transcript and the composer (Codex draws
    an empty viewport there until the screen fills)."""
    raws = text.split("\n")
    if full:
        raws = [r for i, r in enumerate(raws) if _SGR.sub("", r).strip() or i == 0 or _SGR.sub("", raws[i - 1]).strip()]
    at = max(i for i, raw in enumerate(raws) if any(m in raw for m in REPLY_MARKERS))
    raw = raws[at]
    marker = next(m for m in REPLY_MARKERS if m in raw)
    prefix = raw[: raw.index(marker)]
    under = prefix.replace("●", " ").replace("•", " ").replace("✦", " ")
    colour, plain = (f"\x1b[{ink}m", "\x1b[39m") if ink else ("", "")
    lines = [prefix + colour + reply[0] + plain, *(under + colour + line + plain for line in reply[1:])]
    return "\n".join([*raws[:at], *lines, *raws[at + 1 :]])


def quoting_bases() -> list[str]:
    return [n for n in sorted(EXPECTED) if any(m in read(n) for m in REPLY_MARKERS)]


def reading(text: str, hint: str) -> tuple[str, str, str, bool]:
    got = classify(text, LAYOUTS, now=NOW, since=NOW, zone=timezone.utc, hint=hint)
    when = printed_minute(got.reset_at)
    return got.state, got.draft, when, got.dialog


def test_the_quoting_reply_quotes_every_working_dialog_and_limit_pattern():
    """As written, or indented as a reply's later lines are drawn (a space or two)."""
    drawn = [indent + line for line in QUOTING_LINES for indent in ("", " ", "  ")]
    for layout in LAYOUTS:
        for kind in ("working", "dialog", "limit"):
            for rx in layout.rx(kind):
                assert any(rx.search(line) for line in drawn), (layout.agent, kind, rx.pattern)


@pytest.mark.parametrize("name", quoting_bases())
def test_a_reply_quoting_every_pattern_changes_no_reading(name):
    """Every captured screen with a reply in it, that reply replaced by one quoting a text
    every working, dialog and limit pattern matches, in the default ink and in colour (as
    code is drawn): still read as before (idle stays idle, a dialog stays a dialog, a real
    limit stays a limit with its reset)."""
    state, draft, reset = EXPECTED[name]
    agent = name.split("/")[0].split("-")[0]
    want = (state, draft, reset, state == W or name in LIMIT_DIALOGS)
    assert reading(with_reply(read(name), list(QUOTING_LINES)), agent) == want
    assert reading(with_reply(read(name), ["a reply", *QUOTING_LINES], ink="38;5;153"), agent) == want


#: The idle screens a one-line reply is put into: after a turn (a status line or the turn's
#: footer under the reply), and a reply right above the composer (an interrupted or stalled turn).
IDLE_BASES = (
    "claude/idle_after_turn",
    "claude/interrupted",
    "codex/idle_after_turn",
    "codex/working_partial",
    "gemini/idle_after_turn",
    "gemini/esc_interrupted_settled",
    "opencode/idle",
    "opencode/interrupted",
)


@pytest.mark.parametrize("name", IDLE_BASES)
def test_a_one_line_reply_quoting_a_pattern_reads_idle(name):
    """Each quoted text alone as the whole last reply (the last entry of the last turn,
    right above the live frame): the agent is idle, whichever layout is tried first."""
    agent = name.split("/")[0]
    assert EXPECTED[name][0] == I
    wrong = []
    for line in QUOTING_LINES:
        for full in (False, True):
            for hint in (agent, ""):
                got = reading(with_reply(read(name), [line], full=full), hint)
                if got != (I, "", "", False):
                    wrong.append((line, hint, full, got))
            # in colour, as code is drawn (Claude: the reply's white `●` says it is a reply)
            if name == "codex/working_partial" and full:
                continue  # a stream still running (the title says so): read active is no harm
            got = reading(with_reply(read(name), [line], ink="38;5;153", full=full), agent)
            if got != (I, "", "", False):
                wrong.append((line, "ink", full, got))
    assert wrong == []


def test_the_live_frame_still_reads_a_running_turn_a_dialog_and_a_limit():
    """The same texts where the CLI draws them live are read: the rule is about where."""
    assert reading(read("claude/working_1"), "claude")[0] == A  # the spinner above the composer
    assert reading(read("codex/working_1"), "codex")[0] == A  # "• Working (0s • esc to interrupt)", faint
    codex_reply = read("codex/working_1").replace("\x1b[2mWorking\x1b[0m", "Working").replace("\x1b[2m(0s", "(0s")
    codex_reply = codex_reply.replace("\x1b[0;1m\x1b[39m\x1b[49mesc", "esc")
    assert reading(codex_reply, "codex")[0] == I  # the same line in the default ink is a reply's
    assert reading(read("claude/error_429"), "claude")[0] == L
    inked = read("claude/error_429").replace("\x1b[38;5;220mAPI Error", "API Error")
    assert reading(inked, "claude")[0] == I  # a limit's text in the default ink is a reply's

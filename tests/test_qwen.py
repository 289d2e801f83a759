"""Qwen Code 0.24.4, pure parts: its screens captured from the real CLI
(tests/fixtures/screens-qwen/0.24.4, recorded by tests/agents/qwen_capture.py), `rk agent
setup qwen` (its hooks, where they go, their removal), its process, and `rk doctor`'s
version line."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest
from agents.mocks import QUOTING_LINES

from rk.agent import setup
from rk.agent.hook_event import expected_comms
from rk.agent.setup import qwen
from rk.cli.doctor import PACKAGES, cli_version
from rk.core.pane.program import PaneKind, Proc, judge
from rk.core.pane.screen import LAYOUTS, TESTED_VERSIONS, classify
from tests.test_agent_setup import run

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "screens-qwen" / "0.24.4"
NOW = 1796567000
IDLE, ACTIVE, WAITING, LIMITED = "idle", "active", "waiting", "limited"
DRAFT = "a draft a human typed but did not send"

#: fixture → (state, draft, dialog)
EXPECTED = {
    "after_esc": (IDLE, "take your time", False),  # Esc before the reply: Qwen puts the prompt back
    "draft": (IDLE, DRAFT, False),
    "error429": (LIMITED, "", False),  # `✕ [API Error: … rate_limit_error …]` in red
    "error429_http": (LIMITED, "", False),  # `✕ [API Error: 429 {…}]`, then "Possible quota limitations…"
    "error500": (IDLE, "", False),  # an API error that is no limit: the turn is over
    "idle_after_turn": (IDLE, "", False),
    "idle_fresh": (IDLE, "", False),
    "reply_quotes_error": (IDLE, "", False),  # a reply quoting "✕ [API Error: rate limit exceeded]"
    "tool_approved": (IDLE, "", False),
    "tool_confirm": (WAITING, "", True),
    "working": (ACTIVE, "", False),
    "working_draft": (ACTIVE, DRAFT, False),
    "idle_fresh_80x24": (IDLE, "", False),
    # a draft wraps under the composer's first line, indented two columns
    "draft_wrapped_80x24": (IDLE, f"{DRAFT} and it is long enough to\nwrap the line at eighty columns", False),
    "working_80x24": (ACTIVE, "", False),
}


def test_every_qwen_fixture_has_an_expectation():
    assert {p.stem for p in FIXTURES.glob("*.ansi")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_qwen_screen_is_read_as_a_human_would(name):
    state, draft, dialog = EXPECTED[name]
    text = (FIXTURES / f"{name}.ansi").read_text(encoding="utf-8")
    for hint in ("qwen", ""):  # the pane's provider when known, else every layout in turn (Gemini's first)
        got = classify(text, LAYOUTS, now=NOW, since=NOW, zone=UTC, hint=hint)
        assert (got.agent, got.state, got.draft, got.dialog) == ("qwen", state, draft, dialog), (hint, got)


def test_the_placeholder_is_no_draft_but_the_same_words_typed_are():
    grey = "\x1b[38;2;203;166;247m> \x1b[39m\x1b[38;2;108;112;134m Type your message or @path/to/file\n"
    typed = "\x1b[38;2;203;166;247m> \x1b[39mfix the bug \x1b[48;2;212;212;212m \u200b\n"
    frame = "─" * 40 + "\n{}" + "─" * 40 + "\n  ⏸ Ask permissions (shift + tab to cycle)\n"
    assert classify(frame.format(grey), LAYOUTS, now=NOW, zone=UTC).draft == ""
    got = classify(frame.format(typed), LAYOUTS, now=NOW, zone=UTC)
    assert (got.agent, got.state, got.draft) == ("qwen", IDLE, "fix the bug")


def test_a_spinner_line_counts_only_right_above_the_composer():
    """A reply quoting Qwen's status line is no turn running."""
    text = (FIXTURES / "idle_after_turn.ansi").read_text(encoding="utf-8")
    quoted = text.replace("Hello from the mock API.", "⠼ Poking the bear... (2s · esc to cancel)")
    assert quoted != text
    assert classify(quoted, LAYOUTS, now=NOW, zone=UTC, hint="qwen").state == IDLE


@pytest.mark.parametrize("ink", ["", "38;5;153"])
def test_a_reply_quoting_every_pattern_is_still_idle(ink):
    """A reply (its first line after the `◆` mark, the rest indented) quoting a text every
    working, dialog and limit pattern of every layout matches, in the default ink or in colour."""
    text = (FIXTURES / "idle_after_turn.ansi").read_text(encoding="utf-8")
    on, off = (f"\x1b[{ink}m", "\x1b[39m") if ink else ("", "")
    lines = [on + QUOTING_LINES[0] + off, *(f"    {on}{line}{off}" for line in QUOTING_LINES[1:])]
    quoted = text.replace("Hello from the mock API.", "\n".join(lines))
    got = classify(quoted, LAYOUTS, now=NOW, zone=UTC, hint="qwen")
    assert (got.agent, got.state, got.draft, got.dialog) == ("qwen", IDLE, "", False), got


def test_an_error_that_names_no_limit_is_no_limit():
    text = (FIXTURES / "error429.ansi").read_text(encoding="utf-8")
    assert "rate_limit_error" in text
    plain = text.replace("rate_limit_error", "api_error").replace("rate\x1b", "ratX\x1b").replace("rate limit", "X")
    assert classify(plain, LAYOUTS, now=NOW, zone=UTC, hint="qwen").state == IDLE


# -- rk agent setup qwen ----------------------------------------------------------------------


def groups(doc):
    return {
        (event, g.get("matcher")): g["hooks"][0]["command"].split(" agent hook --agent qwen ")[1].split()[0]
        for event, gs in doc["hooks"].items()
        for g in gs
        if setup.is_rk_command(g["hooks"][0].get("command"))
    }


def test_setup_qwen_writes_its_hooks_beside_the_users_and_removes_only_them(tmp_path):
    path = tmp_path / "home" / ".qwen" / "settings.json"
    path.parent.mkdir(parents=True)
    mine = {"matcher": "", "hooks": [{"type": "command", "command": "notify-send done", "timeout": 5000}]}
    path.write_text(json.dumps({"model": {"name": "qwen3"}, "hooks": {"Stop": [mine]}}))
    code, out, err = run(tmp_path, "qwen", yes=True)
    assert (code, err) == (0, ""), err
    assert "qwen: installed 10 hooks" in out and "restart running Qwen Code sessions" in out
    doc = json.loads(path.read_text())
    assert doc["model"] == {"name": "qwen3"} and doc["hooks"]["Stop"][0] == mine
    assert groups(doc) == {
        ("SessionStart", None): "stamp",
        ("UserPromptSubmit", None): "active",
        ("PreToolUse", None): "active",
        ("PostToolUse", None): "active",
        ("PostToolUseFailure", None): "active",
        ("Notification", "permission_prompt"): "waiting",
        ("Stop", None): "idle",
        ("StopFailure", None): "failed",
        # every return to idle, an Esc's too; never a limit's end before its reset
        ("Notification", "idle_prompt"): "idle-notice",
        ("SessionEnd", None): "idle",
    }
    assert path.stat().st_mode & 0o777 == 0o600
    code, out, err = run(tmp_path, "qwen", yes=True, uninstall=True)
    assert code == 0, err
    assert json.loads(path.read_text()) == {"model": {"name": "qwen3"}, "hooks": {"Stop": [mine]}}


def test_qwen_home_moves_the_settings(tmp_path):
    env = {"HOME": "/h"}
    assert setup.config_path("qwen", env) == Path("/h/.qwen/settings.json")
    assert qwen.config_path({**env, "QWEN_HOME": "/q"}) == Path("/q/settings.json")
    code, _, err = run(tmp_path, "qwen", yes=True, env={"QWEN_HOME": str(tmp_path / "qh")})
    assert code == 0, err
    assert "hooks" in json.loads((tmp_path / "qh" / "settings.json").read_text())


# -- the process, the hook's pid, doctor ----------------------------------------------------------


def test_a_pane_running_qwen_on_node_is_a_qwen_agent():
    bin_qwen = "/home/u/.npm-global/bin/qwen"
    table = {
        10: Proc(10, 1, 10, tty=5, tpgid=20, comm="bash", argv=("-bash",)),
        20: Proc(20, 10, 20, tty=5, tpgid=20, comm="node", argv=("node", bin_qwen)),
    }
    got = judge(table, 10)
    assert got is not None and (got.kind, got.agent) == (PaneKind.AGENT, "qwen")
    pkg = "/usr/lib/node_modules/@qwen-code/qwen-code/cli-entry.js"
    table[20] = Proc(20, 10, 20, tty=5, tpgid=20, comm="node", argv=("/opt/node22/bin/node", pkg))
    got = judge(table, 10)
    assert got is not None and got.agent == "qwen"


def test_the_hook_looks_for_qwen_as_node():
    assert "node" in expected_comms("qwen")


def test_doctor_reads_qwens_version_from_its_package(tmp_path):
    pkg = tmp_path / "lib" / "node_modules" / "@qwen-code" / "qwen-code"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": "@qwen-code/qwen-code", "version": "0.24.4"}))
    (pkg / "cli-entry.js").write_text("#!/usr/bin/env node\n")
    (pkg / "cli-entry.js").chmod(0o755)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "qwen").symlink_to(pkg / "cli-entry.js")
    assert PACKAGES["qwen"] == "@qwen-code/qwen-code"
    assert cli_version("qwen", {"PATH": str(tmp_path / "bin")}) == ("0.24.4", str(tmp_path / "bin" / "qwen"))
    assert TESTED_VERSIONS["qwen"] == ("0.24.4",)

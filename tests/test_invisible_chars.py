"""Invisible characters in a prompt, per class.

Zero-width characters (ZWSP, ZWJ, word joiner, BOM) are typed as written: the
echo check compares text with them removed on both sides, and counts the cells a
terminal gives them as tmux does (none; a glyph a ZWJ joins to the one before,
none). Bidirectional controls and stray tag characters make a line read
otherwise than it is typed (Trojan Source): refused up front by `cron add`,
`send` and the entries file's decoder, one line saying which and where, and never
typed whatever path the text took.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_helpers import make_env, one_line_error, run_in
from conftest import run_rk, wait_for
from test_delivery import Agent

from rk.act.deliver import deliver
from rk.act.echo import NOT_ALONE, one_key_each
from rk.core.pane.idle_line import leading_cells, text_width
from rk.core.pane.payload import hidden, needle_for, normalise, sanitize
from rk.core.schedule.decoding import EntryError, decode_entry
from rk.store.entries import parse_entries_text

FAKE_AGENT = Path(__file__).resolve().parent.parent / "demo" / "fake_agent.py"

#: The bidi controls: ALM, LRM, RLM, the embeddings and overrides, the isolates.
BIDI = ["\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]

#: Prompts with zero-width characters that are delivered (each failed `echo not seen` before).
ZERO_WIDTH = {
    "zwsp": "check the\u200b build",
    "bom-first": "\ufeffstatus of the build?",
    "word-joiner": "run the\u2060tests now",
    "zwnj": "a\u200cb joined-not",
    "zwj-family": "family \U0001f468\u200d\U0001f469\u200d\U0001f467 says hi",
    "emoji-vs16": "ship it \u2764\ufe0f today",
    "thai-marks": "thai \u0e01\u0e34 text",
    "flag-england": "go \U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f team",
}


# -- the classes, pure ---------------------------------------------------------------


@pytest.mark.parametrize("ch", BIDI, ids=lambda c: f"U+{ord(c):04X}")
def test_a_bidi_control_is_refused_with_its_code_point_and_place(ch):
    why = hidden(f"approve{ch} the change")
    assert f"U+{ord(ch):04X}" in why and "character 8" in why and "\n" not in why


def test_a_stray_tag_character_is_refused_but_an_emoji_flag_is_not():
    assert "U+E0069" in hidden("ok\U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065")
    assert "U+E007F" in hidden("x\U000e007f")
    assert hidden(ZERO_WIDTH["flag-england"]) == ""
    assert "U+E0041" in hidden(ZERO_WIDTH["flag-england"] + "\U000e0041")  # a tag after the flag ended


@pytest.mark.parametrize("text", ZERO_WIDTH.values(), ids=ZERO_WIDTH.keys())
def test_zero_width_characters_are_delivered_as_written(text):
    assert hidden(text) == ""
    assert sanitize(text) == text


def test_bidi_controls_are_never_typed():
    """Refused up front; a text that got past (an old `send`, any other path) loses them."""
    assert sanitize("a\u202eb\u2066c\u2069d\u200ee") == "abcde"
    assert sanitize("x\U000e0041y") == "xy"


def test_the_echo_compares_text_with_invisible_characters_removed_on_both_sides():
    """tmux keeps a zero-width character after a glyph and drops one at a line's start
    or a ZWJ after a letter: either way the needle matches."""
    assert needle_for("check the\u200b build") == normalise("check the build") == "checkthebuild"
    assert normalise("\ufeffa\u2060b\u200dc") == "abc"
    assert normalise(f"x{''.join(BIDI)}y") == "xy"
    assert normalise("a\u00adb") == "a\u00adb"  # a soft hyphen is drawn: kept


@pytest.mark.parametrize(
    ("row", "cells"),
    [  # as tmux 3.3a lays them out (its cursor_x after typing each into `cat`)
        ("a\u200bb\ufeffc\u2060d \U0001f468\u200d\U0001f469 e\u202ef\u200eg\u2066h\u2069i", 13),
        ("\u2764\ufe0fz", 2),
        ("\u0e01\u0e34z", 2),
        ("\U0001f3f4\U000e0067\U000e0062\U000e007fz", 3),
        ("\U0001f468\u200d\U0001f469\u200d\U0001f467z", 3),
        ("\U0001f44d\U0001f3fdz", 5),
        ("a\u2061z", 2),
        ("a\u00adb", 3),
        ("e\u0301z", 2),
    ],
)
def test_cells_are_counted_as_tmux_draws_them(row, cells):
    assert text_width(row) == cells
    assert leading_cells(row + "TAIL", cells) == row  # the cursor after it cuts the row there


def test_backspace_backs_out_only_text_it_erases_a_character_at_a_time():
    assert one_key_each("status of the build?") and one_key_each("漢字 ok")
    for joined in ("e\u0301", "a\u200bb", "\U0001f468\u200d\U0001f469", "\u2764\ufe0f", "\U0001f44d\U0001f3fd"):
        assert not one_key_each(joined), ascii(joined)
    assert not one_key_each("\U0001f1eb\U0001f1f7")  # a flag: two regional indicators, one glyph


# -- refused up front: the entries file, cron add, send ------------------------------------


def _raw(entry_id: str, payload: str) -> dict:
    return {
        "id": entry_id,
        "schedule": {"kind": "every", "interval": "5m"},
        "target": {"kind": "pane", "pane": "%1"},
        "payload": payload,
    }


def test_the_decoder_refuses_an_entry_with_a_bidi_control_and_loads_the_others():
    with pytest.raises(EntryError, match="U\\+202E"):
        decode_entry(_raw("evil", "approve \u202e the PR"))
    assert decode_entry(_raw("fine", ZERO_WIDTH["zwsp"])).payload == ZERO_WIDTH["zwsp"]
    doc = {"entries": [_raw("evil", "deploy\u2067 now\u2069"), _raw("good", "status?")]}
    result = parse_entries_text(json.dumps(doc))
    assert [e.id for e in result.entries] == ["good"]
    assert [d.entry for d in result.diagnostics] == ["evil"] and "U+2067" in result.diagnostics[0].detail


def test_cron_add_refuses_a_bidi_control_and_stores_nothing(tmp_path):
    env = make_env(tmp_path)
    res = run_in(["cron", "add", "lgtm\u202e, merge", "--every", "5m", "--pane", "%1", "-L", "s"], env)
    assert res.code == 2
    assert "U+202E" in one_line_error(res)
    assert not (tmp_path / "state" / "s.yaml").exists()
    ok = run_in(["cron", "add", ZERO_WIDTH["zwj-family"], "--every", "5m", "--pane", "%1", "-L", "s"], env)
    assert ok.code == 0, ok


def test_send_refuses_a_bidi_control_before_it_looks_for_a_pane(tmp_path):
    res = run_in(["send", "--pane", "%1", "-L", "s", "run \u2066rm -rf\u2069 later"], make_env(tmp_path))
    assert res.code == 2
    message = one_line_error(res)
    assert "U+2066" in message and "character 5" in message


# -- on a real tmux pane ---------------------------------------------------------------


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.parametrize("text", ZERO_WIDTH.values(), ids=ZERO_WIDTH.keys())
def test_an_agent_receives_zero_width_characters_exactly(tmux_server, tmp_path, text):
    """The test's own fake agent records every submission byte for byte."""
    agent = Agent(tmux_server, tmp_path)
    result = deliver(tmux_server, agent.pane, text)
    assert result.ok, result.outcome
    wait_for(lambda: agent.submissions() == [text], message="the prompt, exactly")


@pytest.mark.tmux
@pytest.mark.shell
def test_a_key_beside_joined_text_is_kept_and_rks_text_left(tmux_server, tmp_path):
    """BackSpace may erase an emoji sequence at once: the BackSpaces left over would eat
    the human's key. rk leaves both texts as they are and presses no Enter."""
    text = "family \U0001f468\u200d\U0001f469\u200d\U0001f467"
    agent = Agent(tmux_server, tmp_path)

    def guard(frame):
        tmux_server.run("send-keys", "-t", agent.pane, "-l", "x")
        wait_for(lambda: "> x" in tmux_server.capture(agent.pane), message="the human's key")
        return None

    result = deliver(tmux_server, agent.pane, text, guard=guard)
    assert str(result.outcome).startswith(f"failed: {NOT_ALONE}; rk's text is left beside theirs (BackSpace")
    assert agent.submissions() == []
    assert normalise("x" + text) in normalise(tmux_server.capture(agent.pane))


def _demo_agent(tmux_server, env) -> str:
    command = (
        f"env RK_STATE_DIR={env['RK_STATE_DIR']} HOME={env['HOME']} "
        f"{sys.executable} {FAKE_AGENT} worker --work 0.2 0.2 --seed 1"
    )
    pane = tmux_server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip()
    state = "@rk_pane_agent_state"
    wait_for(
        lambda: tmux_server.run("show-options", "-pqv", "-t", pane, state).startswith("idle:"),
        timeout=15,
        message="the agent's idle hook",
    )
    wait_for(lambda: "demo> " in tmux_server.capture(pane), message="its prompt")
    return pane


def _got(tmux_server, pane: str) -> list[str]:
    return [row.split("got: ", 1)[1] for row in tmux_server.capture(pane).splitlines() if "] got: " in row]


@pytest.mark.tmux
@pytest.mark.shell
def test_the_demo_agent_gets_each_zero_width_prompt_and_no_bidi_one(tmux_server, env):
    """`rk send` into demo/fake_agent.py: zero-width prompts delivered (each was
    `failed: echo not seen` before), a bidi one refused with nothing typed."""
    env = dict(env, RK_SERVER=tmux_server.name)
    for name in ("bom-first", "word-joiner", "zwj-family"):  # the rest: the exact test above
        text = ZERO_WIDTH[name]
        pane = _demo_agent(tmux_server, env)
        proc = run_rk(["send", "--pane", pane, "-L", tmux_server.name, "--json", text], env)
        assert proc.returncode == 0, (name, proc.stdout, proc.stderr)
        wait_for(lambda p=pane: _got(tmux_server, p), message=f"{name}: the agent got it")
        assert [normalise(g) for g in _got(tmux_server, pane)] == [normalise(text)], name

    pane = _demo_agent(tmux_server, env)
    proc = run_rk(["send", "--pane", pane, "-L", tmux_server.name, "approve\u202e the PR"], env)
    assert proc.returncode == 2 and "U+202E" in proc.stderr
    assert _got(tmux_server, pane) == [] and "approve" not in tmux_server.capture(pane)

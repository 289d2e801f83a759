"""only_if_changed against the frames the real CLIs draw as a turn ends.

Captured from Claude Code 2.1.197 and 2.1.332, Codex 0.171 and Gemini CLI 0.61
(tests/fixtures/turn_ends/<agent>/), each with a user's Stop hook that takes 3 s
beside rk's: `turn_end_drawing` is the screen a moment after rk's hook said
`idle` (Claude's `running stop hooks… 2/3` and `esc to interrupt`, Codex's
`Working … · Running hooks`, Gemini's `Executing Hooks: …`), `at_rest_later` the
same pane 12 s on (the turn's summary line drawn, tmux's focus-events notice
shown). The tick that the hook's nudge started marked the first and compared
the next fire with the second: each fire went, and each was a model turn.
"""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import UTC
from pathlib import Path

import pytest
from conftest import wait_for

from rk.core.cost.unchanged import (
    SETTLE_AFTER,
    SETTLE_WINDOW,
    normalised,
    recheck_for_settling,
    screen_hash,
    settled,
)
from rk.core.log.delivery import LogLine
from rk.core.pane.screen import LAYOUTS, classify
from rk.core.pane.screen.rest import compared_lines
from rk.core.schedule.entry import CreatedBy, Entry, Every, Target
from rk.engine.runtime import Runtime
from rk.engine.tick import sweep
from rk.store.config import Settings
from rk.store.delivery_log import append_lines, read_live

FRAMES = Path(__file__).resolve().parent / "fixtures" / "turn_ends"
CLIS = ("claude", "claude-2.1.332", "codex", "gemini")
T = 1_800_000_000


def frame(cli: str, name: str, ext: str = "ansi") -> str:
    return (FRAMES / cli / f"{name}.{ext}").read_text(encoding="utf-8")


def agent_of(cli: str) -> str:
    return cli.split("-")[0]


@pytest.mark.parametrize("cli", CLIS)
@pytest.mark.parametrize("ext", ["txt", "ansi"])
def test_what_a_real_cli_draws_as_its_turn_ends_is_no_change(cli, ext):
    drawing, later = frame(cli, "turn_end_drawing", ext), frame(cli, "at_rest_later", ext)
    assert normalised(drawing) != normalised(later)  # the whole screens differ: what made each fire go
    assert screen_hash(drawing, agent_of(cli)) == screen_hash(later, agent_of(cli))
    assert screen_hash(drawing) == screen_hash(later)  # the agent unnamed: its layout found by the screen


@pytest.mark.parametrize("cli", CLIS)
def test_a_new_line_in_the_transcript_is_a_change(cli):
    later = frame(cli, "at_rest_later", "txt")
    reply = next(line for line in later.splitlines() if "Hello from the mock" in line)
    news = later.replace(reply, reply.rstrip() + "\n\n  The build failed: 3 tests.", 1)
    assert screen_hash(news, agent_of(cli)) != screen_hash(later, agent_of(cli))
    changed = later.replace("Hello from the mock", "Goodbye from the mock", 1)
    assert screen_hash(changed, agent_of(cli)) != screen_hash(later, agent_of(cli))


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_humans_draft_is_a_change(agent):
    screens = Path(__file__).resolve().parent / "fixtures" / "screens" / agent
    fresh, draft = (screens / "idle_fresh.ansi").read_text(), (screens / "draft.ansi").read_text()
    assert screen_hash(fresh, agent) != screen_hash(draft, agent)


def test_the_turn_noise_is_the_clis_own_summary_not_a_reply():
    claude = "❯ go\n\n● Done for 3s, then more\n\n✻ Churned for 3s · done 11:24 AM\n\n" + "─" * 20 + "\n❯ \n" + "─" * 20
    lines = compared_lines(claude, "claude")
    assert lines == ["❯ go", "● Done for 3s, then more", "❯"]
    codex = "› go\n\n• Worked for 3s on it\n\n  Worked for 3s • 11:24\n\n› Ask Codex to do anything\n\n  gpt-5 default"
    assert compared_lines(codex, "codex") == ["› go", "• Worked for 3s on it", "› Ask Codex to do anything"]


def test_a_screen_no_layout_reads_is_compared_whole():
    shell = "$ make test\n\n42 passed\n$ "
    assert compared_lines(shell, "") == ["$ make test", "", "42 passed", "$"]
    assert compared_lines(shell, "claude") == ["$ make test", "", "42 passed", "$"]  # no composer of its own


@pytest.mark.parametrize("cli", ["claude", "claude-2.1.332", "codex"])
def test_the_drawing_frames_read_busy_so_no_mark_is_taken_on_them(cli):
    seen = classify(frame(cli, "turn_end_drawing"), LAYOUTS, now=T, zone=UTC, hint=agent_of(cli))
    assert seen.state == "active"
    assert not settled("idle", T - 10, seen.state, T)
    rest = classify(frame(cli, "at_rest_later"), LAYOUTS, now=T, zone=UTC, hint=agent_of(cli))
    assert rest.state == "idle"
    assert settled("idle", T - 10, rest.state, T)


def test_a_pane_settles_SETTLE_AFTER_seconds_after_its_turn_end():
    assert not settled("idle", T, "idle", T + SETTLE_AFTER - 1)  # Gemini's frame reads idle while its hooks run
    assert settled("idle", T, "idle", T + SETTLE_AFTER)
    assert settled("idle", T, "", T + SETTLE_AFTER)  # no layout: the time alone
    assert settled("active", T, "active", T)  # a pane at work is printed as it is
    assert recheck_for_settling(T, T) and recheck_for_settling(T, T + SETTLE_WINDOW)
    assert not recheck_for_settling(T, T + SETTLE_WINDOW + 1)
    assert not recheck_for_settling(T, T - 1)


#: Shows the first frame until the go file exists, then the second, as Claude Code does
#: while its Stop hooks run and once they are done.
FAKE = textwrap.dedent(
    """
    import os, sys, time
    first, then, go = sys.argv[1:4]
    sys.stdout.write(open(first).read()); sys.stdout.flush()
    while not os.path.exists(go):
        time.sleep(0.01)
    sys.stdout.write("\\x1b[2J\\x1b[H" + open(then).read()); sys.stdout.flush()
    time.sleep(3600)
    """
)


@pytest.mark.tmux
@pytest.mark.shell
def test_the_tick_puts_the_mark_off_until_the_pane_settles_then_the_next_fire_skips(env, tmux_server, tmp_path):
    fake, go = tmp_path / "fake.py", tmp_path / "go"
    fake.write_text(FAKE)
    drawing, later = (FRAMES / "claude" / f"{n}.ansi" for n in ("turn_end_drawing", "at_rest_later"))
    pane = tmux_server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}",
        f"exec -a claude {sys.executable} {fake} {drawing} {later} {go}",
    ).strip()  # fmt: skip
    wait_for(lambda: "running stop hooks" in tmux_server.capture(pane), message="the turn's end drawn")
    pid = int(tmux_server.display(pane, "#{pane_pid}"))
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T}:{pid}")  # rk's Stop hook: done
    tmux_server.set_pane_option(pane, "@rk_pane_turn_end", f"ok:{T}")

    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700, exist_ok=True)
    entry = Entry(
        id="e1",
        schedule=Every(interval=3600),
        target=Target("pane", pane),
        payload="anything new?",
        only_if_changed="pane",
        created_by=CreatedBy(at=T - 3600 - 10),
    )
    (state / f"{tmux_server.name}.yaml").write_text(json.dumps({"entries": [entry.to_yaml()]}))
    log = state / f"{tmux_server.name}.log"
    append_lines(log, [LogLine(T - 10, "e1", pane, "schedule", "delivered")])
    marks = state / f"{tmux_server.name}.unchanged.json"

    def tick(at: int):
        runtime = Runtime(
            state_dir=state, settings=Settings(), environ=dict(tmux_server.env), zone=UTC, clock=lambda: at
        )
        return sweep(runtime, only=tmux_server.name)

    nudged = tick(T)  # the hook's nudge: the screen still draws the turn's end
    assert nudged.rechecks == [tmux_server.name]
    assert not marks.exists() or "e1" not in json.loads(marks.read_text())["entries"]
    assert tick(T + 1).rechecks == [tmux_server.name]  # read idle, drawn busy: still put off
    go.touch()
    wait_for(lambda: "Worked for 3s" in tmux_server.capture(pane), message="the turn's end drawn")
    assert tick(T + 2).rechecks == []
    assert json.loads(marks.read_text())["entries"]["e1"]["delivered"] == T - 10
    fired = tick(T + 3600)
    assert [d.outcome for d in fired.decisions] == ["skipped-unchanged"]
    assert [line.outcome for line in read_live(log)] == ["delivered", "skipped-unchanged"]

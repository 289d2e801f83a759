"""`delivered` only when it arrived (rk/act/echo.py `Echo`).

The echo counts only in the live composer: for a screen an agent layout reads,
the composer text the layout finds; for any other program, the text that ends
at the cursor. The submission counts only on positive evidence: the composer no
longer holds the text, or the turn started (a hook's `active`, newly or with a
newer epoch, or the layout's working state). A hook re-stamping `idle`, a
spinner, a frame that merely moved: no evidence, so `failed: …`.

Unit tests read the agents' recorded screens (tests/fixtures/screens); the
integration tests drive small raw-mode apps on a real tmux server.
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from datetime import UTC
from pathlib import Path

import pytest
from conftest import wait_for

from rk.act.deliver import deliver
from rk.act.echo import Echo
from rk.act.keys import Timing
from rk.core.environ import STATE_OPTION
from rk.core.pane.payload import needle_for
from rk.core.pane.screen import LAYOUTS, classify
from rk.tmux.frame import FRAME_FIELDS, Frame

SCREENS = Path(__file__).parent / "fixtures" / "screens"
START, END = b"\x1b[200~", b"\x1b[201~"


def frame(styled: str, state: str = "", cursor: str = "0,0") -> Frame:
    fields = tuple(state if f == STATE_OPTION else "" for f in FRAME_FIELDS)
    return Frame("%1", False, False, cursor, styled, styled, fields, rows=styled)


def screen(agent: str, name: str) -> str:
    return (SCREENS / agent / f"{name}.ansi").read_text(encoding="utf-8")


IDLE = {"claude": "idle_fresh", "codex": "idle_fresh", "gemini": "idle_fresh", "opencode": "idle"}


@pytest.mark.parametrize("agent", sorted(IDLE))
def test_the_echo_is_the_layouts_composer_and_leaving_it_is_the_evidence(agent):
    idle, draft = screen(agent, IDLE[agent]), screen(agent, "draft")
    text = classify(draft, LAYOUTS, now=0, zone=UTC).draft
    echo = Echo.of(frame(idle), needle_for(text), False)
    assert echo.agent == agent
    shown = frame(draft, f"idle:100:{1234}")
    assert echo.holds(shown) and not echo.holds(frame(idle))
    # the composer cleared: evidence; the same frame, or a hook re-stamping idle: none
    assert echo.taken(frame(idle, "idle:100:1234"), shown) == "the composer no longer holds it"
    assert echo.taken(shown, shown) == ""
    assert echo.taken(frame(draft, "idle:105:1234"), shown) == ""
    # the hooks saying the turn started: evidence, even before the screen moves
    assert echo.taken(frame(draft, "active:100:1234"), shown) == "the hooks say the turn started"
    assert echo.taken(frame(draft, "active:101"), frame(draft, "active:100")) == "the hooks say the turn started"
    assert echo.taken(frame(draft, "active:100"), frame(draft, "active:100")) == ""


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_payload_visible_in_the_transcript_is_no_echo(agent):
    """`say hello` was the last prompt: it shows above the composer, and a new
    identical one counts only once it is in the composer."""
    echo = Echo.of(frame(screen(agent, IDLE[agent])), needle_for("say hello"), False)
    after = screen(agent, "idle_after_turn")
    assert "say hello" in after and not echo.holds(frame(after))


def test_at_the_cursor_means_ending_at_the_cursor_after_it_moved():
    rows = "say hello\nsay hello\nsay hello"
    base = frame("say hello\nsay hello\n", cursor="0,2")
    echo = Echo.of(base, needle_for("say hello"), False)
    assert echo.agent == ""
    assert echo.holds(frame(rows, cursor="9,2"))  # the new copy, at the cursor
    assert not echo.holds(frame(rows, cursor="0,2"))  # the cursor did not move: the copies are old
    assert not echo.holds(frame("say hello\nsay hello\n\nsay hello", cursor="0,2"))  # elsewhere on screen
    shown = frame(rows, cursor="9,2")
    assert echo.taken(frame(rows + "\nsay hello\n", cursor="0,4"), shown)  # moved past it
    assert echo.taken(frame(rows, "idle:200", cursor="9,2"), shown) == ""  # a re-stamp moves nothing


# -- on a real tmux server --------------------------------------------------------------------

#: A composer at the bottom, the transcript of what was submitted above it.
#: argv: raw-bytes file, submissions file, behaviour:
#:   clears   Enter submits and clears the composer (agent-like);
#:   swallow  Enter is ignored, and a hook re-stamps `idle` every few ms (a new value each time);
#:   late     Enter stamps `idle` at once (OpenCode's session.created), then the app reads
#:            nothing for 4 s (creating its session) before it submits and clears;
#:   aside    input is shown on a status line at the top, the composer stays empty.
APP = r"""
import os, subprocess, sys, threading, time, tty
raw_path, out_path, how = sys.argv[1], sys.argv[2], sys.argv[3]
tty.setraw(0)
pane = os.environ["TMUX_PANE"]
if how == "swallow":
    def restamp():
        while True:
            for n in range(1, 4_000_000):  # a new value each time (the pid field counts)
                subprocess.run(["tmux", "set-option", "-p", "-t", pane, "@rk_pane_agent_state",
                                f"idle:{int(time.time())}:{n}"], check=False)
                time.sleep(0.003)
    threading.Thread(target=restamp, daemon=True).start()
raw = open(raw_path, "ab", buffering=0)
buf, transcript, aside = bytearray(), [], b""


def draw():
    rows = [b"app: " + aside] + [b"  " + t for t in transcript[-20:]] + [b"> " + bytes(buf)]
    os.write(1, b"\x1b[?2004h\x1b[H\x1b[2J" + b"\r\n".join(rows))


draw()
while True:
    data = os.read(0, 65536)
    raw.write(data)
    for b in data.replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b""):
        if b == 0x15:
            buf.clear()
            aside = b""
        elif b == 0x0D:
            if how == "late" and buf:
                subprocess.run(["tmux", "set-option", "-p", "-t", pane, "@rk_pane_agent_state",
                                f"idle:{int(time.time())}:{os.getppid()}"], check=False)
                time.sleep(4)
            if how in ("clears", "late") and buf:
                transcript.append(bytes(buf))
                with open(out_path, "ab") as f:
                    f.write(bytes(buf) + b"\n")
                buf.clear()
        elif how == "aside":
            aside += bytes([b])
        else:
            buf.append(b)
    draw()
"""

FAST = Timing(observe=(0.04, 0.08, 0.16, 0.32, 0.64), retry_observe=0.32)
#: ...and a deadline that leaves ~0.7 s of observing on after a stamp, then the clear's grace.
SHORT = Timing(observe=(0.04, 0.08, 0.16, 0.32, 0.64), retry_observe=0.32, deadline=3.0)


class App:
    def __init__(self, server, tmp_path: Path, how: str) -> None:
        script = tmp_path / "app.py"
        script.write_text(APP)
        self.raw, self.out = tmp_path / f"raw-{how}.bin", tmp_path / f"out-{how}.txt"
        argv = [sys.executable, str(script), str(self.raw), str(self.out), how]
        self.pane = server.run("new-window", "-d", "-P", "-F", "#{pane_id}", shlex.join(argv)).strip()
        wait_for(lambda: "app:" in server.capture(self.pane), message="the app")

    def submissions(self) -> list[str]:
        return self.out.read_text().splitlines() if self.out.exists() else []

    def received(self) -> bytes:
        return self.raw.read_bytes() if self.raw.exists() else b""


@pytest.mark.tmux
def test_a_hook_re_stamping_idle_over_a_composer_that_swallows_enter_is_never_delivered(tmux_server, tmp_path):
    # A stamp after the Enter is no evidence of a turn; it says the agent took input,
    # so the prompt is never typed a second time: one Enter each, then cleared.
    app = App(tmux_server, tmp_path, "swallow")
    wait_for(lambda: tmux_server.display(app.pane, "#{@rk_pane_agent_state}"), message="the re-stamps")
    results = [deliver(tmux_server, app.pane, f"wake up {i % 3}", timing=SHORT) for i in range(10)]
    assert Counter(str(r.outcome) for r in results) == Counter({"failed: submit not confirmed": 10})
    assert {r.detail for r in results} == {"a hook wrote the pane's state after Enter; not retyped; cleared=True"}
    assert app.received().count(b"\r") == 10
    assert tmux_server.capture(app.pane).rstrip().endswith(">")


@pytest.mark.tmux
def test_an_agent_that_stamps_its_state_and_shows_the_prompt_late_is_delivered_once(tmux_server, tmp_path):
    # OpenCode's first prompt of a session: session.created stamps `idle` at once, the
    # screen answers the Enter 1-9 s later under load. The short ladder (0.64 s) ends
    # long before; a recovery then would clear and paste a second copy.
    app = App(tmux_server, tmp_path, "late")
    result = deliver(tmux_server, app.pane, "first prompt", timing=FAST)
    assert (str(result.outcome), result.detail) == ("delivered", "")
    assert app.submissions() == ["first prompt"]
    assert app.received() == START + b"first prompt" + END + b"\r"


@pytest.mark.tmux
def test_identical_payloads_back_to_back_are_each_judged_by_the_new_copy(tmux_server, tmp_path):
    app = App(tmux_server, tmp_path, "clears")
    for _ in range(3):
        assert str(deliver(tmux_server, app.pane, "same words").outcome) == "delivered"
    wait_for(lambda: len(app.submissions()) == 3, message="three submissions")
    assert app.submissions() == ["same words"] * 3
    assert tmux_server.capture(app.pane).count("same words") == 3  # the transcript keeps them all in view
    assert app.received() == (START + b"same words" + END + b"\r") * 3


@pytest.mark.tmux
def test_text_shown_away_from_the_cursor_is_no_echo_and_gets_no_enter(tmux_server, tmp_path):
    app = App(tmux_server, tmp_path, "aside")
    result = deliver(tmux_server, app.pane, "shown aside")
    assert str(result.outcome) == "failed: echo not seen (payload cleared)"
    pasted = START + b"shown aside" + END
    # what it showed (on its status line) never counted; no Enter, only the clear
    assert app.received().startswith(pasted) and set(app.received()[len(pasted) :]) == {0x15}


@pytest.mark.parametrize("agent", sorted(IDLE))
def test_a_journals_recovery_sees_the_unsent_paste_in_the_composer(agent):
    """After a crash between paste and Enter there is no frame from before the
    paste: the frame now names the layout, and its composer counts as empty before."""
    draft = screen(agent, "draft")
    text = classify(draft, LAYOUTS, now=0, zone=UTC).draft
    now = frame(draft, cursor="5,5")
    echo = Echo.of(now, needle_for(text), False, before_paste=False)
    assert echo.holds(now) and echo.where(now) == "composer"
    assert not Echo.of(now, needle_for(text), False).holds(now)  # with a baseline, the same text is old
    assert echo.taken(frame(screen(agent, IDLE[agent])), now) == "the composer no longer holds it"

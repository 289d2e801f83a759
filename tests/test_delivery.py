"""Verified delivery (rk/act/deliver.py) against real tmux.

Three kinds of pane stand in for the agents rk types into:

- `cat` in a canonical-mode tty (the fixture's first pane). It never enables
  bracketed paste (mode 2004), so tmux pastes the text raw; the tty echoes each
  character as it arrives and cat prints the line again once Enter completes it.
  One copy on screen = typed but not submitted; two copies = submitted.
- `cat > FILE`: the same tty, but what was submitted lands in a file, so the
  check does not depend on what the screen can hold (20 KB does not fit).
- FAKE_AGENT: a small raw-mode program that behaves like an agent TUI. It
  enables bracketed paste, redraws its composer, treats C-u as "clear the
  composer", submits on a bare CR outside a paste, and records (a) every byte
  it received and (b) every submission. It is the only way to prove what
  really reached the application, byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import wait_for

from rk.act import deliver as delivery
from rk.act.deliver import DeliveryResult, deliver
from rk.act.keys import Timing, pane_lock
from rk.core.log.delivery import Outcome
from rk.core.pane.payload import needle_for, normalise, sanitize
from rk.tmux.server import Server, child_env

#: The shell (the CLI, files, processes, tmux): `make test`, not `make test-fast`.
pytestmark = pytest.mark.shell

START = b"\x1b[200~"
END = b"\x1b[201~"

FAKE_AGENT = r"""
import json, os, sys, tty

out_path, raw_path, ignore, collapse = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
# redraw_after: after a submit, the screen keeps showing the text this long (a
# slow TUI); hook: on a submit, report `active` the way an agent hook does.
redraw_after, hook = float(sys.argv[5]), sys.argv[6] == "1"
frozen_until = 0.0
START, END = b"\x1b[200~", b"\x1b[201~"
tty.setraw(0)
raw = open(raw_path, "ab", buffering=0)
buf = bytearray()
pending = b""
in_paste = False
submitted = 0
ignored = 0
pastes = 0  # numbers the chips, like Claude Code: never reused


def draw():
    import time
    if time.monotonic() < frozen_until:
        return
    text = buf.decode("utf-8", "replace")
    lines = text.split("\n")[-10:]
    rows = [f"fake agent: {submitted} submitted"]  # an ignored Enter shows nothing
    if collapse and "\n" in text:
        # what Claude Code does with a long paste: a chip instead of the text
        rows.append(f"> [Pasted text #{pastes} +{text.count(chr(10))} lines]")
    else:
        rows += [("> " if i == 0 else "  ") + line[-150:] for i, line in enumerate(lines)]
    os.write(1, ("\x1b[H\x1b[2J" + "\r\n".join(rows)).encode("utf-8"))


def key(b):
    global submitted, ignored, ignore
    if b == 0x0D:
        if ignore > 0:
            ignore -= 1
            ignored += 1
        elif buf:
            with open(out_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(buf.decode("utf-8", "replace")) + "\n")
            submitted += 1
            buf.clear()
            if hook:
                import subprocess, time
                subprocess.run(["tmux", "set-option", "-p", "-t", os.environ["TMUX_PANE"], "@rk_pane_agent_state",
                                f"active:{int(time.time())}"], check=False)
            if redraw_after:
                import threading, time
                global frozen_until
                frozen_until = time.monotonic() + redraw_after
                threading.Timer(redraw_after + 0.05, draw).start()
    elif b == 0x15:
        buf.clear()
    elif b == 0x7F:  # BackSpace: the last character goes
        text = buf.decode("utf-8", "replace")[:-1]
        buf[:] = text.encode("utf-8")
    elif b == 0x03:
        sys.exit(0)
    else:
        buf.append(b)


os.write(1, b"\x1b[?2004h")
draw()
while True:
    data = os.read(0, 65536)
    if not data:
        break
    raw.write(data)
    pending += data
    while pending:
        if in_paste:
            i = pending.find(END)
            if i < 0:
                cut = len(pending) - (len(END) - 1)
                if cut > 0:
                    buf.extend(pending[:cut].replace(b"\r", b"\n"))
                    pending = pending[cut:]
                break
            buf.extend(pending[:i].replace(b"\r", b"\n"))
            pending = pending[i + len(END):]
            in_paste = False
            pastes += 1
        elif pending.startswith(START):
            pending = pending[len(START):]
            in_paste = True
        elif START.startswith(pending):
            break  # a marker cut in two by the read
        else:
            key(pending[0])
            pending = pending[1:]
    draw()
"""


# -- fixtures and helpers -----------------------------------------------------------------


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path, monkeypatch):
    """Lock files go under tmp_path, never into the user's state dir."""
    monkeypatch.setenv("RK_STATE_DIR", str(tmp_path / "state"))


def first_pane(server: Server) -> str:
    return server.display("main:0.0", "#{pane_id}")


def screen_lines(server: Server, pane: str) -> list[str]:
    return [line.rstrip() for line in server.capture(pane).split("\n")]


def new_pane(server: Server, command: str) -> str:
    return server.run("new-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", command).strip()


class Agent:
    """A FAKE_AGENT pane and what it recorded."""

    def __init__(
        self,
        server: Server,
        tmp_path: Path,
        ignore_enters: int = 0,
        collapse: bool = False,
        redraw_after: float = 0.0,
        hook: bool = False,
    ) -> None:
        script = tmp_path / "fake_agent.py"
        script.write_text(FAKE_AGENT)
        self.out = tmp_path / f"submitted-{id(self)}.jsonl"
        self.raw = tmp_path / f"raw-{id(self)}.bin"
        self.server = server
        self.pane = new_pane(
            server,
            " ".join(
                shlex.quote(a)
                for a in (
                    sys.executable,
                    str(script),
                    str(self.out),
                    str(self.raw),
                    str(ignore_enters),
                    "1" if collapse else "0",
                    str(redraw_after),
                    "1" if hook else "0",
                )
            ),
        )
        wait_for(lambda: "fake agent: 0 submitted" in server.capture(self.pane), timeout=15, message="fake agent ready")

    def submissions(self) -> list[str]:
        if not self.out.exists():
            return []
        return [json.loads(line) for line in self.out.read_text(encoding="utf-8").splitlines()]

    def received(self) -> bytes:
        return self.raw.read_bytes() if self.raw.exists() else b""


def cat_to_file(server: Server, tmp_path: Path, extra: str = "") -> tuple[str, Path]:
    """A pane running `cat > FILE` in a canonical tty (after `stty EXTRA`)."""
    out = tmp_path / f"cat-{time.monotonic_ns()}.txt"
    prefix = f"stty {extra}; " if extra else ""
    pane = new_pane(server, f"sh -c {shlex.quote(prefix + 'exec cat > ' + shlex.quote(str(out)))}")
    wait_for(lambda: server.display(pane, "#{pane_current_command}") == "cat", timeout=15, message="cat running")
    return pane, out


def pasted_and_entered(text: str) -> bytes:
    """The bytes one bracketed paste of `text` plus one Enter put on the wire
    (tmux turns LF into CR inside a paste)."""
    return START + text.replace("\n", "\r").encode("utf-8") + END + b"\r"


class CountingServer(Server):
    """A Server that records every tmux invocation (argv after `-L name`)."""

    calls: list  # type: ignore[assignment]

    def run(self, *args, **kwargs):  # type: ignore[override]
        self.calls.append(args)
        return super().run(*args, **kwargs)


def counting(server: Server) -> CountingServer:
    c = CountingServer(name=server.name, socket_path=server.socket_path, env=server.env)
    object.__setattr__(c, "calls", [])
    return c


# -- sanitiser, needle (pure) -------------------------------------------------------------


def test_sanitize_turns_crlf_and_lone_cr_into_lf():
    assert sanitize("a\r\nb\rc\nd") == "a\nb\nc\nd"


def test_sanitize_strips_every_control_char_but_tab_and_newline():
    controls = "".join(chr(c) for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A, 0x0D))
    assert sanitize(f"x{controls}y") == "xy"
    assert sanitize("a\tb\nc") == "a\tb\nc"


def test_sanitize_removes_escape_sequences_introducers():
    # ESC and the one-byte CSI go; the rest of each sequence stays as inert text.
    assert sanitize("a\x1b[201~b") == "a[201~b"
    assert sanitize("\x1b]0;title\x07x") == "]0;titlex"
    assert sanitize("\x1b[31mred\x1b[0m") == "[31mred[0m"
    assert sanitize("\x9b31mz") == "31mz"
    assert "\x1b" not in sanitize("\x1b\x1b[200~\x1b") and "\x9b" not in sanitize("\x9b\x9b")


def test_sanitize_drops_trailing_blank_lines_and_keeps_the_rest():
    assert sanitize("hello\n") == "hello"
    assert sanitize("hello\n \t\n\r\n") == "hello"
    assert sanitize("\n  first\n\nlast  ") == "\n  first\n\nlast  "


def test_sanitize_keeps_unicode_dashes_and_semicolons():
    for text in ("héllo — 世界 ✓", "-n --flag", "done;", ";", "-", "é\u0301 \u00a0nbsp"):
        assert sanitize(text) == text


def test_sanitize_drops_lone_surrogates():
    assert sanitize("a\udcff\ud800b") == "ab"
    sanitize(b"caf\xe9".decode("utf-8", "surrogateescape")).encode("utf-8")  # typable


@pytest.mark.parametrize("payload", ["", "\x1b\x00\x7f\x9b", "\r\n\r\n", "  \n\t\n"])
def test_sanitize_all_control_or_blank_is_empty(payload):
    assert sanitize(payload) == ""


def test_needle_is_the_normalised_tail_of_the_last_visible_line():
    assert needle_for("first\n  second line ") == "secondline"
    assert needle_for("x" * 30 + "\n" + "ab cd " * 20) == ("abcd" * 20)[-40:]
    # a last line made only of frame glyphs and spaces does not count
    assert needle_for("real text\n\u2502 \u2500\u2500 \u2588 \u2502") == "realtext"
    assert needle_for("\u2502\u2500\n \u2588") == ""
    assert normalise("\u256d\u2500\u256e\n\u2502 a b \u2502\n\x1b[31mc\x1b[0m") == "abc"


def test_refuses_empty_and_glyph_only_payloads_without_running_tmux(tmp_path):
    server = counting(Server(name=f"rk-test-none-{os.getpid()}"))
    assert deliver(server, "%0", "\x1b\x07\r\n") == DeliveryResult(
        False, Outcome.parse("failed: payload is empty after sanitising")
    )
    result = deliver(server, "%0", "\u2500\u2500\u2500")
    assert not result.ok and str(result.outcome) == "failed: payload has nothing visible to verify"
    assert server.calls == []


# -- happy paths ----------------------------------------------------------------------------


@pytest.mark.tmux
def test_lands_and_is_submitted_in_cat(tmux_server):
    pane = first_pane(tmux_server)
    payload = "hello from rk 42"
    result = deliver(tmux_server, pane, payload)
    assert result.ok and str(result.outcome) == "delivered", result
    # Line 1 is the tty echo of the typed text, line 2 is cat's output: cat only
    # prints a line once Enter completed it, so the second copy proves the submit.
    lines = wait_for(
        lambda: (ls := screen_lines(tmux_server, pane))[:2] == [payload, payload] and ls,
        timeout=10,
        message="echo and cat's copy",
    )
    assert all(line == "" for line in lines[2:]), lines  # exactly once, nothing else
    assert tmux_server.display(pane, "#{cursor_x},#{cursor_y}") == "0,2"


@pytest.mark.tmux
def test_a_successful_delivery_is_a_handful_of_tmux_processes(tmux_server):
    pane = first_pane(tmux_server)
    server = counting(tmux_server)
    assert deliver(server, pane, "count me").ok
    calls = server.calls
    frame_reads = [c for c in calls if c[0] == "display-message"]
    sends = [c for c in calls if "if-shell" in c]
    assert len(frame_reads) + len(sends) == len(calls)
    # every screen read is display + capture in ONE process
    assert all("capture-pane" in c for c in frame_reads)
    # exactly two processes type anything: load+paste together, then Enter alone,
    # each keystroke only if the pane is not in a mode (the last word: what runs then)
    assert len(sends) == 2
    assert sends[0][0] == "load-buffer" and sends[0][-1].startswith("paste-buffer -p -d")
    assert sends[1][0] == "if-shell" and sends[1][-1].endswith("Enter") and "paste-buffer" not in sends[1][-1]
    assert calls[0][0] == "display-message"  # guard + baseline before anything is typed
    # 5 on a quiet machine (baseline, paste, 1 probe, Enter, 1 observation)
    assert 5 <= len(calls) <= 8, calls


@pytest.mark.tmux
@pytest.mark.parametrize(
    "payload",
    [
        "first line\nsecond line\n    third, indented\tand tabbed",
        "héllo — 世界 ✓",
        "-n --version",
        "-",
        "echo done;",
        ";",
        "; -x ;",
    ],
    ids=["multi-line", "unicode", "leading-dash", "lone-dash", "trailing-semicolon", "lone-semicolon", "mixed"],
)
def test_arrives_intact_in_an_agent_tui(tmux_server, tmp_path, payload):
    agent = Agent(tmux_server, tmp_path)
    result = deliver(tmux_server, agent.pane, payload)
    assert result.ok, result
    wait_for(agent.submissions, timeout=10, message="a submission")
    assert agent.submissions() == [payload]  # one submission, byte for byte
    # On the wire: one bracketed paste, then one Enter, and nothing else.
    assert agent.received() == pasted_and_entered(payload)


@pytest.mark.tmux
@pytest.mark.parametrize(
    "payload",
    ["first line\nsecond line\n    third, indented", "héllo — 世界 ✓", "-n --version", "echo done;", ";"],
    ids=["multi-line", "unicode", "leading-dash", "trailing-semicolon", "lone-semicolon"],
)
def test_arrives_intact_in_a_line_mode_app(tmux_server, tmp_path, payload):
    pane, out = cat_to_file(tmux_server, tmp_path)
    result = deliver(tmux_server, pane, payload)
    assert result.ok, result
    # cat writes what the tty handed it once Enter ended the last line
    wait_for(lambda: out.read_text(encoding="utf-8") == payload + "\n", timeout=10, message="file content")


@pytest.mark.tmux
def test_a_paste_the_agent_collapses_into_a_chip_counts_as_echo(tmux_server, tmp_path):
    # The agent shows `[Pasted text #1 +2 lines]` instead of the text, so the
    # needle never appears; the fresh chip is the echo.
    agent = Agent(tmux_server, tmp_path, collapse=True)
    payload = "line one\nline two\nthe needle line"
    result = deliver(tmux_server, agent.pane, payload)
    assert result == DeliveryResult(True, Outcome.parse("delivered"), ""), result
    wait_for(agent.submissions, timeout=10, message="a submission")
    assert agent.submissions() == [payload]
    assert agent.received() == pasted_and_entered(payload)


def _twenty_kb_lines() -> str:
    # distinct 99-char lines: a canonical tty holds at most 4095 chars per line
    return "\n".join(f"{i:05d} " + "abcdefghij" * 9 + "xyz" for i in range(205))


@pytest.mark.tmux
def test_20kb_single_line_arrives_intact_in_an_agent_tui(tmux_server, tmp_path):
    payload = " ".join(f"word{i:05d}" for i in range(2000))  # 19 999 chars, one line
    assert len(payload.encode()) >= 19_999
    agent = Agent(tmux_server, tmp_path)
    result = deliver(tmux_server, agent.pane, payload)
    assert result.ok, result
    wait_for(agent.submissions, timeout=15, message="a submission")
    assert agent.submissions() == [payload]
    assert agent.received() == pasted_and_entered(payload)


@pytest.mark.tmux
def test_20kb_multi_line_arrives_intact_in_a_line_mode_app(tmux_server, tmp_path):
    payload = _twenty_kb_lines()
    assert len(payload.encode()) >= 20_000
    pane, out = cat_to_file(tmux_server, tmp_path)
    result = deliver(tmux_server, pane, payload)
    assert result.ok, result
    wait_for(lambda: out.read_text(encoding="utf-8") == payload + "\n", timeout=15, message="file content")


@pytest.mark.tmux
def test_escape_sequences_never_reach_the_pane(tmux_server, tmp_path):
    payload = "a\x1b[201~b \x1b]0;owned\x07c \x1b[31md\x1b[0m \x9be\x1b[200~f\x1bPq\x1b\\g"
    agent = Agent(tmux_server, tmp_path)
    result = deliver(tmux_server, agent.pane, payload)
    assert result.ok, result
    wait_for(agent.submissions, timeout=10, message="a submission")
    expected = sanitize(payload)
    assert agent.submissions() == [expected]
    got = agent.received()
    # the only ESCs on the wire are the two markers tmux put around the paste,
    # so the payload's own ESC[201~ could not end the paste early
    assert got == pasted_and_entered(expected)
    assert got.count(b"\x1b") == 2 and "\x9b" not in got.decode("utf-8")


@pytest.mark.tmux
def test_a_pane_in_copy_mode_is_left_in_it_and_not_typed_into(tmux_server):
    """Copy-mode is the human's (tests/test_delivery_modes.py has every mode and policy)."""
    pane = first_pane(tmux_server)
    tmux_server.run("copy-mode", "-t", pane)
    result = deliver(tmux_server, pane, "not through copy mode")
    assert str(result.outcome) == "failed: pane is in copy-mode; nothing typed"
    assert tmux_server.display(pane, "#{pane_in_mode}") == "1"
    assert "not through copy mode" not in tmux_server.capture(pane)


@pytest.mark.tmux
def test_a_target_other_than_a_pane_id_is_resolved(tmux_server):
    payload = "by window target"
    assert deliver(tmux_server, "main:0", payload).ok
    wait_for(
        lambda: screen_lines(tmux_server, first_pane(tmux_server))[:2] == [payload, payload],
        timeout=10,
        message="echo and cat's copy",
    )


# -- failures -----------------------------------------------------------------------------


@pytest.mark.tmux
@pytest.mark.parametrize("target", ["%999", "main:9", "nosuchsession:0"])
def test_unknown_pane_fails_without_exception(tmux_server, target):
    result = deliver(tmux_server, target, "hello")
    assert not result.ok
    assert str(result.outcome).startswith("failed: ") and "\n" not in str(result.outcome)
    assert "can't find" in str(result.outcome), str(result.outcome)


@pytest.mark.tmux
def test_dead_pane_fails_and_nothing_is_typed(tmux_server):
    # remain-on-exit must be in force before the command exits, hence global
    tmux_server.run("set-option", "-g", "remain-on-exit", "on")
    pane = new_pane(tmux_server, "true")
    wait_for(lambda: tmux_server.display(pane, "#{pane_dead}") == "1", timeout=10, message="pane dead")
    server = counting(tmux_server)
    result = deliver(server, pane, "hello")
    assert result == DeliveryResult(False, Outcome.parse(f"failed: pane {pane} is dead"), "")
    assert not any(c[0] == "if-shell" for c in server.calls)  # nothing was sent


@pytest.mark.tmux
def test_server_not_running_fails_without_exception(tmux_server):
    ghost = Server(name=tmux_server.name + "-ghost", env=tmux_server.env)
    result = deliver(ghost, "%0", "hello")
    assert not result.ok and str(result.outcome).startswith("failed: ") and "\n" not in str(result.outcome)
    assert not ghost.is_live()  # and it did not start one


@pytest.mark.tmux
def test_no_echo_means_no_enter_and_nothing_left_typed(tmux_server, tmp_path):
    # `stty -echo`: the tty buffers the typed line but shows nothing. If rk had
    # pressed Enter, cat would have written the payload into the file; if rk had
    # left it typed, the marker line below would come out glued to it.
    pane, out = cat_to_file(tmux_server, tmp_path, extra="-echo")
    started = time.monotonic()
    result = deliver(tmux_server, pane, "never echoed 123")
    assert result == DeliveryResult(False, Outcome.parse("failed: echo not seen (payload cleared)"), "")
    assert time.monotonic() - started >= Timing.settle + (Timing.probe_captures - 1) * Timing.probe_interval
    assert out.read_text() == ""
    tmux_server.send_keys(pane, "-l", "marker")
    tmux_server.send_keys(pane, "Enter")
    wait_for(lambda: out.read_text() != "", timeout=10, message="marker line")
    assert out.read_text() == "marker\n"


@pytest.mark.tmux
def test_deadline_before_enter_still_clears_what_was_typed(tmux_server, tmp_path):
    pane, out = cat_to_file(tmux_server, tmp_path, extra="-echo")
    result = deliver(tmux_server, pane, "out of time", timing=Timing(deadline=0.3))
    assert result == DeliveryResult(
        False, Outcome.parse("failed: deadline exceeded before Enter (payload cleared)"), ""
    )
    tmux_server.send_keys(pane, "-l", "marker")
    tmux_server.send_keys(pane, "Enter")
    wait_for(lambda: out.read_text() != "", timeout=10, message="marker line")
    assert out.read_text() == "marker\n"


@pytest.mark.tmux
def test_an_ignored_enter_is_recovered_once_without_a_double_submit(tmux_server, tmp_path):
    agent = Agent(tmux_server, tmp_path, ignore_enters=1)
    payload = "second time lucky"
    result = deliver(tmux_server, agent.pane, payload)
    assert result == DeliveryResult(True, Outcome.parse("delivered"), "after one recovery")
    wait_for(agent.submissions, timeout=10, message="a submission")
    assert agent.submissions() == [payload]
    one = START + payload.encode() + END + b"\r"
    # paste, Enter (ignored), C-u until clean, paste again, Enter
    assert re.fullmatch(re.escape(one) + b"\x15+" + re.escape(one), agent.received()), agent.received()


@pytest.mark.tmux
@pytest.mark.tmux
def test_an_agent_slow_to_redraw_after_enter_gets_no_recovery(tmux_server, tmp_path):
    """The Enter landed, the screen just has not moved yet (OpenCode's first
    prompt): waiting longer than 0.64 s means no clear and no second paste,
    which would have left a copy behind or submitted twice."""
    agent = Agent(tmux_server, tmp_path, redraw_after=2.5)
    result = deliver(tmux_server, agent.pane, "slow to redraw")
    assert str(result.outcome) == "delivered" and "recovery" not in result.detail, result
    assert agent.submissions() == ["slow to redraw"]
    assert agent.received() == pasted_and_entered("slow to redraw")  # one paste, one Enter, no C-u


@pytest.mark.tmux
def test_a_hook_reporting_active_is_evidence_the_enter_landed(tmux_server, tmp_path):
    """Slower to redraw than the whole observation ladder, but its hook says it
    took the prompt: that is the frame changing."""
    agent = Agent(tmux_server, tmp_path, redraw_after=30, hook=True)
    result = deliver(tmux_server, agent.pane, "the hook says active")
    assert str(result.outcome) == "delivered" and "recovery" not in result.detail, result
    assert agent.submissions() == ["the hook says active"]
    assert agent.received() == pasted_and_entered("the hook says active")


def test_enter_never_taking_effect_fails_and_leaves_the_composer_clean(tmux_server, tmp_path):
    agent = Agent(tmux_server, tmp_path, ignore_enters=99)
    result = deliver(tmux_server, agent.pane, "stuck forever")
    assert not result.ok and str(result.outcome) == "failed: submit not confirmed", result
    assert "cleared=True" in result.detail
    assert agent.submissions() == []
    lines = screen_lines(tmux_server, agent.pane)
    assert lines[0] == "fake agent: 0 submitted" and lines[1] == ">", lines
    assert agent.received().endswith(b"\x15")  # the last thing typed was a clear


# -- locking --------------------------------------------------------------------------------


@pytest.mark.tmux
def test_concurrent_deliveries_into_one_pane_do_not_interleave(tmux_server, tmp_path):
    agent = Agent(tmux_server, tmp_path)
    payloads = [f"message number {i} from thread {i}" for i in range(3)]
    results: list[DeliveryResult] = []
    barrier = threading.Barrier(len(payloads))

    def send(p):
        barrier.wait()
        results.append(deliver(tmux_server, agent.pane, p, timing=Timing(lock_wait=30)))

    threads = [threading.Thread(target=send, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [str(r.outcome) for r in results] == ["delivered"] * len(payloads), results
    wait_for(lambda: len(agent.submissions()) == len(payloads), timeout=10, message="all submissions")
    assert sorted(agent.submissions()) == sorted(payloads)


@pytest.mark.tmux
def test_concurrent_deliveries_into_different_panes_each_get_their_own_text(tmux_server, tmp_path):
    # The named buffer is server-global: without the buffer lock one delivery
    # can paste (or delete) the text another has just loaded. Payloads are
    # large and there are several rounds so the race shows when the lock is
    # missing (measured: at least one of six rounds collides in most runs without it).
    agents = [Agent(tmux_server, tmp_path) for _ in range(4)]
    rounds = 6
    for n in range(rounds):
        texts = {a.pane: f"round {n} for pane {a.pane} only " * 500 + "end" for a in agents}
        results: dict[str, DeliveryResult] = {}
        barrier = threading.Barrier(len(agents))

        def send(agent, barrier=barrier, results=results, texts=texts):
            barrier.wait()
            results[agent.pane] = deliver(tmux_server, agent.pane, texts[agent.pane])

        threads = [threading.Thread(target=send, args=(a,)) for a in agents]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(results) == len(agents) and all(r.ok for r in results.values()), (n, results)
        for agent in agents:
            wait_for(lambda agent=agent, n=n: len(agent.submissions()) == n + 1, timeout=10, message="a submission")
            assert agent.submissions()[-1] == texts[agent.pane]


_HOLD_LOCK = r"""
import sys, time
from rk.act.keys import buffer_lock, pane_lock
from rk.tmux.server import Server

kind, server, name, seconds = sys.argv[1], Server(name=sys.argv[2]), sys.argv[3], float(sys.argv[4])
with (pane_lock if kind == "pane" else buffer_lock)(server, name, timeout=10):
    print("held", flush=True)
    time.sleep(seconds)
"""


def hold_lock(server: Server, kind: str, name: str, seconds: float) -> subprocess.Popen:
    """Another process holding a delivery lock; returns once it holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, kind, server.name, name, str(seconds)],
        stdout=subprocess.PIPE,
        env={**child_env(dict(os.environ)), "PYTHONPATH": str(Path(delivery.__file__).resolve().parents[2])},
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.tmux
def test_another_process_holding_the_pane_lock_blocks_delivery(tmux_server):
    pane = first_pane(tmux_server)
    holder = hold_lock(tmux_server, "pane", pane, 1.5)
    try:
        # a short wait gives up with nothing typed
        busy = deliver(tmux_server, pane, "too early", timing=Timing(lock_wait=0.2))
        assert busy == DeliveryResult(
            False, Outcome.parse("failed: pane busy: another delivery into it did not finish")
        )
        assert screen_lines(tmux_server, pane)[0] == ""
        # a normal wait goes through once the other process lets go
        started = time.monotonic()
        result = deliver(tmux_server, pane, "after the lock")
        assert result.ok, result
        assert holder.wait(10) == 0
        assert time.monotonic() - started > 0.5
    finally:
        holder.kill()
        holder.wait()
    lines = screen_lines(tmux_server, pane)
    assert lines[:3] == ["after the lock", "after the lock", ""], lines


@pytest.mark.tmux
def test_another_process_holding_the_buffer_lock_blocks_the_paste(tmux_server):
    pane = first_pane(tmux_server)
    holder = hold_lock(tmux_server, "buffer", "rk-cron-send", 3)
    try:
        # a different buffer name is a different lock
        assert deliver(tmux_server, pane, "own buffer", buffer="rk-other").ok
        result = deliver(tmux_server, pane, "blocked", timing=Timing(deadline=0.5))
        assert str(result.outcome) == "failed: buffer busy: another delivery held it too long", result
    finally:
        holder.kill()
        holder.wait()
    wait_for(
        lambda: screen_lines(tmux_server, pane)[:3] == ["own buffer", "own buffer", ""],
        timeout=10,
        message="only the first delivery on screen",
    )
    assert "blocked" not in tmux_server.capture(pane)


def test_lock_files_are_private(tmp_path):
    with pane_lock(Server(name="whatever"), "%1", timeout=1):
        pass
    locks = list((tmp_path / "state" / "locks").iterdir())
    assert len(locks) == 1
    assert (locks[0].stat().st_mode & 0o777) == 0o600
    assert ((tmp_path / "state" / "locks").stat().st_mode & 0o777) == 0o700

"""A human's tmux mode is theirs: on a real tmux server, a pane in copy-mode
(scrolled, with a selection), view-mode or clock-mode is held like a draft under
every deliver policy, the mode is still on afterwards, nothing is typed, and the
outcome names the mode; once the human leaves it, the held fire goes out. A
human who enters copy-mode mid-delivery is left in it, and no key goes into it."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.act.deliver import deliver
from rk.act.intents import pending_path
from rk.act.keys import Timing
from rk.core.schedule.dispose import Seen, deliver_policy, held_mode
from rk.core.schedule.entry import Deliver
from rk.engine.runtime import Runtime
from rk.engine.tick import sweep
from rk.store.delivery_log import read_live
from rk.tmux.server import Server

T0 = 1_800_000_000
START_PASTE = b"\x1b[200~"
MODES = ("copy-mode", "view-mode", "clock-mode")
POLICIES = ("skip-if-busy", "when-idle", "immediate")


def rk(args, env, check=True):
    return run_rk(args, env, check=check)


def new_pane(server, command: str) -> str:
    return server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip()


def agent_cat(server, tmp_path: Path) -> tuple[str, Path]:
    """`cat > FILE` after 200 lines of history, vouched for as an idle agent by its
    hook state (its own pid): what reaches the program lands in FILE."""
    received = tmp_path / f"received-{len(list(tmp_path.glob('received-*')))}"
    script = f"seq 1 200; exec cat > {shlex.quote(str(received))}"
    pane = new_pane(server, f"sh -c {shlex.quote(script)}")
    wait_for(lambda: server.display(pane, "#{pane_current_command}") == "cat", message="cat running")
    pid = server.display(pane, "#{pane_pid}")
    server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}:{pid}")
    return pane, received


def enter_mode(server, pane: str, mode: str) -> None:
    """Put `pane` in `mode` as a human would: copy-mode scrolled up with a selection."""
    if mode == "copy-mode":
        server.run("copy-mode", "-t", pane)
        server.run("send-keys", "-t", pane, "-X", "-N", "30", "cursor-up")
        server.run("send-keys", "-t", pane, "-X", "begin-selection")
        server.run("send-keys", "-t", pane, "-X", "-N", "3", "cursor-up")
        wait_for(lambda: server.display(pane, "#{selection_present}") == "1", message="a selection")
    elif mode == "view-mode":
        server.run("run-shell", "-t", pane, "echo the output a human is reading")
    else:
        server.run("clock-mode", "-t", pane)
    wait_for(lambda: server.display(pane, "#{pane_in_mode} #{pane_mode}") == f"1 {mode}", message=mode)


def mode_of(server, pane: str) -> str:
    return server.display(pane, "#{pane_in_mode}:#{pane_mode}:#{selection_present}:#{scroll_position}")


def add(env, server, *args) -> str:
    out = rk(["cron", "add", *args, "--json", "-L", server.name], dict(env, RK_NOW=str(T0)))
    return json.loads(out.stdout)["result"]["id"]


def tick(env, server, at: int, **runtime) -> dict[str, str]:
    result = sweep(Runtime.from_environ(dict(env, RK_NOW=str(at)), **runtime), only=server.name)
    return {d.entry: d.outcome for d in result.decisions}


def logged(env, server) -> list[tuple[str, str]]:
    return [(line.entry, line.outcome) for line in read_live(Path(env["RK_STATE_DIR"]) / f"{server.name}.log")]


@pytest.mark.tmux
@pytest.mark.shell
@pytest.mark.parametrize("mode", MODES)
def test_a_pane_in_a_mode_is_held_under_every_policy_and_the_mode_stays(env, tmux_server, tmp_path, mode):
    pane, received = agent_cat(tmux_server, tmp_path)
    ids = {p: add(env, tmux_server, f"sent by {p}", "--every", "30s", "--pane", pane, "--deliver", p) for p in POLICIES}
    enter_mode(tmux_server, pane, mode)
    before = mode_of(tmux_server, pane)
    screen = tmux_server.capture(pane)

    assert tick(env, tmux_server, T0 + 30) == {
        ids["skip-if-busy"]: f"skipped-busy: {mode}",
        ids["when-idle"]: f"held-busy: {mode}",
        ids["immediate"]: f"held-busy: {mode}",
    }
    assert logged(env, tmux_server) == [(ids["skip-if-busy"], f"skipped-busy: {mode}")]  # holds are not logged
    assert mode_of(tmux_server, pane) == before  # still in it, same scroll, same selection
    assert tmux_server.capture(pane) == screen and not received.read_text()  # nothing typed

    # the human leaves the mode: the held fires go out, one per tick (the skipped one is not due again
    # yet): the second meets the turn the first may have started (`rk.core.schedule.dispose.Seen.typed`)
    tmux_server.run("copy-mode", "-q", "-t", pane)
    wait_for(lambda: tmux_server.display(pane, "#{pane_in_mode}") == "0", message="out of the mode")
    first = tick(env, tmux_server, T0 + 31)
    assert sorted(first.values()) == ["delivered", "held-busy: active"], first
    rest = next(entry for entry, outcome in first.items() if outcome != "delivered")
    assert tick(env, tmux_server, T0 + 32) == {rest: "delivered"}
    wait_for(lambda: received.read_text().count("\n") == 2, message="both held payloads")
    assert sorted(received.read_text().splitlines()) == ["sent by immediate", "sent by when-idle"]


@pytest.mark.tmux
@pytest.mark.shell
def test_a_held_mode_expires_like_other_holds(env, tmux_server, tmp_path):
    pane, received = agent_cat(tmux_server, tmp_path)
    entry = add(env, tmux_server, "too late", "--every", "24h", "--pane", pane, "--deliver", "when-idle")
    enter_mode(tmux_server, pane, "copy-mode")
    assert tick(env, tmux_server, T0 + 86400) == {entry: "held-busy: copy-mode"}
    assert tick(env, tmux_server, T0 + 86400 + 3 * 3600) == {entry: "held-expired: copy-mode"}
    assert tmux_server.display(pane, "#{pane_in_mode}") == "1" and not received.read_text()


@pytest.mark.tmux
@pytest.mark.shell
def test_the_last_look_before_typing_holds_a_mode_entered_after_the_enumeration(env, tmux_server, tmp_path):
    """The tick saw no mode; the human entered copy-mode just before the
    delivery's baseline: the guard reads the mode from the baseline frame."""
    pane, received = agent_cat(tmux_server, tmp_path)
    ids = {p: add(env, tmux_server, f"sent by {p}", "--every", "30s", "--pane", pane, "--deliver", p) for p in POLICIES}

    def deliver_after_the_human(server, target, payload, guard=None, intent=None):
        if tmux_server.display(target, "#{pane_in_mode}") == "0":
            enter_mode(tmux_server, target, "copy-mode")
        return deliver(server, target, payload, guard=guard, intent=intent)

    decisions = tick(env, tmux_server, T0 + 30, deliver=deliver_after_the_human)
    assert decisions == {
        ids["skip-if-busy"]: "skipped-busy: copy-mode",
        ids["when-idle"]: "held-busy: copy-mode",
        ids["immediate"]: "held-busy: copy-mode",
    }
    assert tmux_server.display(pane, "#{pane_in_mode}:#{selection_present}") == "1:1" and not received.read_text()


@pytest.mark.tmux
@pytest.mark.shell
def test_rk_cron_run_and_rk_send_hold_a_mode_too(env, tmux_server, tmp_path):
    pane, received = agent_cat(tmux_server, tmp_path)
    entry = add(env, tmux_server, "by hand", "--every", "24h", "--pane", pane, "--deliver", "skip-if-busy")
    enter_mode(tmux_server, pane, "clock-mode")
    out = rk(["cron", "run", entry, "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 5)))
    assert json.loads(out.stdout)["result"]["outcome"] == "skipped-busy: clock-mode"
    sent = rk(["send", "sent now", "--pane", pane, "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 6)), 0)
    assert json.loads(sent.stdout)["result"]["outcome"] == "held-busy: clock-mode", sent.stdout
    assert tmux_server.display(pane, "#{pane_in_mode} #{pane_mode}") == "1 clock-mode" and not received.read_text()


@pytest.mark.tmux
@pytest.mark.shell
def test_deliver_without_a_guard_refuses_a_mode_instead_of_cancelling_it(tmux_server, tmp_path):
    pane, received = agent_cat(tmux_server, tmp_path)
    enter_mode(tmux_server, pane, "copy-mode")
    before = mode_of(tmux_server, pane)
    result = deliver(tmux_server, pane, "not into copy-mode")
    assert str(result.outcome) == "failed: pane is in copy-mode; nothing typed"
    assert mode_of(tmux_server, pane) == before and not received.read_text()


#: A composer that enters copy-mode on its own pane when the first paste
#: arrives (as if a human pressed prefix-[ right then), and records every byte.
MODE_ON_PASTE = r"""
import os, subprocess, sys, tty
raw_path, out_path = sys.argv[1], sys.argv[2]
tty.setraw(0)
os.write(1, b"\x1b[?2004h\x1b[H\x1b[2Jready\r\n> ")
buf, entered = bytearray(), False
raw = open(raw_path, "ab", buffering=0)
while True:
    data = os.read(0, 65536)
    raw.write(data)
    if b"\r" in data:
        open(out_path, "a").write(buf.decode() + "\n")
        buf.clear()
    elif b"\x15" in data:
        buf.clear()
    else:
        buf.extend(data.replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b""))
    os.write(1, b"\x1b[2K\r> " + bytes(buf))
    if buf and not entered:
        entered = True
        subprocess.run(["tmux", "copy-mode", "-t", os.environ["TMUX_PANE"]], check=True)
"""


@pytest.mark.tmux
@pytest.mark.shell
def test_a_human_entering_copy_mode_mid_delivery_is_left_in_it(tmux_server, tmp_path):
    script = tmp_path / "mode_on_paste.py"
    script.write_text(MODE_ON_PASTE)
    raw, out = tmp_path / "raw.bin", tmp_path / "submitted.txt"
    pane = new_pane(tmux_server, shlex.join([sys.executable, str(script), str(raw), str(out)]))
    wait_for(lambda: "ready" in tmux_server.capture(pane), message="the composer")

    result = deliver(tmux_server, pane, "mid-delivery", timing=Timing(deadline=1.5, cleanup_grace=0.5))
    assert str(result.outcome) == "failed: pane entered copy-mode before Enter; the payload may remain in the composer"
    assert result.leftover
    assert tmux_server.display(pane, "#{pane_in_mode} #{pane_mode}") == "1 copy-mode"
    assert raw.read_bytes() == START_PASTE + b"mid-delivery\x1b[201~"  # no Enter, no C-u, nothing into the mode
    assert not out.exists()

    # The next delivery while the human is still in copy-mode: refused, the mode kept, nothing typed.
    again = deliver(tmux_server, pane, "still reading")
    assert str(again.outcome) == "failed: pane is in copy-mode; nothing typed"
    assert raw.read_bytes() == START_PASTE + b"mid-delivery\x1b[201~"

    # Once they leave it, the left text is cleared first (the pending marker), then the next one goes in alone.
    tmux_server.run("copy-mode", "-q", "-t", pane)
    wait_for(lambda: tmux_server.display(pane, "#{pane_in_mode}") == "0", message="out of copy-mode")
    assert str(deliver(tmux_server, pane, "after the mode").outcome) == "delivered"
    wait_for(out.exists, message="a submission")
    assert out.read_text() == "after the mode\n"


@pytest.mark.tmux
@pytest.mark.shell
def test_text_a_mode_kept_from_being_cleared_is_cleared_before_anything_is_typed(tmux_server, tmp_path):
    """An earlier payload sits in the line (its pending marker says so) and the
    human is in copy-mode when the next delivery starts, so the clear is refused;
    they leave the mode before its baseline: the line is cleared first, never glued."""
    pane, received = agent_cat(tmux_server, tmp_path)
    tmux_server.send_keys(pane, "-l", "left over ")
    wait_for(lambda: "left over" in tmux_server.capture(pane), message="the left text")
    Path(pending_path(tmux_server, pane)).parent.mkdir(parents=True, exist_ok=True)
    Path(pending_path(tmux_server, pane)).write_text("1")

    first = [True]

    class HumanInModeForTheFirstClear(Server):
        def run(self, *args, **kwargs):
            if first[0] and "if-shell" in args and args[-1].endswith("C-u"):
                first[0] = False
                super().run("copy-mode", "-t", pane)
                try:
                    return super().run(*args, **kwargs)
                finally:
                    super().run("copy-mode", "-q", "-t", pane)
            return super().run(*args, **kwargs)

    server = HumanInModeForTheFirstClear(name=tmux_server.name, env=tmux_server.env)
    assert str(deliver(server, pane, "alone").outcome) == "delivered"
    wait_for(lambda: received.read_text(), message="the submitted line")
    assert received.read_text() == "alone\n"
    assert not Path(pending_path(tmux_server, pane)).exists()


@pytest.mark.parametrize(
    "seen, policy, want",
    [
        (Seen("idle", mode="copy-mode"), Deliver.SKIP_IF_BUSY, "skipped-busy: copy-mode"),
        (Seen("idle", mode="view-mode"), Deliver.WHEN_IDLE, "held-busy: view-mode"),
        (Seen("idle", mode="clock-mode"), Deliver.IMMEDIATE, "held-busy: clock-mode"),
        (Seen("active", mode="copy-mode"), Deliver.IMMEDIATE, "held-busy: copy-mode"),  # immediate sends to active
        (Seen("waiting", mode="copy-mode"), Deliver.IMMEDIATE, "held-busy: copy-mode"),  # and to a hooks-only waiting
        (Seen("idle", draft=True, mode="copy-mode"), Deliver.SKIP_IF_BUSY, "skipped-busy: copy-mode"),
        (Seen("limited", mode="copy-mode"), Deliver.SKIP_IF_BUSY, "skipped-limited"),
        (Seen("idle", dialog=True, mode="copy-mode"), Deliver.SKIP_IF_BUSY, "skipped-busy: waiting"),
        (Seen("idle", mode="copy-mode"), Deliver.WHEN_IDLE, "held-busy: copy-mode"),
    ],
)
def test_a_mode_is_a_blocker_like_a_draft(seen, policy, want):
    assert deliver_policy(policy, seen, T0, T0 + 60).text == want
    assert deliver_policy(policy, seen, T0, T0 + 3 * 3600).text.split(":")[0] in (
        "held-expired",
        "skipped-busy",
        "skipped-limited",
    )


def test_the_held_name_of_a_mode():
    assert held_mode(True, "copy-mode") == "copy-mode"
    assert held_mode(True, "") == "pane-mode"
    assert held_mode(False, "copy-mode") == ""


@pytest.mark.tmux
@pytest.mark.shell
def test_two_entries_due_every_poll_into_one_agent_take_turns(env, tmux_server, tmp_path):
    """One prompt per agent pane per tick; the fire held behind the other's is the longest-waiting
    at the next tick and goes first (`Evaluation.in_typing_order`): neither entry starves."""
    pane, received = agent_cat(tmux_server, tmp_path)
    first = add(env, tmux_server, "from a", "--every", "30s", "--pane", pane)
    second = add(env, tmux_server, "from b", "--every", "30s", "--pane", pane)
    went = []
    for at in (T0 + 30, T0 + 60, T0 + 90):
        said = tick(env, tmux_server, at)
        assert sorted(said.values()) == ["delivered", "held-busy: active"], said
        went += [entry for entry, outcome in said.items() if outcome == "delivered"]
    assert went == [first, second, first]
    wait_for(lambda: received.read_text().splitlines() == ["from a", "from b", "from a"], message="in turn")

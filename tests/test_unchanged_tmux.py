"""only_if_changed on a real tmux server: an app whose screen at rest only blinks a
spinner, a clock and counters (`tests/fixtures/blinking_app.py`) is not prompted
again (`skipped-unchanged`), and is once its text changes; `scope` on a wake
entry compares the panes it watches. The clock is rk's fake one (RK_NOW); the
app's states and turn ends are written as an agent's hooks would."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.store.delivery_log import read_live

pytestmark = [pytest.mark.tmux, pytest.mark.shell]

APP = Path(__file__).resolve().parent / "fixtures" / "blinking_app.py"
T0 = 1_800_000_000


def start_app(server, tmp_path: Path, name: str) -> tuple[str, Path, Path]:
    """A window running the app; (pane, the file it appends submissions to, its trigger file)."""
    received, trigger = tmp_path / f"{name}.received", tmp_path / f"{name}.trigger"
    pane = server.run(
        "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", f"exec {sys.executable} {APP} {received} {trigger}"
    ).strip()
    wait_for(lambda: "Nothing to report" in server.capture(pane), timeout=15, message="the app drawn")
    return pane, received, trigger


def at_rest(server, pane: str, since: int, turn_end: int) -> None:
    """What an agent's hooks write: at rest since `since`, its last turn ended at `turn_end`."""
    server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{since}")
    server.set_pane_option(pane, "@rk_pane_turn_end", f"ok:{turn_end}")


def add(env, server, *args) -> str:
    out = run_rk(
        ["cron", "add", *args, "--any-program", "--json", "-L", server.name], {**env, "RK_NOW": str(T0)}, check=True
    )
    return json.loads(out.stdout)["result"]["id"]


def tick(env, server, at: int) -> dict[str, str]:
    out = run_rk(["cron", "tick", "-L", server.name, "--json"], {**env, "RK_NOW": str(at)}, check=True)
    return {d["entry"]: d["outcome"] for d in json.loads(out.stdout)["result"]["decisions"]}


def submitted(received: Path) -> list[str]:
    return received.read_text().splitlines() if received.exists() else []


def blinked(server, pane: str) -> None:
    """Wait until the screen moved (the spinner or the clock), proving a raw comparison would differ."""
    before = server.capture(pane)
    wait_for(lambda: server.capture(pane) != before, timeout=10, message="the spinner to move")


def test_a_screen_that_only_blinks_is_skipped_and_new_text_is_prompted(env, tmux_server, tmp_path):
    pane, received, trigger = start_app(tmux_server, tmp_path, "app")
    at_rest(tmux_server, pane, T0 - 100, T0 - 100)
    entry = add(env, tmux_server, "anything new?", "--every", "1m", "--pane", pane, "--only-if-changed")
    assert tick(env, tmux_server, T0 + 60) == {entry: "delivered"}  # the first fire always goes
    wait_for(lambda: submitted(received) == ["anything new?"], message="the first prompt submitted")

    at_rest(tmux_server, pane, T0 + 70, T0 + 70)  # the agent answered
    assert tick(env, tmux_server, T0 + 80) == {}  # not due: this tick marks the answer
    marks = Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.unchanged.json"
    assert stat.S_IMODE(marks.stat().st_mode) == 0o600
    assert json.loads(marks.read_text())["entries"][entry]["delivered"] == T0 + 60

    blinked(tmux_server, pane)
    dry = run_rk(["cron", "tick", "-L", tmux_server.name, "--dry-run"], {**env, "RK_NOW": str(T0 + 120)}, check=True)
    assert f"{entry} schedule {pane} skipped-unchanged" in dry.stdout  # said, and nothing written
    assert tick(env, tmux_server, T0 + 120) == {entry: "skipped-unchanged"}
    blinked(tmux_server, pane)
    assert tick(env, tmux_server, T0 + 180) == {entry: "skipped-unchanged"}
    assert submitted(received) == ["anything new?"]

    trigger.write_text("● The build finished: 3 failures.")
    wait_for(lambda: "3 failures" in tmux_server.capture(pane), message="the new text drawn")
    assert tick(env, tmux_server, T0 + 240) == {entry: "delivered"}
    wait_for(lambda: submitted(received) == ["anything new?"] * 2, message="prompted again")
    outcomes = [line.outcome for line in read_live(Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.log")]
    assert outcomes == ["delivered", "skipped-unchanged", "skipped-unchanged", "delivered"]


def test_a_new_turn_or_a_lost_marks_file_lets_the_fire_go(env, tmux_server, tmp_path):
    pane, received, _ = start_app(tmux_server, tmp_path, "app")
    at_rest(tmux_server, pane, T0 - 100, T0 - 100)
    entry = add(env, tmux_server, "status?", "--every", "1m", "--pane", pane, "--only-if-changed", "pane")
    assert tick(env, tmux_server, T0 + 60) == {entry: "delivered"}
    at_rest(tmux_server, pane, T0 + 70, T0 + 70)
    assert tick(env, tmux_server, T0 + 80) == {}
    at_rest(tmux_server, pane, T0 + 100, T0 + 100)  # a human's turn since the answer
    assert tick(env, tmux_server, T0 + 120) == {entry: "delivered"}
    at_rest(tmux_server, pane, T0 + 130, T0 + 130)
    assert tick(env, tmux_server, T0 + 140) == {}
    (Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.unchanged.json").write_text("{not json")
    assert tick(env, tmux_server, T0 + 180) == {entry: "delivered"}  # no mark: never a wrong skip
    wait_for(lambda: len(submitted(received)) == 3, message="three prompts")


def test_scope_on_a_wake_entry_compares_the_watched_panes(env, tmux_server, tmp_path):
    target, received, _ = start_app(tmux_server, tmp_path, "operator")
    worker, _, trigger = start_app(tmux_server, tmp_path, "worker")
    at_rest(tmux_server, target, T0 - 100, T0 - 100)
    at_rest(tmux_server, worker, T0 - 100, T0 - 100)
    entry = add(
        env,
        tmux_server,
        "review the workers",
        *("--every", "1m", "--wake-on", "agent-state-change", "--pane", target, "--only-if-changed", "scope"),
    )
    assert tick(env, tmux_server, T0 + 60) == {entry: "delivered"}
    at_rest(tmux_server, target, T0 + 70, T0 + 70)
    assert tick(env, tmux_server, T0 + 80) == {}
    mark = json.loads((Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.unchanged.json").read_text())
    assert list(mark["entries"][entry]["panes"]) == [worker]  # the watched pane, not the target

    trigger.write_text("● target pane text changes do not matter; this is the worker")
    wait_for(lambda: "the worker" in tmux_server.capture(worker), message="the worker's new text")
    assert tick(env, tmux_server, T0 + 120) == {entry: "delivered"}  # the worker's screen changed
    at_rest(tmux_server, target, T0 + 130, T0 + 130)
    assert tick(env, tmux_server, T0 + 140) == {}
    blinked(tmux_server, worker)
    assert tick(env, tmux_server, T0 + 180) == {entry: "skipped-unchanged"}  # only its spinner moved
    assert submitted(received) == ["review the workers"] * 2

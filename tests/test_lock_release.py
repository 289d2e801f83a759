"""The server's lock is let go while a tick types (specs/cron.md, "The tick"):
changes of the entries file go through while a slow delivery is under way, a
change that lands before the paste wins, one that lands after it does not
recall the prompt, and a second tick leaves the first one's fires alone."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.log.delivery import LogLine
from rk.host.lock import LockHeld, acquire, claimed, release
from rk.store.delivery_log import read_live

pytestmark = pytest.mark.shell

T0 = 1_800_000_000

#: A program that takes its time to act on Enter, like an agent busy redrawing:
#: it echoes what it is given, and `delay` s after an Enter records the line as
#: one submission and shows a fresh prompt. Ctrl-U clears the line.
SLOW_APP = textwrap.dedent("""\
    import os, sys, time, tty
    out, delay = sys.argv[1], float(sys.argv[2])
    tty.setraw(0)
    line = ""
    os.write(1, b"> ")
    while True:
        data = os.read(0, 4096).decode("utf-8", "replace")
        open(out + ".seen", "a").write(data)
        for ch in data.replace("\\x1b[200~", "").replace("\\x1b[201~", ""):
            if ch == "\\r":
                time.sleep(delay)
                with open(out, "a") as fh:
                    fh.write(line + "\\n")
                line = ""
                os.write(1, b"\\r\\n> ")
            elif ch == "\\x15":
                line = ""
                os.write(1, b"\\r\\x1b[2K> ")
            elif ch >= " ":
                line += ch
                os.write(1, ch.encode())
    """)


def rk(args, env, check=False):
    return run_rk(args, env, check=check)


def log_lines(env, slug: str) -> list[LogLine]:
    return list(read_live(Path(env["RK_STATE_DIR"]) / f"{slug}.log"))


def slow_panes(server, tmp_path: Path, n: int, delay: float) -> list[tuple[str, Path]]:
    """`n` panes running SLOW_APP: (pane id, the file of its submissions)."""
    app = tmp_path / "slow_app.py"
    app.write_text(SLOW_APP)
    panes = []
    for i in range(n):
        got = tmp_path / f"got-{i}.txt"
        got.write_text("")
        cmd = f"exec {sys.executable} {app} {got} {delay}"
        pane = server.run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", cmd).strip()
        wait_for(lambda p=pane: server.capture(p).startswith("> "), message=f"the app's prompt in {pane}")
        panes.append((pane, got))
    return panes


def add(env, server, payload: str, pane: str) -> str:
    out = rk(
        ["cron", "add", payload, "--every", "1m", "--pane", pane, "--any-program", "--json", "-L", server.name],
        dict(env, RK_NOW=str(T0)),
        check=True,
    )
    return json.loads(out.stdout)["result"]["id"]


def submissions(got: Path) -> list[str]:
    return got.read_text().splitlines()


def timed(args, env) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    res = rk(args, env)
    return res, time.monotonic() - started


class LockWaits:
    """Samples how long the server's lock takes to get, while `running` (the figure the spec promises)."""

    def __init__(self, path: Path) -> None:
        self.path, self.waits, self.stop = path, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            fd = acquire(self.path, 0.001, 120)
            self.waits.append(time.monotonic() - started)
            release(fd)
            self.stop.wait(0.05)  # a sampling pace, not a synchronisation

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(130)


def test_changes_and_a_second_tick_go_through_while_a_tick_types_for_many_seconds(env, tmux_server, tmp_path):
    slug = tmux_server.name
    # 4 s a delivery: the app's fresh prompt lands 1.7 s before rk's observation at 5.7 s
    # after the Enter (the next is at 8.7 s, past a loaded delivery's 12 s deadline).
    panes = slow_panes(tmux_server, tmp_path, 5, delay=4.0)
    ids = [add(env, tmux_server, f"slow report {i}", pane) for i, (pane, _) in enumerate(panes)]
    gone = tmux_server.run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "cat").strip()
    absent = add(env, tmux_server, "to a pane that went away", gone)  # its fire logs, types nothing
    tmux_server.run("kill-pane", "-t", gone)
    run_env = dict(env, RK_NOW=str(T0 + 60))
    started = time.monotonic()
    with LockWaits(Path(env["RK_STATE_DIR"]) / f"{slug}.lock") as sampled:
        tick = subprocess.Popen(
            [sys.executable, "-m", "rk", "cron", "tick", "-L", slug, "--json"],
            env=run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        first_seen = Path(str(panes[0][1]) + ".seen")
        wait_for(
            lambda: "slow report 0" in (first_seen.read_text() if first_seen.exists() else ""),
            timeout=30,
            message="the first paste",
        )
        # The tick is typing the first of four deliveries (4 s each, 16 s in all): now the changes.
        added, add_s = timed(
            ["cron", "add", "added meanwhile", "--every", "1h", "--pane", panes[0][0], "--any-program", "-L", slug],
            run_env,
        )
        muted, mute_s = timed(["cron", "mute", ids[0], "-L", slug], run_env)  # its prompt is already pasted
        removed, rm_s = timed(["cron", "rm", ids[4], "-L", slug], run_env)  # not yet decided: not typed
        rk(["cron", "rm", absent, "-L", slug], run_env, check=True)  # not carried out: not logged either
        second = rk(["cron", "tick", "-L", slug, "--json"], run_env)
        by_hand = rk(["cron", "run", ids[2], "-L", slug], run_env)  # claimed by the tick, not yet typed
        still_typing = tick.poll() is None and submissions(panes[3][1]) == []
        out, err = tick.communicate(timeout=120)
    typed_for = time.monotonic() - started
    print(
        f"\ntick typed for {typed_for:.1f} s; cron add {add_s:.2f} s, mute {mute_s:.2f} s, rm {rm_s:.2f} s;"
        f" server lock wait max {max(sampled.waits):.3f} s over {len(sampled.waits)} samples"
    )
    assert added.returncode == 0 and muted.returncode == 0 and removed.returncode == 0, (added, muted, removed)
    assert second.returncode == 0, second.stderr
    assert by_hand.returncode == 1 and f"a tick is firing {ids[2]} right now" in by_hand.stderr, by_hand
    assert json.loads(second.stdout)["result"]["fires"] == 0  # every fire was the first tick's
    assert still_typing, "the changes waited for the typing to end"
    assert tick.returncode == 0, err
    # each pane got its prompt exactly once; the removed entry's none
    assert [submissions(got) for _, got in panes] == [[f"slow report {i}"] for i in range(4)] + [[]]
    lines = [(line.entry, line.outcome) for line in log_lines(env, slug)]
    assert lines == [(entry, "delivered") for entry in ids[:4]]
    result = json.loads(out)["result"]
    dropped = [d for d in result["diagnostics"] if d["reason"] == "fire-dropped"]
    assert [(d["entry"], d["detail"]) for d in dropped] == [
        (entry, "entry removed since the decision; nothing typed") for entry in (ids[4], absent)
    ]
    listed = json.loads(rk(["cron", "list", "-L", slug, "--json"], run_env, check=True).stdout)["result"]
    by_id = {e["id"]: e for e in listed["entries"]} if isinstance(listed, dict) else {e["id"]: e for e in listed}
    assert ids[4] not in by_id and len(by_id) == 5
    assert by_id[ids[0]]["muted"]
    state = Path(env["RK_STATE_DIR"])
    assert not list((state / f"{slug}.intents").glob("*.json"))
    assert not any(claimed(p) for p in (state / f"{slug}.claims").glob("*"))


@pytest.mark.parametrize("change", ["rm", "mute", "edit"])
def test_a_change_landing_before_the_paste_wins_and_nothing_is_typed(env, tmux_server, tmp_path, monkeypatch, change):
    """The tick waits for the pane (another delivery holds its lock) with the server's
    lock let go; the entry changes meanwhile: nothing is typed, nothing is logged."""
    from rk.act.keys import pane_lock

    slug = tmux_server.name
    ((pane, got),) = slow_panes(tmux_server, tmp_path, 1, delay=0)
    entry = add(env, tmux_server, "decided before the change", pane)
    run_env = dict(env, RK_NOW=str(T0 + 60))
    state = Path(env["RK_STATE_DIR"])
    monkeypatch.setenv("RK_STATE_DIR", env["RK_STATE_DIR"])  # the pane lock lives under the state dir
    server_lock = state / f"{slug}.lock"
    with pane_lock(tmux_server, pane, 5):
        tick = subprocess.Popen(
            [sys.executable, "-m", "rk", "cron", "tick", "-L", slug, "--json"],
            env=run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        def waiting_on_the_pane() -> bool:  # the fire claimed, the server's lock let go
            if not claimed(state / f"{slug}.claims" / f"{entry}.lock"):
                return False
            try:
                release(acquire(server_lock, 0, 0))
            except LockHeld:
                return False
            return True

        wait_for(waiting_on_the_pane, timeout=30, message="the tick waiting for the pane")
        args = {
            "rm": ["cron", "rm", entry],
            "mute": ["cron", "mute", entry],
            "edit": ["cron", "edit", entry, "--prompt", "the edited prompt"],
        }[change]
        done = rk([*args, "-L", slug], run_env)
        assert done.returncode == 0, done.stderr
    out, err = tick.communicate(timeout=60)
    assert tick.returncode == 0, err
    result = json.loads(out)["result"]
    assert submissions(got) == []
    seen = Path(str(got) + ".seen")
    assert not seen.exists() or seen.read_text() == ""  # not a key reached the pane
    assert [line for line in log_lines(env, slug) if line.entry == entry and line.reason == "schedule"] == []
    why = {"rm": "removed", "mute": "muted", "edit": "edited"}[change]
    assert [d["detail"] for d in result["diagnostics"] if d["reason"] == "fire-dropped"] == [
        f"entry {why} since the decision; nothing typed"
    ]


def test_a_tick_that_typed_with_the_lock_let_go_keeps_the_newer_cursor_of_a_tick_that_ran_meanwhile(
    env, tmux_server, monkeypatch
):
    """In one process: the first tick's delivery runs a whole second tick; the
    first then writes its own claimed entries' observations only."""
    from rk.act.deliver import DeliveryResult
    from rk.core.log.delivery import Outcome, Status
    from rk.engine.runtime import Runtime
    from rk.engine.tick import sweep
    from rk.store.cursor import read_cursor

    slug = tmux_server.name
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    slow = add(env, tmux_server, "typed slowly", pane)
    woken = rk(
        [
            "cron",
            "add",
            "on wake",
            "--every",
            "1h",
            "--wake-on",
            "agent-state-change",
            "--pane",
            pane,
            "--any-program",
            "--json",
            "-L",
            slug,
        ],
        dict(env, RK_NOW=str(T0)),
        check=True,
    )
    watcher = json.loads(woken.stdout)["result"]["id"]
    monkeypatch.setenv("RK_STATE_DIR", env["RK_STATE_DIR"])
    meanwhile = []

    def typing(server, pane, payload, guard=None, intent=None):
        if not meanwhile:  # while this one "types", the other tick runs whole
            meanwhile.append(sweep(Runtime.from_environ(dict(env, RK_NOW=str(T0 + 65)))))
        return DeliveryResult(True, Outcome(Status.DELIVERED))

    first = sweep(Runtime.from_environ(dict(env, RK_NOW=str(T0 + 60)), deliver=typing))
    (second,) = meanwhile
    assert [d.entry for d in first.decisions] == [slow] and second.decisions == []  # the fire was the first's
    state = Path(env["RK_STATE_DIR"])
    assert read_cursor(state / f"{slug}.cursor.yaml")[watcher].observed_at == T0 + 65  # the newer observation

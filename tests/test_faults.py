"""Faults said (issue 17, items 4–6): control characters escaped on the terminal,
odd values refused, an unsafe state dir warned about on read, history read by
its archives' names, and a tick that spawns one tmux process when nothing is due."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rk.cli.table import Column, escape_controls, layout
from tests.cli_helpers import make_env, one_line_error, run_in, write_private

T0 = 1_800_000_000

EVIL_NAME = "\x1b[2J\x1b[Hwiped"
EVIL_OUTCOME = "skipped: target runs \x1b]0;owned\x07vim\x9b31m"


# --------------------------------------------------------------------------- control characters


def test_escape_controls_shows_every_control_character_as_its_escape():
    assert escape_controls(EVIL_NAME) == "\\x1b[2J\\x1b[Hwiped"
    assert escape_controls("a\tb\nc\x00d\x7fe") == "a\\tb\\nc\\x00d\\x7fe"
    assert escape_controls("one\ntwo", keep="\n") == "one\ntwo"
    assert escape_controls("plain — ünïcode ✓") == "plain — ünïcode ✓"


def test_a_table_measures_its_cells_escaped():
    lines = layout([Column("NAME"), Column("X")], [["\x1b[2J", "x"]], None)
    assert lines == ["NAME     X", "\\x1b[2J  x"]


def _evil_state(tmp_path: Path) -> dict:
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = Path(env["RK_STATE_DIR"])
    write_private(
        state / "default.yaml",
        "entries:\n  - {id: e001, name: "
        + json.dumps(EVIL_NAME)
        + ", schedule: {kind: every, interval: 5m}, target: {kind: pane, pane: '%0'}, payload: hi}\n",
    )
    line = {"ts": T0 - 60, "entry": "e001", "target": "%0", "reason": "schedule", "outcome": EVIL_OUTCOME}
    write_private(state / "default.log", json.dumps(line) + "\n")
    return env


@pytest.mark.shell
@pytest.mark.parametrize("verb", [["cron", "list"], ["cron", "log"], ["status"], ["cron", "show", "e001"]])
def test_names_and_outcomes_reach_the_terminal_escaped_and_json_whole(tmp_path, verb):
    env = _evil_state(tmp_path)
    res = run_in(verb, env)
    assert res.code in (0, 1), res
    printed = res.out + res.err
    assert not any(c in printed for c in "\x1b\x07\x9b"), printed
    assert "\\x1b[2J\\x1b[Hwiped" in printed or "\\x1b]0;owned\\x07vim\\x9b31m" in printed, printed
    as_json = run_in([*verb, "--json"], env)
    assert "\x1b" not in as_json.out  # JSON escapes its own (\u001b) ...
    assert {EVIL_NAME, EVIL_OUTCOME} & set(_strings(as_json.json()))  # ... and reads back whole


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []


# --------------------------------------------------------------------------- odd values


ODD = {
    "duration with a trailing newline": ["--every", "5m\n"],
    "duration with a leading space": ["--every", " 5m"],
    "duration with a NUL": ["--every", "5m\x00"],
    "in with a tab": ["--in", "5m\t"],
    "empty zone": ["--cron", "0 9 * * *", "--tz", ""],
    "zone with a newline": ["--cron", "0 9 * * *", "--tz", "UTC\n"],
    "zone with a space": ["--cron", "0 9 * * *", "--tz", " UTC"],
    "cron with a newline": ["--cron", "0 9 * * *\n"],
    "at with a newline": ["--at", "14:00\n"],
    "active hours with a newline": ["--every", "5m", "--active-hours", "08:00-19:00\n"],
    "active hours with a NUL": ["--every", "5m", "--active-hours", "08-19\x00"],
    "wake debounce with a newline": ["--wake-on", "idle", "--wake-debounce", "30s\n"],
}


@pytest.mark.shell
@pytest.mark.parametrize("flags", list(ODD.values()), ids=list(ODD))
def test_an_odd_value_is_refused_with_one_line_and_writes_nothing(tmp_path, flags):
    env = make_env(tmp_path, RK_NOW=str(T0))
    res = run_in(["cron", "add", "x", *flags, "--role", "op"], env)
    assert res.code == 2, res
    one_line_error(res)
    assert not Path(env["RK_STATE_DIR"]).exists()


def test_a_stored_duration_with_whitespace_is_not_trimmed_into_a_valid_one():
    from rk.core.durations import DurationError, parse_duration

    assert parse_duration("5m") == 300
    for odd in ("5m\n", " 5m", "5m ", "5 m", "5m\x00", ""):
        with pytest.raises(DurationError):
            parse_duration(odd)


# --------------------------------------------------------------------------- an unsafe state dir


@pytest.mark.shell
@pytest.mark.parametrize("verb", [["cron", "list"], ["cron", "log"], ["status"], ["cron", "list", "--json"]])
def test_a_read_of_a_state_dir_others_can_write_warns_once(tmp_path, verb):
    env = _evil_state(tmp_path)
    state = Path(env["RK_STATE_DIR"])
    quiet = run_in(verb, env)
    assert "warning" not in quiet.err, quiet
    state.chmod(0o777)
    res = run_in(verb, env)
    warnings = [line for line in res.err.splitlines() if line.startswith("rk: warning: ")]
    assert warnings == [
        f"rk: warning: state directory {state} is writable by others (mode 0777); "
        f"fix: chmod 700 {state}; what it holds may not be yours"
    ], res
    assert res.out == quiet.out  # the read goes on, said


# --------------------------------------------------------------------------- history by name


def _history(path: Path, rotations: int = 30) -> None:
    from rk.core.log.delivery import LogLine
    from rk.store.delivery_log import append_lines, rotate_if_needed

    t = 1_000_000
    for _ in range(rotations):
        append_lines(path, [LogLine(t := t + 60, f"e{k}", "%1", "schedule", "delivered") for k in range(20)])
        rotate_if_needed(path, t, backoff={}, max_bytes=4096, keep_archives=0, live={"e0"})


def _opened(monkeypatch) -> list[str]:
    """Every path rk.store.delivery_log opens (its reads go through os.open)."""
    import os

    opened: list[str] = []
    real = os.open

    def counting(path, *args, **kwargs):
        opened.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    return opened


@pytest.mark.parametrize("stamps", ["rotation's", "scrambled", "all now", "all epoch"])
def test_log_n_reads_archives_by_their_suffix_whatever_their_mtimes(tmp_path, monkeypatch, stamps):
    import os
    import random

    from rk.store.delivery_log import archive_path, archives, read_history, read_newest

    path = tmp_path / "s.log"
    _history(path)
    found = archives(path)
    assert len(found) >= 10
    whole = read_history(path)
    rng = random.Random(17)
    for archive in found:
        when = {"scrambled": rng.randrange(1, 4_000_000_000), "all now": 4_000_000_000, "all epoch": 1}.get(stamps)
        if when is not None:
            os.utime(archive, (when, when))
    for n in (1, 20, 60):
        opened = _opened(monkeypatch)
        assert read_newest(path, n) == whole[-n:]
        monkeypatch.undo()
        archives_opened = {p for p in opened if p != str(path)}
        # 20 lines per rotation: n lines lie in the newest ⌈n/20⌉ + 1 archives; one tail more
        assert archives_opened <= {str(archive_path(path, k)) for k in range(1, n // 20 + 4)}, sorted(opened)


def test_a_rotation_of_only_old_lines_joins_the_newest_archive_so_its_order_holds(tmp_path):
    """When every line that leaves is older than the newest archive's last (a clock set
    back, or lines kept for long), a new archive would end older than the one before it."""
    from rk.core.log.delivery import LogLine
    from rk.store.delivery_log import append_lines, archive_path, archives, read_history, read_newest, rotate_if_needed

    path = tmp_path / "s.log"
    append_lines(archive_path(path, 2), [LogLine(500 + i, "a", "%1", "schedule", "delivered") for i in range(50)])
    append_lines(archive_path(path, 1), [LogLine(1000 + i, "b", "%1", "schedule", "delivered") for i in range(50)])
    append_lines(path, [LogLine(100 + i, f"x{i}", "%1", "schedule", "delivered") for i in range(200)])  # set back
    assert rotate_if_needed(path, 1_000_000, backoff={}, max_bytes=4096, keep_archives=0, live=set())
    assert len(archives(path)) == 2  # joined .1 rather than becoming a new .1 that ends older than .2
    ts = [int(line.split(b'"ts":')[1].split(b",")[0]) for line in archive_path(path, 1).read_bytes().splitlines()]
    assert ts == sorted(ts)
    whole = read_history(path)
    for n in (1, 50, 150, 400):
        assert read_newest(path, n) == whole[-n:]


# --------------------------------------------------------------------------- speed: lazy provenance


def test_wake_provenance_is_worked_out_only_for_a_payload_that_may_read_it():
    from rk.core.schedule.due import uses_wake_fields

    assert uses_wake_fields("{wake_pane} went {wake_state}") and uses_wake_fields("in {wake_window}")
    assert not uses_wake_fields("continue") and not uses_wake_fields("{now}: wake_pane")


# --------------------------------------------------------------------------- speed: one tmux process per tick


def _tmux_shim(tmp_path: Path) -> tuple[Path, Path]:
    """A `tmux` first on PATH that logs each call and execs the real one."""
    import shutil

    real = shutil.which("tmux")
    assert real
    shim_dir, calls = tmp_path / "shim", tmp_path / "tmux-calls"
    shim_dir.mkdir()
    shim = shim_dir / "tmux"
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{calls}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    return shim_dir, calls


@pytest.mark.tmux
@pytest.mark.shell
def test_a_tick_with_nothing_due_spawns_one_tmux_process_stale_panes_included(env, tmux_server, tmp_path):
    import os

    from conftest import run_rk, wait_for

    from rk.tmux.observe import LOOK_AGAIN_TRIES, UNREAD_HOLDS

    now = 1_800_000_000
    first_pane = tmux_server.display("main:0.0", "#{pane_id}")
    panes = []
    for _ in range(10):  # agents whose `active` went stale long ago, on screens no layout reads
        pane = tmux_server.run(
            "new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", "bash -c 'exec -a claude cat'"
        ).strip()
        panes.append(pane)
    for pane in panes:
        wait_for(lambda pane=pane: tmux_server.display(pane, "#{pane_current_command}") == "claude")
        pid = tmux_server.display(pane, "#{pane_pid}")
        tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{now - 3600}:{pid}")
    run_rk(
        ["cron", "add", "x", "--wake-on", "agent-state-change", "--pane", first_pane, "-L", tmux_server.name],
        {**env, "RK_NOW": str(now - 600)},
        check=True,
    )
    shim_dir, calls = _tmux_shim(tmp_path)
    shimmed = {**env, "PATH": f"{shim_dir}{os.pathsep}{env['PATH']}", "RK_NOW": str(now)}

    def tick(due: bool = False) -> list[str]:
        calls.unlink(missing_ok=True)
        done = run_rk(["cron", "tick", "-L", tmux_server.name, "--json"], shimmed, check=True)
        assert due or json.loads(done.stdout)["result"]["decisions"] == [], done.stdout
        return calls.read_text().splitlines() if calls.exists() else []

    first = tick(
        due=True
    )  # looks at each stale pane once, and remembers on the pane that its screen reads as no agent's
    # (each shown LOOK_AGAIN_TRIES more frames first: a frame caught mid-redraw is no verdict)
    assert sum("capture-pane" in call for call in first) == (1 + LOOK_AGAIN_TRIES) * len(panes), first
    for _ in range(2):
        again = tick()
        assert len(again) == 1 and "list-panes" in again[0], again
    pid = tmux_server.display(panes[0], "#{pane_pid}")
    tmux_server.set_pane_option(panes[0], "@rk_pane_agent_state", f"active:{now - 1800}:{pid}")  # new: look again
    last = tick()
    assert sum("capture-pane" in call for call in last) == 1 + LOOK_AGAIN_TRIES, last
    shimmed["RK_NOW"] = str(now + UNREAD_HOLDS)  # the memos lapse: one frame each renews them
    lapsed = tick()
    assert sum("capture-pane" in call for call in lapsed) == len(panes), lapsed


@pytest.mark.shell
def test_the_hook_path_imports_no_collections_package():
    """`collections` (with keyword, operator, reprlib) was most of the hook's own import
    time; `_collections_abc` comes with `os` for nothing."""
    import subprocess
    import sys

    heavy = "('collections', 'math', 'typing', 're')"
    hook_path = "rk.agent.hook, rk.agent.hook_event, rk.agent.hook_tmux, rk.agent.hook_turn_end"
    code = f"import sys; import {hook_path}; print(sorted(m for m in {heavy} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout

"""The tick against real tmux servers: delivery, exclusivity, absent targets,
respawn, and a dead server that must never be touched."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.log.delivery import LogLine
from rk.store.delivery_log import append_lines, read_live

#: The shell (the CLI, files, processes, tmux): `make test`, not `make test-fast`.
pytestmark = pytest.mark.shell

T0 = 1_800_000_000


def rk(args, env, check=False, timeout=60):
    return run_rk(args, env, check=check, timeout=timeout)


def first_pane(server) -> str:
    return server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]


def submitted_lines(server, pane: str, payload: str) -> int:
    """How many screen lines equal the payload: 2 per submission into `cat`
    (the tty's echo of what was typed, then cat's own output)."""
    return sum(1 for line in server.capture(pane).splitlines() if line.rstrip() == payload)


def log_lines(env) -> list[LogLine]:
    state = Path(env["RK_STATE_DIR"])
    return [line for p in state.glob("*.log") for line in read_live(p)]


def add(env, server, *args) -> str:
    """Add an entry; the panes here run `cat`, a program, so the entries opt in with --any-program."""
    out = rk(
        ["cron", "add", *args, "--any-program", "--json", "-L", server.name], dict(env, RK_NOW=str(T0)), check=True
    )
    return json.loads(out.stdout)["result"]["id"]


def test_tick_delivers_and_submits_a_due_payload(env, tmux_server):
    pane = first_pane(tmux_server)
    entry = add(env, tmux_server, "status report please", "--every", "1m", "--pane", pane)
    early = rk(["cron", "tick", "-L", tmux_server.name], dict(env, RK_NOW=str(T0 + 59)), check=True)
    assert early.stdout.strip() == "tick: 1 servers swept, 0 fires, 0 diagnostics"
    done = rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 60)), check=True)
    result = json.loads(done.stdout)["result"]
    assert result["fires"] == 1
    assert result["decisions"] == [
        {"server": tmux_server.name, "entry": entry, "reason": "schedule", "pane": pane, "outcome": "delivered"}
    ]
    wait_for(lambda: submitted_lines(tmux_server, pane, "status report please") == 2, message="typed echo + cat output")
    assert log_lines(env) == [LogLine(T0 + 60, entry, pane, "schedule", "delivered")]


def test_two_ticks_started_together_deliver_each_fire_once(env, tmux_server):
    pane = first_pane(tmux_server)
    add(env, tmux_server, "only once", "--every", "1m", "--pane", pane)
    run_env = dict(env, RK_NOW=str(T0 + 120))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "rk", "cron", "tick", "-L", tmux_server.name],
            env=run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    delivered = [line for line in log_lines(env) if line.outcome == "delivered"]
    assert len(delivered) == 1, (log_lines(env), outs)
    wait_for(lambda: submitted_lines(tmux_server, pane, "only once") == 2, message="one submission")
    # a later tick at the same instant finds nothing due
    rk(["cron", "tick", "-L", tmux_server.name], run_env, check=True)
    assert len([line for line in log_lines(env) if line.outcome == "delivered"]) == 1


def test_a_dead_pane_gets_its_if_absent_outcome(env, tmux_server):
    skip = add(env, tmux_server, "to nowhere", "--every", "1m", "--pane", "%999")
    notify = add(env, tmux_server, "to nowhere either", "--every", "1m", "--pane", "%998", "--if-absent", "notify")
    out = rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 60)), check=True)
    result = json.loads(out.stdout)["result"]
    outcomes = {(d["entry"], d["outcome"]) for d in result["decisions"]}
    assert outcomes == {(skip, "skipped-absent"), (notify, "notified-absent")}
    reasons = {(d["entry"], d["reason"]) for d in result["diagnostics"]}
    assert (skip, "target-unresolved") in reasons and (notify, "respawn-uncommanded") not in reasons
    assert {(line.entry, line.target, line.outcome) for line in log_lines(env)} == {
        (skip, "", "skipped-absent"),
        (notify, "", "notified-absent"),
    }


def test_a_respawn_argv_runs_without_a_shell_and_logs_respawned(env, tmux_server, tmp_path):
    marker = tmp_path / "respawned.txt"
    script = f"import sys; open({str(marker)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')"
    entry = add(
        env,
        tmux_server,
        "wake the worker",
        "--every",
        "1m",
        "--role",
        "worker",
        "--if-absent",
        "respawn",
        "--respawn",
        sys.executable,
        "--respawn",
        "-c",
        "--respawn",
        script,
        "--respawn",
        "{server}",
        "--respawn",
        "$HOME;echo-not-expanded",
    )
    out = rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 60)), check=True)
    decisions = json.loads(out.stdout)["result"]["decisions"]
    assert decisions == [
        {"server": tmux_server.name, "entry": entry, "reason": "schedule", "pane": "", "outcome": "respawned"}
    ]
    assert marker.read_text() == f"{tmux_server.name} $HOME;echo-not-expanded\n"
    assert [line.outcome for line in log_lines(env)] == ["respawned"]


def test_a_failing_respawn_logs_the_output_tail(env, tmux_server):
    add(
        env,
        tmux_server,
        "wake",
        "--every",
        "1m",
        "--role",
        "worker",
        "--if-absent",
        "respawn",
        "--respawn",
        sys.executable,
        "--respawn",
        "-c",
        "--respawn",
        "import sys; print('x' * 300 + 'END'); sys.exit(3)",
    )
    rk(["cron", "tick", "-L", tmux_server.name], dict(env, RK_NOW=str(T0 + 60)), check=True)
    (line,) = log_lines(env)
    assert line.outcome.startswith("respawn-failed: exit status 3: …")
    assert line.outcome.endswith("xEND")
    assert len(line.outcome.split(": …", 1)[1].encode()) <= 200


def _tmux_shim(tmp_path: Path) -> tuple[Path, Path]:
    """A `tmux` first on PATH that records every argv, then runs the real one."""
    real = subprocess.run(["which", "tmux"], capture_output=True, text=True, check=True).stdout.strip()
    bindir = tmp_path / "shim"
    bindir.mkdir()
    calls = tmp_path / "tmux-calls.log"
    shim = bindir / "tmux"
    shim.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        printf '%s\\n' "$*" >> {calls}
        exec {real} "$@"
        """)
    )
    shim.chmod(0o755)
    return bindir, calls


def test_a_dead_servers_socket_is_never_touched(env, tmux_server, tmp_path):
    # a server that died: its socket file remains, nobody listens
    sockdir = Path(os.environ["TMUX_TMPDIR"]) / f"tmux-{os.getuid()}"
    ghost_path = sockdir / "ghost"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(ghost_path))
    s.close()
    before = ghost_path.stat()
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700, exist_ok=True)
    (state / "ghost.yaml").write_text(
        "entries:\n  - {id: gh01, schedule: {kind: every, interval: 1m}, target: {kind: pane, pane: '%1'},"
        " payload: boo, if_absent: notify}\n"
    )
    pane = first_pane(tmux_server)
    add(env, tmux_server, "alive", "--every", "1m", "--pane", pane)
    bindir, calls = _tmux_shim(tmp_path)
    run_env = dict(env, RK_NOW=str(T0 + 60), PATH=f"{bindir}:{env['PATH']}")
    out = rk(["cron", "tick", "--json"], run_env, check=True)
    result = json.loads(out.stdout)["result"]
    assert result["servers_swept"] == 1
    assert {"server": "ghost", "entry": "", "reason": "server-not-live"} in [
        {k: d[k] for k in ("server", "entry", "reason")} for d in result["diagnostics"]
    ]
    recorded = calls.read_text().splitlines()
    assert recorded, "the live server was ticked through the shim"
    assert not [c for c in recorded if "ghost" in c], recorded
    after = ghost_path.stat()
    assert stat.S_ISSOCK(after.st_mode) and (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not (state / "ghost.log").exists() and not (state / "ghost.cursor.yaml").exists()


def test_a_held_lock_makes_the_tick_a_quiet_no_op(env, tmux_server):
    from rk.host.lock import locked

    pane = first_pane(tmux_server)
    add(env, tmux_server, "held", "--every", "1m", "--pane", pane)
    state = Path(env["RK_STATE_DIR"])
    with locked(state / f"{tmux_server.name}.lock"):
        out = rk(["cron", "tick", "-L", tmux_server.name], dict(env, RK_NOW=str(T0 + 60)), check=True)
    assert out.stdout == "" and out.stderr == ""
    assert log_lines(env) == []


def test_dry_run_prints_decisions_and_writes_nothing(env, tmux_server):
    pane = first_pane(tmux_server)
    entry = add(env, tmux_server, "dry", "--every", "1m", "--pane", pane)
    state = Path(env["RK_STATE_DIR"])
    before = sorted(p.name for p in state.iterdir())
    out = rk(["cron", "tick", "-L", tmux_server.name, "--dry-run"], dict(env, RK_NOW=str(T0 + 60)), check=True)
    assert f"would: {tmux_server.name} {entry} schedule {pane} would-deliver" in out.stdout
    assert sorted(p.name for p in state.iterdir()) == before
    assert submitted_lines(tmux_server, pane, "dry") == 0


def test_when_idle_holds_without_logging_and_skip_if_busy_logs(env, tmux_server):
    pane = first_pane(tmux_server)
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{T0}")
    tmux_server.run("respawn-pane", "-k", "-t", pane, "cat")  # a non-shell command, so the state is not reconciled away
    hold = add(env, tmux_server, "hold me", "--every", "1m", "--pane", pane, "--deliver", "when-idle")
    skip = add(env, tmux_server, "skip me", "--every", "1m", "--pane", pane, "--deliver", "skip-if-busy")
    out = rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 60)), check=True)
    result = json.loads(out.stdout)["result"]
    assert {(d["entry"], d["outcome"]) for d in result["decisions"]} == {
        (hold, "held-busy: active"),
        (skip, "skipped-busy: active"),
    }
    assert [(line.entry, line.outcome) for line in log_lines(env)] == [(skip, "skipped-busy: active")]
    tmux_server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0 + 70}")
    out = rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 90)), check=True)
    assert {(d["entry"], d["outcome"]) for d in json.loads(out.stdout)["result"]["decisions"]} == {(hold, "delivered")}
    wait_for(lambda: submitted_lines(tmux_server, pane, "hold me") == 2, message="held payload delivered")


def test_kill_9_between_paste_and_enter_then_restart_refires_once_and_cleanly(env, tmux_server, tmp_path):
    """A ticker killed right after pasting (before Enter) leaves text in the pane;
    the restart fires the entry again (nothing was logged), clears the leftover
    first, and the app receives exactly one clean submission."""
    import signal

    out_file = tmp_path / "received.txt"
    pane = first_pane(tmux_server)
    tmux_server.run("respawn-pane", "-k", "-t", pane, f"exec cat > {out_file}")  # exec: cat, not bash, owns the pane
    entry = add(env, tmux_server, "deploy status?", "--every", "1m", "--pane", pane)
    bindir, pasted = _stalling_tmux(tmp_path)
    run_env = dict(env, RK_NOW=str(T0 + 60))
    victim = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "tick", "-L", tmux_server.name],
        env=dict(run_env, PATH=f"{bindir}:{env['PATH']}"),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(pasted.exists, timeout=30, message="the paste happened")
        wait_for(lambda: "deploy status?" in tmux_server.capture(pane), message="pasted text on screen")
    finally:
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(10)
    assert log_lines(env) == []  # killed before its outcome was known: nothing logged
    assert not out_file.read_text()  # and nothing submitted
    again = rk(["cron", "tick", "-L", tmux_server.name, "--json"], run_env, check=True)
    assert [d["outcome"] for d in json.loads(again.stdout)["result"]["decisions"]] == ["delivered"]
    wait_for(lambda: out_file.read_text() == "deploy status?\n", message="exactly one clean submission")
    assert [(line.entry, line.outcome) for line in log_lines(env)] == [(entry, "delivered")]
    third = rk(["cron", "tick", "-L", tmux_server.name, "--json"], run_env, check=True)  # same instant
    assert json.loads(third.stdout)["result"]["decisions"] == []


def test_kill_9_of_the_ticker_mid_delivery_then_a_restart_refires_at_most_once(env, tmux_server, tmp_path):
    """The same crash, on the background ticker itself: killed between paste and
    Enter, restarted, and the app sees one clean submission, the log one line."""
    import signal

    out_file = tmp_path / "received.txt"
    pane = first_pane(tmux_server)
    tmux_server.run("respawn-pane", "-k", "-t", pane, f"exec cat > {out_file}")  # exec: cat, not bash, owns the pane
    entry = add(env, tmux_server, "nightly summary", "--every", "1h", "--pane", pane)
    bindir, pasted = _stalling_tmux(tmp_path)
    ticker_env = dict(env, RK_NOW=str(T0 + 3600))
    victim = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "ticker", "--interval", "1"],
        env=dict(ticker_env, PATH=f"{bindir}:{env['PATH']}"),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(pasted.exists, timeout=30, message="the ticker pasted")
    finally:
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(10)
    assert log_lines(env) == [] and not out_file.read_text()
    restarted = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "ticker", "--interval", "1"],
        env=ticker_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: out_file.read_text() == "nightly summary\n", timeout=30, message="one clean submission")
        wait_for(
            lambda: [(line.entry, line.outcome) for line in log_lines(env)] == [(entry, "delivered")],
            message="exactly one delivered line",
        )
        cursor = Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.cursor.yaml"
        wait_for(cursor.exists, message="the first tick finished")
        mtime = cursor.stat().st_mtime_ns
        wait_for(lambda: cursor.stat().st_mtime_ns != mtime, message="a later tick ran")  # and fired nothing more
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.communicate(timeout=20)
    assert [(line.entry, line.outcome) for line in log_lines(env)] == [(entry, "delivered")]
    assert out_file.read_text() == "nightly summary\n"


def _stalling_tmux(tmp_path: Path) -> tuple[Path, Path]:
    """A `tmux` first on PATH that pastes, touches a flag, then hangs: the caller
    is caught between paste and Enter, where a crash leaves text in the pane."""
    real = subprocess.run(["which", "tmux"], capture_output=True, text=True, check=True).stdout.strip()
    bindir = tmp_path / "stallbin"
    bindir.mkdir()
    pasted = tmp_path / "pasted.flag"
    (bindir / "tmux").write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        case "$*" in
          *paste-buffer*) {real} "$@"; rc=$?; touch {pasted}; sleep 60; exit $rc ;;
        esac
        exec {real} "$@"
        """)
    )
    (bindir / "tmux").chmod(0o755)
    return bindir, pasted


def _kill_trial(env, tmux_server, tmp_path, n: int, offset: float | None) -> tuple[int, list[str], float]:
    """One `kill -9` of a delivering tick `offset` s after it starts (None: no kill),
    then a restart's tick: (how many times the app received the prompt, the log's
    outcomes, how long the first tick lived)."""
    import signal
    import time

    out_file = tmp_path / f"received-{n}.txt"
    out_file.write_text("")
    pane = first_pane(tmux_server)
    tmux_server.run("respawn-pane", "-k", "-t", pane, f"exec cat > {out_file}")
    wait_for(lambda: tmux_server.display(pane, "#{pane_current_command}") == "cat", message="cat in the pane")
    state = Path(env["RK_STATE_DIR"])
    for p in state.glob("*.log*"):
        p.unlink()
    entry = add(env, tmux_server, f"trial {n} status?", "--every", "1m", "--pane", pane)
    run_env = dict(env, RK_NOW=str(T0 + 60))
    victim = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "tick", "-L", tmux_server.name],
        env=run_env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = time.monotonic()
    if offset is not None:
        time.sleep(offset)  # the fault's moment, not a synchronisation
        with contextlib.suppress(ProcessLookupError):
            os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(40)
    life = time.monotonic() - started
    rk(["cron", "tick", "-L", tmux_server.name], run_env, check=True)  # the restart
    rk(["cron", "rm", entry, "-L", tmux_server.name], env, check=True)
    want = f"trial {n} status?"
    wait_for(lambda: out_file.read_text().count(want) >= 1, timeout=5, message=f"trial {n}: one submission")
    return out_file.read_text().count(want), [line.outcome for line in log_lines(env) if line.entry == entry], life


def test_kill_9_anywhere_in_a_delivery_gives_no_duplicate_and_no_loss(env, tmux_server, tmp_path):
    """Killed at 12 moments spread over a tick's life (before the enumeration, around
    the paste, around Enter, before the log line), the restart's tick recovers from
    the journal and the pane: the app gets the prompt exactly once, the log one line."""
    *_, life = _kill_trial(env, tmux_server, tmp_path, 99, None)  # uninterrupted: how long a tick lives here
    results = [_kill_trial(env, tmux_server, tmp_path, n, life * (n + 0.5) / 12)[:2] for n in range(12)]
    assert [count for count, _ in results] == [1] * 12, results
    assert all(outcomes == ["delivered"] for _, outcomes in results), results


def test_a_tab_or_newline_in_any_option_or_title_spoils_only_its_own_pane(env, tmux_server):
    """Listings are split on a random mark per call: an option holding a tab or a newline
    (or a title a program set) no longer skips the whole server (`enumeration-failed`)."""
    first = first_pane(tmux_server)
    tmux_server.run("split-window", "-t", first, "cat")
    tmux_server.run("new-window", "-t", "main", "cat")
    panes = tmux_server.run("list-panes", "-a", "-F", "#{pane_id}").split()
    a, b, c = panes[0], panes[1], panes[2]
    tmux_server.run("set-option", "-w", "-t", a, "@rk_win_role", "op\trole\nthird line")
    tmux_server.run("set-option", "-p", "-t", b, "@rk_pane_agent_state", "idle\n:1800000000")
    tmux_server.run("set-option", "-p", "-t", b, "@rk_pane_agent_session", "claude:\t\n")
    tmux_server.run("select-pane", "-t", b, "-T", "title\twith\ttabs")
    entry = add(env, tmux_server, "still typed", "--every", "1m", "--pane", c)
    out = rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 60)), check=True)
    result = json.loads(out.stdout)["result"]
    assert not [d for d in result["diagnostics"] if d["reason"] == "enumeration-failed"], result
    assert [(d["entry"], d["outcome"]) for d in result["decisions"]] == [(entry, "delivered")]
    wait_for(lambda: submitted_lines(tmux_server, c, "still typed") == 2, message="the payload reached pane c")


def test_a_journal_write_cut_short_is_swept_and_an_intent_already_logged_is_not_logged_again(env, tmux_server):
    """A kill inside the journal's atomic write leaves `.<entry>.json.*.tmp`; a kill after
    the outcome's line, before the journal is removed, leaves a `done` journal. Neither
    gives a second line."""
    pane = first_pane(tmux_server)
    entry = add(env, tmux_server, "journal", "--every", "1m", "--pane", pane)
    state = Path(env["RK_STATE_DIR"])
    intents = state / f"{tmux_server.name}.intents"
    intents.mkdir(mode=0o700)
    record = {"entry": entry, "ts": T0 + 60, "reason": "schedule", "target": pane, "pane": pane}
    (intents / f".{entry}.json.x1y2.tmp").write_text(
        json.dumps({**record, "phase": "enter", "pasted": "0" * 32, "needle": "journal"})
    )
    (intents / f"{entry}.json").write_text(json.dumps({**record, "phase": "done", "outcome": "delivered"}))
    append_lines(state / f"{tmux_server.name}.log", [LogLine(T0 + 60, entry, pane, "schedule", "delivered")])
    out = rk(["cron", "tick", "-L", tmux_server.name, "--json"], dict(env, RK_NOW=str(T0 + 60)), check=True)
    assert json.loads(out.stdout)["result"]["decisions"] == []
    assert [line.outcome for line in log_lines(env)] == ["delivered"]
    assert list(intents.iterdir()) == []


def test_a_journal_being_written_by_a_live_tick_is_left_to_it(env, tmux_server):
    """A tick typing with the lock let go writes its entry's journal through a temporary
    file; another tick's recovery, under the lock meanwhile, leaves it alone while the
    entry is claimed (removing it made the writer's rename fail: `failed: [Errno 2]`,
    nothing typed), and sweeps one whose entry nobody claims."""
    from rk.host.lock import claim, release_claim

    pane = first_pane(tmux_server)
    busy = add(env, tmux_server, "being typed", "--every", "1h", "--pane", pane)
    idle = add(env, tmux_server, "cut short", "--every", "1h", "--pane", pane)
    state = Path(env["RK_STATE_DIR"])
    intents, claims = state / f"{tmux_server.name}.intents", state / f"{tmux_server.name}.claims"
    intents.mkdir(mode=0o700)
    claims.mkdir(mode=0o700)
    writing, cut = intents / f".{busy}.json.a1b2.tmp", intents / f".{idle}.json.c3d4.tmp"
    for path in (writing, cut):
        path.write_text("{")
    held = claim(claims / f"{busy}.lock")
    assert held is not None
    try:
        rk(["cron", "tick", "-L", tmux_server.name], dict(env, RK_NOW=str(T0 + 60)), check=True)
        assert sorted(p.name for p in intents.iterdir()) == [writing.name]
    finally:
        release_claim(held)
    rk(["cron", "tick", "-L", tmux_server.name], dict(env, RK_NOW=str(T0 + 61)), check=True)
    assert list(intents.iterdir()) == []

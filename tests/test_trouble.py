"""What is wrong is said, and fails: `rk status` and `rk doctor` exit 1 with one line for
each entry that can never fire or is rate-capped (a mute or a pause is chosen, not wrong);
`add`/`edit` refuse an `--every` below the poll unless forced, and say when a schedule
would run into the rate cap."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_helpers import make_env, run_in
from conftest import wait_for

from rk.core.log.delivery import LogLine
from rk.core.schedule.entry import Backoff, Cron, Every, WakeOnly
from rk.core.schedule.implied import peak_per_hour
from rk.store import delivery_log as logfile

T0 = 1_800_000_000


@pytest.fixture
def ticker_up(monkeypatch):
    """A running ticker as `status` and `doctor` see it (none is started: nothing fires)."""
    from rk.store import ticker_record

    alive = SimpleNamespace(pid=os.getpid(), started_at=T0, alive=lambda: True)
    monkeypatch.setattr(ticker_record, "read_pid", lambda _dir: alive)


def _env(tmp_path) -> dict[str, str]:
    return dict(make_env(tmp_path, RK_NOW=str(T0)), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"])


def _add(env, *args: str) -> str:
    res = run_in(["cron", "add", "ping", *args, "--json"], env)
    assert res.code == 0, res.err
    return res.json()["result"]["id"]


def _healthy(env, server) -> str:
    """An entry on the fixture's `cat` pane, which reports a state: it can fire."""
    pane = server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}")
    return _add(env, "--every", "5m", "--pane", pane, "--any-program", "-L", server.name)


def _entry_checks(env) -> list[dict]:
    return [c for c in run_in(["doctor", "--json"], env).json()["result"] if c["name"].startswith("entry ")]


@pytest.mark.shell
@pytest.mark.tmux
def test_status_and_doctor_pass_when_every_entry_can_fire_or_is_silent_by_choice(tmp_path, tmux_server, ticker_up):
    env = _env(tmp_path)
    _healthy(env, tmux_server)
    muted = _healthy(env, tmux_server)
    assert run_in(["cron", "mute", muted, "-L", tmux_server.name], env).code == 0
    res = run_in(["status", "--json"], env)
    assert res.code == 0 and res.json()["result"]["trouble"] == [], res.out
    assert _entry_checks(env) == []
    assert run_in(["cron", "pause", "-L", tmux_server.name], env).code == 0
    assert run_in(["status"], env).code == 0  # a paused server is silent on purpose


def _shell_pane(server) -> str:
    pane = server.run("split-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", "sh").strip()
    wait_for(
        lambda: server.run("display", "-p", "-t", pane, "#{pane_current_command}").strip() == "sh",
        message="the shell pane",
    )
    return pane


def _capped_pane(server, env) -> str:
    pane = server.run("split-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", "cat").strip()
    server.set_pane_option(pane, "@rk_pane_agent_state", f"idle:{T0}")
    return pane


#: kind → (the target flags, given the server; what `status` says about it)
BROKEN = {
    "missing role": (lambda s, env: ["--role", "nosuch", "-L", s.name], "no window carries role nosuch"),
    "dead pane": (lambda s, env: ["--pane", "%99", "-L", s.name], "pane %99 is dead"),
    "shell pane": (lambda s, env: ["--pane", _shell_pane(s), "-L", s.name], "shell in pane"),
    "server down": (lambda s, env: ["--pane", "%1", "-L", "rk-test-not-running"], "server not running"),
    "rate-capped": (
        lambda s, env: ["--pane", _capped_pane(s, env), "--any-program", "-L", s.name],
        "rate-capped (30 deliveries to %",
    ),
}


@pytest.mark.shell
@pytest.mark.tmux
@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_status_and_doctor_exit_1_with_one_line_for_an_entry_that_cannot_fire(kind, tmp_path, tmux_server, ticker_up):
    env = _env(tmp_path)
    _healthy(env, tmux_server)
    flags, says = BROKEN[kind]
    args = flags(tmux_server, env)
    broken = _add(env, "--every", "5m", *args)
    server = args[args.index("-L") + 1]
    if kind == "rate-capped":
        pane = args[args.index("--pane") + 1]
        log = Path(env["RK_STATE_DIR"]) / f"{server}.log"
        logfile.append_lines(log, [LogLine(T0 - 60 + i, broken, pane, "schedule", "delivered") for i in range(30)])
    res = run_in(["status", "--json"], env)
    assert res.code == 1
    state = res.json()["result"]
    assert state["ok"] is False and state["failed"] == []
    (line,) = state["trouble"]
    assert line.startswith(f"{server} {broken}: ") and says in line, line
    human = run_in(["status"], env)
    assert human.code == 1
    assert [x for x in human.out.splitlines() if x.startswith("cannot fire:")] == [f"cannot fire: {line}"]
    doctor = run_in(["doctor", "--json"], env)
    assert doctor.code == 1
    (check,) = [c for c in doctor.json()["result"] if c["name"].startswith("entry ")]
    assert check["name"] == f"entry {broken} on {server}" and check["level"] == "fail" and says in check["detail"]
    assert check["fix"]
    if kind == "rate-capped":
        assert "rate_per_hour" in check["fix"]
        shown = run_in(["cron", "list", "-L", server, "--json"], env).json()["result"]
        assert [r["why_not"] for r in shown if r["id"] == broken] == [line.split(": ", 1)[1]]


@pytest.mark.shell
def test_add_refuses_an_every_below_the_poll_unless_forced(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    refused = run_in(["cron", "add", "ping", "--every", "10s", "--role", "op"], env)
    assert refused.code == 2 and "tick_interval" in refused.err and "--force" in refused.err, refused.err
    assert len(refused.err.strip().splitlines()) == 1
    assert run_in(["cron", "list", "--json"], env).json()["result"] == []
    forced = run_in(["cron", "add", "ping", "--every", "10s", "--role", "op", "--force", "--json"], env)
    assert forced.code == 0 and forced.json()["result"]["schedule"] == "every 10s"
    fast_poll = dict(env, RK_TICK_INTERVAL="5")
    assert run_in(["cron", "add", "ping", "--every", "10s", "--role", "op"], fast_poll).code == 0
    assert run_in(["cron", "add", "ping", "--every", "30s", "--role", "op"], env).code == 0  # the poll itself


@pytest.mark.shell
def test_edit_refuses_an_every_below_the_poll_unless_forced(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    entry = run_in(["cron", "add", "ping", "--every", "5m", "--role", "op", "--json"], env).json()["result"]["id"]
    refused = run_in(["cron", "edit", entry, "--every", "1s"], env)
    assert refused.code == 2 and "--force" in refused.err
    shown = run_in(["cron", "show", entry, "--json"], env).json()["result"]
    assert shown["schedule"]["interval"] == "5m0s"
    assert run_in(["cron", "edit", entry, "--every", "1s", "--force"], env).code == 0


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (("--idle-every", "10s"), "--idle-every 10s"),
        (("--backoff", "--min", "10s", "--max", "1h"), "--backoff --min 10s"),
    ],
)
def test_add_and_edit_refuse_a_backoff_step_below_the_poll_unless_forced(tmp_path, flags, named):
    env = make_env(tmp_path, RK_NOW=str(T0))
    refused = run_in(["cron", "add", "ping", *flags, "--role", "op"], env)
    assert refused.code == 2 and named in refused.err and "tick_interval" in refused.err, refused.err
    assert len(refused.err.strip().splitlines()) == 1, refused.err  # the error alone, no note before it
    assert run_in(["cron", "list", "--json"], env).json()["result"] == []
    forced = run_in(["cron", "add", "ping", *flags, "--role", "op", "--force", "--json"], env)
    assert forced.code == 0, forced.err
    entry = forced.json()["result"]["id"]
    assert run_in(["cron", "add", "ping", *flags, "--role", "op"], dict(env, RK_TICK_INTERVAL="5")).code == 0
    kept = run_in(["cron", "add", "ping", "--idle-every", "5m", "--role", "op", "--json"], env)
    assert kept.code == 0
    edited = run_in(["cron", "edit", kept.json()["result"]["id"], *flags], env)
    assert edited.code == 2 and named in edited.err, edited.err
    assert run_in(["cron", "edit", entry, *flags, "--force"], env).code == 0


def _rate_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "rate cap" in line]


@pytest.mark.shell
@pytest.mark.parametrize(
    ("flags", "warns"),
    [
        (("--every", "1m"), True),
        (("--every", "2m"), False),
        (("--idle-every", "1m"), True),
        (("--cron", "* 9 * * *"), True),
        (("--cron", "*/2 9 * * *"), False),
        (("--in", "1m"), False),
    ],
)
def test_add_warns_in_one_line_when_the_schedule_exceeds_the_rate_cap(tmp_path, flags, warns):
    env = make_env(tmp_path, RK_NOW=str(T0))
    res = run_in(["cron", "add", "ping", *flags, "--role", "op"], env)
    assert res.code == 0
    lines = _rate_lines(res.err)
    if not warns:
        assert lines == []
        return
    (line,) = lines
    assert line.startswith("rk: warning: ") and "rate cap of 30" in line and "rate_per_hour" in line, line
    raised = dict(env, RK_RATE_PER_HOUR="60")
    assert _rate_lines(run_in(["cron", "add", "ping", *flags, "--role", "op"], raised).err) == []


@pytest.mark.shell
def test_edit_warns_when_the_new_schedule_exceeds_the_rate_cap(tmp_path):
    env = make_env(tmp_path, RK_NOW=str(T0))
    entry = run_in(["cron", "add", "ping", "--every", "5m", "--role", "op", "--json"], env).json()["result"]["id"]
    res = run_in(["cron", "edit", entry, "--every", "1m"], env)
    assert res.code == 0 and len(_rate_lines(res.err)) == 1
    assert _rate_lines(run_in(["cron", "edit", entry, "--name", "renamed"], env).err) == []


def test_peak_per_hour_counts_the_busiest_hour_of_a_schedule():
    from datetime import UTC

    assert peak_per_hour(Every(interval=60), T0, UTC) == 60
    assert peak_per_hour(Backoff(min=120, max=3600), T0, UTC) == 30
    assert peak_per_hour(Cron(expr="*/5 9-10 * * *"), T0, UTC) == 12
    assert peak_per_hour(Cron(expr="0 9 * * *"), T0, UTC) == 1
    assert peak_per_hour(WakeOnly(), T0, UTC) == 0


@pytest.mark.shell
def test_next_honours_active_hours_and_a_pause(tmp_path):
    env = make_env(tmp_path, RK_NOW="2027-01-15T08:00:00+00:00")
    flags = ["--every", "1h", "--active-hours", "09:00-17:00", "--role", "op", "--json"]
    added = run_in(["cron", "add", "x", *flags], env)
    entry = added.json()["result"]["id"]
    fires = run_in(["cron", "next", entry, "-n", "10", "--json"], env).json()["result"]["fires"]
    hours = [f["utc"][11:16] for f in fires]
    assert hours == ["09:00", "10:00", "11:00", "12:00", "13:00", "14:00", "15:00", "16:00", "09:00", "10:00"]
    assert run_in(["cron", "pause", "--for", "3h"], env).code == 0
    paused = run_in(["cron", "next", entry, "-n", "2"], env)
    lines = paused.out.splitlines()
    assert lines[0].startswith("server paused until 2027-01-15 11:00:00 UTC") and "skipped-paused" in lines[0]
    assert [line[11:16] for line in lines[2:4]] == ["11:00", "12:00"]  # under the TIME header

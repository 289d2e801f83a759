"""`rk cron ticker install` on a machine with no systemd user bus (the suite's own
environment has none): it starts the ticker now, writes one line into the tmux config
that starts it with every tmux server by rk's absolute path, with its errors in
`ticker-start.log`, which `rk doctor` shows; `rk uninstall` removes the line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cli_helpers import run_in
from conftest import run_rk, wait_for

from rk.cli.running import no_user_bus
from rk.core import tickerconf
from rk.engine import ticker
from rk.tmux.server import child_env

pytestmark = pytest.mark.shell


def _conf(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".tmux.conf"


def _running(env: dict[str, str]) -> ticker.PidRecord | None:
    return ticker.find_running(Path(env["RK_STATE_DIR"]))


def _checks(env: dict[str, str]) -> dict[str, dict]:
    return {c["name"]: c for c in run_in(["doctor", "--json"], env).json()["result"]}


@pytest.fixture
def nobus(env):
    """The `env` fixture's environment (a private tmux server beside it), surely without a user bus."""
    e = {k: v for k, v in env.items() if k not in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")}
    yield e
    run_rk(["cron", "ticker", "stop"], e)


@pytest.fixture
def new_server(nobus):
    """Start a tmux server of its own with a config file (`tmux -f CONF -L NAME`), killed afterwards."""
    names: list[str] = []

    def start(conf: Path) -> None:
        name = f"rk-tk-{os.getpid()}-{len(names)}"
        names.append(name)
        argv = ["tmux", "-f", str(conf), "-L", name, "new-session", "-d", "-x", "80", "-y", "24", "cat"]
        subprocess.run(argv, check=True, env=child_env(nobus), cwd="/")

    yield start
    for name in names:
        subprocess.run(["tmux", "-L", name, "kill-server"], env=child_env(nobus), capture_output=True)


# -- the line, pure ---------------------------------------------------------------------------


def test_the_block_is_written_once_replaced_in_place_and_stripped_to_what_the_user_had():
    line = tickerconf.line(tickerconf.command(["/opt/rk/bin/rk", "cron", "ticker", "start"], {}, "/s/t.log"))
    assert line == "run-shell -b 'umask 077; /opt/rk/bin/rk cron ticker start >/dev/null 2>/s/t.log'"
    user = "set -g mouse on\n"
    once = tickerconf.install(user, line)
    assert once == user + "\n" + tickerconf.block(line)
    assert tickerconf.install(once, line) == once and tickerconf.installed(once) == line
    newer = tickerconf.install(once, line.replace("/opt/rk", "/usr/local"))
    assert newer.count(tickerconf.HEADER) == 1 and "/opt/rk" not in newer
    assert tickerconf.strip_block(newer) == (user, True)
    theirs = "run-shell -b 'rk cron ticker start'\n"
    both = tickerconf.install(user + theirs, line)
    assert tickerconf.user_lines(both) == [(2, theirs.rstrip())]  # rk's own line is not the user's
    assert tickerconf.strip_block(both)[0] == user + theirs


@pytest.mark.parametrize("word", ["/my dir/rk", "/a'b", "/a$HOME", "/a#{x}", "~/rk", "/a:b", ""])
def test_a_word_the_line_cannot_carry_is_found(word):
    assert tickerconf.unsafe(["/usr/bin/python3", word]) == word


def test_no_user_bus_is_told_by_the_environment_as_systemd_finds_its_bus(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "systemctl").write_text("#!/bin/sh\n")
    (bindir / "systemctl").chmod(0o755)
    path = {"PATH": str(bindir)}
    assert no_user_bus({"PATH": str(tmp_path / "none")}) == "systemctl is not on PATH"
    assert "DBUS_SESSION_BUS_ADDRESS unset" in no_user_bus(path)
    assert no_user_bus({**path, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"}) == ""
    run = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))
    try:
        assert no_user_bus({**path, "XDG_RUNTIME_DIR": str(run)}) != ""  # no bus socket there
        with socket.socket(socket.AF_UNIX) as bus:
            bus.bind(str(run / "bus"))
            assert no_user_bus({**path, "XDG_RUNTIME_DIR": str(run)}) == ""
    finally:
        (run / "bus").unlink(missing_ok=True)
        run.rmdir()


# -- install ----------------------------------------------------------------------------------


def test_install_starts_the_ticker_now_and_writes_rks_absolute_line_once(nobus):
    res = run_in(["cron", "ticker", "install"], nobus)
    assert res.code == 0, res
    assert res.out.splitlines()[0].startswith("no systemd user bus (") and "ticker started (pid" in res.out
    rec = wait_for(lambda: _running(nobus), message="the ticker")
    text = _conf(nobus).read_text()
    line = tickerconf.installed(text)
    assert line.startswith(f"run-shell -b 'umask 077; TMUX_TMPDIR={nobus['TMUX_TMPDIR']} ")
    assert f" {sys.executable} -P -m rk cron ticker start >/dev/null 2>" in line  # this rk, never PATH's
    assert line.endswith(f"2>{Path(nobus['RK_STATE_DIR']) / ticker.START_LOG_NAME}'")
    again = run_in(["cron", "ticker", "install", "--json"], nobus)
    assert again.code == 0, again
    result = again.json()["result"]
    assert result["written"] is False and result["started"] is False and result["pid"] == rec.pid
    assert _conf(nobus).read_text() == text and text.count(tickerconf.MARK) == 1
    assert _checks(nobus)["ticker"]["level"] == "ok"


def test_install_dry_run_shows_the_line_and_starts_and_writes_nothing(nobus):
    res = run_in(["cron", "ticker", "install", "--dry-run"], nobus)
    assert res.code == 0, res
    assert f"+++ {_conf(nobus)}" in res.out and f"+{tickerconf.HEADER}" in res.out
    assert not _conf(nobus).exists() and _running(nobus) is None


def test_a_path_the_line_cannot_carry_is_refused_before_anything_is_done(nobus, tmp_path):
    odd = dict(nobus, RK_STATE_DIR=str(tmp_path / "my state"))
    res = run_in(["cron", "ticker", "install"], odd)
    assert res.code == 1 and len(res.err.splitlines()) == 1, res
    assert "'" + str(tmp_path / "my state") in res.err and "rk cron ticker start" in res.err
    assert not _conf(odd).exists() and ticker.find_running(tmp_path / "my state") is None


def test_a_new_tmux_server_started_with_the_written_config_starts_the_ticker(nobus, new_server):
    assert run_in(["cron", "ticker", "install"], nobus).code == 0
    assert run_rk(["cron", "ticker", "stop"], nobus).returncode == 0
    assert _running(nobus) is None
    new_server(_conf(nobus))
    wait_for(lambda: _running(nobus), timeout=20, message="the ticker tmux started")
    log = Path(nobus["RK_STATE_DIR"]) / ticker.START_LOG_NAME
    assert log.read_text() == "" and oct(log.stat().st_mode & 0o777) == "0o600"


def test_a_broken_lines_errors_land_in_its_log_doctor_shows_them_and_install_mends_it(nobus, new_server):
    assert run_in(["cron", "ticker", "install"], nobus).code == 0
    assert run_rk(["cron", "ticker", "stop"], nobus).returncode == 0
    conf = _conf(nobus)
    conf.write_text(conf.read_text().replace(f" {sys.executable} ", " /nonexistent/python3 "))
    new_server(conf)
    log = Path(nobus["RK_STATE_DIR"]) / ticker.START_LOG_NAME
    wait_for(lambda: log.exists() and "/nonexistent/python3" in log.read_text(), timeout=20, message="the error")
    check = _checks(nobus)["ticker"]
    assert check["level"] == "fail" and "tmux's line failed at " in check["detail"], check
    assert "/nonexistent/python3" in check["detail"] and check["fix"] == "rk cron ticker install"
    mended = run_in(["cron", "ticker", "install"], nobus)
    assert mended.code == 0 and f"replaced rk's line in {conf}" in mended.out, mended
    assert "/nonexistent" not in conf.read_text() and not log.exists()  # its errors were about the old line
    assert _checks(nobus)["ticker"]["level"] == "ok"


def test_doctor_warns_when_the_ticker_runs_but_tmuxs_line_failed(nobus):
    assert run_in(["cron", "ticker", "start"], nobus).code == 0
    (Path(nobus["RK_STATE_DIR"]) / ticker.START_LOG_NAME).write_text("sh: 1: /gone/rk: not found\n")
    check = _checks(nobus)["ticker"]
    assert check["level"] == "warn" and "; but tmux's line failed at " in check["detail"], check
    assert check["detail"].endswith(": sh: 1: /gone/rk: not found") and "rk cron ticker install" in check["fix"]


def test_doctors_fix_without_a_bus_is_one_that_works_here(nobus):
    assert _checks(nobus)["ticker"]["fix"] == "rk cron ticker install"
    assert run_in(["cron", "ticker", "install"], nobus).code == 0
    assert run_rk(["cron", "ticker", "stop"], nobus).returncode == 0
    check = _checks(nobus)["ticker"]
    assert check["level"] == "fail" and check["fix"].startswith("rk cron ticker start (tmux's line starts it")
    run_in(["cron", "ticker", "start"], nobus)
    assert _checks(nobus)["ticker"]["level"] == "ok"  # the fix, as given, worked


def test_doctor_shows_what_ended_the_last_ticker_from_its_log(nobus):
    state = Path(nobus["RK_STATE_DIR"])
    state.mkdir(mode=0o700, exist_ok=True)
    log = state / ticker.LOG_NAME
    started = "2026-12-06 10:00:00,000 INFO ticker started (pid 7, interval 30s)\n"
    log.write_text(started + "rk: state directory /x was removed or replaced; the ticker stops\n")
    assert _checks(nobus)["ticker"]["detail"].endswith(
        ": rk: state directory /x was removed or replaced; the ticker stops"
    )
    log.write_text(started + "2026-12-06 10:00:30,000 INFO ticker stopped after 2 ticks\n")
    assert _checks(nobus)["ticker"]["detail"] == "not running: nothing fires"  # a clean stop is no error


def test_uninstall_removes_rks_line_and_says_the_users_own(nobus):
    conf = _conf(nobus)
    theirs = "set -g mouse on\nrun-shell -b 'rk cron ticker start'\n"
    conf.write_text(theirs)
    assert run_in(["cron", "ticker", "install"], nobus).code == 0
    assert tickerconf.installed(conf.read_text())
    res = run_in(["uninstall", "--yes"], nobus)
    assert res.code == 0, res
    assert conf.read_text() == theirs and f"tmux: removed the line that starts the ticker from {conf}" in res.out
    assert f"kept: {conf}:2 starts the ticker with tmux" in res.out and f"{conf}:5" not in res.out
    assert _running(nobus) is None


def test_the_line_goes_into_the_file_the_L_server_loaded(nobus, new_server):
    custom = Path(nobus["HOME"]) / "dotfiles" / "tmux.conf"
    custom.parent.mkdir()
    custom.write_text("set -g mouse on\n")
    new_server(custom)
    name = f"rk-tk-{os.getpid()}-0"
    res = run_in(["-L", name, "cron", "ticker", "install"], nobus)
    assert res.code == 0 and f"added to {custom}: " in res.out, res
    assert tickerconf.installed(custom.read_text()) and not _conf(nobus).exists()

"""`rk host` against real OpenSSH servers on loopback (tests/sshd.py): each host
its own sshd, HOME, state dir and tmux dir; the client's ssh config handed in as
$RK_SSH_CONFIG, so neither the machine's sshd nor the user's ~/.ssh is used."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest
from conftest import run_rk

from rk import __version__
from rk.cli.fleet import ask, ask_each
from rk.core.fleet.hosts import Host

pytestmark = pytest.mark.shell


def rk(args, env, timeout=60):
    return run_rk(args, env, timeout=timeout)


def test_a_host_added_answers_its_check_with_this_version(world, client):
    world.host("buildbox")
    assert rk(["host", "add", "buildbox", "buildbox"], client).returncode == 0
    done = rk(["host", "check"], client)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"buildbox: ok, rk {__version__}"
    got = json.loads(rk(["host", "check", "--json"], client).stdout)["result"]
    assert got == [
        {"host": "buildbox", "destination": "buildbox", "reachable": True, "version": __version__, "problem": ""}
    ]


def test_another_version_or_no_rk_there_is_said_with_the_fix(world, client, tmp_path):
    h = world.host("old")
    fake = h.root / "old-rk"
    fake.write_text("#!/bin/sh\necho 'rk 0.0.1'\n")
    fake.chmod(0o755)
    rk(["host", "add", "old", "old", "--rk", str(fake)], client)
    rk(["host", "add", "bare", "old", "--rk", "/nowhere/rk"], client)
    done = rk(["host", "check", "--json"], client)
    assert done.returncode == 1
    problems = {r["host"]: r["problem"] for r in json.loads(done.stdout)["result"]}
    want = f"old: runs rk 0.0.1, this host rk {__version__}: install rk {__version__} on old (or this version here)"
    assert problems["old"] == want
    assert problems["bare"].startswith("bare: no rk answered as '/nowhere/rk'")


def test_a_host_that_is_down_or_refuses_the_key_is_said_at_once_never_prompting(world, client):
    down = world.host("down")
    world.host("locked")
    rk(["host", "add", "down", "down"], client)
    rk(["host", "add", "locked", "locked"], client)
    down.stop()
    world.hosts["locked"].world.authorized.write_text("")  # no key accepted anywhere now
    started = time.monotonic()
    done = rk(["host", "check"], client, timeout=30)
    elapsed = time.monotonic() - started
    assert done.returncode == 1
    lines = dict(line.split(": ", 1) for line in done.stdout.strip().splitlines())
    assert lines["down"].startswith("unreachable: ") and "refused" in lines["down"], lines
    assert lines["locked"].startswith("unreachable: ") and "Permission denied" in lines["locked"], lines
    assert elapsed < 20, elapsed  # BatchMode: no prompt waited on (a bound, not a benchmark)


def test_values_travel_to_the_remote_rk_verbatim_and_no_shell_reads_them(world, client, tmp_path):
    h = world.host("b")
    marker = tmp_path / "pwned"
    hostile = [f"$(touch {marker})", f"`touch {marker}`", f"'; touch {marker}; '", f'"; touch {marker}; "', "a\nb"]
    target = Host("b", "b")
    for value in hostile:
        reply = ask(client, client["RK_STATE_DIR"], target, ["cron", "show", value])
        assert reply.problem == "" and reply.status == 1, reply
        assert repr(value)[:30] in reply.stderr or value.split("\n")[0] in reply.stderr, (value, reply.stderr)
    assert not marker.exists()
    assert not list(h.home.glob("*pwned*"))


def test_commands_to_one_host_share_one_connection_in_a_private_socket_dir(world, client):
    h = world.host("b")
    replies = [ask(client, client["RK_STATE_DIR"], Host("b", "b"), ["--version"]) for _ in range(3)]
    assert [r.stdout for r in replies] == [f"rk {__version__}\n"] * 3
    control = Path(client["RK_STATE_DIR"]) / "ssh"
    control = control if control.exists() else Path(ssh_control(client))
    assert stat.S_IMODE(control.stat().st_mode) == 0o700
    assert [p.name[:3] for p in control.iterdir()] == ["cm-"]
    assert h.log.read_text().count("Accepted publickey") == 1


def ssh_control(client):
    from rk.host.ssh import control_dir

    return control_dir(client["RK_STATE_DIR"])


def test_hosts_are_asked_in_parallel_and_one_down_is_said_beside_the_others(world, client):
    for name in ("a", "b", "c"):
        world.host(name)
    world.hosts["b"].stop()
    hosts = [Host(n, n) for n in ("a", "b", "c")]
    replies = ask_each(client, client["RK_STATE_DIR"], hosts, ["--version"])
    assert [(r.host, r.status, r.problem[:15]) for r in replies] == [
        ("a", 0, ""),
        ("b", 1, "b: unreachable:"),
        ("c", 0, ""),
    ]


def test_a_slow_link_answers_slower_and_a_stalled_one_is_said_within_its_bound(world, client):
    """A link that holds each chunk 0.2 s each way still answers (a view, a check); a
    link that opens and then passes nothing is said unreachable within ssh's connect
    bound (5 s), beside the others' answers."""
    world.host("slow", link="0.2")
    world.host("stalled", link="stalled")
    world.host("fine")
    for name in ("slow", "stalled", "fine"):
        rk(["host", "add", name, name], client)
    started = time.monotonic()
    done = rk(["host", "check", "--json"], client, timeout=60)
    took = time.monotonic() - started
    got = {r["host"]: r for r in json.loads(done.stdout)["result"]}
    assert done.returncode == 1
    assert got["slow"]["problem"] == "" and got["fine"]["problem"] == ""
    assert got["stalled"]["problem"].startswith("stalled: unreachable: "), got["stalled"]
    assert took < 30, took  # the stalled host costs its connect bound, not the others' time
    listed = rk(["cron", "list", "--host", "slow", "--json"], client, timeout=60)
    assert listed.returncode == 0 and json.loads(listed.stdout)["result"] == []

"""`--host`: views and changes run on another host over real ssh (tests/sshd.py),
`--host all` for views, and a change retried after a dropped link made once."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_rk, wait_for
from sshd import remote_rks

pytestmark = pytest.mark.shell


def rk(args, env, timeout=90):
    return run_rk(args, env, timeout=timeout)


def entries_of(state: Path) -> list[dict]:
    """The entries file of a host's default server, as written."""
    from ruamel.yaml import YAML

    path = state / "default.yaml"
    return list((YAML(typ="safe").load(path.read_text()) or {}).get("entries", [])) if path.exists() else []


def test_a_change_and_a_view_go_to_the_host_named_and_nowhere_else(world, client):
    b = world.host("b")
    rk(["host", "add", "b", "b"], client)
    added = rk(
        ["cron", "add", "--host", "b", "--every", "5m", "--pane", "%0", "--", "$(touch /tmp/x) 'q' \"z\""], client
    )
    assert added.returncode == 0, added.stderr
    remote = entries_of(b.state)
    assert [e["payload"] for e in remote] == ["$(touch /tmp/x) 'q' \"z\""]
    assert entries_of(Path(client["RK_STATE_DIR"])) == []
    listed = rk(["cron", "list", "--host", "b", "--json"], client)
    assert [e["id"] for e in json.loads(listed.stdout)["result"]] == [remote[0]["id"]]
    assert rk(["cron", "rm", "--host=b", remote[0]["id"]], client).returncode == 0
    assert entries_of(b.state) == []


def test_all_hosts_answer_one_view_and_a_host_down_is_said_beside_the_others(world, client):
    for name in ("a", "b"):
        world.host(name)
        rk(["host", "add", name, name], client)
    rk(["cron", "add", "--host", "a", "--every", "5m", "--pane", "%1", "on a"], client)
    rk(["cron", "add", "--every", "5m", "--pane", "%2", "here"], client)
    world.hosts["b"].stop()
    done = rk(["cron", "list", "--host", "all", "--json"], client)
    assert done.returncode == 1
    doc = json.loads(done.stdout)
    assert sorted((e["host"], e["name"]) for e in doc["result"]) == [("a", "on a"), ("local", "here")]
    assert [(h["host"], h["ok"]) for h in doc["hosts"]] == [("local", True), ("a", True), ("b", False)]
    assert doc["hosts"][2]["problem"].startswith("b: unreachable: ")
    human = rk(["cron", "list", "--host", "all"], client).stdout.splitlines()
    assert human[0].split()[:3] == ["HOST", "ID", "NAME"]  # one table, the host first
    assert sorted(line.split()[0] for line in human[1:3]) == ["a", "local"]
    assert [line.split()[1] for line in human[1:3]] == [e["id"] for e in doc["result"]]
    assert human[3].startswith("b: unreachable: ") and len(human) == 4


def test_host_words_refused_with_the_reason(world, client):
    world.host("b")
    rk(["host", "add", "b", "b"], client)
    cases = {
        ("cron", "add", "--host", "all", "--every", "5m", "--pane", "%0", "x"): (2, "--host all is for views"),
        ("cron", "list", "--host", "nope"): (1, "no host 'nope'"),
        ("cron", "simulate", "--host", "b", "--every", "5m"): (2, "does not take --host"),
        ("cron", "list", "--host", "-oProxyCommand=x"): (2, "invalid host name"),
        ("events", "-f", "--host", "b", "--bogus"): (2, "no option"),
        ("events", "-f", "--host", "nope"): (1, "no host 'nope'"),
    }
    for args, (status, words) in cases.items():
        done = rk(list(args), client)
        assert (done.returncode, words in done.stderr) == (status, True), (args, done.stderr)


def test_a_change_whose_answer_is_lost_is_retried_and_made_once(world, client):
    """The host's entries lock is held, so the first run waits; the link is dropped
    under it (the connection's processes killed, the command left running); the
    lock is let go; the client's retry, with the same request id, gets the first
    run's answer: one entry, not two."""
    b = world.host("b")
    rk(["host", "add", "b", "b"], client)
    lock = b.state / "default.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "add", "--host", "b", "--every", "5m", "--pane", "%0", "once"],
        env=client,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: remote_rks(b), timeout=30, message="the remote rk waiting on the lock")
        assert b.drop_links() >= 1
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    assert [e["payload"] for e in entries_of(b.state)] == ["once"]
    assert "once" in out

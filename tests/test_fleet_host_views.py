"""`--host` for the views of one entry or pane (`cron show`, `cron next`, `agent read`),
`cron runs`, and `cron wake` (a change: a request id, so a wake whose answer is lost is
retried and made once), over real ssh (tests/sshd.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import run_rk
from sshd import remote_rks

from rk.store.delivery_log import read_live

pytestmark = pytest.mark.shell


def rk(args, env, timeout=90):
    return run_rk(args, env, timeout=timeout)


def test_entry_and_pane_views_read_the_host_named(world, client):
    b = world.host("b")
    rk(["host", "add", "b", "b"], client)
    tmux = ["tmux", "-f", "/dev/null"]
    script = "printf 'screen of b\\033[31m red\\033[0m\\n'; exec sleep 600"
    subprocess.run([*tmux, "new-session", "-d", "-s", "w", script], env=b.env, check=True, timeout=30)
    try:
        pane = subprocess.run(
            [*tmux, "display", "-p", "-t", "w:", "#{pane_id}"], env=b.env, capture_output=True, text=True, check=True
        ).stdout.strip()
        added = rk(["cron", "add", "--host", "b", "--every", "5m", "--pane", pane, "--json", "on b"], client)
        eid = json.loads(added.stdout)["result"]["id"]
        shown = json.loads(rk(["cron", "show", "--host", "b", eid, "--json"], client).stdout)["result"]
        assert (shown["id"], shown["name"]) == (eid, "on b")
        fires = json.loads(rk(["cron", "next", "--host", "b", "-n", "3", eid, "--json"], client).stdout)["result"]
        assert len(fires) == 3
        runs = rk(["cron", "runs", "--host", "b", "--json"], client)
        assert (runs.returncode, json.loads(runs.stdout)["result"]) == (0, [])
        every = json.loads(rk(["cron", "runs", "--host", "all", "--json"], client).stdout)
        assert [(h["host"], h["ok"]) for h in every["hosts"]] == [("local", True), ("b", True)]
        read = rk(["agent", "read", "--host", "b", "--pane", pane, "-n", "5", "--json"], client)
        assert json.loads(read.stdout)["result"] == {"pane": pane, "lines": ["screen of b red"]}, read.stderr
        assert rk(["agent", "read", "--host", "b", "--pane", pane], client).stdout == "screen of b red\n"
        here = rk(["cron", "show", eid], client)  # the entry is b's, not this host's
        assert here.returncode == 1 and f"no entry {eid}" in here.stderr
    finally:
        subprocess.run([*tmux, "kill-server"], env=b.env, capture_output=True, timeout=30)


def test_one_hosts_views_refuse_all_and_name_why(world, client):
    world.host("b")
    rk(["host", "add", "b", "b"], client)
    cases = {
        ("cron", "show", "--host", "all", "abcd"): (2, "names one host's entry or pane: --host NAME"),
        ("cron", "next", "--host", "all", "abcd"): (2, "names one host's entry or pane: --host NAME"),
        ("agent", "read", "--host", "all", "--pane", "%0"): (2, "names one host's entry or pane: --host NAME"),
        ("cron", "wake", "--host", "all", "abcd"): (2, "--host all is for views"),
        ("cron", "show", "--host", "nope", "abcd"): (1, "no host 'nope'"),
        ("agent", "read", "--host", "b", "--pane", "nope"): (2, "bad pane 'nope'"),
        ("cron", "show", "--host", "b", "abcd"): (1, "no entry abcd"),
    }
    for args, (status, words) in cases.items():
        done = rk(list(args), client)
        assert (done.returncode, words in done.stderr) == (status, True), (args, done.stderr)


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def test_a_wake_whose_answer_is_lost_is_retried_and_made_once(world, client):
    """The far end's rk is stopped as soon as it starts, before it wakes anything; the
    link is dropped under it, then it goes on; the client's retry (the same request id)
    gets that run's answer: one `woken` line, not two."""
    b = world.host("b")
    rk(["host", "add", "b", "b"], client)
    added = rk(["cron", "add", "--host", "b", "--every", "5m", "--pane", "%0", "--json", "x"], client)
    eid = json.loads(added.stdout)["result"]["id"]
    log = b.state / "default.log"

    def woken() -> int:
        lines = read_live(log) if log.exists() else []
        return sum(1 for line in lines if line.entry == eid and line.outcome.startswith("woken"))

    proc = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "wake", "--host", "b", "--json", eid],
        env=client,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stopped: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not stopped and time.monotonic() < deadline:
            stopped = remote_rks(b)
            _signal(stopped, signal.SIGSTOP)
        assert stopped, "the remote rk never started"
        assert woken() == 0  # stopped before it woke anything: the answer to come is lost
        assert b.drop_links() >= 1
    finally:
        _signal(stopped, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out)["result"] == {"id": eid, "woken": True, "was_dormant": False}
    assert woken() == 1

"""The status line's fleet counts: the pure rendering and freshness rules, the ticker's
keeper of `fleet.status` (with a stand-in look), and the whole path over real ssh
(tests/sshd.py): two hosts with agents in different states, one of them going down,
and counts that turn stale when nobody refreshes them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.channels import fleet_glance as fg
from rk.core.fleet import line
from rk.core.fleet.hosts import Host
from rk.engine.fleet_line import FleetLine

NOW = 1_800_000_000


def record(**hosts: dict) -> dict:
    return {"stale_after": 75, "hosts": hosts}


def live(at: int = NOW, **counts: int) -> dict:
    return {"at": at, "tried": at, "problem": "", "counts": counts}


# -- the pure rendering


def test_each_host_its_counts_by_state_down_and_stale_in_the_lines_style():
    hosts = fg.hosts_of(
        record(
            buildbox=live(active=3, idle=1, waiting=1, limited=0),
            gpu1={"at": NOW - 300, "tried": NOW - 10, "problem": "unreachable: refused"},
            lab=live(at=NOW - 76, active=2),
            quiet=live(),
        ),
        NOW,
    )
    assert [(h.name, h.state) for h in hosts] == [
        ("buildbox", "live"),
        ("gpu1", "down"),
        ("lab", "stale"),
        ("quiet", "live"),
    ]
    assert fg.plain(hosts) == "⇄ buildbox ●3✋1○1 gpu1✗ lab? quiet 0"
    assert (
        fg.tmux(hosts)
        == "⇄ buildbox ●3#[fg=yellow]✋1#[default]○1 #[fg=red]gpu1✗ #[fg=colour245]lab? #[default]quiet 0#[default]"
    )
    assert fg.to_list(hosts)[1] == {"host": "gpu1", "state": "down", "problem": "unreachable: refused"}
    assert fg.to_list(hosts)[0]["agents"] == {"active": 3, "waiting": 1, "limited": 0, "idle": 1}


def test_stale_counts_are_never_shown_as_live():
    at_edge = fg.hosts_of(record(b=live(at=NOW - 75, active=1)), NOW)
    past = fg.hosts_of(record(b=live(at=NOW - 76, active=1)), NOW)
    assert at_edge[0].state == "live" and past[0].state == "stale" and fg.plain(past) == "⇄ b?"
    # a failure older than the last answer is not down; a failure itself gone stale is stale
    recovered = {"at": NOW, "tried": NOW - 5, "problem": "unreachable: x", "counts": {"idle": 1}}
    assert fg.hosts_of(record(b=recovered), NOW)[0].state == "live"
    old_failure = {"at": 0, "tried": NOW - 80, "problem": "unreachable: x"}
    assert fg.hosts_of(record(b=old_failure), NOW)[0].state == "stale"
    never = {"at": 0, "tried": 0, "problem": ""}
    assert fg.hosts_of(record(b=never), NOW)[0].state == "stale"
    assert fg.hosts_of({"hosts": {"b": live(at=NOW - 89)}}, NOW)[0].state == "live"  # the default bound: 90 s


def test_many_hosts_are_summed_and_only_the_others_named():
    hosts = {f"h{i}": live(active=1, idle=i % 2) for i in range(7)}
    hosts["zz"] = {"at": 0, "tried": NOW, "problem": "unreachable"}
    assert fg.plain(fg.hosts_of(record(**hosts), NOW)) == "⇄7 ●7○3 zz✗"


def test_no_record_or_a_record_not_ours_shows_nothing_of_it():
    assert fg.hosts_of(None, NOW) == [] and fg.tmux([]) == "" and fg.plain([]) == ""
    bad = fg.hosts_of({"hosts": {"#(touch x)": live(active=1), "B": live(), "ok": "x", "good": live(idle=1)}}, NOW)
    assert [h.name for h in bad] == ["good"]
    assert fg.hosts_of(record(b={"at": "x", "tried": True, "counts": {"active": -1}}), NOW)[0].state == "stale"
    odd = fg.hosts_of(record(b=live(active=-3, idle=2, bogus=9)), NOW)[0]
    assert odd.counts == {"active": 0, "waiting": 0, "limited": 0, "idle": 2}


def test_the_setting_is_off_unless_asked_and_a_bad_one_is_said():
    assert line.every_of(None) == (0, "")
    assert line.every_of({"fleet": True}) == (line.DEFAULT_EVERY, "")
    assert line.every_of({"fleet": False}) == (0, "")
    assert line.every_of({"fleet": 10}) == (10, "")
    for bad in (4, 3601, "30", 2.5, [1]):
        every, why = line.every_of({"fleet": bad})
        assert every == 0 and "status_line.fleet" in why, bad
    assert line.every_of(["fleet"])[0] == 0
    assert line.stale_after(30) == 75


def test_counts_by_state_and_due():
    rows = [{"state": "active"}, {"state": "active"}, {"state": "idle"}, {"state": ""}, {"state": "bogus"}, "x"]
    assert line.counts(rows) == {"active": 2, "waiting": 0, "limited": 0, "idle": 1}
    assert line.counts({"state": "active"}) is None
    assert line.due(100, 70, 30, False) and not line.due(100, 71, 30, False)
    assert line.due(100, 95, 30, True) and not line.due(100, 96, 30, True)


# -- the keeper, with a stand-in look


def test_the_keeper_writes_its_record_privately_and_removes_it_when_turned_off(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("hosts:\n  a: a\n  b: b\nstatus_line:\n  fleet: 30\n")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    asked: list[str] = []
    during: list[str] = []  # what the line shows of a host while its first look runs

    def look(host: Host, _state: str, _env) -> tuple[dict[str, int] | None, str]:
        if not asked:
            during.append(fg.plain(fg.hosts_of(json.loads((state / fg.RECORD).read_text()), int(time.time()))))
        asked.append(host.name)
        return (
            ({"active": 1, "waiting": 0, "limited": 0, "idle": 2}, "") if host.name == "a" else (None, "unreachable: x")
        )

    keeper = FleetLine(state, {"RK_CONFIG": str(config)}, looker=look)
    keeper.step(time.time())
    path = state / fg.RECORD
    got = json.loads(path.read_text())
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert during and set(during) == {"⇄ a? b?"}  # not known yet, never counts (both looks may run at once)
    assert got["stale_after"] == 75 and got["hosts"]["a"]["counts"]["idle"] == 2
    assert got["hosts"]["b"]["problem"] == "unreachable: x" and got["hosts"]["b"]["at"] == 0
    keeper.step(time.time())
    assert sorted(asked) == ["a", "b"]  # not due again within its cadence
    (state / "hosts" / "a").mkdir(parents=True)
    (state / "hosts" / "a" / "default.events").write_text("x\n")  # a follower mirrored a change of a
    keeper.step(time.time() + line.MIN_GAP)
    assert sorted(asked) == ["a", "a", "b"]
    config.write_text("hosts:\n  a: a\n  b: b\nstatus_line:\n  fleet: false\n")
    keeper.step(time.time())
    assert not path.exists()


# -- over real ssh


def start_agents(host, states: list[str]) -> None:
    """A tmux server on the host (its own TMUX_TMPDIR) with a pane per state, as its hooks would mark them."""
    env = {**os.environ, **host.env}
    env.pop("TMUX", None)
    now = int(time.time())
    subprocess.run(["tmux", "new-session", "-d", "-s", "main", "sleep 600"], env=env, check=True)
    for _ in states[1:]:
        subprocess.run(["tmux", "split-window", "-t", "main", "sleep 600"], env=env, check=True)
        subprocess.run(["tmux", "select-layout", "-t", "main", "tiled"], env=env, check=True)
    panes = subprocess.run(
        ["tmux", "list-panes", "-t", "main", "-F", "#{pane_id}"], env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    for pane, state in zip(panes, states, strict=True):
        subprocess.run(
            ["tmux", "set-option", "-p", "-t", pane, "@rk_pane_agent_state", f"{state}:{now}"], env=env, check=True
        )


def stop_agents(host) -> None:
    subprocess.run(["tmux", "kill-server"], env={**os.environ, **host.env}, capture_output=True)


def segment(env: dict, fmt: str = "tmux", now: int | None = None) -> str:
    extra = {"RK_NOW": str(now)} if now else {}
    done = subprocess.run(
        [sys.executable, "-m", "rk", "status", "--format", fmt], env={**env, **extra}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.shell
def test_two_hosts_counted_one_down_and_all_stale_once_nobody_looks(world, client, tmp_path):
    a, b = world.host("a"), world.host("b")
    for name in ("a", "b"):
        assert run_rk(["host", "add", name, name], client).returncode == 0
    with open(client["RK_CONFIG"], "a") as f:
        f.write("status_line:\n  fleet: 5\n")
    start_agents(a, ["active", "active", "idle"])
    start_agents(b, ["waiting", "limited"])
    env = {k: v for k, v in client.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
    state = Path(env["RK_STATE_DIR"])
    ticker = subprocess.Popen([sys.executable, "-m", "rk", "cron", "ticker"], env=env, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: "b ✋1⛔1" in fg.plain(_hosts(state)), timeout=60, message="both hosts counted")
        assert fg.plain(_hosts(state)) == "⇄ a ●2○1 b ✋1⛔1"
        shown = segment(env)
        assert shown.endswith("⇄ a ●2○1 b #[fg=yellow]✋1#[fg=red]⛔1#[default]"), shown
        as_json = json.loads(segment(env, "json"))
        assert [(h["host"], h["state"]) for h in as_json["hosts"]] == [("a", "live"), ("b", "live")]
        assert as_json["text"].endswith("⇄ a ●2○1 b ✋1⛔1")
        b.stop()
        wait_for(lambda: "b✗" in segment(env), timeout=60, message="b said down")
        assert "a ●2○1" in segment(env)
        b_said = json.loads((state / fg.RECORD).read_text())["hosts"]["b"]["problem"]
        assert b_said.startswith("unreachable: ")
    finally:
        ticker.terminate()
        ticker.communicate(timeout=30)
        stop_agents(a)
        stop_agents(b)
    later = int(time.time()) + line.stale_after(5) + 1  # nobody refreshed the record since
    assert segment(env, now=later).endswith("#[fg=colour245]a? b?#[default]")


def _hosts(state: Path) -> list[fg.HostGlance]:
    try:
        return fg.hosts_of(json.loads((state / fg.RECORD).read_text()), int(time.time()))
    except (OSError, ValueError):
        return []

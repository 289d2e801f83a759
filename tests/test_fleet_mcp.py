"""rk mcp's tools on another host, over real ssh (tests/sshd.py): the caller is a relay
pane of this test's private tmux (as an agent CLI would start `rk mcp`), host `b` a
loopback sshd with its own tmux server, state and config. What is checked is the
authority: nothing reaches `b` without a grant naming it, a grant allows exactly its
panes, a hostile or unknown host name is refused before ssh runs, a host that is down is
a tool error within seconds, and the guardrails (the pending cap, the chain rules) hold
across the link."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for
from mcp_client import RelayPane, Session

from rk.core.log import states
from rk.core.log.delivery import LogLine
from rk.store import delivery_log, state_journal
from rk.store.config import config_path

pytestmark = [pytest.mark.shell, pytest.mark.tmux]

FAKE_AGENT = Path(__file__).resolve().parent.parent / "demo" / "fake_agent.py"
#: A grant for the operator on host b's worker windows.
WORKERS_ON_B = {"who": {"role": "operator"}, "where": {"host": "b", "role": "worker"}}


class Fleet:
    """This host (a private tmux, the operator's relay pane) and host `b` (an sshd, and a
    tmux server there with a worker window and a reviewer window)."""

    def __init__(self, world, tmux_server, env) -> None:
        self.b = world.host("b")
        self.env = {**world.client_env(env), "RK_RATE_PER_HOUR": "1000"}
        assert run_rk(["host", "add", "b", "b"], self.env).returncode == 0
        self.tmux = tmux_server
        self.b_env = self.b.env
        agent = f"{sys.executable} {FAKE_AGENT} worker --work 0.2 0.2 --seed 1"
        self.b_tmux("-f", "/dev/null", "new-session", "-d", "-s", "work", "-x", "160", "-y", "40", agent)
        self.worker = self.b_tmux("display", "-p", "-t", "work:", "#{pane_id}").strip()
        self.b_tmux("set-option", "-w", "-t", self.worker, "@rk_win_role", "worker")
        self.reviewer = self.b_tmux("new-window", "-d", "-t", "work:", "-P", "-F", "#{pane_id}", "cat").strip()
        self.b_tmux("set-option", "-w", "-t", self.reviewer, "@rk_win_role", "reviewer")
        wait_for(
            lambda: "demo>" in self.b_tmux("capture-pane", "-p", "-t", self.worker), 15, message="b's worker prompt"
        )
        self.relay = RelayPane.start(tmux_server, role="operator")

    def b_tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", *args], env=self.b_env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def grant(self, *grants: dict) -> None:
        path = config_path(self.env)
        text = path.read_text() if path.exists() else ""
        path.write_text(text.split("mcp:")[0] + "mcp:\n  grants: " + json.dumps(list(grants)) + "\n")

    def serve(self, body, env: dict | None = None):
        return self.relay.serve(env or self.env, body)

    def entries_on_b(self) -> list[dict]:
        done = run_rk(["cron", "list", "--json"], self.b.env)
        return json.loads(done.stdout)["result"]

    def entries_here(self) -> list[dict]:
        done = run_rk(["cron", "list", "-L", self.tmux.name, "--json"], self.env)
        return json.loads(done.stdout)["result"]

    def audit(self) -> list[dict]:
        path = Path(self.env["RK_STATE_DIR"]) / "mcp.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def close(self) -> None:
        self.relay.stop()
        subprocess.run(["tmux", "kill-server"], env=self.b_env, capture_output=True)


@pytest.fixture
def fleet(world, tmux_server, env):
    f = Fleet(world, tmux_server, env)
    yield f
    f.close()


def test_without_a_grant_naming_the_host_nothing_reaches_it(fleet):
    fleet.grant({"who": {"role": "operator"}, "where": {}})  # any pane, but of this host only

    def body(s: Session):
        return (
            s.call("cron_add", prompt="status?", every="10m", pane=fleet.worker, host="b"),
            s.call("agent_await", until=["idle"], pane=fleet.worker, timeout="5s", host="b"),
            s.call("agent_list", host="b"),
            s.call("cron_add", prompt="here", every="10m", pane=fleet.relay.pane),  # this host: as before
        )

    added, awaited, listed, here = fleet.serve(body)
    for reply in (added, awaited, listed):
        assert reply.error and reply.text.startswith("refused: host 'b' is in no grant of this operator's"), reply
        assert reply.text.endswith("mcp: {grants: [{who: {role: 'operator'}, where: {host: 'b'}, may: [read]}]}")
    assert not here.error, here
    assert fleet.entries_on_b() == []
    assert [e["name"] for e in fleet.entries_here()] == ["here"]
    refused = [(a["tool"], a.get("host"), a["outcome"]) for a in fleet.audit() if a["outcome"] != "ok"]
    assert refused == [("cron_add", "b", "refused"), ("agent_await", "b", "refused"), ("agent_list", "b", "refused")]
    # no session was ever opened to b for them: its sshd served only the test's own set-up
    assert not (Path(fleet.env["RK_STATE_DIR"]) / "mcp-hosts.log").exists()


def test_a_grant_allows_its_panes_there_and_no_others(fleet):
    fleet.grant(WORKERS_ON_B)

    def body(s: Session):
        added = s.call("cron_add", prompt="status?", every="10m", pane=fleet.worker, host="b")
        wrong = s.call("cron_add", prompt="review!", every="10m", pane=fleet.reviewer, host="b")
        by_role = s.call("cron_add", prompt="all workers", every="1h", role="worker", host="b")
        mine = s.call("cron_add", prompt="no pane", every="10m", host="b")
        listed = s.call("cron_list", host="b")
        agents = s.call("agent_list", host="b")
        return added, wrong, by_role, mine, listed, agents

    added, wrong, by_role, mine, listed, agents = fleet.serve(body)
    eid = added.result()["id"]
    assert not by_role.error, by_role
    assert wrong.error and wrong.text.startswith(
        f"refused: schedule in pane {fleet.reviewer} on host 'b' (session 'work', role 'reviewer') is beyond"
    ), wrong
    assert "where: {host: 'b', session: 'work'}" in wrong.text
    assert mine.error and "name the pane, role or session" in mine.text
    on_b = {e["id"]: e for e in fleet.entries_on_b()}
    assert set(on_b) == {eid, by_role.result()["id"]}
    assert on_b[eid]["target"] == f"pane:{fleet.worker}" and on_b[eid]["name"] == "status?"
    assert fleet.entries_here() == []  # nothing of it here
    assert {e["id"] for e in listed.result()} == set(on_b)
    rows = {r["pane"]: r for r in agents.result()}
    assert "fake_agent.py worker" in rows[fleet.worker]["process"]  # readable by the grant: its command line
    assert rows[fleet.reviewer]["process"] == "cat"
    log = [(a["tool"], a.get("host"), a["outcome"]) for a in fleet.audit()]
    assert log == [
        ("cron_add", "b", "ok"),
        ("cron_add", "b", "refused"),
        ("cron_add", "b", "ok"),
        ("cron_add", "b", "refused"),
    ]


def test_await_and_changes_there_need_the_grant_for_that_pane(fleet):
    fleet.grant(WORKERS_ON_B)

    def body(s: Session):
        added = s.call("cron_add", prompt="status?", every="10m", pane=fleet.worker, host="b").result()["id"]
        muted = s.call("cron_mute", id=added, host="b")
        edited = s.call("cron_edit", id=added, every="20m", host="b")
        logged = s.call("cron_log", host="b")
        waited = s.call("agent_await", until=["idle"], pane=fleet.worker, timeout="20s", host="b")
        beyond = s.call("agent_await", until=["idle"], pane=fleet.reviewer, timeout="5s", host="b")
        sent = s.call("send", prompt="hello from a", pane=fleet.worker, host="b")
        removed = s.call("cron_rm", id=added, host="b")
        return muted, edited, logged, waited, beyond, sent, removed

    muted, edited, logged, waited, beyond, sent, removed = fleet.serve(body)
    assert not muted.error and not removed.error, (muted, removed)
    assert edited.result()["schedule"] == "every 20m", edited
    assert logged.result() == [], logged  # b's log: nothing fired yet
    assert waited.result()["condition"] == "idle", waited
    assert beyond.error and beyond.text.startswith(f"refused: await in pane {fleet.reviewer} on host 'b'"), beyond
    assert not sent.error, sent
    wait_for(
        lambda: "hello from a" in fleet.b_tmux("capture-pane", "-p", "-t", fleet.worker), 20, message="the send on b"
    )
    assert fleet.entries_on_b() == []
    hosts = {a.get("host") for a in fleet.audit()}
    assert hosts == {"b"}


def test_a_grant_for_another_host_or_a_wrong_role_allows_nothing(fleet):
    fleet.grant(
        {"who": {"role": "operator"}, "where": {"host": "c*"}}, {"who": {"role": "worker"}, "where": {"host": "b"}}
    )

    def body(s: Session):
        return s.call("cron_add", prompt="x", every="10m", pane=fleet.worker, host="b")

    reply = fleet.serve(body)
    assert reply.error and reply.text.startswith("refused: host 'b' is in no grant"), reply
    assert fleet.entries_on_b() == []


def test_hostile_and_unknown_host_names_are_refused_before_ssh_runs(fleet):
    fleet.grant({"who": {}, "where": {"host": "*"}})
    planted = Path(tempfile.mkdtemp(prefix="p", dir="/tmp")) / "x"  # short: a name is at most 64 characters
    names = {
        f"-oProxyCommand=touch {planted}": "invalid host name",
        "b;touch x": "invalid host name",
        "../b": "invalid host name",
        "all": "is reserved",
        "nope": "no host 'nope' in rk's config",
    }

    def body(s: Session):
        return {name: s.call("cron_list", host=name) for name in names} | {"local": s.call("cron_list", host="local")}

    replies = fleet.serve(body)
    for name, words in names.items():
        assert replies[name].error and replies[name].text.startswith("refused: "), (name, replies[name])
        assert words in replies[name].text, (name, replies[name])
    assert replies["local"].result() == []  # `local` is this host, as absent is
    assert not planted.exists()
    assert len([a for a in fleet.audit() if a["outcome"] == "refused"]) == len(names)


def test_a_host_that_is_down_is_a_tool_error_within_seconds(fleet):
    fleet.grant(WORKERS_ON_B)
    fleet.b.stop()

    def body(s: Session):
        started = time.monotonic()
        replies = (
            s.call("cron_add", prompt="x", every="10m", pane=fleet.worker, host="b"),
            s.call("agent_await", until=["idle"], pane=fleet.worker, timeout="30m", host="b"),
            s.call("cron_list", host="b"),
        )
        return replies, time.monotonic() - started

    replies, took = fleet.serve(body)
    for reply in replies:
        assert reply.error and "unreachable" in reply.text, reply
    assert took < 45, took
    assert [(a["tool"], a.get("host"), a["outcome"]) for a in fleet.audit()] == [
        ("cron_add", "b", "refused"),
        ("agent_await", "b", "refused"),
        ("cron_list", "b", "refused"),
    ]


def test_the_pending_cap_counts_the_callers_entries_on_the_host(fleet):
    fleet.grant(WORKERS_ON_B)
    env = {**fleet.env, "RK_MCP_MAX_PENDING": "2"}

    def body(s: Session):
        first = s.call("cron_add", prompt="one", every="10m", pane=fleet.worker, host="b").result()["id"]
        s.call("cron_add", prompt="two", every="20m", pane=fleet.worker, host="b").result()
        third = s.call("cron_add", prompt="three", every="30m", pane=fleet.worker, host="b")
        here = s.call("cron_add", prompt="here", every="10m", pane=fleet.relay.pane)  # its own count here
        s.call("cron_rm", id=first, host="b").result()
        again = s.call("cron_add", prompt="three again", every="30m", pane=fleet.worker, host="b")
        return third, here, again

    third, here, again = fleet.serve(body, env)
    assert third.error and third.text.startswith(f"refused: this pane ({fleet.relay.pane}) already has 2 entries")
    assert not here.error and not again.error, (here, again)
    assert sorted(e["name"] for e in fleet.entries_on_b()) == ["three again", "two"]
    # a person's entry on b, made there, is no one's over rk mcp
    assert run_rk(["cron", "add", "--every", "1h", "--pane", fleet.worker, "human"], fleet.b.env).returncode == 0
    listed = fleet.serve(lambda s: s.call("cron_list", host="b").result(), env)
    assert sorted(e["name"] for e in listed) == ["human", "three again", "two"]  # seen by the grant's read


def test_in_a_turn_a_fire_started_only_a_one_shot_goes_to_another_host(fleet):
    fleet.grant(WORKERS_ON_B)
    here, pane = fleet.env, fleet.relay.pane
    made = run_rk(["cron", "add", "-L", fleet.tmux.name, "--json", "--every", "10m", "--pane", pane, "beat"], here)
    parent = json.loads(made.stdout)["result"]["id"]
    now, state = int(time.time()) - 60, Path(here["RK_STATE_DIR"])
    state_journal.append(here, fleet.tmux.name, states.render(now, pane, "idle"))
    delivery_log.append_lines(
        state / f"{fleet.tmux.name}.log", [LogLine(now + 1, parent, pane, "schedule", "delivered: typed")]
    )
    state_journal.append(here, fleet.tmux.name, states.render(now + 3, pane, "active"))

    def body(s: Session):
        repeating = s.call("cron_add", prompt="again and again", every="1h", pane=fleet.worker, host="b")
        once = s.call("cron_add", prompt="once", **{"in": "2h"}, pane=fleet.worker, host="b")
        return repeating, once

    repeating, once = fleet.serve(body)
    assert repeating.error and repeating.text.startswith(f"refused: this turn was started by a fire of {parent}")
    assert not once.error, once
    assert [e["name"] for e in fleet.entries_on_b()] == ["once"]

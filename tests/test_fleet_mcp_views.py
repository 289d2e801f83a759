"""rk mcp's reading tools and cron_wake on another host, over real ssh (tests/sshd.py;
the `Fleet` of tests/test_fleet_mcp.py: an operator's relay pane here, host `b` with a
worker window and a reviewer window). cron_show, cron_next, cron_runs, pane_read and
events read there only what a grant naming `b` lets the caller read; cron_wake needs the
grant's change for the entry's pane; without a grant naming `b`, nothing reaches it."""

from __future__ import annotations

import json
import time

import pytest
from conftest import run_rk, wait_for
from mcp_client import Session
from test_fleet_mcp import WORKERS_ON_B, Fleet
from test_fleet_mcp import fleet as fleet

from rk.core.log import states
from rk.core.log.delivery import LogLine
from rk.store import delivery_log, state_journal

pytestmark = [pytest.mark.shell, pytest.mark.tmux]


def add_on_b(fleet: Fleet, pane: str, name: str) -> str:
    """An entry made on b by a person there (no one's over rk mcp)."""
    done = run_rk(["cron", "add", "--every", "10m", "--pane", pane, "--json", name], fleet.b.env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["result"]["id"]


def calls(s: Session, entry: str, pane: str) -> dict:
    """Each tool of this file, on an entry and a pane of b."""
    return {
        "cron_show": s.call("cron_show", id=entry, host="b"),
        "cron_next": s.call("cron_next", id=entry, n=2, host="b"),
        "cron_runs": s.call("cron_runs", id=entry, host="b"),
        "pane_read": s.call("pane_read", pane=pane, lines=10, host="b"),
        "events": s.call("events", pane=[pane], host="b"),
        "cron_wake": s.call("cron_wake", id=entry, host="b"),
    }


def test_without_a_grant_naming_the_host_no_view_and_no_wake_reaches_it(fleet):
    fleet.grant({"who": {"role": "operator"}, "where": {}})  # any pane, of this host only
    entry = add_on_b(fleet, fleet.worker, "status?")
    replies = fleet.serve(lambda s: calls(s, entry, fleet.worker))
    for tool, reply in replies.items():
        assert reply.error and reply.text.startswith("refused: host 'b' is in no grant of this operator's"), (
            tool,
            reply,
        )
    refused = [(a["tool"], a.get("host"), a["outcome"]) for a in fleet.audit()]
    assert refused == [(tool, "b", "refused") for tool in replies]


def test_a_grant_reads_its_panes_there_and_no_others(fleet):
    fleet.grant(WORKERS_ON_B)
    mine, theirs = add_on_b(fleet, fleet.worker, "status?"), add_on_b(fleet, fleet.reviewer, "review!")
    fleet.b_tmux("send-keys", "-t", fleet.worker, "-l", "typed-on-b")  # on b's screen, not sent
    wait_for(lambda: "typed-on-b" in fleet.b_tmux("capture-pane", "-p", "-t", fleet.worker), 15, message="b's screen")
    now = int(time.time())
    for pane in (fleet.worker, fleet.reviewer):
        state_journal.append(fleet.b.env, "default", states.render(now, pane, "waiting"))

    def body(s: Session):
        return calls(s, mine, fleet.worker) | {
            "events_all": s.call("events", host="b"),
            "runs_all": s.call("cron_runs", host="b"),
            "show_theirs": s.call("cron_show", id=theirs, host="b"),
            "next_theirs": s.call("cron_next", id=theirs, host="b"),
            "runs_theirs": s.call("cron_runs", id=theirs, host="b"),
            "read_theirs": s.call("pane_read", pane=fleet.reviewer, host="b"),
            "events_theirs": s.call("events", pane=[fleet.reviewer], host="b"),
            "read_here": s.call("pane_read", pane=fleet.relay.pane),  # this host's own: its own pane
        }

    got = fleet.serve(body)
    shown = got["cron_show"].result()
    assert (shown["id"], shown["target"], shown["name"]) == (mine, f"pane:{fleet.worker}", "status?")
    assert len(got["cron_next"].result()) == 2, got["cron_next"]
    assert got["cron_runs"].result() == [] and got["runs_all"].result() == []  # nothing fired on b yet
    lines = got["pane_read"].result()["lines"]
    assert any("typed-on-b" in line for line in lines), lines  # b's screen, read there
    assert not any("typed-on-b" in line for line in got["read_here"].result()["lines"])
    events = got["events"].result() + got["events_all"].result()
    assert {e["pane"] for e in events} == {fleet.worker}, events  # the reviewer's change is not readable
    assert any(e.get("to") == "waiting" for e in got["events"].result()), got["events"]
    on_b = run_rk(["events", "--json"], fleet.b.env).stdout
    assert f'"pane": "{fleet.reviewer}"' in on_b or f'"pane":"{fleet.reviewer}"' in on_b  # there, it was
    assert got["events_theirs"].result() == []
    for key in ("show_theirs", "next_theirs", "runs_theirs", "read_theirs"):
        reply = got[key]
        assert reply.error and reply.text.startswith("refused: read in pane"), (key, reply)
        assert f"{fleet.reviewer} on host 'b'" in reply.text, (key, reply)
    assert not got["cron_wake"].error, got["cron_wake"]  # the worker's: the grant allows change
    refused = [(a["tool"], a.get("host")) for a in fleet.audit() if a["outcome"] == "refused"]
    assert refused == [(t, "b") for t in ("cron_show", "cron_next", "cron_runs", "pane_read")]


def make_dormant(fleet: Fleet, entry: str, pane: str) -> None:
    """Three deliveries on b that started no turn after the pane's stamp, and the `dormant` line."""
    t = int(time.time()) - 1000
    fleet.b_tmux("set-option", "-p", "-t", pane, "@rk_pane_agent_state", f"idle:{t}")
    lines = [LogLine(t + 100 * k, entry, pane, "schedule", "delivered: typed") for k in (1, 2, 3)]
    lines.append(LogLine(t + 400, entry, pane, "schedule", "dormant: no answer to 3 prompts"))
    delivery_log.append_lines(fleet.b.state / "default.log", lines)


def woken_lines(fleet: Fleet, entry: str) -> int:
    path = fleet.b.state / "default.log"
    return sum(1 for line in delivery_log.read_live(path) if line.entry == entry and line.outcome.startswith("woken"))


def dormant_on_b(fleet: Fleet, entry: str) -> bool:
    return {e["id"]: e["dormant"] for e in fleet.entries_on_b()}[entry]


def test_cron_wake_wakes_a_dormant_entry_there_once_under_the_grants_change(fleet):
    mine, theirs = add_on_b(fleet, fleet.worker, "status?"), add_on_b(fleet, fleet.reviewer, "review!")
    make_dormant(fleet, mine, fleet.worker)
    make_dormant(fleet, theirs, fleet.reviewer)
    assert dormant_on_b(fleet, mine) and dormant_on_b(fleet, theirs)
    read_only = {"who": {"role": "operator"}, "where": {"host": "b", "pane": fleet.reviewer}, "may": ["read"]}
    fleet.grant({**WORKERS_ON_B, "where": {"host": "b", "pane": fleet.worker}}, read_only)

    def body(s: Session):
        return s.call("cron_wake", id=mine, host="b"), s.call("cron_wake", id=theirs, host="b")

    woke, refused = fleet.serve(body)
    assert woke.result() == {"id": mine, "woken": True, "was_dormant": True}, woke
    assert refused.error and refused.text.startswith(f"refused: change in pane {fleet.reviewer} on host 'b'"), refused
    assert (woken_lines(fleet, mine), woken_lines(fleet, theirs)) == (1, 0)
    assert not dormant_on_b(fleet, mine) and dormant_on_b(fleet, theirs)
    log = [(a["tool"], a.get("host"), a["outcome"]) for a in fleet.audit()]
    assert log == [("cron_wake", "b", "ok"), ("cron_wake", "b", "refused")]
    assert fleet.audit()[0]["argv"] == ["cron", "wake", "--", mine]

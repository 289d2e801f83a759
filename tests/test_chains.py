"""Loop-safe agent-made schedules on a private tmux server: `rk cron add` run below a
pane whose current turn a fire started, and `rk mcp`'s cron_add/cron_edit there.

The turn is written as the hook and the ticker would have written it: the
pane at rest, a fire's delivery into it in the delivery log, the pane busy two
seconds later and still busy (the state journal). The commands run below the
pane's process (`tests/pane_relay.py`), where an agent's would, so the caller
is proven from the process tree.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from conftest import run_rk
from mcp_client import RelayPane, Session

from rk.core.log import states
from rk.core.log.delivery import LogLine
from rk.store import delivery_log, state_journal

pytestmark = [pytest.mark.tmux]


class Pane:
    """A relay pane of the test's server, and what its turns were started by."""

    def __init__(self, tmux_server, env) -> None:
        self.server, self.env = tmux_server, env
        self.relay = RelayPane.start(tmux_server)
        self.pane = self.relay.pane
        self.slug = tmux_server.name
        self.clock = int(time.time()) - 600

    def turn_by(self, entry: str, reason: str = "schedule") -> None:
        """A new turn of the pane, started by a delivery of `entry` (still going on)."""
        state = Path(self.env["RK_STATE_DIR"])
        t, self.clock = self.clock, self.clock + 20
        state_journal.append(self.env, self.slug, states.render(t, self.pane, "idle"))
        delivery_log.append_lines(
            state / f"{self.slug}.log", [LogLine(t + 1, entry, self.pane, reason, "delivered: typed")]
        )
        state_journal.append(self.env, self.slug, states.render(t + 3, self.pane, "active"))

    def rk(self, *args: str, hints=None) -> dict:
        """`rk ARGS --json` below the pane: its JSON document."""
        argv = [sys.executable, "-m", "rk", *args[:2], "--json", *args[2:]]
        out = self.relay.run(argv, self.env, hints=hints, timeout=60)
        return json.loads(out.decode().strip().splitlines()[-1])

    def human(self, *args: str) -> str:
        """An entry added by a human (outside tmux): its id."""
        proc = run_rk(["cron", "add", "-L", self.slug, "--json", *args], self.env, check=True)
        return json.loads(proc.stdout)["result"]["id"]

    def listing(self) -> dict[str, dict]:
        proc = run_rk(["cron", "list", "-L", self.slug, "--json"], self.env, check=True)
        return {rec["id"]: rec for rec in json.loads(proc.stdout)["result"]}


@pytest.fixture
def pane(tmux_server, env):
    p = Pane(tmux_server, env)
    yield p
    p.relay.stop()


def _added(doc: dict) -> str:
    assert doc["ok"], doc
    return doc["result"]["id"]


def _refused(doc: dict) -> str:
    assert not doc["ok"], doc
    return doc["error"]["message"]


def test_cli_in_a_turn_a_fire_started_records_the_parent_and_refuses_the_third_level(pane):
    e1 = pane.human("--every", "10m", "--pane", pane.pane, "--", "heartbeat")
    pane.turn_by(e1)
    e2 = _added(pane.rk("cron", "add", "--every", "10m", "--", "child"))
    assert pane.listing()[e2]["parent"] == e1 and pane.listing()[e1]["parent"] is None
    pane.turn_by(e2)
    message = _refused(pane.rk("cron", "add", "--every", "1h", "--", "grandchild"))
    assert message == f"refused: chain depth 3 > 2: {e1} → {e2} → (new) (setting max_chain_depth)"
    assert set(pane.listing()) == {e1, e2}  # nothing was made


def test_cli_a_child_may_not_fire_more_often_than_its_parent(pane):
    e1 = pane.human("--cron", "*/10 * * * *", "--pane", pane.pane, "--", "heartbeat")
    pane.turn_by(e1)
    message = _refused(pane.rk("cron", "add", "--every", "5m", "--", "faster"))
    assert message.startswith("refused: it would fire as often as every 5m, more often than the entry " + e1)
    assert _added(pane.rk("cron", "add", "--idle-every", "10m", "--", "as often"))


def test_the_bound_is_a_setting_a_great_grandchild_past_it_is_refused(pane):
    pane.env["RK_MAX_CHAIN_DEPTH"] = "3"
    e1 = pane.human("--every", "10m", "--pane", pane.pane, "--", "heartbeat")
    pane.turn_by(e1)
    e2 = _added(pane.rk("cron", "add", "--every", "10m", "--", "child"))
    pane.turn_by(e2)
    e3 = _added(pane.rk("cron", "add", "--every", "20m", "--", "grandchild"))
    pane.turn_by(e3)
    message = _refused(pane.rk("cron", "add", "--every", "1h", "--", "great-grandchild"))
    assert f"chain depth 4 > 3: {e1} → {e2} → {e3} → (new)" in message
    assert pane.listing()[e3]["parent"] == e2


def test_the_pane_is_proven_never_taken_from_tmux_pane(pane, tmux_server):
    """A turn a fire started in the pane counts whatever TMUX_PANE says; a claim of that pane
    from outside it makes no child (and escapes nothing: no parent, a human's entry)."""
    e1 = pane.human("--every", "10m", "--pane", pane.pane, "--", "heartbeat")
    pane.turn_by(e1)
    spoofed = _added(pane.rk("cron", "add", "--every", "10m", "--", "x", hints={"TMUX_PANE": "%999"}))
    assert pane.listing()[spoofed]["parent"] == e1
    socket = tmux_server.display(pane.pane, "#{socket_path}").strip()
    outside = dict(pane.env, TMUX=f"{socket},1,0", TMUX_PANE=pane.pane)
    proc = run_rk(["cron", "add", "--json", "--every", "1m", "--pane", pane.pane, "--", "y"], outside, check=True)
    assert pane.listing()[json.loads(proc.stdout)["result"]["id"]]["parent"] is None


def test_a_turn_a_human_or_a_manual_send_started_makes_a_humans_entry(pane):
    e1 = pane.human("--every", "10m", "--pane", pane.pane, "--", "heartbeat")
    pane.turn_by(e1, reason="manual")  # rk cron run / rk send: someone's choice
    made = _added(pane.rk("cron", "add", "--every", "1m", "--", "fast, and fine"))
    assert pane.listing()[made]["parent"] is None


def test_a_gone_parent_keeps_its_children_and_the_tree_says_it_is_gone(pane):
    e1 = pane.human("--every", "10m", "--pane", pane.pane, "--name", "beat", "--", "heartbeat")
    pane.turn_by(e1)
    e2 = _added(pane.rk("cron", "add", "--every", "10m", "--name", "kid", "--", "child"))
    other = pane.human("--every", "1h", "--pane", pane.pane, "--name", "other", "--", "other")
    tree = run_rk(["cron", "list", "-L", pane.slug, "--tree"], pane.env, check=True).stdout.splitlines()
    ids = [line.split()[0] if not line.lstrip().startswith("└") else line.split()[1] for line in tree[1:]]
    assert ids.index(e2) == ids.index(e1) + 1 and any(line.lstrip().startswith(f"└ {e2}") for line in tree)
    run_rk(["cron", "rm", "-L", pane.slug, e1], pane.env, check=True)
    assert pane.listing()[e2]["parent"] == e1  # it goes on: the parent is on record only
    tree = run_rk(["cron", "list", "-L", pane.slug, "--tree"], pane.env, check=True).stdout.splitlines()
    gone = next(i for i, line in enumerate(tree) if line.startswith(e1))
    assert "(gone)" in tree[gone] and tree[gone + 1].lstrip().startswith(f"└ {e2}")
    assert any(line.startswith(other) for line in tree)
    listed = run_rk(["cron", "list", "-L", pane.slug, "--tree", "--json"], pane.env, check=True).stdout
    assert {rec["id"]: rec["parent"] for rec in json.loads(listed)["result"]} == {e2: e1, other: None}


def test_a_child_that_removes_itself_escapes_nothing(pane):
    """e2's turn removes e2, then adds: the record keeps e2's place in the chain."""
    e1 = pane.human("--every", "10m", "--pane", pane.pane, "--", "heartbeat")
    pane.turn_by(e1)
    e2 = _added(pane.rk("cron", "add", "--every", "10m", "--", "child"))
    pane.turn_by(e2)
    assert pane.rk("cron", "rm", e2)["ok"]
    message = _refused(pane.rk("cron", "add", "--in", "10m", "--", "again"))
    assert f"chain depth 3 > 2: {e1} → {e2} (gone) → (new)" in message


def test_a_one_shots_turn_may_schedule_a_follow_up_once(pane):
    """A one-shot retires when it delivers: its turn may make one-shots only, and the
    follow-up's own turn may make none (depth)."""
    e1 = pane.human("--in", "1h", "--pane", pane.pane, "--", "check back")
    pane.turn_by(e1)
    run_rk(["cron", "rm", "-L", pane.slug, e1], pane.env, check=True)  # as its retirement would
    assert "is gone" in _refused(pane.rk("cron", "add", "--every", "1h", "--", "forever"))
    e2 = _added(pane.rk("cron", "add", "--in", "10m", "--", "once more"))
    pane.turn_by(e2)
    run_rk(["cron", "rm", "-L", pane.slug, e2], pane.env, check=True)
    assert "chain depth 3 > 2" in _refused(pane.rk("cron", "add", "--in", "10m", "--", "and again"))


# -- rk mcp ------------------------------------------------------------------------------------


def _audit(env) -> list[dict]:
    path = Path(env["RK_STATE_DIR"]) / "mcp.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_mcp_cron_add_and_edit_in_a_turn_a_fire_started(pane):
    e1 = pane.human("--every", "10m", "--pane", pane.pane, "--", "heartbeat")
    pane.turn_by(e1)

    def first(s: Session):
        child = s.call("cron_add", prompt="child", every="15m")
        faster = s.call("cron_add", prompt="faster", every="5m")
        return child.result()["id"], faster

    e2, faster = pane.relay.serve(pane.env, first)
    assert faster.error and faster.text.startswith("refused: it would fire as often as every 5m")
    assert pane.listing()[e2]["parent"] == e1
    pane.turn_by(e2)

    def second(s: Session):
        deeper = s.call("cron_add", prompt="grandchild", every="1h")
        sped = s.call("cron_edit", id=e2, every="1m")  # its parent fires every 10m
        slowed = s.call("cron_edit", id=e2, every="30m")
        return deeper, sped, slowed

    deeper, sped, slowed = pane.relay.serve(pane.env, second)
    assert deeper.error and deeper.text == f"refused: chain depth 3 > 2: {e1} → {e2} → (new) (setting max_chain_depth)"
    assert sped.error and sped.text.startswith(f"refused: {e2} was made by an agent in a turn {e1} started")
    assert not slowed.error
    assert pane.listing()[e2]["schedule_summary"] == "every 30m"
    refused = [a for a in _audit(pane.env) if a["outcome"] == "refused"]
    assert [a["tool"] for a in refused] == ["cron_add", "cron_add", "cron_edit"]

"""wake_from: a wake that means something (issue 27, item 6).

Who started a turn (`rk.core.log.cause`), the wake edge that lets the ends of rk's own
turns pass (`wake_from: human`, the default), `{wake_by}`, `rk events`' `by`, the field
on every surface, and the figures behind the default (the issue's scenario, simulated).
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest
from cli_helpers import make_env, run_in
from conftest import run_rk as run
from conftest import wait_for

from rk.core.cost.turn_timeout import START_WINDOW, StateLine
from rk.core.log import states as journal
from rk.core.log.cause import HUMAN, RK, rk_deliveries, turn_cause
from rk.core.log.delivery import LogLine, LogView
from rk.core.log.diagnostics import Diag
from rk.core.log.events import Replay
from rk.core.pane.facts import PaneFact, resolve_all
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.due import Fire, due
from rk.core.schedule.entry import EntryError, WakeFrom
from rk.core.schedule.placeholders import check, typed
from rk.core.schedule.simulate import AgentModel, StateChange, simulate
from rk.core.schedule.wake import Observation
from rk.store import state_journal as statejournal
from rk.store.delivery_log import append_lines
from rk.store.pane_history import PaneHistory

T0 = 1_800_000_000


def delivered(ts: int, pane: str = "%1", reason: str = "schedule", entry: str = "w1") -> LogLine:
    return LogLine(ts, entry, pane, reason, "delivered")


def lines(*pairs: tuple[int, str]) -> list[StateLine]:
    return [StateLine(ts, to) for ts, to in pairs]


def cause(log: list[LogLine], journal_lines: list[StateLine], at_rest: bool = True, pane: str = "%1") -> str:
    return turn_cause(journal_lines, rk_deliveries(log).get(pane, []), at_rest)


# -- who started a turn --------------------------------------------------------------------------


def test_a_turn_that_begins_right_after_rks_delivery_into_a_pane_at_rest_is_rks():
    turn = lines((T0 - 100, "idle"), (T0 + 2, "active"), (T0 + 40, "idle"))
    assert cause([delivered(T0)], turn) == RK
    assert cause([delivered(T0, reason="wake", entry="op")], turn) == RK, "a wake fire is rk's too"


def test_a_turn_rk_did_not_deliver_before_is_a_humans():
    turn = lines((T0 - 100, "idle"), (T0 + 2, "active"), (T0 + 40, "idle"))
    assert cause([], turn) == HUMAN
    assert cause([delivered(T0, pane="%2")], turn) == HUMAN, "a delivery into another pane"
    assert cause([delivered(T0, reason="manual", entry="(send)")], turn) == HUMAN, "rk send is someone's choice"
    assert cause([LogLine(T0, "w1", "%1", "schedule", "skipped-busy")], turn) == HUMAN, "nothing was typed"


def test_a_turn_that_begins_too_long_after_the_delivery_is_a_humans():
    late = lines((T0 - 100, "idle"), (T0 + START_WINDOW + 1, "active"), (T0 + 200, "idle"))
    assert cause([delivered(T0)], late) == HUMAN
    edge = lines((T0 - 100, "idle"), (T0 + START_WINDOW, "active"), (T0 + 200, "idle"))
    assert cause([delivered(T0)], edge) == RK


def test_a_delivery_into_a_busy_pane_started_nothing():
    busy = lines((T0 - 100, "idle"), (T0 - 10, "active"), (T0 + 40, "idle"))
    assert cause([delivered(T0)], busy) == HUMAN


def test_the_newest_turn_counts_a_humans_after_rks_is_a_humans():
    both = lines((T0 - 100, "idle"), (T0 + 1, "active"), (T0 + 30, "idle"), (T0 + 90, "active"), (T0 + 150, "idle"))
    assert cause([delivered(T0)], both) == HUMAN
    assert cause([delivered(T0)], both[:3]) == RK


def test_when_the_journal_cannot_tell_the_turn_is_a_humans():
    assert cause([delivered(T0)], []) == HUMAN, "no journal"
    behind = lines((T0 - 100, "idle"), (T0 + 1, "active"))
    assert cause([delivered(T0)], behind, at_rest=True) == HUMAN, "the pane is at rest, the journal still busy"
    assert cause([delivered(T0)], behind, at_rest=False) == RK, "a question in rk's turn: rk's turn"
    never_at_rest = lines((T0 + 1, "active"), (T0 + 30, "idle"))
    assert cause([delivered(T0)], never_at_rest) == HUMAN, "never seen at rest before it (a rotated journal)"


# -- the wake edge -----------------------------------------------------------------------------------


def op_entry(wake_from: str | None = None, payload: str = "{wake_pane} {wake_state} by {wake_by}", debounce="0s"):
    wake: dict[str, object] = {"event": "agent-state-change", "scope": "server", "debounce": debounce}
    if wake_from is not None:
        wake["from"] = wake_from
    raw = {"id": "op", "wake_on": wake, "target": {"kind": "pane", "pane": "%0"}, "payload": payload}
    return decode_entry({**raw, "created_by": {"at": T0 - 1000}})


#: %1 answered rk's heartbeat (delivered at T0, busy from T0+1, idle at T0+30); %2 a person's prompt.
HEARTBEAT = lines((T0 - 500, "idle"), (T0 + 1, "active"), (T0 + 30, "idle"))
PERSON = lines((T0 - 500, "idle"), (T0 + 5, "active"), (T0 + 30, "idle"))
LOG = [delivered(T0, "%1")]
NOW = T0 + 35


def evaluate(entry, states: dict[str, str], was: str, history: dict[str, list[StateLine]] | None = None):
    panes = [PaneFact("%0", state="idle", epoch=1)] + [PaneFact(p, state=s, epoch=T0) for p, s in states.items() if s]
    cursor = {"op": Observation(was, T0 - 10)}
    journal_of = {"%1": HEARTBEAT, "%2": PERSON} if history is None else history
    return due([entry], LogView(LOG), panes, resolve_all([entry], panes), cursor, NOW, journal=journal_of)


def test_human_lets_pass_a_pane_going_idle_after_rks_heartbeat_and_consumes_the_edge():
    ev = evaluate(op_entry(), {"%1": "idle"}, "%1=active\n")
    assert ev.fires == ()
    assert [(d.entry, d.reason) for d in ev.diagnostics] == [("op", Diag.WAKE_IGNORED_RK)]
    assert ev.next_cursor["op"] == Observation("%1=idle\n", NOW), "consumed, not held pending"


def test_the_default_is_human_and_any_wakes_on_rks_turns_too_naming_them():
    assert op_entry().wake_on.from_ == WakeFrom.HUMAN
    ev = evaluate(op_entry("any"), {"%1": "idle"}, "%1=active\n")
    (fire,) = ev.fires
    assert (fire.wake_pane, fire.wake_state, fire.wake_by) == ("%1", "idle", RK)
    assert typed(op_entry("any"), fire, LogView(LOG), NOW, UTC) == "%1 idle by rk"


def test_a_humans_turn_wakes_and_is_named_human():
    (fire,) = evaluate(op_entry(), {"%2": "idle"}, "%2=active\n").fires
    assert (fire.wake_pane, fire.wake_by) == ("%2", HUMAN)


@pytest.mark.parametrize(
    ("now", "state"), [("waiting", "waiting"), ("limited", "limited"), ("", "gone")], ids=["asks", "limit", "gone"]
)
def test_a_question_a_limit_or_a_vanished_pane_always_wakes_whoever_started_the_turn(now, state):
    (fire,) = evaluate(op_entry(), {"%1": now}, "%1=active\n").fires
    assert (fire.wake_pane, fire.wake_state) == ("%1", state)


def test_in_a_burst_the_humans_change_wakes_and_is_the_one_named():
    (fire,) = evaluate(op_entry(), {"%1": "idle", "%2": "idle"}, "%1=active\n%2=active\n").fires
    assert (fire.wake_pane, fire.wake_by) == ("%2", HUMAN), "%1 (rk's) sorts first but is let pass"
    (fire,) = evaluate(op_entry("any"), {"%1": "idle", "%2": "idle"}, "%1=active\n%2=active\n").fires
    assert (fire.wake_pane, fire.wake_by) == ("%1", RK)


def test_without_a_journal_every_turn_is_a_humans_and_wakes():
    (fire,) = evaluate(op_entry(), {"%1": "idle"}, "%1=active\n", history={}).fires
    assert fire.wake_by == HUMAN


def test_a_payload_without_wake_fields_still_lets_rks_turns_pass():
    ev = evaluate(op_entry(payload="look around"), {"%1": "idle"}, "%1=active\n")
    assert ev.fires == ()
    (fire,) = evaluate(op_entry(payload="look around"), {"%2": "idle"}, "%2=active\n").fires
    assert fire == Fire("op", "wake", "%0", 0, NOW, NOW)


def test_wake_by_is_a_known_placeholder():
    check("{wake_pane} finished ({wake_by})")


# -- the figures behind the default: the issue's scenario, simulated ------------------------------------

WARM, SPAN = 600, 33 * 60  #: ten minutes for the ladders to settle, then the issue's 33 minutes


def scenario(wake_from: str, humans: tuple[tuple[str, int], ...] = ()):
    """Three workers with --idle-every 3m answering in 25-55 s, an operator woken on
    agent-state-change (debounce 60 s), a tick every 5 s (the hooks nudge the ticker)."""
    workers = [
        {"id": f"w{i}", "schedule": {"kind": "backoff", "min": "3m", "max": "3m"}, "payload": "status?"}
        for i in (1, 2, 3)
    ]
    entries = [
        decode_entry({**w, "target": {"kind": "pane", "pane": f"%{i}"}, "created_by": {"at": 0}})
        for i, w in enumerate(workers, 1)
    ]
    entries.append(op_entry(wake_from, debounce="60s"))
    script = [StateChange(1, "%0", "idle")] + [StateChange(1 + 50 * i, f"%{i}", "idle") for i in (1, 2, 3)]
    for pane, at in humans:  # a person prompts a worker at rest; the turn lasts two minutes
        script += [StateChange(at, pane, "active"), StateChange(at + 120, pane, "idle")]
    agents = {p: AgentModel(busy_for=b) for p, b in (("%0", 30), ("%1", 25), ("%2", 40), ("%3", 55))}
    sim = simulate(entries, start=0, end=WARM + SPAN, tick=5, script=script, agents=agents)
    wakes = [line.ts - WARM for line in sim.lines if line.entry == "op" and line.reason == "wake" and line.ts >= WARM]
    nudges = [line for line in sim.lines if line.entry != "op" and line.outcome == "delivered" and line.ts >= WARM]
    return wakes, nudges


def test_the_issues_scenario_rks_heartbeats_wake_the_operator_only_with_any():
    wakes_any, nudges = scenario("any")
    wakes_human, _ = scenario("human")
    assert len(nudges) == 33, "three workers nudged every 3 min plus their answer"
    assert len(wakes_any) == 33, "every answer to a heartbeat is a wake (the issue counted 25 in 33 minutes)"
    assert wakes_human == []


def test_the_issues_scenario_a_persons_turns_still_wake_the_operator_once_each():
    humans = (("%1", WARM + 420), ("%2", WARM + 1020), ("%3", WARM + 1620))
    wakes, _ = scenario("human", humans)
    assert wakes == [540, 1140, 1740], "one wake as each person's turn ends, none for rk's"


# -- the field: the file, the command line, show ---------------------------------------------------------


def test_the_file_keeps_any_and_leaves_the_default_unwritten():
    assert op_entry("any").wake_on.to_yaml()["from"] == "any"
    assert "from" not in op_entry("human").wake_on.to_yaml()
    assert decode_entry({**op_entry("any").to_yaml()}).wake_on.from_ == WakeFrom.ANY


@pytest.mark.parametrize(
    ("wake", "why"),
    [
        ({"event": "agent-state-change", "from": "rk"}, "wake_on from must be human or any"),
        ({"event": "limit-reset", "from": "any"}, "applies to agent-state-change"),
    ],
)
def test_a_bad_from_refuses_that_entry(wake, why):
    raw = {"id": "x", "wake_on": wake, "target": {"kind": "pane", "pane": "%0"}, "payload": "p"}
    with pytest.raises(EntryError, match=why):
        decode_entry({**raw, "created_by": {"at": 0}})


@pytest.fixture
def cli(tmp_path: Path):
    env = make_env(tmp_path)

    def cron(*args: str):
        return run_in(["cron", *args, "-L", "rk-wake-from"], env)

    return cron


def test_add_edit_and_show_the_field(cli):
    added = cli(
        "add", "worker done?", "--pane", "%0", "--wake-on", "agent-state-change", "--wake-from", "any", "--json"
    )
    assert added.code == 0, added
    entry_id = added.json()["result"]["id"]
    shown = cli("show", entry_id)
    assert "agent-state-change (debounce 1m, from any)" in shown.out, shown
    assert cli("show", entry_id, "--json").json()["result"]["wake_on"]["from"] == "any"
    assert cli("edit", entry_id, "--wake-from", "human").code == 0
    assert "from human" in cli("show", entry_id).out
    listed = cli("list", "--json").json()["result"]
    assert [e["wake_on"]["from"] for e in listed] == ["human"]
    full = cli("list", "--full").out
    assert "wake:agent-state-change" in full and "/any" not in full, full
    assert cli("edit", entry_id, "--wake-from", "any").code == 0
    assert "wake:agent-state-change/any" in cli("list", "--full").out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("add", "p", "--pane", "%0", "--every", "5m", "--wake-from", "any"), "--wake-from only applies with"),
        (("add", "p", "--pane", "%0", "--wake-on", "limit-reset", "--wake-from", "any"), "--wake-from applies to"),
        (("add", "p", "--pane", "%0", "--wake-on", "agent-state-change", "--wake-from", "rk"), "human, any"),
    ],
)
def test_the_flag_refuses_what_it_cannot_mean_in_one_line(cli, args, said):
    res = cli(*args)
    assert res.code == 2 and said in res.err and res.err.count("\n") == 1, res


def test_edit_wake_from_on_an_entry_without_a_wake_says_so(cli):
    added = cli("add", "p", "--pane", "%0", "--every", "5m", "--json")
    res = cli("edit", added.json()["result"]["id"], "--wake-from", "any")
    assert res.code == 2 and "--wake-from applies to --wake-on agent-state-change" in res.err, res


# -- rk events: by ------------------------------------------------------------------------------------


def test_the_replay_names_who_started_each_turn_on_the_changes_a_wake_reacts_to():
    replay = Replay()
    replay.deliveries([delivered(T0, "%1")])
    states = replay.feed(
        [
            {"ts": T0 - 50, "pane": "%1", "to": "idle"},
            {"ts": T0 + 1, "pane": "%1", "to": "active"},
            {"ts": T0 + 9, "pane": "%1", "to": "waiting"},
            {"ts": T0 + 30, "pane": "%1", "to": "idle", "end": "ok"},
            {"ts": T0 + 60, "pane": "%1", "to": "active"},
            {"ts": T0 + 90, "pane": "%1", "to": "idle", "end": "ok"},
        ]
    )
    assert [(e.to, e.by) for e in states] == [
        ("idle", ""),
        ("active", ""),
        ("waiting", RK),
        ("idle", RK),
        ("active", ""),
        ("idle", HUMAN),
    ]
    assert states[3].to_dict()["by"] == "rk" and states[1].to_dict()["by"] is None


def test_rk_events_shows_by(tmux_server, env):
    pane = tmux_server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()
    state = Path(env["RK_STATE_DIR"])
    for ts, to in [(1000, "idle"), (1011, "active"), (1040, "idle"), (1100, "active"), (1150, "idle")]:
        statejournal.append(env, tmux_server.name, journal.render(ts, pane, to, "ok" if to == "idle" else "", "hook"))
    append_lines(state / f"{tmux_server.name}.log", [LogLine(1010, "w1", pane, "schedule", "delivered")])
    events = [json.loads(x) for x in run(["-L", tmux_server.name, "events", "--json"], env).stdout.splitlines()]
    assert [e.get("by") for e in events if e["kind"] == "state"] == [None, None, "rk", None, "human"]
    text = run(["-L", tmux_server.name, "events"], env).stdout.splitlines()
    assert text[3].endswith("by rk") and text[5].endswith("by human"), text


def test_the_ticks_journal_is_read_once_and_only_when_asked(tmp_path, monkeypatch):
    env = {"RK_STATE_DIR": str(tmp_path)}
    statejournal.append(env, "srv", journal.render(T0, "%1", "idle", "", "hook"))
    statejournal.append(env, "srv", journal.render(T0 + 5, "%2", "active", "", "hook"))
    reads = []
    real = statejournal.read_all
    monkeypatch.setattr(statejournal, "read_all", lambda *a: reads.append(a) or real(*a))
    history = PaneHistory(str(tmp_path), "srv")
    assert reads == []
    assert history.get("%1") == [StateLine(T0, "idle")] and dict(history)["%2"] == [StateLine(T0 + 5, "active")]
    assert history.get("%9") is None and len(reads) == 1
    assert dict(PaneHistory(str(tmp_path / "none"), "srv")) == {}


# -- the tick: the journal on disk, the log, a real server ----------------------------------------


def test_the_tick_lets_rks_heartbeat_pass_and_wakes_on_a_persons_turn(tmux_server, env):
    """A worker pane answering rk's delivery, then a person's prompt, as the state journal
    and the log hold them; the operator's wake entry fires once, for the person's turn."""
    op = tmux_server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()
    worker = tmux_server.run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "cat").strip()
    at = dict(env)

    def rk_at(t: int, *args: str):
        return run(["-L", tmux_server.name, *args], dict(at, RK_NOW=str(t)), check=True)

    def state(t: int, to: str) -> None:
        rk_at(t, "agent", "state", to, "--pane", worker)

    payload = "woke: {wake_pane} {wake_state} by {wake_by}"
    rk_at(T0, "cron", "add", payload, "--wake-on", "agent-state-change", "--pane", op, "--any-program")
    state(T0 - 100, "idle")
    rk_at(T0, "cron", "tick")  # cold start
    logfile = Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.log"
    append_lines(logfile, [LogLine(T0 + 10, "w1", worker, "schedule", "delivered")])  # rk's heartbeat
    state(T0 + 11, "active")
    rk_at(T0 + 15, "cron", "tick")  # the ticker sees it busy (the hook nudges it)
    state(T0 + 40, "idle")
    ticked = json.loads(rk_at(T0 + 45, "cron", "tick", "--json").stdout)["result"]
    assert ticked["fires"] == 0
    assert "wake-ignored-rk" in {d["reason"] for d in ticked["diagnostics"]}, ticked
    state(T0 + 200, "active")  # a person's prompt
    rk_at(T0 + 205, "cron", "tick")
    state(T0 + 230, "idle")
    ticked = json.loads(rk_at(T0 + 235, "cron", "tick", "--json").stdout)["result"]
    assert [d["outcome"] for d in ticked["decisions"]] == ["delivered"], ticked
    wanted = f"woke: {worker} idle by human"
    wait_for(lambda: wanted in tmux_server.capture(op), message="the wake typed into the operator's pane")

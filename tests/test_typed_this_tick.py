"""One prompt per agent pane per tick: once a fire of a tick has typed into an agent's
pane, the tick's other fires for that pane meet the turn it started (`Seen.typed`),
though neither the agent's hooks nor its screen may show that turn yet.

Seen in CI with the real Claude Code: two held fires went out in one tick; the second's
look still read the pane idle, its Enter met the first prompt's turn starting, and the
first prompt's late hook made it `failed: submit not confirmed`. Here: the pure rule for
every policy, and one tick on a private tmux server with the stand-in Claude Code (rk's
hooks installed) and a plain program beside it, which has no turns and takes both.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.core.log.delivery import Reason
from rk.core.schedule.dispose import Seen, deliver_policy, edge_kept
from rk.core.schedule.due import Fire
from rk.core.schedule.entry import (
    CreatedBy,
    Deliver,
    Entry,
    Every,
    Target,
    WakeEvent,
    WakeFrom,
    WakeOn,
    WakeOnly,
)
from rk.core.schedule.retry import may_have_typed
from rk.core.schedule.simulate import AgentModel, StateChange, simulate
from rk.engine.tick import tick_server, typed_into_pane
from rk.store import delivery_log as logfile
from tests.standin import program_window, stand_in_window, tick_runtime

T0 = 1_796_000_000


def every(key: str, pane: str = "%1", interval: int = 3600, created: int = T0 - 3600, **fields) -> Entry:
    """An entry `key` on `pane` every `interval` s since `created`; its payload its key unless given."""
    fields.setdefault("payload", key)
    return Entry(
        id=key, target=Target("pane", pane), created_by=CreatedBy(at=created), schedule=Every(interval), **fields
    )


def wake(key: str, pane: str = "%1", created: int = T0 - 3600) -> Entry:
    """An entry `key` on `pane` that fires when any other pane's agent ends a turn (rk's or a human's)."""
    return Entry(
        id=key,
        schedule=WakeOnly(),
        target=Target("pane", pane),
        created_by=CreatedBy(at=created),
        payload="a worker is done",
        wake_on=WakeOn(event=WakeEvent.AGENT_STATE_CHANGE, from_=WakeFrom.ANY),
    )


def on_idle_pane(entries: list[Entry], seconds: int, agent: AgentModel | None) -> list[tuple[int, str, str, str]]:
    """The simulator's events for `entries` on pane %1, idle from before T0, ticked every 30 s for
    `seconds` from T0 (its agent answering as `agent` does): (seconds after T0, entry, kind, outcome)."""
    script = [StateChange(T0 - 600, "%1", "idle")]
    sim = simulate(entries, start=T0, end=T0 + seconds, tick=30, script=script, agents={"%1": agent} if agent else None)
    return [(e.at - T0, e.entry, e.kind, e.outcome) for e in sim.events]


@pytest.mark.parametrize(
    "seen, policy, want",
    [
        (Seen("idle", typed=True), Deliver.WHEN_IDLE, "held-busy: active"),
        (Seen("idle", typed=True), Deliver.IMMEDIATE, "held-busy: active"),  # immediate sends to active, not here
        (Seen("", typed=True), Deliver.IMMEDIATE, "held-busy: active"),
        (Seen("idle", typed=True), Deliver.SKIP_IF_BUSY, "skipped-busy: active"),
        (Seen("active", typed=True), Deliver.IMMEDIATE, "held-busy: active"),
        (
            Seen("active", typed=True, ours=True),
            Deliver.REPLACE,
            "held-busy: active; replace: turn not ours, waiting for idle",
        ),
        (Seen("idle", typed=True, dialog=True), Deliver.SKIP_IF_BUSY, "skipped-busy: waiting"),  # more binding first
        (Seen("idle", typed=True, draft=True), Deliver.WHEN_IDLE, "held-busy: draft"),
        (Seen("limited", typed=True), Deliver.SKIP_IF_BUSY, "skipped-limited"),
    ],
)
def test_a_pane_typed_into_this_tick_is_busy_under_every_policy(seen, policy, want):
    assert deliver_policy(policy, seen, T0, T0 + 60).text == want


@pytest.mark.parametrize("policy", list(Deliver))
def test_without_it_an_idle_pane_takes_the_prompt(policy):
    assert deliver_policy(policy, Seen("idle"), T0, T0 + 60).text == ""  # a send: no outcome of its own


def test_its_own_running_turn_is_still_interrupted_when_nothing_was_typed_this_tick():
    assert deliver_policy(Deliver.REPLACE, Seen("active", ours=True), T0, T0 + 60).act == "replace"


@pytest.mark.parametrize(
    "outcome, typed",
    [
        ("delivered", True),
        ("delivered (after one recovery)", True),
        ("failed: submit not confirmed", True),
        ("failed: echo not seen (could not clear composer)", True),
        ("failed: pane busy: another delivery into it did not finish", False),
        ("failed: can't find pane: %9", False),
        ("skipped-busy: active", False),
        ("would-deliver", True),
        ("would-replace", True),
        ("would-notify", False),
    ],
)
def test_which_outcomes_count_as_typed(outcome, typed):
    assert typed_into_pane(outcome) is typed
    if not outcome.startswith("would-"):
        assert may_have_typed(outcome) is typed


#: A program with a composer and no turns (Enter submits; each submission one line in a file).
COMPOSER = Path(__file__).resolve().parent / "fixtures" / "composer_app.py"


def _entries(state: Path, server_name: str, agent: str, plain: str, created: int) -> dict[str, str]:
    """Three entries on the agent's pane (one per policy) and two on the plain program's."""
    state.mkdir(mode=0o700, exist_ok=True)
    wanted = {
        "a-imm": (agent, Deliver.IMMEDIATE),
        "a-idle": (agent, Deliver.WHEN_IDLE),
        "a-skip": (agent, Deliver.SKIP_IF_BUSY),
        "p-one": (plain, Deliver.IMMEDIATE),
        "p-two": (plain, Deliver.WHEN_IDLE),
    }
    docs = [
        every(key, pane, created=created, payload=f"from {key}", deliver=policy, any_program=pane == plain).to_yaml()
        for key, (pane, policy) in wanted.items()
    ]
    (state / f"{server_name}.yaml").write_text(json.dumps({"entries": docs}))
    return {key: pane for key, (pane, _) in wanted.items()}


def _stand_in(env, tmux_server, prompts: Path) -> str:
    """The stand-in Claude Code with rk's hooks, its turns a second long, each shown (and hooked)
    two seconds after it took the prompt: the pane of an agent that is slow to show a turn."""
    run_rk(["agent", "setup", "claude", "--yes"], env, check=True)
    environ = {
        "HOME": env["HOME"],
        "RK_STATE_DIR": env["RK_STATE_DIR"],
        "FAKE_CLAUDE_TURN": "1",
        "FAKE_CLAUDE_LAG": "2",  # the taken prompt's turn not yet on the screen nor in a hook
        "FAKE_CLAUDE_LOG": str(prompts),
    }
    return stand_in_window(tmux_server, environ)


def _rested(tmux_server, agent: str) -> bool:
    """The stand-in's turn shown, run and over (its state alone is idle until the lag is over)."""
    done = "Brewed for" in tmux_server.capture(agent)
    return done and tmux_server.display(agent, "#{@rk_pane_agent_state}").startswith("idle:")


@pytest.mark.tmux
@pytest.mark.shell
def test_one_tick_types_one_prompt_into_an_agent_and_every_prompt_into_a_plain_program(env, tmux_server, tmp_path):
    prompts = tmp_path / "prompts"
    agent = _stand_in(env, tmux_server, prompts)
    taken = tmp_path / "taken"
    plain = program_window(tmux_server, f"{COMPOSER} {taken}", name="composer")
    state = Path(env["RK_STATE_DIR"])
    _entries(state, tmux_server.name, agent, plain, int(time.time()) - 3600)
    runtime = tick_runtime(tmux_server, state)
    log = state / f"{tmux_server.name}.log"

    first = tick_server(runtime, tmux_server.name)
    said = {d.entry: d.outcome for d in first.decisions}
    agent_said = {k: v for k, v in said.items() if k.startswith("a-")}
    assert sorted(agent_said.values()) == ["delivered", "held-busy: active", "skipped-busy: active"], said
    assert agent_said["a-imm"] == "delivered"  # the file's first: the one typed
    assert said["p-one"] == said["p-two"] == "delivered", said  # a plain program has no turn to wait for
    assert not first.recheck  # no look half a second later (the turn may still not show); the hook nudges
    wait_for(lambda: prompts.exists() and prompts.read_text().splitlines() == ["from a-imm"], timeout=10)
    wait_for(lambda: taken.exists() and sorted(taken.read_text().splitlines()) == ["from p-one", "from p-two"])
    assert [line.entry for line in logfile.read_live(log)] == ["a-imm", "a-skip", "p-one", "p-two"]

    wait_for(lambda: _rested(tmux_server, agent), timeout=20, message="the stand-in's turn over")
    second = tick_server(runtime, tmux_server.name)
    assert {d.entry: d.outcome for d in second.decisions} == {"a-idle": "delivered"}
    wait_for(lambda: prompts.read_text().splitlines() == ["from a-imm", "from a-idle"], timeout=10)


@pytest.mark.parametrize("model", [None, AgentModel(busy_for=40)], ids=["scripted", "modelled"])
def test_the_simulator_holds_the_second_prompt_of_an_instant_as_the_tick_does(model):
    """Two `immediate` entries due at the same instant on one idle agent pane: the first is
    typed, the second waits for the next tick (sent then: `immediate` sends to a working agent)."""
    entries = [every(key, deliver=Deliver.IMMEDIATE) for key in ("one", "two")]
    assert on_idle_pane(entries, 60, model) == [
        (0, "one", "line", "delivered"),
        (0, "two", "hold", "held-busy: active"),
        (30, "two", "line", "delivered"),
    ]


@pytest.mark.parametrize("typed", [True, False])
def test_a_hold_behind_a_typed_prompt_keeps_a_wake_edge_and_other_holds_use_it_up(typed):
    woken = wake("w")
    fire = Fire(entry="w", reason=Reason.WAKE, pane="%1", due_at=T0, rung=0, at=T0)
    held = deliver_policy(Deliver.IMMEDIATE, Seen("idle", typed=typed, draft=not typed), T0, T0)
    assert held.act == "hold"
    assert edge_kept(woken, fire, held, typed=typed) is typed  # a draft's hold uses the edge up, as in the Go original
    assert not edge_kept(woken, fire, deliver_policy(Deliver.IMMEDIATE, Seen("idle"), T0, T0), typed=typed)


def test_a_wake_that_meets_a_prompt_typed_in_its_instant_goes_at_the_next_tick():
    """An operator's heartbeat and its wake on a worker's idle, due together: the heartbeat is
    typed, the wake held behind it, and (its edge kept) typed at the next tick, not lost."""
    sim = simulate(
        [every("beat", payload="status?"), wake("wake")],
        start=T0 - 30,
        end=T0 + 60,
        tick=30,
        script=[
            StateChange(T0 - 600, "%1", "idle"),
            StateChange(T0 - 600, "%2", "active"),
            StateChange(T0 - 5, "%2", "idle"),
        ],
        agents={"%1": AgentModel(busy_for=40)},
    )
    fired = [(e.at - T0, e.entry, e.kind, e.outcome) for e in sim.events if e.entry in ("beat", "wake")]
    assert fired == [
        (0, "beat", "line", "delivered"),
        (0, "wake", "hold", "held-busy: active"),
        (30, "wake", "line", "delivered"),  # immediate sends to the working agent: it queues it
    ]


@pytest.mark.tmux
@pytest.mark.shell
def test_a_wake_held_behind_a_typed_prompt_goes_at_the_next_tick(env, tmux_server, tmp_path):
    """The operator's heartbeat and its wake on a worker going idle, due in one tick: the wake is
    held behind the heartbeat, its edge kept (a held wake otherwise uses its edge up), and it is
    typed at the next tick."""
    prompts = tmp_path / "prompts"
    agent = _stand_in(env, tmux_server, prompts)
    worker = program_window(tmux_server, f"{COMPOSER} {tmp_path / 'worker'}", name="worker")
    created = int(time.time()) - 3600
    tmux_server.set_pane_option(worker, "@rk_pane_agent_state", f"active:{created}")
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700, exist_ok=True)
    woken, beat = wake("wake", agent, created), every("beat", agent, created=created, payload="status?")
    entries = state / f"{tmux_server.name}.yaml"
    runtime = tick_runtime(tmux_server, state)
    entries.write_text(json.dumps({"entries": [woken.to_yaml()]}))
    assert tick_server(runtime, tmux_server.name).decisions == []  # the wake's first look: its observation
    entries.write_text(json.dumps({"entries": [beat.to_yaml(), woken.to_yaml()]}))
    tmux_server.set_pane_option(worker, "@rk_pane_agent_state", f"idle:{int(time.time())}")

    first = tick_server(runtime, tmux_server.name)
    assert {d.entry: d.outcome for d in first.decisions} == {"beat": "delivered", "wake": "held-busy: active"}
    wait_for(lambda: _rested(tmux_server, agent), timeout=20, message="the stand-in's turn over")
    second = tick_server(runtime, tmux_server.name)
    assert {d.entry: d.outcome for d in second.decisions} == {"wake": "delivered"}
    wait_for(lambda: prompts.read_text().splitlines() == ["status?", "a worker is done"], timeout=10)


@pytest.mark.parametrize("policy", [Deliver.IMMEDIATE, Deliver.WHEN_IDLE])
def test_two_entries_due_every_poll_into_one_pane_take_turns_and_neither_starves(policy):
    """The fire held behind the other's prompt is the longest-waiting at the next tick, and
    goes first (`Evaluation.in_typing_order`); in `due()`'s order alone `b` never went."""
    entries = [every(key, interval=30, deliver=policy) for key in ("a", "b")]
    events = on_idle_pane(entries, 150, AgentModel(busy_for=5))
    delivered = [(at, entry) for at, entry, kind, outcome in events if kind == "line" and outcome == "delivered"]
    assert delivered == [(0, "a"), (30, "b"), (60, "a"), (90, "b"), (120, "a")]

"""The watch's pure decisions (`rk.core.pane.watch`): which active panes a glimpse
captures, what a capture says, and the ticker's pacing of its glimpses
(`rk.engine.watch.Watcher`) with the per-server step replaced."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import UTC
from pathlib import Path

import pytest

from rk.core.environ import STATE_OPTION
from rk.core.pane.facts import PaneFact, PaneKind
from rk.core.pane.screen import LAYOUTS, classify
from rk.core.pane.state import AgentState
from rk.core.pane.watch import (
    LOOK_EVERY,
    WATCH_AFTER,
    Seen,
    any_active,
    glimpse_of,
    remembered,
    to_capture,
    turn_over,
)
from rk.engine import watch as engine_watch
from rk.tmux.watch import StepReport

SCREENS = Path(__file__).resolve().parent / "fixtures" / "screens" / "claude-2.1.332"
NOW = 1_800_000_000


def row(pane: str = "%1", state: str = f"active:{NOW - 10}:42", activity: int = NOW - 30, **frame: str) -> dict:
    out = {
        "pane_id": pane,
        "pane_dead": "0",
        STATE_OPTION: state,
        "window_activity": str(activity),
        "cursor_x": "2",
        "cursor_y": "40",
        "history_size": "0",
        "pane_width": "200",
        "pane_height": "50",
        "pane_in_mode": "0",
    }
    return out | frame


def test_a_glimpse_reads_the_state_the_frame_and_the_activity():
    g = glimpse_of(row())
    assert (g.pane_id, g.active_since, g.activity, g.frame) == ("%1", NOW - 10, NOW - 30, "2,40,0,200,50,0")
    assert glimpse_of(row(window_activity="x")).activity == 0
    assert glimpse_of(row(pane_dead="1")).active_since is None
    assert glimpse_of(row(state=f"idle:{NOW}")).active_since is None
    assert glimpse_of(row(state="active:soon")).active_since is None  # malformed: no state


def test_a_pane_never_captured_is_captured_once_active_long_enough():
    assert to_capture([glimpse_of(row())], {}, NOW, NOW) == ["%1"]
    young = glimpse_of(row(state=f"active:{NOW - WATCH_AFTER + 1}"))
    assert to_capture([young], {}, NOW, NOW) == []  # its first frame may still show the composer at rest
    old_enough = glimpse_of(row(state=f"active:{NOW - WATCH_AFTER}"))
    assert to_capture([old_enough], {}, NOW, NOW) == ["%1"]


@pytest.mark.parametrize(
    "state",
    [f"idle:{NOW - 100}", f"waiting:{NOW - 100}", f"limited:{NOW - 100}", "", "nonsense"],
)
def test_only_active_panes_are_watched(state):
    glimpses = [glimpse_of(row(state=state))]
    assert to_capture(glimpses, {}, NOW, NOW) == []
    assert not any_active(glimpses)


def test_a_pane_drawing_nothing_since_its_capture_is_not_captured_again():
    g = glimpse_of(row())
    seen = {"%1": Seen(g.state, g.frame, NOW - 20)}
    assert to_capture([g], seen, NOW, NOW) == []


@pytest.mark.parametrize(
    "change",
    [
        {"cursor_y": "41"},
        {"cursor_x": "7"},
        {"history_size": "12"},
        {"pane_height": "49"},
        {"pane_in_mode": "1"},
        {"state": f"active:{NOW - 5}:42"},  # a new turn
        {"activity": NOW - 20},  # output in the very second of the last capture (whole seconds)
        {"activity": NOW - 1},  # output since
    ],
)
def test_a_pane_whose_frame_may_have_changed_is_captured(change):
    before = glimpse_of(row())
    seen = {"%1": Seen(before.state, before.frame, NOW - 20)}
    assert to_capture([glimpse_of(row(**change))], seen, NOW, NOW) == ["%1"]


def test_several_panes_each_by_its_own_memory():
    a, b, c = (glimpse_of(row(p)) for p in ("%1", "%2", "%3"))
    seen = {"%1": Seen(a.state, a.frame, NOW - 20), "%2": Seen(b.state, "moved", NOW - 20)}
    assert to_capture([a, b, c], seen, NOW, NOW) == ["%2", "%3"]


def test_the_memory_keeps_only_active_panes():
    seen = {p: Seen("s", "f", NOW) for p in ("%1", "%2", "%3")}
    glimpses = [glimpse_of(row("%1")), glimpse_of(row("%2", state=f"idle:{NOW}"))]
    assert set(remembered(seen, glimpses)) == {"%1"}
    assert any_active(glimpses)


def screen(name: str):
    return classify((SCREENS / f"{name}.ansi").read_text(), LAYOUTS, now=NOW, zone=UTC, hint="claude")


def pane(state: str = "active") -> PaneFact:
    return PaneFact("%1", command="claude", state=state, epoch=NOW - 10, pid=42, kind=PaneKind.AGENT)


@pytest.mark.parametrize("name", ["interrupted", "idle_after_turn", "draft", "permission_dialog", "limit_reached"])
def test_a_capture_at_rest_a_dialog_or_a_limit_ends_an_active_turn(name):
    assert turn_over(pane(), screen(name), NOW)


@pytest.mark.parametrize("name", ["working_1", "working_2", "working_partial", "busy_draft"])
def test_a_capture_of_a_turn_still_running_does_not(name):
    assert not turn_over(pane(), screen(name), NOW)


def test_only_an_active_pane_has_a_turn_to_end():
    assert not turn_over(pane("waiting"), screen("interrupted"), NOW)
    assert not turn_over(pane("idle"), screen("interrupted"), NOW)


class FakeWatch:
    def __init__(self, active: bool) -> None:
        self.active, self.steps = active, 0

    def step(self, now: int) -> StepReport:
        self.steps += 1
        return StepReport(active=self.active)


def watcher(monkeypatch, active: dict[str, bool]) -> tuple[engine_watch.Watcher, dict[str, FakeWatch]]:
    made: dict[str, FakeWatch] = {}

    def make(server, zone):
        made[server.name] = FakeWatch(active[server.name])
        return made[server.name]

    monkeypatch.setattr(engine_watch, "Watch", make)
    runtime = type("R", (), {"server": lambda self, slug: type("S", (), {"name": slug})(), "zone": UTC})()
    runtime.clock = lambda: NOW
    return engine_watch.Watcher(runtime), made


def test_the_ticker_glimpses_a_server_with_an_active_pane_every_look(monkeypatch):
    w, made = watcher(monkeypatch, {"a": True, "q": False})
    assert w.wait({"a", "q"}, 100.0) <= 0  # never glimpsed: at once
    w.step({"a", "q"}, 100.0)
    assert made["a"].steps == made["q"].steps == 1
    assert w.wait({"a", "q"}, 100.0) == LOOK_EVERY
    w.step({"a", "q"}, 100.0 + LOOK_EVERY)
    assert (made["a"].steps, made["q"].steps) == (2, 1)  # a quiet server waits
    assert w.wait({"q"}, 100.0 + LOOK_EVERY) == engine_watch.QUIET_EVERY - LOOK_EVERY
    w.wake("q")  # a tick of it (a hook's nudge): glimpsed at the next step
    w.step({"a", "q"}, 100.0 + LOOK_EVERY)
    assert made["q"].steps == 2
    w.step({"a"}, 102.0)  # a server no longer served is forgotten
    assert set(w.watches) == {"a"}


def test_a_failing_watch_never_stops_the_ticker(monkeypatch):
    w, made = watcher(monkeypatch, {"a": True})
    w.step({"a"}, 100.0)

    def broken(now):
        raise OSError("boom")

    made["a"].step = broken
    w.step({"a"}, 101.0)
    assert w.wait({"a"}, 101.0) == engine_watch.QUIET_EVERY


def test_await_looks_itself_only_while_a_target_is_active_and_no_ticker_serves_the_server(tmp_path):
    from rk.channels.waiter import looks_itself
    from rk.core.channels.awaiting import PaneView, start
    from rk.engine.ticker import process_start_time

    env = {"RK_STATE_DIR": str(tmp_path)}
    busy, rest = PaneView("%1", True, "active", NOW), PaneView("%1", True, "idle", NOW)
    progress = start(["%1"])
    assert looks_itself(env, "srv", progress, [busy])
    assert not looks_itself(env, "srv", progress, [rest])
    me = {"pid": os.getpid(), "start_time": process_start_time(os.getpid())}
    (tmp_path / "ticker.pid").write_text(json.dumps(me))
    (tmp_path / "ticker.status").write_text(json.dumps({"servers": ["other"]}))
    assert looks_itself(env, "srv", progress, [busy])  # the ticker serves another server only
    (tmp_path / "ticker.status").write_text(json.dumps({"servers": ["other", "srv"]}))
    assert not looks_itself(env, "srv", progress, [busy])  # the ticker watches it
    (tmp_path / "ticker.pid").write_text(json.dumps(me | {"start_time": "1"}))
    assert looks_itself(env, "srv", progress, [busy])  # that pid is another process now: no ticker


def test_an_active_pane_found_not_an_agents_does_not_keep_the_watch_going():
    glimpses = [glimpse_of(row("%1")), glimpse_of(row("%2", state=f"idle:{NOW}"))]
    state = glimpses[0].state
    assert not any_active(glimpses, {"%1": state})
    assert any_active(glimpses, {"%1": f"active:{NOW - 99}"})  # a new state: looked at again


def test_claudes_session_registry_saying_the_turn_ended_takes_the_look_at_once(monkeypatch):
    """The registry is asked only for Claude's panes; its `idle` on a busy pane ends the
    wait for a frame change (the look's capture still confirms it); no word, no say."""
    from rk.core.pane.registry import Verdict
    from rk.store import claude_sessions
    from rk.tmux.watch import further_source

    said: list[Verdict | None] = [Verdict(AgentState.IDLE, NOW)]
    monkeypatch.setattr(claude_sessions, "verdict_for", lambda pane, env, reader=None: said[0])
    claude = PaneFact("%1", command="claude", state=AgentState.ACTIVE, epoch=NOW - 10, pid=42, agent="claude")
    assert further_source(claude) is True
    assert further_source(replace(claude, agent="codex")) is None
    said[0] = Verdict(AgentState.ACTIVE, NOW)
    assert further_source(claude) is None
    said[0] = None
    assert further_source(claude) is None

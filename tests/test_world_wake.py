"""Wakes on the world, the pure part (issue 30, item 4): `--wake-on signal:NAME` and
`--wake-on file:PATH` decided from (entries, log lines, signal lines, files, now).

A burst of signals within the debounce gives one fire; the log line of a fire names
the signal it consumed, so no signal fires twice, across restarts included; a file
fires when it appears or changes, never for the state it already fired for.
"""

from __future__ import annotations

import itertools
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.log.delivery import LogLine, LogView, lines_to_keep, status_of
from rk.core.log.diagnostics import Diag
from rk.core.log.wake_mark import FILE, SIGNAL, is_marked, mark_of, marked
from rk.core.pane.facts import PaneFact, resolve_all
from rk.core.schedule import world
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.due import due
from rk.core.schedule.entry import EntryError
from rk.core.schedule.placeholders import check, typed
from rk.core.schedule.wake import Observation, WakeVerdict
from rk.core.schedule.world import (
    ABSENT,
    SIGNAL_TTL,
    Signal,
    World,
    event_flag,
    file_edge,
    parse_signal,
    signal_edge,
    source_of,
)

T0 = 1_800_000_000


def fired(edge: world.WorldEdge, ts: int, entry: str = "s1", outcome: str = "delivered") -> LogLine:
    return LogLine(ts, entry, "%1", "wake", marked(outcome, edge.mark))


# -- names, paths, data --------------------------------------------------------------------------


def test_a_signal_or_file_event_is_read_from_the_wake_event_text():
    assert source_of("signal:ci-done") == world.Source(SIGNAL, "ci-done")
    assert source_of("file:/tmp/x") == world.Source(FILE, "/tmp/x")
    assert source_of("agent-state-change") is None
    assert source_of("limit-reset") is None


@pytest.mark.parametrize("name", ["", "CI", "ci done", "ci/done", "-x", "é", "a" * 65, "ci\ndone"])
def test_a_signal_name_is_a_short_word(name):
    with pytest.raises(EntryError):
        world.check_name(name)


def test_good_signal_names_pass():
    for name in ("ci-done", "a", "deploy.prod_2", "a" * 64):
        assert world.check_name(name) == name


@pytest.mark.parametrize("path", ["relative/x", "/tmp/a\nb", "/tmp/\x1b[31m", "/" + "a" * 1024, ""])
def test_a_hostile_watched_path_is_refused(path):
    with pytest.raises(EntryError):
        world.check_path(path)


def test_the_flag_makes_a_relative_or_home_path_absolute():
    assert event_flag("file:build/done", "/work/p", "/home/u") == "file:/work/p/build/done"
    assert event_flag("file:~/flag", "/work/p", "/home/u") == "file:/home/u/flag"
    assert event_flag("file:/a/../b", "/work/p", "/home/u") == "file:/a/../b", "as given: .. may cross a link"
    assert event_flag("signal:ci-done", "/", "/") == "signal:ci-done"
    assert event_flag("agent-state-change", "/", "/") is None
    with pytest.raises(EntryError):
        event_flag("signal:Bad Name", "/", "/")


def test_signal_data_is_sanitised_like_a_payload_and_bounded():
    assert world.clean_data("ok\x1b[201~ rest\r\n") == "ok[201~ rest"
    with pytest.raises(ValueError):
        world.clean_data("x" * 2001)


def test_a_signal_line_round_trips_and_a_torn_one_is_skipped():
    s = Signal(17, T0, "ci-done", "abc 123")
    assert parse_signal(s.to_json()) == s
    assert parse_signal(s.to_json()[:-3]) is None
    assert parse_signal('{"id": 1, "ts": 5, "name": "BAD"}') is None
    assert parse_signal("[]") is None


def test_a_mark_is_read_back_and_keeps_the_status_word():
    line = marked("skipped-busy: active", "signal ci-done#17")
    assert status_of(line) == "skipped-busy"
    assert mark_of(line, SIGNAL) == "ci-done#17"
    assert mark_of(line, FILE) == ""
    assert not is_marked("delivered") and is_marked(line)
    assert marked("delivered", "") == "delivered"


# -- the signal edge -----------------------------------------------------------------------------


def test_a_signal_fires_its_listener_once():
    sigs = [Signal(10, T0, "ci-done", "sha ok")]
    edge = signal_edge("ci-done", sigs, [], T0 - 100, 60, T0 + 1)
    assert edge.verdict == WakeVerdict.FIRE
    assert (edge.signal, edge.data, edge.mark) == ("ci-done", "sha ok", "signal ci-done#10")
    after = signal_edge("ci-done", sigs, [fired(edge, T0 + 1)], T0 - 100, 60, T0 + 500)
    assert after.verdict == WakeVerdict.UNCHANGED


def test_another_name_or_a_signal_from_before_the_entry_does_not_fire():
    assert signal_edge("ci-done", [Signal(1, T0, "deploy")], [], 0, 0, T0).verdict == WakeVerdict.UNCHANGED
    assert signal_edge("ci-done", [Signal(1, T0 - 5, "ci-done")], [], T0, 0, T0 + 1).verdict == WakeVerdict.UNCHANGED


def test_a_stale_signal_does_not_fire():
    sigs = [Signal(1, T0, "ci-done")]
    assert signal_edge("ci-done", sigs, [], 0, 60, T0 + SIGNAL_TTL).verdict == WakeVerdict.FIRE
    assert signal_edge("ci-done", sigs, [], 0, 60, T0 + SIGNAL_TTL + 1).verdict == WakeVerdict.UNCHANGED


def test_a_burst_within_the_debounce_is_held_then_fires_once_for_the_newest():
    first = Signal(1, T0, "ci-done", "one")
    e1 = signal_edge("ci-done", [first], [], 0, 60, T0)
    own = [fired(e1, T0)]
    burst = [first, Signal(2, T0 + 5, "ci-done", "two"), Signal(3, T0 + 9, "ci-done", "three")]
    held = signal_edge("ci-done", burst, own, 0, 60, T0 + 30)
    assert held.verdict == WakeVerdict.DEBOUNCED
    later = signal_edge("ci-done", burst, own, 0, 60, T0 + 60)
    assert later.verdict == WakeVerdict.FIRE and later.data == "three" and later.mark.endswith("#3")
    own.append(fired(later, T0 + 60))
    assert signal_edge("ci-done", burst, own, 0, 60, T0 + 999).verdict == WakeVerdict.UNCHANGED


def test_any_outcome_of_the_fire_consumes_the_signal():
    sigs = [Signal(5, T0, "x")]
    edge = signal_edge("x", sigs, [], 0, 0, T0)
    for outcome in ("skipped-busy: active", "failed: paste: no such pane", "skipped-quiet", "rate-capped"):
        again = signal_edge("x", sigs, [fired(edge, T0, outcome=outcome)], 0, 0, T0 + 100)
        assert again.verdict == WakeVerdict.UNCHANGED, outcome


@settings(max_examples=300, deadline=None)
@given(
    gaps=st.lists(st.integers(min_value=0, max_value=200), min_size=1, max_size=25),
    ticks=st.lists(st.integers(min_value=0, max_value=90), min_size=1, max_size=60),
    debounce=st.sampled_from([0, 1, 30, 60, 120]),
    restarts=st.lists(st.integers(min_value=0, max_value=59), max_size=5),
)
def test_signals_debounced_never_fire_twice_and_none_is_lost(gaps, ticks, debounce, restarts):
    """Signals at random instants, ticks at random instants (a tick may repeat an
    instant: a restart re-evaluates from the log alone). Each signal is consumed by
    exactly one fire; no two fires lie within the debounce; a burst inside one
    debounce window gives one fire."""
    signals, at = [], T0
    for i, gap in enumerate(gaps):
        at += gap
        signals.append(Signal(i + 1, at, "s", str(i + 1)))
    own: list[LogLine] = []
    now = T0
    instants = []
    for i, step in enumerate(ticks):
        now += step
        instants.append(now)
        if i in restarts:
            instants.append(now)  # the same instant again, as a restarted ticker sees it
    instants.append(signals[-1].ts + debounce + 1)  # a last tick after everything settled
    for now in instants:
        sent = [s for s in signals if s.ts <= now]
        edge = signal_edge("s", sent, own, T0, debounce, now)
        if edge.verdict == WakeVerdict.FIRE:
            own.append(fired(edge, now))
    consumed = [int(mark_of(line.outcome, SIGNAL).rpartition("#")[2]) for line in own]
    assert consumed == sorted(set(consumed)), "a signal was consumed twice"
    assert consumed[-1] == signals[-1].id, "the newest signal was never consumed"
    stamps = [line.ts for line in own]
    assert all(b - a >= debounce for a, b in itertools.pairwise(stamps))
    if debounce and signals[-1].ts - signals[0].ts < debounce and len(own) > 1:
        assert len(own) == 2, "a burst within one window: the first fire and one for the rest"


# -- the file edge -------------------------------------------------------------------------------


def test_a_watched_file_appears_then_changes_then_vanishes():
    start = file_edge("/f", None, ABSENT, [], 0, T0)
    assert start.verdict == WakeVerdict.COLD_START and start.observation == Observation(ABSENT, T0)
    appeared = file_edge("/f", start.observation, "1:2:3:4", [], 0, T0 + 30)
    assert appeared.verdict == WakeVerdict.FIRE and appeared.data == world.APPEARED and appeared.signal == "/f"
    own = [fired(appeared, T0 + 30)]
    assert file_edge("/f", appeared.observation, "1:2:3:4", own, 0, T0 + 60).verdict == WakeVerdict.UNCHANGED
    changed = file_edge("/f", appeared.observation, "1:2:9:9", own, 0, T0 + 60)
    assert changed.verdict == WakeVerdict.FIRE and changed.data == world.CHANGED
    gone = file_edge("/f", changed.observation, ABSENT, [*own, fired(changed, T0 + 60)], 0, T0 + 90)
    assert gone.verdict == WakeVerdict.IGNORED and gone.observation == Observation(ABSENT, T0 + 90)


def test_a_file_already_there_at_the_first_look_does_not_fire():
    assert file_edge("/f", None, "1:2:3:4", [], 0, T0).verdict == WakeVerdict.COLD_START


def test_a_crash_before_the_cursor_was_written_does_not_fire_twice_for_one_state():
    before = Observation(ABSENT, T0)
    edge = file_edge("/f", before, "1:2:3:4", [], 0, T0 + 30)
    own = [fired(edge, T0 + 30)]  # the line was written; the cursor still holds `before`
    assert file_edge("/f", before, "1:2:3:4", own, 0, T0 + 60).verdict == WakeVerdict.IGNORED


def test_changes_within_the_debounce_coalesce():
    obs = Observation("1:2:3:4", T0)
    own = [LogLine(T0, "s1", "%1", "wake", "delivered [file 1:2:3:4]")]
    held = file_edge("/f", obs, "1:2:5:5", own, 60, T0 + 10)
    assert held.verdict == WakeVerdict.DEBOUNCED and held.observation == obs, "the old observation: pending"
    assert file_edge("/f", obs, "1:2:6:6", own, 60, T0 + 60).verdict == WakeVerdict.FIRE


# -- in due(), the placeholders and the rotation -------------------------------------------------


def _entry(event: str, payload: str = "CI: {signal} {signal_data}", debounce: str = "60s") -> dict:
    return {
        "id": "s1",
        "wake_on": {"event": event, "debounce": debounce},
        "target": {"kind": "pane", "pane": "%1"},
        "payload": payload,
        "any_program": True,
        "created_by": {"at": T0 - 3600},
    }


def _due(entries, log, now, w, cursor=None):
    panes = [PaneFact(pane_id="%1", state="idle", program="cat")]
    return due(entries, LogView(log), panes, resolve_all(entries, panes), cursor or {}, now, zone=UTC, world=w)


def test_a_listener_fires_in_due_and_types_its_signal_data():
    entry = decode_entry(_entry("signal:ci-done"))
    check(entry.payload)
    ev = _due([entry], [], T0, World([Signal(7, T0 - 1, "ci-done", "abc123 success")]))
    (fire,) = ev.fires
    assert (fire.reason, fire.signal, fire.signal_data, fire.mark) == (
        "wake",
        "ci-done",
        "abc123 success",
        "signal ci-done#7",
    )
    assert typed(entry, fire, LogView([]), T0, UTC) == "CI: ci-done abc123 success"
    assert ev.marks == {"s1": "signal ci-done#7"}


def test_a_held_wake_line_names_the_signal_it_consumed():
    entry = decode_entry({**_entry("signal:ci-done"), "active_hours": "00:00-00:01"})
    now = T0 + 7200  # 10:00 UTC: outside the hours
    ev = _due([entry], [], now, World([Signal(7, now - 1, "ci-done")]))
    (line,) = [line for line, _ in ev.ledger(now)]
    assert line.outcome == "skipped-quiet [signal ci-done#7]"
    ev2 = _due([entry], [line], now + 3600, World([Signal(7, now - 1, "ci-done")]))
    assert not ev2.fires and not ev2.quiet


def test_a_debounced_signal_is_said_and_wakes_the_ticker_when_it_ends():
    entry = decode_entry(_entry("signal:ci-done"))
    ev = _due([entry], [LogLine(T0 - 10, "s1", "%1", "wake", "delivered")], T0, World([Signal(9, T0, "ci-done")]))
    assert not ev.fires and ev.debounced == ("s1",)
    assert any(d.reason == Diag.WAKE_DEBOUNCED and "held 50s" in d.detail for d in ev.diagnostics)


def test_a_file_wake_in_due_stores_its_fingerprint_in_the_cursor_and_fires_on_a_change():
    entry = decode_entry(_entry("file:/tmp/flag"))
    ev = _due([entry], [], T0, World((), {"/tmp/flag": ABSENT}))
    assert not ev.fires and ev.next_cursor["s1"] == Observation(ABSENT, T0)
    ev = _due([entry], [], T0 + 30, World((), {"/tmp/flag": "1:2:3:4"}), cursor=dict(ev.next_cursor))
    (fire,) = ev.fires
    assert (fire.signal, fire.signal_data, fire.mark) == ("/tmp/flag", "appeared", "file 1:2:3:4")


def test_no_world_read_means_no_signal_fire():
    entry = decode_entry(_entry("signal:ci-done"))
    assert not _due([entry], [], T0, None).fires


@pytest.mark.parametrize("event", ["signal:Bad", "signal:", "file:relative", "file:/a\nb"])
def test_the_entries_file_refuses_a_bad_world_event(event):
    with pytest.raises(EntryError):
        decode_entry(_entry(event))


def test_a_rotation_keeps_the_newest_marked_line_of_each_entry():
    lines = [LogLine(T0, "s1", "%1", "wake", "delivered [signal ci-done#3]")]
    lines += [LogLine(T0 + 10 + i, "s1", "%1", "schedule", "delivered") for i in range(5)]
    keep = lines_to_keep(lines, T0 + 10 * 86400, backoff=())
    assert 0 in keep


# -- the at-most-once journal carries the mark ---------------------------------------------------


def test_a_delivery_in_flight_journals_the_mark_and_its_recovery_logs_it(tmp_path, monkeypatch):
    """A crash between typing and logging: the recovered line names the signal too, or
    the next tick would fire the same signal again."""
    from rk.act import intents
    from rk.act.deliver import DeliveryResult
    from rk.core.log.delivery import Outcome
    from rk.engine import recovery
    from rk.engine.fire import Firing, fire_outcome
    from rk.engine.result import ServerTick
    from rk.engine.runtime import Runtime
    from rk.store.config import ServerFiles
    from rk.tmux.server import Server

    records = []

    def deliver(server, pane, payload, guard=None, intent=None):
        records.append((payload, dict(intent.record)))
        return DeliveryResult(ok=True, outcome=Outcome.parse("delivered"))

    env = {"RK_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path), "TZ": "UTC"}
    runtime = Runtime.from_environ(env, deliver=deliver, clock=lambda: T0)
    entry = decode_entry(_entry("signal:ci-done"))
    (fire,) = _due([entry], [], T0, World([Signal(7, T0 - 1, "ci-done", "sha ok")])).fires
    out = ServerTick("s")
    out.journal = ServerFiles(tmp_path / "state", "s")
    server = Server(name="s", env=env)
    assert fire_outcome(Firing(runtime, server, entry, fire, out, False, LogView([]), T0)) == "delivered"
    ((payload, record),) = records
    assert payload == "CI: ci-done sha ok" and record["mark"] == "signal ci-done#7"
    monkeypatch.setattr(intents, "recover", lambda server, record: ("delivered", "seen in the pane"))
    line = recovery._resolve(server, record, "s1", T0, None, ServerTick("s"))
    assert line is not None and line.outcome == "delivered [signal ci-done#7]"


def test_after_an_edit_to_another_name_the_signals_before_the_last_fire_stay_spent():
    own = [LogLine(T0, "s1", "%1", "wake", "delivered [signal deploy#9]")]
    sigs = [Signal(5, T0 - 10, "ci-done"), Signal(12, T0 + 5, "ci-done", "new")]
    edge = signal_edge("ci-done", sigs, own, 0, 0, T0 + 10)
    assert edge.verdict == WakeVerdict.FIRE and edge.mark == "signal ci-done#12"
    assert signal_edge("ci-done", sigs[:1], own, 0, 0, T0 + 10).verdict == WakeVerdict.UNCHANGED

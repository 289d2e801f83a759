"""Every event told: a burst becomes one summary per channel, what a stopped notifier
had not told is told at the next start, and `notify.log` accounts for every event
(told, told in which summary, or failed and why). The pure decisions
(`rk.core.channels.notice.batches`, `Memory`) and the shell (`rk.channels.notify`)
against a real local HTTP receiver behind Apprise's `json://`."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections import Counter
from datetime import UTC

import pytest
from conftest import wait_for
from test_notify import Receiver
from test_ticker import FakeDelivery, entry, make_ticker, pane_of, run_in_thread, write_entries

from rk.channels.notify import LOST, NOTIFY_LOG, Notifier, read_memory
from rk.core.channels.notice import (
    BURST,
    NAMED,
    Channel,
    Event,
    Memory,
    NoticeLine,
    batches,
    message,
)
from rk.engine.result import Decision, ServerTick

NOW = 1_800_000_000
CH = Channel("1", "json://127.0.0.1:1/")


def _queued(kind: str, i: int, ts: int = NOW, outcome: str = "notify-queued") -> NoticeLine:
    pane = f"%{i}"
    event = Event(kind, "work", pane, f"e{i:04}" if kind != "waiting" else "", NOW - i, f"why {i}", NOW + 60)
    return NoticeLine.of(ts, CH, event, outcome)


# -- the pure decisions


def test_up_to_burst_events_are_told_one_message_each():
    lines = [_queued("failed", i) for i in range(BURST)]
    out = batches(CH, lines, NOW + 5, UTC)
    assert [b.lines for b in out] == [(line,) for line in lines]
    assert all(b.key == "" for b in out)
    assert [(b.title, b.body) for b in out] == [message(line.as_event(), NOW + 5, UTC) for line in lines]


@pytest.mark.parametrize("n", [BURST + 1, 1000])
def test_a_burst_is_one_summary_counting_each_kind_and_naming_the_first_of_each(n):
    lines = [_queued("failed", i) for i in range(n - 2)] + [_queued("waiting", n), _queued("absent", n + 1)]
    (one,) = batches(CH, lines, NOW + 5, UTC)
    assert one.lines == tuple(lines) and one.key.startswith("summary/")
    assert one.title == f"rk: {n} events at once: {n - 2} failed, 1 absent, 1 waiting"
    body = one.body.splitlines()
    named = [line for line in body if line.startswith("- ")]
    assert len(named) == min(n, NAMED)
    # the rare kinds are named though they came last
    assert any(line.startswith(f"- waiting on work %{n} at ") for line in named)
    assert any(line.startswith(f"- absent on work %{n + 1} (entry e{n + 1:04}) at ") for line in named)
    assert named[0] == "- failed on work %0 (entry e0000) at 08:00: why 0"
    assert (f"… and {n - NAMED} more" in body) == (n > NAMED)
    assert f"notify.log lists each (summary {one.key})." in body and body[-1].startswith("What to do: ")


def test_held_and_left_lines_each_have_their_summary_and_every_line_is_in_one_batch():
    from rk.core.schedule.hours import ActiveHours

    quiet = Channel("1", CH.url, quiet=ActiveHours.parse("22:00-07:00"))
    held = [_queued("failed", i, outcome="notify-held: quiet") for i in range(2)]
    left = [_queued("waiting", i) for i in range(10, 12)]
    fresh = [_queued("failed", i) for i in range(20, 22)]
    lines = [held[0], left[0], fresh[0], held[1], left[1], fresh[1]]
    out = batches(quiet, lines, NOW + 5, UTC, {line.key for line in left})
    assert [b.lines for b in out] == [tuple(held), tuple(left), (fresh[0],), (fresh[1],)]
    assert out[0].title == "rk: 2 events during quiet hours 22:00-07:00: 2 failed"
    assert out[1].title == "rk: 2 events not told before the ticker stopped: 2 waiting"
    assert Counter(line for b in out for line in b.lines) == Counter(lines)


def test_a_summary_key_is_its_events_own():
    a = [_queued("failed", i) for i in range(10)]
    b = [_queued("failed", i) for i in range(1, 11)]
    assert batches(CH, a, NOW, UTC)[0].key == batches(CH, list(a), NOW + 99, UTC)[0].key
    assert batches(CH, a, NOW, UTC)[0].key != batches(CH, b, NOW, UTC)[0].key


def test_a_queued_line_carries_its_event_and_the_memory_knows_what_is_untold():
    queued = [_queued("limited", 1), _queued("failed", 2), _queued("failed", 3)]
    for line in queued:
        assert NoticeLine.parse(line.to_json()) == line
    assert queued[0].as_event() == Event("limited", "work", "%1", "e0001", NOW - 1, "why 1", NOW + 60)
    told = queued[1].told(NOW + 1, "notified: 1", "summary/x")
    assert NoticeLine.parse(told.to_json()) == told
    assert (told.summary, told.detail, told.until, told.outcome) == ("summary/x", "", 0, "notified: 1")
    failed = queued[2].told(NOW + 1, "notify-failed: refused")
    memory = Memory.of([*queued, told, failed])
    assert list(memory.pending["1"]) == [queued[0].key]  # told and failed are concluded
    held = _queued("waiting", 4, outcome="notify-held: quiet")
    memory.add(held)
    assert list(memory.held["1"]) == [held.key]
    memory.add(held.told(NOW + 2, "notified: 1", "summary/y"))
    assert not memory.held["1"] and (("1", held.key)) in memory.done
    # an older rk's summary line (its keys listed) still ends the holds it told of
    memory.add(held)
    memory.add(NoticeLine(NOW + 3, "1", "summary/1", "notified: 1", "summary", keys=(held.key,)))
    assert not memory.held["1"]


# -- a real receiver


@pytest.fixture
def healthy():
    r = Receiver()
    yield r
    r.close()


def _failed(first: int, n: int) -> ServerTick:
    decisions = [Decision("work", f"e{i:04}", "schedule", f"%{i}", "failed: boom") for i in range(first, first + n)]
    return ServerTick("work", swept=True, decisions=decisions)


def _lines(state) -> list[dict]:
    try:
        text = (state / NOTIFY_LOG).read_text()
    except OSError:
        return []
    whole = text[: text.rfind("\n") + 1]  # a line being written is read once it is whole
    return [x for x in map(_parsed, whole.splitlines()) if x is not None]


def _parsed(line: str) -> dict | None:
    try:
        return json.loads(line)
    except ValueError:  # a torn line
        return None


def _accounted(state) -> dict[str, dict]:
    """Each event key's outcome line (the one after its `notify-queued` or `notify-held`)."""
    return {x["key"]: x for x in _lines(state) if not x["outcome"].startswith(("notify-queued", "notify-held"))}


def _wait_accounted(state, n: int, timeout: float = 60) -> dict[str, dict]:
    return wait_for(lambda: a if len(a := _accounted(state)) >= n else None, timeout=timeout, message=f"{n} told")


@pytest.mark.shell
@pytest.mark.parametrize("n", [1000, 100, BURST])
def test_a_burst_to_a_healthy_receiver_is_told_and_every_event_accounted(tmp_path, healthy, n):
    notifier = Notifier(tmp_path, [Channel("1", healthy.url)], UTC)
    try:
        notifier.after_tick([_failed(0, n)], int(time.time()))
        accounted = _wait_accounted(tmp_path, n)
    finally:
        notifier.stop(wait=5)
    queued = [x for x in _lines(tmp_path) if x["outcome"] == "notify-queued"]
    assert sorted(x["key"] for x in queued) == sorted(accounted) and len(accounted) == n
    assert {x["outcome"] for x in accounted.values()} == {"notified: 1"}
    messages = len(healthy.bodies)
    summaries = {x.get("summary", "") for x in accounted.values()}
    if n > BURST:
        assert messages == 1 and len(summaries) == 1 and "" not in summaries
        (key,) = summaries
        assert healthy.bodies[0]["title"] == f"rk: {n} events at once: {n} failed"
        assert f"(summary {key})" in healthy.bodies[0]["message"]
    else:
        assert messages == n and summaries == {""}
    print(f"burst of {n}: {messages} message(s), {len(accounted)} events accounted in notify.log")


@pytest.mark.shell
def test_a_failing_receiver_fails_each_event_with_its_reason(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, never listening: refused
        dead = Channel("dead", f"json://127.0.0.1:{s.getsockname()[1]}/", timeout=1)
        notifier = Notifier(tmp_path, [dead], UTC)
        try:
            notifier.after_tick([_failed(0, 1000)], NOW)
            first = _wait_accounted(tmp_path, 1000)
            notifier.after_tick([_failed(1000, BURST)], NOW + 1)
            accounted = _wait_accounted(tmp_path, 1000 + BURST)
        finally:
            notifier.stop(wait=5)
    outcomes = {x["outcome"] for x in accounted.values()}
    assert len(outcomes) == 1 and next(iter(outcomes)).startswith("notify-failed: ") and len(next(iter(outcomes))) > 20
    assert len({x["summary"] for x in first.values()}) == 1  # the burst: one summary, failed
    assert all("summary" not in accounted[f"failed/work/%{i}/e{i:04}/{NOW + 1}"] for i in range(1000, 1000 + BURST))


@pytest.mark.shell
def test_work_a_stopped_notifier_left_is_told_at_the_next_start(tmp_path, healthy):
    hanging = Receiver(hang=True)
    try:
        first = Notifier(tmp_path, [Channel("1", hanging.url, timeout=30)], UTC)
        first.after_tick([_failed(0, 10)], NOW)
        wait_for(lambda: hanging.bodies, timeout=20, message="the first summary in flight")
        first.after_tick([_failed(10, 5)], NOW + 1)  # waits behind it
        first.stop()
        assert _accounted(tmp_path) == {}
        assert len(read_memory(tmp_path / NOTIFY_LOG).pending["1"]) == 15

        second = Notifier(tmp_path, [Channel("1", healthy.url)], UTC)  # the next start
        try:
            accounted = _wait_accounted(tmp_path, 15, timeout=20)
            wait_for(lambda: healthy.bodies, timeout=20)
        finally:
            second.stop(wait=5)
        hanging.release()  # the stopped notifier's send ends: it records nothing
        for worker in first._workers:
            worker.join(20)
            assert not worker.is_alive()
    finally:
        hanging.close()
    assert len(_accounted(tmp_path)) == 15 and len(_lines(tmp_path)) == 30
    assert {x["outcome"] for x in accounted.values()} == {"notified: 1"}
    assert len(healthy.bodies) == 1
    assert healthy.bodies[0]["title"] == "rk: 15 events not told before the ticker stopped: 15 failed"
    assert not read_memory(tmp_path / NOTIFY_LOG).pending["1"]


@pytest.mark.shell
def test_a_waiting_pane_queued_by_a_stopped_ticker_is_told_after_its_restart(tmp_path, tmux_server, healthy):
    hanging = Receiver(hang=True)
    state = tmp_path / "state"
    now = int(time.time())
    cat = pane_of(tmux_server)
    write_entries(state, tmux_server.name, [entry("e001", cat, 3600, now)])
    tmux_server.run("set-option", "-p", "-t", cat, "@rk_pane_agent_state", f"waiting:{now - 600}")
    try:
        for url in (hanging.url, healthy.url):
            loop = make_ticker(state, tmux_server, time.time, FakeDelivery(), 0.3)
            loop.notifier = Notifier(state, [Channel("1", url, on=frozenset({"waiting"}))], UTC)
            thread = run_in_thread(loop)
            try:
                wait_for(lambda u=url: (healthy if u == healthy.url else hanging).bodies, timeout=20)
            finally:
                loop.stop()
                thread.join(10)
                assert not thread.is_alive()
    finally:
        hanging.close()
    (told,) = _accounted(state).values()
    assert told["event"] == "waiting" and told["outcome"] == "notified: 1" and told["pane"] == cat
    assert healthy.bodies[0]["title"] == "rk: 1 event not told before the ticker stopped: 1 waiting"
    assert f"- waiting on {tmux_server.name} {cat} at " in healthy.bodies[0]["message"]


@pytest.mark.shell
def test_a_stuck_channel_never_blocks_the_tick_and_what_piled_up_is_one_summary(tmp_path, caplog):
    gate, entered, sent = threading.Event(), threading.Event(), []

    def stuck(channel, title, body):
        entered.set()
        gate.wait(60)
        sent.append(title)
        return ""

    notifier = Notifier(tmp_path, [Channel("1", "json://127.0.0.1:1/", on=frozenset({"failed"}))], UTC, sender=stuck)
    try:
        notifier.after_tick([_failed(0, 1)], NOW)
        wait_for(entered.is_set, timeout=10, message="the worker inside its one send")
        with caplog.at_level("INFO", logger="rk.channels.notify"):
            tick = threading.Thread(
                target=lambda: [notifier.after_tick([_failed(i, 1)], NOW + i) for i in range(1, 201)]
            )
            tick.start()
            tick.join(10)
            assert not tick.is_alive(), "after_tick blocked on a stuck channel"
            assert _accounted(tmp_path) == {} and sent == []
            gate.set()
            accounted = _wait_accounted(tmp_path, 201, timeout=20)
            # the worker logs its send after it accounts for it: wait for the line, still capturing
            wait_for(lambda: "summary summary/" in caplog.text, timeout=10, message="the summary's log line")
    finally:
        gate.set()
        notifier.stop(wait=5)
    assert sent == ["rk: delivery failed (work e0000)", "rk: 200 events at once: 200 failed"]
    assert {x["outcome"] for x in accounted.values()} == {"notified: 1"}
    assert "summary" not in accounted[f"failed/work/%0/e0000/{NOW}"]
    assert len({accounted[f"failed/work/%{i}/e{i:04}/{NOW + i}"]["summary"] for i in range(1, 201)}) == 1
    assert caplog.text.count("notify 1 (json) summary summary/") == 1 and "(200 events)" in caplog.text


@pytest.mark.shell
def test_a_channel_gone_from_the_config_fails_what_it_was_never_told(tmp_path, caplog):
    old = Channel("old", "json://127.0.0.1:1/")
    lines = [NoticeLine.of(NOW, old, Event("failed", "work", "%1", f"e{i}", NOW), "notify-queued") for i in range(3)]
    lines.append(NoticeLine.of(NOW, old, Event("waiting", "work", "%2", "", NOW), "notify-held: quiet"))
    (tmp_path / NOTIFY_LOG).write_text("".join(line.to_json() + "\n" for line in lines))
    with caplog.at_level("WARNING", logger="rk.channels.notify"):
        notifier = Notifier(tmp_path, [Channel("new", "json://127.0.0.1:1/")], UTC, sender=lambda *a: "")
    notifier.stop(wait=5)
    accounted = _accounted(tmp_path)
    assert sorted(accounted) == sorted(line.key for line in lines)
    assert {x["outcome"] for x in accounted.values()} == {f"notify-failed: {LOST}"}
    assert "channel 'old' is no longer in config.yaml" in caplog.text
    memory = read_memory(tmp_path / NOTIFY_LOG)
    assert not memory.pending["old"] and not memory.held["old"]


@pytest.mark.shell
def test_notify_log_is_private_and_never_followed_through_a_symlink(tmp_path):
    told: list[str] = []
    notifier = Notifier(tmp_path, [CH], UTC, sender=lambda ch, title, body: told.append(title) or "")
    try:
        notifier.after_tick([_failed(0, 1)], NOW)
        _wait_accounted(tmp_path, 1, timeout=10)
    finally:
        notifier.stop(wait=5)
    assert os.stat(tmp_path / NOTIFY_LOG).st_mode & 0o777 == 0o600
    other = tmp_path / "elsewhere"
    queued = _queued("failed", 7).to_json() + "\n"
    other.write_text(queued)
    (tmp_path / NOTIFY_LOG).unlink()
    (tmp_path / NOTIFY_LOG).symlink_to(other)
    assert not read_memory(tmp_path / NOTIFY_LOG).pending  # queued work behind a symlink is not read
    notifier = Notifier(tmp_path, [CH], UTC, sender=lambda ch, title, body: told.append(title) or "")
    try:
        notifier.after_tick([_failed(1, 1)], NOW + 1)
        wait_for(lambda: len(told) == 2, timeout=10, message="the send (its lines refused)")
    finally:
        notifier.stop(wait=5)
    assert other.read_text() == queued and (tmp_path / NOTIFY_LOG).is_symlink()


@pytest.mark.shell
def test_a_torn_last_line_swallows_none_of_the_lines_after_it(tmp_path, healthy):
    queued = [_queued("failed", i, ts=NOW - 60) for i in range(2)]
    torn = _queued("failed", 9).to_json()[:50]  # a write cut short: no newline
    (tmp_path / NOTIFY_LOG).write_text(queued[0].to_json() + "\n" + queued[1].to_json() + "\n" + torn)
    notifier = Notifier(tmp_path, [Channel("1", healthy.url)], UTC)
    try:
        notifier.after_tick([_failed(100, 1)], NOW)
        accounted = _wait_accounted(tmp_path, 3)
    finally:
        notifier.stop(wait=5)
    assert sorted(accounted) == sorted([*(line.key for line in queued), f"failed/work/%100/e0100/{NOW}"])
    assert (tmp_path / NOTIFY_LOG).read_text().splitlines()[2] == torn


@pytest.mark.shell
def test_what_a_stopped_ticker_left_waits_out_quiet_hours_then_is_told_in_their_summary(tmp_path):
    from rk.core.schedule.hours import ActiveHours

    left = [_queued("failed", i, ts=NOW - 60) for i in range(2)]
    (tmp_path / NOTIFY_LOG).write_text("".join(line.to_json() + "\n" for line in left))
    told: list[tuple[str, str]] = []
    night = Channel("1", CH.url, quiet=ActiveHours.parse("00:00-24:00"))
    notifier = Notifier(tmp_path, [night], UTC, sender=lambda ch, title, body: told.append((title, body)) or "")
    notifier.stop(wait=5)  # the start wrote what it decided before it returned
    assert told == []
    memory = read_memory(tmp_path / NOTIFY_LOG)
    assert not memory.pending["1"] and list(memory.held["1"]) == [line.key for line in left]
    assert memory.held["1"][left[0].key].detail == "why 0"  # what its message needs is kept
    day = Channel("1", CH.url)
    notifier = Notifier(tmp_path, [day], UTC, sender=lambda ch, title, body: told.append((title, body)) or "")
    try:
        notifier.after_tick([], NOW)
        accounted = _wait_accounted(tmp_path, 2, timeout=10)
    finally:
        notifier.stop(wait=5)
    assert [title for title, _ in told] == ["rk: 2 events during quiet hours: 2 failed"]
    assert ": why 0" in told[0][1]
    assert {x["outcome"] for x in accounted.values()} == {"notified: 1"}

"""Notifications from every tick: a running ticker follows an edit of config.yaml's
`notify:` at its next tick (no restart), and `rk cron tick` tells what it found,
waiting `rk.channels.notify.TICK_WAIT` seconds at most for its sends, the rest left
queued in notify.log for the next tick. Against real local HTTP receivers behind
Apprise's `json://` (tests/test_notify.py's `Receiver`)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from datetime import UTC

import pytest
from conftest import run_rk, wait_for
from test_notify import Receiver
from test_notify_burst import _accounted, _failed, _lines
from test_ticker import FakeDelivery, entry, make_ticker, pane_of, run_in_thread, write_entries

from rk.channels.notify import ADOPT_AFTER, LOST, NOTIFY_LOG, TICK_WAIT, Notifier, read_memory
from rk.channels.notify_config import ChannelsFile
from rk.core.channels.notice import Channel, Event, NoticeLine

NOW = 1_800_000_000


@pytest.fixture
def receivers():
    made: list[Receiver] = []

    def make(hang: bool = False) -> Receiver:
        made.append(Receiver(hang=hang))
        return made[-1]

    yield make
    for r in made:
        r.close()


def _write(path, text: str) -> None:
    """As an editor saves: a new file renamed over the old one."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


def _channel_yaml(url: str, **extra: str) -> str:
    lines = [f'  - url: "{url}"', "    on: [waiting]", "    waiting_after: 0s", "    debounce: 0s"]
    lines += [f"    {k}: {v}" for k, v in extra.items()]
    return "notify:\n" + "\n".join(lines) + "\n"


def _waiting(server, pane: str, since: int) -> None:
    server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", f"waiting:{since}")


# -- the ticker follows config.yaml


@pytest.mark.shell
def test_a_running_ticker_follows_each_edit_of_notify_at_its_next_tick(tmp_path, tmux_server, receivers, caplog):
    first, second = receivers(), receivers()
    state, config = tmp_path / "state", tmp_path / "config.yaml"
    config.write_text("max_entries: 50\n")
    now = int(time.time())
    cat = pane_of(tmux_server)
    write_entries(state, tmux_server.name, [entry("e001", cat, 3600, now)])
    _waiting(tmux_server, cat, now - 600)
    loop = make_ticker(state, tmux_server, time.time, FakeDelivery(), 0.3)
    loop.runtime.environ = {**loop.runtime.environ, "RK_CONFIG": str(config)}
    thread = run_in_thread(loop)
    try:
        wait_for(lambda: loop.ticks >= 2, timeout=20, message="ticks with no channel")
        assert loop.notifier is None and not (state / NOTIFY_LOG).exists()

        _write(config, "max_entries: 50\n" + _channel_yaml(first.url))  # a channel added: no restart
        wait_for(lambda: first.bodies, timeout=20, message="the new channel told")
        assert "waits for you" in first.bodies[0]["title"] and loop.runtime.heard == {"waiting"}

        _write(config, _channel_yaml(second.url))  # the same channel, another URL
        _waiting(tmux_server, cat, now - 500)
        wait_for(lambda: second.bodies, timeout=20, message="the changed channel told")
        assert len(first.bodies) == 1

        with caplog.at_level("WARNING", logger="rk.channels.notify"):
            config.write_text("notify: [\n")  # cannot be parsed: the channel stays as it was
            ticks = loop.ticks
            wait_for(lambda: loop.ticks >= ticks + 2, timeout=20, message="ticks over the broken file")
            _waiting(tmux_server, cat, now - 400)
            wait_for(lambda: len(second.bodies) >= 2, timeout=20, message="told through the last good channel")
            ticks = loop.ticks
            wait_for(lambda: loop.ticks >= ticks + 2, timeout=20, message="more ticks")
        assert caplog.text.count("the notify channels stay as they were") == 1, caplog.text

        _write(config, "notify: []\n")  # all gone
        ticks = loop.ticks
        wait_for(lambda: loop.ticks >= ticks + 2, timeout=20, message="ticks after the removal")
        _waiting(tmux_server, cat, now - 300)
        ticks = loop.ticks
        wait_for(lambda: loop.ticks >= ticks + 3, timeout=20, message="ticks with no channel again")
        assert loop.runtime.heard == frozenset()
    finally:
        loop.stop()
        thread.join(10)
        assert not thread.is_alive()
    assert len(first.bodies) == 1 and len(second.bodies) == 2
    told = [x for x in _lines(state) if x["outcome"] == "notified: 1"]
    assert [x["event"] for x in told] == ["waiting"] * 3


@pytest.mark.shell
def test_the_channels_file_is_read_again_only_when_it_changes_and_a_broken_one_keeps_the_last(tmp_path):
    config = tmp_path / "config.yaml"
    source = ChannelsFile({"RK_CONFIG": str(config), "HOME": str(tmp_path)})
    assert source.changed() is None and source.channels == []  # no file: no channel
    config.write_text(_channel_yaml("json://127.0.0.1:1/"))
    (one,) = source.changed() or []
    assert one.url == "json://127.0.0.1:1/" and source.changed() is None
    _write(config, "timeout_note: 1\n" + _channel_yaml("json://127.0.0.1:1/"))
    assert source.changed() is None  # read again, the same channels: nothing to follow
    config.write_text("notify: [\n")
    assert source.changed() is None and source.channels == [one]
    assert len(source.problems) == 1 and "stay as they were" in source.problems[0]
    source.problems = []
    assert source.changed() is None and source.problems == []  # said once for this version of the file
    _write(config, _channel_yaml("json://127.0.0.1:2/") + '  - url: "nope"\n')
    (two,) = source.changed() or []
    assert two.url == "json://127.0.0.1:2/" and "notify item 2" in source.problems[0]


@pytest.mark.shell
def test_a_channel_removed_while_it_sends_accounts_for_each_event_once(tmp_path, caplog):
    gate, entered, sent = threading.Event(), threading.Event(), []

    def stuck(channel, title, body):
        entered.set()
        gate.wait(30)
        sent.append((channel.name, title))
        return ""

    old, kept = Channel("old", "json://127.0.0.1:1/"), Channel("kept", "json://127.0.0.1:2/", on=frozenset())
    notifier = Notifier(tmp_path, [old, kept], UTC, sender=stuck)
    try:
        notifier.after_tick([_failed(0, 1)], NOW)
        wait_for(entered.is_set, timeout=10, message="the first send in flight")
        notifier.after_tick([_failed(1, 2)], NOW + 1)  # queued behind it
        with caplog.at_level("WARNING", logger="rk.channels.notify"):
            notifier.reconfigure([kept])
        assert notifier.heard == frozenset()
        gate.set()
        accounted = wait_for(lambda: a if len(a := _accounted(tmp_path)) >= 3 else None, timeout=10)
        assert notifier.settle(10)
    finally:
        gate.set()
        notifier.stop(wait=5)
    assert sent == [("old", "rk: delivery failed (work e0000)")]
    outcomes = Counter(x["key"] for x in _lines(tmp_path) if x["outcome"] != "notify-queued")
    assert set(outcomes.values()) == {1}, outcomes  # one outcome line per event
    assert accounted[f"failed/work/%0/e0000/{NOW}"]["outcome"] == "notified: old"  # the send in flight ended
    assert {accounted[f"failed/work/%{i}/e000{i}/{NOW + 1}"]["outcome"] for i in (1, 2)} == {f"notify-failed: {LOST}"}
    assert "channel 'old' is no longer in config.yaml" in caplog.text
    assert not read_memory(tmp_path / NOTIFY_LOG).pending.get("old")


# -- what other processes wrote to notify.log


def _left_by_another(state, n: int, ts: int) -> list[NoticeLine]:
    ch = Channel("1", "json://127.0.0.1:1/")
    lines = [NoticeLine.of(ts, ch, Event("failed", "work", f"%{i}", f"x{i}", ts), "notify-queued") for i in range(n)]
    with open(state / NOTIFY_LOG, "a") as f:
        f.write("".join(line.to_json() + "\n" for line in lines))
    return lines


@pytest.mark.shell
def test_what_another_tick_told_is_not_told_again_and_what_it_left_is_taken_on_once_old(tmp_path):
    told: list[str] = []
    clock = [float(NOW)]
    ticker = Notifier(
        tmp_path,
        [Channel("1", "json://127.0.0.1:1/")],
        UTC,
        lambda c, t, b: told.append(t) or "",
        clock=lambda: clock[0],
    )
    try:
        guest = Notifier(
            tmp_path, [Channel("1", "json://127.0.0.1:1/")], UTC, lambda c, t, b: told.append(t) or "", restore=False
        )
        guest.after_tick([_failed(0, 1)], NOW)  # a tick beside the ticker told e0000
        assert guest.settle(10)
        guest.stop()
        ticker.after_tick([_failed(0, 1)], NOW)  # the ticker's own tick found the same event
        assert ticker.settle(10) and told == ["rk: delivery failed (work e0000)"]

        fresh = _left_by_another(tmp_path, 2, NOW)  # queued just now by a tick still waiting for its sends
        ticker.after_tick([], NOW + ADOPT_AFTER - 1)
        assert ticker.settle(10) and len(told) == 1
        clock[0] = NOW + ADOPT_AFTER
        ticker.after_tick([], NOW + ADOPT_AFTER)  # that tick has ended: its leftovers are the ticker's
        assert ticker.settle(10)
        ticker.after_tick([], NOW + ADOPT_AFTER + 30)
        assert ticker.settle(10)
    finally:
        ticker.stop(wait=5)
    assert told[1:] == ["rk: 2 events not told before the ticker stopped: 2 failed"]
    accounted = _accounted(tmp_path)
    assert all(accounted[line.key]["outcome"] == "notified: 1" for line in fresh)


@pytest.mark.shell
def test_a_guest_tells_only_what_its_tick_found(tmp_path):
    left = _left_by_another(tmp_path, 3, NOW - 3600)  # queued by a ticker that is still running
    told: list[str] = []
    guest = Notifier(
        tmp_path, [Channel("1", "json://127.0.0.1:1/")], UTC, lambda c, t, b: told.append(t) or "", restore=False
    )
    try:
        guest.after_tick([_failed(9, 1)], NOW)
        assert guest.settle(10)
    finally:
        guest.stop()
    assert told == ["rk: delivery failed (work e0009)"] and guest.untold() == 0
    assert sorted(read_memory(tmp_path / NOTIFY_LOG).pending["1"]) == sorted(line.key for line in left)


# -- rk cron tick


def _cli(env, tmp_path, config: str) -> dict[str, str]:
    path = tmp_path / "config.yaml"
    _write(path, config)
    return {**env, "RK_CONFIG": str(path)}


@pytest.mark.shell
def test_cron_tick_tells_what_it_found_before_it_exits(tmp_path, tmux_server, env, receivers):
    sink = receivers()
    now = int(time.time())
    cat = pane_of(tmux_server)
    write_entries(tmp_path / "state", tmux_server.name, [entry("e001", cat, 3600, now)])
    _waiting(tmux_server, cat, now - 600)
    cli = _cli(env, tmp_path, _channel_yaml(sink.url))
    began = time.monotonic()
    proc = run_rk(["cron", "tick"], cli)
    print(f"rk cron tick telling one event: {time.monotonic() - began:.2f}s")
    assert proc.returncode == 0, proc.stderr
    assert [b["title"] for b in sink.bodies] == [f"rk: {cat} waits for you ({tmux_server.name})"]  # before it exited
    assert "notify: 1 told, 0 failed" in proc.stdout
    again = run_rk(["--json", "cron", "tick"], cli)  # notify.log remembers: not told twice
    assert json.loads(again.stdout)["result"]["notify"] == {"notified": 0, "failed": 0, "queued": 0}
    assert len(sink.bodies) == 1
    dry = run_rk(["cron", "tick", "--dry-run"], cli)
    assert dry.returncode == 0 and "notify:" not in dry.stdout and len(sink.bodies) == 1


@pytest.mark.shell
def test_cron_tick_with_a_hung_receiver_exits_within_its_bound_and_the_next_tick_tells(
    tmp_path, tmux_server, env, receivers
):
    hung, sink = receivers(hang=True), receivers()
    now = int(time.time())
    cat = pane_of(tmux_server)
    write_entries(tmp_path / "state", tmux_server.name, [entry("e001", cat, 3600, now)])
    _waiting(tmux_server, cat, now - 600)
    cli = _cli(env, tmp_path, _channel_yaml(hung.url, timeout="60s"))
    began = time.monotonic()
    proc = run_rk(["cron", "tick"], cli)
    took = time.monotonic() - began
    print(f"rk cron tick with a hung receiver: exited after {took:.1f}s (bound {TICK_WAIT:g}s)")
    assert proc.returncode == 0, proc.stderr
    assert hung.bodies and not hung.gate.is_set()  # the send began and never ended
    assert TICK_WAIT - 0.5 <= took < TICK_WAIT + 10
    assert "notify: 0 told, 0 failed, 1 left queued (the next tick tells them)" in proc.stdout
    (key,) = read_memory(tmp_path / "state" / NOTIFY_LOG).pending["1"]
    assert key.startswith(f"waiting/{tmux_server.name}/{cat}/")

    cli = _cli(env, tmp_path, _channel_yaml(sink.url))  # the receiver fixed: the next tick tells it
    proc = run_rk(["cron", "tick"], cli)
    assert proc.returncode == 0, proc.stderr
    assert [b["title"] for b in sink.bodies] == ["rk: 1 event not told before the ticker stopped: 1 waiting"]
    assert _accounted(tmp_path / "state")[key]["outcome"] == "notified: 1"
    assert not read_memory(tmp_path / "state" / NOTIFY_LOG).pending["1"]


@pytest.mark.shell
def test_cron_tick_beside_a_running_ticker_leaves_what_is_queued_to_it(tmp_path, env, receivers):
    from rk.engine.ticker import LOCK_NAME
    from rk.host.lock import release, try_lock

    sink = receivers()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    left = _left_by_another(state, 2, int(time.time()) - 3600)  # the ticker's, being sent
    cli = _cli(env, tmp_path, "notify:\n" + f'  - url: "{sink.url}"\n')
    held = try_lock(state / LOCK_NAME)  # a ticker serves this state directory
    assert held is not None
    try:
        proc = run_rk(["--json", "cron", "tick"], cli)
    finally:
        release(held)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"]["notify"] == {"notified": 0, "failed": 0, "queued": 0}
    assert sink.bodies == [] and sorted(read_memory(state / NOTIFY_LOG).pending["1"]) == sorted(x.key for x in left)
    proc = run_rk(["cron", "tick"], cli)  # no ticker: this tick tells them
    assert proc.returncode == 0 and "notify: 2 told, 0 failed" in proc.stdout
    assert [b["title"] for b in sink.bodies] == ["rk: 2 events not told before the ticker stopped: 2 failed"]


@pytest.mark.shell
def test_a_send_that_never_ends_is_a_failure_said_after_the_channels_timeout(monkeypatch):
    import apprise

    from rk.channels import notify

    never = threading.Event()
    monkeypatch.setattr(apprise.Apprise, "notify", lambda self, **kw: never.wait(30))
    monkeypatch.setattr(notify, "SEND_SLACK", 0)
    began = time.monotonic()
    why = notify.apprise_send(Channel("1", "json://127.0.0.1:1/", timeout=1), "t", "b")
    assert why == "no answer within 1s" and time.monotonic() - began < 5
    never.set()

"""Notifications: the pure decisions (`rk.core.channels.notice`) and the shell (`rk.channels.notify`)
against a real local HTTP receiver behind an Apprise `json://` URL."""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from datetime import UTC
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import wait_for
from test_ticker import FakeDelivery, entry, make_ticker, pane_of, run_in_thread, write_entries

from rk.channels.notify import NOTIFY_LOG, Notifier, read_memory, with_timeouts
from rk.core.channels.notice import (
    EVENTS,
    Channel,
    Event,
    Memory,
    NoticeLine,
    events_of,
    message,
    parse_channels,
    plan,
)
from rk.core.schedule.entry import CreatedBy, IfAbsent
from rk.core.schedule.hours import ActiveHours

NOW = 1_800_000_000


# -- the pure decisions


def test_a_bad_value_turns_off_only_its_channel():
    raw = [
        {"url": "json://127.0.0.1:1/", "on": ["waiting"], "waiting_after": "5m", "quiet": "22:00-07:00"},
        {"url": "json://127.0.0.1:2/", "waiting_after": "soon"},
        {"url": "json://127.0.0.1:3/", "on": ["nope"]},
        {"url": "not a url"},
        {"url": "json://x/", "colour": "red"},
    ]
    channels, problems = parse_channels(raw, "config.yaml")
    assert [c.url for c in channels] == ["json://127.0.0.1:1/"]
    assert channels[0].waiting_after == 300 and channels[0].quiet == ActiveHours.parse("22:00-07:00")
    assert len(problems) == 4
    assert "notify item 2: waiting_after" in problems[0] and "that channel is off" in problems[0]
    assert "unknown event 'nope'" in problems[1] and "Apprise URL" in problems[2] and "'colour'" in problems[3]
    assert parse_channels({"url": "x"}, "c")[1] == ["c: notify must be a list of channels (- url: …)"]


def _channel(**kw) -> Channel:
    return Channel(name="1", url="json://127.0.0.1:1/", **kw)


def test_waiting_is_told_only_after_waiting_after_and_once():
    ch = _channel(waiting_after=300)
    events = events_of("work", [], [("%1", "waiting", NOW - 100, 0)], NOW, Memory())
    assert plan(ch, events, Memory(), NOW, UTC).send == []
    events = events_of("work", [], [("%1", "waiting", NOW - 400, 0)], NOW, Memory())
    first = plan(ch, events, Memory(), NOW, UTC).send
    assert [e.kind for e in first] == ["waiting"]
    memory = Memory.of([NoticeLine.of(NOW, ch, first[0], "notified: 1")])
    assert plan(ch, events, memory, NOW + 3600, UTC).send == []  # the same occurrence, never twice


def test_debounce_per_event_and_pane():
    ch = _channel(debounce=600)
    told = Event("failed", "work", "%1", "e001", NOW)
    memory = Memory.of([NoticeLine.of(NOW, ch, told, "notified: 1")])
    again = [Event("failed", "work", "%1", "e001", NOW + 60), Event("failed", "work", "%2", "e002", NOW + 60)]
    assert [e.pane for e in plan(ch, again, memory, NOW + 60, UTC).send] == ["%2"]
    assert [e.pane for e in plan(ch, again, memory, NOW + 601, UTC).send] == ["%1", "%2"]


def test_quiet_hours_hold_then_one_summary():
    ch = _channel(quiet=ActiveHours.parse("22:00-07:00"))
    night = 1_800_000_000 - (1_800_000_000 % 86400) + 23 * 3600  # 23:00 UTC
    event = Event("failed", "work", "%1", "e001", night)
    during = plan(ch, [event], Memory(), night, UTC)
    assert during.send == [] and during.hold == [event]
    memory = Memory.of([NoticeLine.of(night, ch, event, "notify-held: quiet")])
    assert plan(ch, [], memory, night + 3600, UTC).summary == []  # still quiet
    morning = plan(ch, [], memory, night + 9 * 3600, UTC)
    assert [h.key for h in morning.summary] == [event.key]
    memory.add(NoticeLine(night + 9 * 3600, "1", "summary/x", "notified: 1", keys=(event.key,)))
    assert plan(ch, [], memory, night + 9 * 3600 + 60, UTC).summary == []


def test_limit_reset_follows_a_told_limit_once():
    ch = _channel()
    limited = events_of("work", [], [("%1", "limited", NOW, NOW + 3600)], NOW, Memory())
    assert [(e.kind, e.until) for e in limited] == [("limited", NOW + 3600)]
    memory = Memory.of([NoticeLine.of(NOW, ch, limited[0], "notified: 1")])
    later = events_of("work", [], [("%1", "idle", NOW + 3700, 0)], NOW + 3700, memory)
    assert [e.kind for e in later] == ["limit-reset"]


def test_each_message_names_server_pane_entry_and_what_to_do():
    for kind in EVENTS:
        title, body = message(Event(kind, "work", "%3", "e001", NOW - 600, "boom", NOW + 60), NOW, UTC)
        assert "work" in title + body and "What to do:" in body, kind
        assert "%3" in title + body or kind in ("absent", "expired", "budget", "entries-unreadable"), kind
        assert "e001" in title + body or kind in ("waiting", "limited", "limit-reset", "entries-unreadable"), kind


def test_timeouts_are_added_to_http_urls_only():
    assert with_timeouts("json://h:1/", 3) == "json://h:1/?cto=3&rto=3"
    assert with_timeouts("json://h:1/?x=1", 3) == "json://h:1/?x=1&cto=3&rto=3"
    assert with_timeouts("dbus://", 3) == "dbus://"


# -- a real receiver behind Apprise


class Receiver:
    """A local HTTP server that records each POSTed JSON body; `hang` holds every
    answer until `release()`."""

    def __init__(self, hang: bool = False) -> None:
        self.bodies: list[dict] = []
        self.gate = threading.Event()
        if not hang:
            self.gate.set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                outer.bodies.append(json.loads(self.rfile.read(length) or b"{}"))
                outer.gate.wait(30)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/"

    def release(self) -> None:
        self.gate.set()

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _notify_lines(state) -> list[dict]:
    """`notify.log`'s outcome lines (`notify-queued` ones, written before a send, left out)."""
    try:
        text = (state / NOTIFY_LOG).read_text()
    except OSError:
        return []
    whole = text[: text.rfind("\n") + 1]  # a line being written is read once it is whole
    lines = [json.loads(line) for line in whole.splitlines() if line.strip()]
    return [line for line in lines if line["outcome"] != "notify-queued"]


def _titles(r: Receiver) -> list[str]:
    return [b.get("title", "") for b in r.bodies]


def _start(state, tmux_server, channels, deliver=None, wall=time.time, tmux_messages=None):
    loop = make_ticker(state, tmux_server, wall, deliver or FakeDelivery(), 0.3)
    loop.notifier = Notifier(state, channels, UTC)
    if tmux_messages is not None:  # what the tick shows on the server's clients instead
        loop.runtime.notify = lambda server, title, body, environ: tmux_messages.append((title, body)) or ""
    return loop, run_in_thread(loop)


def _stop(loop, thread):
    loop.stop()
    thread.join(10)
    assert not thread.is_alive()


def _set_state(server, pane: str, value: str, note: str = "") -> None:
    server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", value)
    if note:
        server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_source", note)


@pytest.mark.shell
def test_each_event_arrives_once_with_its_fields(tmp_path, tmux_server, receiver):
    state = tmp_path / "state"
    now = int(time.time())
    cat = pane_of(tmux_server)
    other = tmux_server.run("split-window", "-d", "-t", "main", "-P", "-F", "#{pane_id}", "cat").strip()
    failing = entry("e001", cat, 1, now)
    absent = dataclasses.replace(entry("e002", "%999", 1, now), if_absent=IfAbsent.NOTIFY)
    orphan = dataclasses.replace(entry("e003", "%998", 3600, now), created_by=CreatedBy(at=now - 8 * 86400))
    write_entries(state, tmux_server.name, [failing, absent, orphan])
    _set_state(tmux_server, cat, f"waiting:{now - 600}")
    _set_state(tmux_server, other, f"limited:{now - 60}", f"manual:{now - 60}:{now + 3600}")
    channel = Channel("1", receiver.url, waiting_after=300)
    loop, thread = _start(state, tmux_server, [channel], FakeDelivery(outcome="failed: paste: boom"))
    try:
        want = {"failed", "absent", "waiting", "limited", "expired"}
        wait_for(lambda: {line["event"] for line in _notify_lines(state) if line["outcome"]} >= want, timeout=20)
        _set_state(tmux_server, other, f"idle:{int(time.time())}")
        wait_for(lambda: any(line["event"] == "limit-reset" for line in _notify_lines(state)), timeout=20)
        ticks = loop.ticks
        wait_for(lambda: loop.ticks >= ticks + 3, timeout=20, message="more ticks")  # nothing told twice
    finally:
        _stop(loop, thread)
    lines = [line for line in _notify_lines(state) if line["outcome"]]
    told = sorted(set(EVENTS) - {"turn-timeout", "budget", "entries-unreadable", "dormant"})  # told in their own tests
    assert sorted(line["event"] for line in lines) == told
    assert all(line["outcome"] == "notified: 1" for line in lines)
    assert len(receiver.bodies) == len(told)
    by_title = " | ".join(_titles(receiver))
    for body in receiver.bodies:
        assert set(body) >= {"title", "message", "type"} and "What to do:" in body["message"]
    assert "delivery failed" in by_title and "target absent" in by_title and "waits for you" in by_title
    assert "limited until" in by_title and "limit reset" in by_title and "entry expired" in by_title
    waiting = next(b for b in receiver.bodies if "waits" in b["title"])
    assert cat in waiting["message"] and tmux_server.name in waiting["message"]


def _log_outcomes(state, slug: str) -> list[str]:
    """The statuses of the server's delivery log, oldest first."""
    from rk.store import delivery_log as logfile

    return [line.outcome.split(":")[0] for line in logfile.read_live(state / f"{slug}.log")]


def _told_once_over_more_ticks(loop, state, receiver, event: str, later=lambda: True) -> dict:
    """Waits for `event`'s outcome line in `notify.log`, then three more ticks (and `later`);
    the one line."""
    wait_for(lambda: [x for x in _notify_lines(state) if x["event"] == event], timeout=40, message=f"{event} told")
    wait_for(lambda: receiver.bodies, timeout=20, message="the receiver got it")
    ticks = loop.ticks
    wait_for(lambda: loop.ticks >= ticks + 3 and later(), timeout=40, message="more ticks")  # nothing told twice
    lines = _notify_lines(state)
    assert [x["event"] for x in lines] == [event], lines
    assert lines[0]["outcome"] == "notified: 1" and len(receiver.bodies) == 1, receiver.bodies
    return lines[0]


@pytest.mark.shell
@pytest.mark.parametrize("on_timeout", ["notify", "interrupt"])
def test_a_turn_timeout_from_a_real_tick_arrives_once_with_its_fields(tmp_path, tmux_server, receiver, on_timeout):
    """tests/test_turn_timeout_tmux.py's fake Claude, busy past the entry's timeout; with
    `notify` (the default) it stays busy, so each later tick looks at the same turn again."""
    from test_turn_timeout_tmux import TIMEOUT, fake_claude, rig

    pane, pid, keys = fake_claude(tmux_server, tmp_path, "working_1")
    t = int(time.time()) - TIMEOUT - 5
    journal = [(t - 300, "active", ""), (t - 100, "idle", "ok"), (t + 1, "active", "")]
    rig(tmux_server, tmp_path, pane, pid, journal, delivered=t)
    state = tmp_path / "state"
    entries = state / f"{tmux_server.name}.yaml"
    entries.write_text(entries.read_text().replace('"on_timeout": "interrupt"', f'"on_timeout": "{on_timeout}"'))
    assert f'"on_timeout": "{on_timeout}"' in entries.read_text()
    channel = Channel("1", receiver.url, on=frozenset({"turn-timeout"}))
    told_by_tmux: list[tuple[str, str]] = []
    loop, thread = _start(state, tmux_server, [channel], tmux_messages=told_by_tmux)
    try:
        line = _told_once_over_more_ticks(loop, state, receiver, "turn-timeout")
    finally:
        _stop(loop, thread)
    slug = tmux_server.name
    # the tick's own step wrote the line (and pressed once), and no later tick wrote it again
    if on_timeout == "interrupt":
        assert _log_outcomes(state, slug) == ["delivered", "turn-timeout", "interrupted"]
        assert keys.read_text() == "Escape\n"
    else:
        assert _log_outcomes(state, slug) == ["delivered", "turn-timeout"] and not keys.exists()
        assert tmux_server.display(pane, "#{@rk_pane_agent_state}").startswith("active:")  # still busy
    assert told_by_tmux == []  # the channel hears it: no tmux message beside
    assert (line["server"], line["pane"], line["entry"]) == (slug, pane, "e1")
    body = receiver.bodies[0]
    assert body["title"] == f"rk: turn timeout ({slug} e1)"
    assert f"The turn entry e1 started in pane {pane} on tmux server {slug!r}" in body["message"]
    assert "still active 1m after the delivery" in body["message"]
    assert f"What to do: Look at the pane: tmux -L {slug} switch-client -t {pane}" in body["message"]


@pytest.mark.shell
def test_a_budget_stop_from_a_real_tick_arrives_once_with_its_fields(tmp_path, tmux_server, receiver):
    """As tests/test_usage.py's budgeted entry: a real Claude transcript on the pane, the
    day's spend at the budget; the ticker's wall clock starts two minutes after the delivery
    and runs 200 times fast (18:16 UTC on: hours from midnight), so the later ticks pass
    several of the entry's minutes, each a fire the budget must keep silent."""
    from test_usage import FIRST, _claude_pane, _delivered

    pane, delivered_at, state = _claude_pane(tmux_server, tmp_path)
    slug = tmux_server.name
    (state / f"{slug}.yaml").write_text(
        "entries:\n"
        f"- {{id: b1, schedule: {{kind: every, interval: 1m}}, target: {{kind: pane, pane: '{pane}'}},"
        f" payload: first prompt from rk, budget: {FIRST.total}/day, any_program: true,"
        f" created_by: {{at: {delivered_at - 60}}}}}\n"
    )
    (state / f"{slug}.log").write_text(_delivered(delivered_at, "b1", pane))
    origin = time.monotonic()
    deliver = FakeDelivery()
    wall = lambda: delivered_at + 120 + 200 * (time.monotonic() - origin)  # noqa: E731
    loop, thread = _start(state, tmux_server, [Channel("1", receiver.url, on=frozenset({"budget"}))], deliver, wall)
    try:
        skipped = wall()
        line = _told_once_over_more_ticks(loop, state, receiver, "budget", lambda: wall() > skipped + 240)
    finally:
        _stop(loop, thread)
    assert _log_outcomes(state, slug) == ["delivered", "skipped-budget"] and deliver.calls == []
    assert (line["server"], line["entry"]) == (slug, "b1")
    body = receiver.bodies[0]
    assert body["title"] == f"rk: budget reached ({slug} b1)"
    assert f"Entry b1 (typing into pane {pane} on tmux server {slug!r}) spent its token budget" in body["message"]
    assert line["pane"] == pane
    assert f"What to do: It resumes after local midnight; see the spend: rk -L {slug} cron usage b1" in body["message"]


@pytest.mark.shell
def test_a_hanging_receiver_never_delays_the_tick(tmp_path, tmux_server):
    hanging = Receiver(hang=True)
    state = tmp_path / "state"
    now = int(time.time())
    cat = pane_of(tmux_server)
    write_entries(state, tmux_server.name, [entry("e001", cat, 1, now)])
    _set_state(tmux_server, cat, f"waiting:{now - 600}")
    deliver = FakeDelivery()
    channel = Channel("slow", hanging.url, on=frozenset({"waiting"}), timeout=1)
    loop, thread = _start(state, tmux_server, [channel], deliver)
    try:
        wait_for(lambda: hanging.bodies, timeout=20, message="the receiver got the request")
        ticks, sent = loop.ticks, len(deliver.calls)
        # the receiver still holds its answer, and the ticker goes on ticking and delivering
        wait_for(lambda: loop.ticks >= ticks + 2, timeout=20, message="ticks while the receiver hangs")
        wait_for(lambda: len(deliver.calls) > sent, timeout=20, message="a delivery while the receiver hangs")
        log = state / f"{tmux_server.name}.log"
        wait_for(lambda: log.read_text().count('"delivered"') > sent, timeout=20, message="that delivery logged")
        assert not hanging.gate.is_set()
        failed = wait_for(
            lambda: [x for x in _notify_lines(state) if x["outcome"].startswith("notify-failed")], timeout=20
        )
        assert not hanging.gate.is_set()  # logged before the receiver answered
        assert failed[0]["event"] == "waiting"
    finally:
        _stop(loop, thread)
        hanging.close()


@pytest.mark.shell
def test_a_refusing_receiver_is_logged_and_another_channel_still_gets_it(tmp_path, tmux_server, receiver):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"json://127.0.0.1:{s.getsockname()[1]}/"  # bound, never listening: refused
        state = tmp_path / "state"
        now = int(time.time())
        cat = pane_of(tmux_server)
        write_entries(state, tmux_server.name, [entry("e001", cat, 3600, now)])
        _set_state(tmux_server, cat, f"waiting:{now - 600}")
        channels = [Channel("dead", dead, timeout=1), Channel("live", receiver.url)]
        loop, thread = _start(state, tmux_server, channels)
        try:
            lines = wait_for(
                lambda: (
                    [x for x in _notify_lines(state) if x["outcome"]]
                    if len([x for x in _notify_lines(state) if x["outcome"]]) >= 2
                    else []
                ),
                timeout=20,
            )
        finally:
            _stop(loop, thread)
    outcomes = {x["channel"]: x["outcome"] for x in lines}
    assert outcomes["live"] == "notified: live"
    assert outcomes["dead"].startswith("notify-failed: ")
    assert len(receiver.bodies) == 1, receiver.bodies


@pytest.mark.shell
def test_debounce_and_quiet_hours_hold_across_a_ticker_restart(tmp_path, tmux_server, receiver):
    state = tmp_path / "state"
    now = int(time.time())
    cat = pane_of(tmux_server)
    write_entries(state, tmux_server.name, [entry("e001", cat, 3600, now)])
    _set_state(tmux_server, cat, f"waiting:{now - 600}")
    loud = Channel("1", receiver.url)
    loop, thread = _start(state, tmux_server, [loud])
    try:
        wait_for(lambda: receiver.bodies, timeout=20)
        wait_for(lambda: _notify_lines(state), timeout=20, message="the send logged")
    finally:
        _stop(loop, thread)
    loop, thread = _start(state, tmux_server, [loud])  # a new ticker: the memory is notify.log
    try:
        wait_for(lambda: loop.ticks >= 3, timeout=20)
    finally:
        _stop(loop, thread)
    assert len(receiver.bodies) == 1

    # quiet all day: held (not sent); a restart later, outside the range: one summary
    _set_state(tmux_server, cat, f"waiting:{now - 400}")
    quiet = Channel("1", receiver.url, quiet=ActiveHours.parse("00:00-24:00"), debounce=0)
    loop, thread = _start(state, tmux_server, [quiet])
    try:
        wait_for(lambda: any(x["outcome"] == "notify-held: quiet" for x in _notify_lines(state)), timeout=20)
    finally:
        _stop(loop, thread)
    assert len(receiver.bodies) == 1
    assert read_memory(state / NOTIFY_LOG).held["1"]
    awake = Channel("1", receiver.url, debounce=0)
    loop, thread = _start(state, tmux_server, [awake])
    try:
        wait_for(lambda: len(receiver.bodies) >= 2, timeout=20)
        ticks = loop.ticks
        wait_for(lambda: loop.ticks >= ticks + 3, timeout=20)
    finally:
        _stop(loop, thread)
    assert len(receiver.bodies) == 2 and "quiet hours" in receiver.bodies[1]["title"]
    assert not read_memory(state / NOTIFY_LOG).held.get("1")


@pytest.mark.shell
def test_apprise_is_imported_only_on_the_send_path():
    import subprocess
    import sys

    probe = (
        "import sys, rk.engine.ticker, rk.cli, rk.agent.hook, rk.channels.statusline; print('apprise' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- rk notify test, rk doctor


def _cli_env(tmp_path, config: str) -> dict[str, str]:
    import os

    home = tmp_path / "home"
    (home / ".config" / "rk").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "rk" / "config.yaml").write_text(config)
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW", "DBUS_SESSION_BUS_ADDRESS")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), RK_STATE_DIR=str(tmp_path / "state"))
    return env


def _rk(args, env):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "rk", *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.shell
def test_notify_test_sends_through_each_channel_and_says_what_happened(tmp_path, receiver):
    config = f'notify:\n  - url: "{receiver.url}"\n  - url: "json://127.0.0.1:1/"\n    timeout: 1s\n  - url: "x"\n'
    env = _cli_env(tmp_path, config)
    proc = _rk(["notify", "test"], env)
    assert proc.returncode == 1, proc.stderr
    assert "1 (json): sent" in proc.stdout and "2 (json): FAILED: " in proc.stdout
    assert "unusable: " in proc.stdout and "notify item 3" in proc.stdout and "Traceback" not in proc.stderr
    assert len(receiver.bodies) == 1 and receiver.bodies[0]["title"] == "rk: test notification"
    one = _rk(["notify", "test", "--url", receiver.url], env)
    assert one.returncode == 0 and "url (json): sent" in one.stdout and len(receiver.bodies) == 2
    bad = _rk(["notify", "test", "--url", "nope"], env)
    assert bad.returncode == 2 and "Apprise URL" in bad.stderr


@pytest.mark.shell
def test_doctor_lists_channels_and_whether_each_is_reachable(tmp_path, receiver):
    config = f'notify:\n  - url: "{receiver.url}"\n  - url: "json://127.0.0.1:1/"\n  - url: "dbus://"\n'
    out = json.loads(_rk(["doctor", "--json"], _cli_env(tmp_path, config)).stdout)["result"]
    checks = {c["name"]: c for c in out if c["name"].startswith("notify")}
    assert checks["notify 1 (json)"]["level"] == "ok"
    assert checks["notify 2 (json)"]["level"] == "warn" and "127.0.0.1:1" in checks["notify 2 (json)"]["detail"]
    assert checks["notify 3 (dbus)"]["level"] == "warn" and "DBus" in checks["notify 3 (dbus)"]["detail"]
    assert receiver.bodies == []  # doctor sends nothing


@pytest.mark.shell
def test_the_ticker_starts_the_good_channels_and_logs_the_bad_one(tmp_path, caplog):
    from rk.channels import notify

    env = _cli_env(
        tmp_path, 'notify:\n  - url: "json://127.0.0.1:1/"\n  - url: "json://h/"\n    quiet: "25:00-07:00"\n'
    )
    (tmp_path / "state").mkdir(mode=0o700)
    with caplog.at_level("WARNING", logger="rk.channels.notify"):
        notifier = notify.start(tmp_path / "state", env, UTC)
    assert notifier is not None and [c.name for c in notifier.channels] == ["1"]
    assert "notify item 2: quiet" in caplog.text and "that channel is off" in caplog.text
    notifier.stop()
    assert notify.start(tmp_path / "state", _cli_env(tmp_path / "b", "max_entries: 5\n"), UTC) is None


@pytest.mark.shell
def test_a_long_notify_log_is_trimmed_to_its_newest_lines(tmp_path):
    from rk.channels import notify

    path = tmp_path / NOTIFY_LOG
    ch = _channel()
    old = [
        NoticeLine.of(NOW + i, ch, Event("failed", "work", "%1", "e001", NOW + i), "notified: 1") for i in range(2000)
    ]
    notify.append(path, old)
    notify.trim(path, keep=20_000)
    lines = path.read_text().splitlines()
    assert 0 < len(lines) < 2000 and NoticeLine.parse(lines[0]) is not None  # whole lines only
    assert NoticeLine.parse(lines[-1]) == old[-1]


@pytest.fixture
def session_bus(tmp_path):
    """A private DBus session bus (its service files in tmp_path), killed at the end."""
    import shutil
    import subprocess

    if shutil.which("dbus-daemon") is None:
        pytest.fail("dbus-daemon is not installed: the desktop check needs it to be tested")
    services = tmp_path / "data" / "dbus-1" / "services"
    services.mkdir(parents=True)
    socket_path = tmp_path / "bus"
    env = {"PATH": "/usr/bin:/bin", "XDG_DATA_DIRS": str(tmp_path / "data")}
    argv = ["dbus-daemon", "--session", f"--address=unix:path={socket_path}", "--nofork"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(socket_path.exists, timeout=10, message="the bus socket")
        yield {"DBUS_SESSION_BUS_ADDRESS": f"unix:path={socket_path}", "PATH": "/usr/bin:/bin"}, services
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.shell
def test_the_desktop_check_asks_the_bus_for_a_notification_daemon(session_bus):
    from rk.channels.notify import NOTIFICATIONS_NAME, notification_daemon

    environ, services = session_bus
    ok, why = notification_daemon(environ)
    assert not ok and "no notification daemon" in why, why  # a bus, but nobody to show it
    (services / f"{NOTIFICATIONS_NAME}.service").write_text(
        f"[D-BUS Service]\nName={NOTIFICATIONS_NAME}\nExec=/bin/false\n"
    )
    said = wait_for(
        lambda: (told := notification_daemon(environ))[0] and told, timeout=10, message="the bus reading its services"
    )
    assert "starts on demand" in said[1], said


@pytest.mark.shell
def test_the_desktop_check_reads_an_owned_name_and_a_bus_that_does_not_answer(tmp_path):
    from rk.channels.notify import notification_daemon

    shim = tmp_path / "dbus-send"
    shim.write_text('#!/bin/sh\ncase "$*" in *NameHasOwner*) echo "   boolean true";; esac\n')
    shim.chmod(0o755)
    ok, why = notification_daemon({"PATH": f"{tmp_path}:/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": "x"})
    assert ok and "owns org.freedesktop.Notifications" in why, why
    shim.write_text("#!/bin/sh\nexit 1\n")
    assert notification_daemon({"PATH": f"{tmp_path}:/usr/bin:/bin"}) == (False, "the DBus session does not answer")

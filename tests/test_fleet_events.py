"""`rk events -f --host`: the resume rules (nothing lost, nothing twice across reconnections),
the words it reads, and the stream over real ssh (tests/sshd.py): a line written on the
host seen here within a bound, labelled with the host; a killed link said and resumed;
`--host all` interleaving every host and this one; Ctrl-C ending it with exit 0."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import default_sigint, run_rk, wait_for

from rk.channels.events_follow import EventsQuery, RequestError, query_of
from rk.channels.host_events import valid
from rk.cli.environment import CliError
from rk.cli.events_hosts import FollowArgs, event_of, follows, parse
from rk.core.fleet.resume import MARGIN, Seen
from rk.core.log.events import Event
from rk.store import state_journal

NOW = 1_800_000_000


def ev(ts: int, pane: str = "%1", to: str = "idle", by: str | None = None) -> dict:
    return Event(ts, "state", pane, "active", to, "ok", "hook", "claude", by=by or "").to_dict()


# -- resuming


def test_a_reconnection_asks_from_before_the_newest_and_passes_over_what_was_shown():
    seen = Seen()
    assert seen.connect() is None  # nothing shown yet: the whole history
    first = [ev(NOW), ev(NOW + 5, "%2"), ev(NOW + 5, "%2")]  # two alike: both shown
    assert [seen.admit(e) for e in first] == [True, True, True]
    assert seen.connect() == NOW + 5 - MARGIN
    late = ev(NOW + 3, "%3")  # came after the link dropped, older than the newest shown
    told_again = [ev(NOW, by="rk"), late, ev(NOW + 5, "%2"), ev(NOW + 5, "%2"), ev(NOW + 6)]
    assert [seen.admit(e) for e in told_again] == [False, True, False, False, True]
    assert seen.connect() == NOW + 6 - MARGIN
    assert [seen.admit(e) for e in [ev(NOW), late, ev(NOW + 5, "%2"), ev(NOW + 5, "%2"), ev(NOW + 6), ev(NOW + 6)]] == [
        False,
        False,
        False,
        False,
        False,
        True,  # a second one alike, new
    ]


def test_the_users_since_bounds_the_resume_and_old_events_are_forgotten():
    seen = Seen(since=NOW + 100)
    assert seen.connect() == NOW + 100
    seen.admit(ev(NOW + 110))
    assert seen.connect() == NOW + 100  # not before what the user asked for
    seen.admit(ev(NOW + 110 + 2 * MARGIN))
    assert len(seen.window) == 1  # the first one is past the window: never told again


# -- the words


def test_the_words_it_reads_and_refuses():
    assert (
        follows(["events", "-f"]) and follows(["events", "--follow", "--json"]) and not follows(["events", "--", "-f"])
    )
    got = parse(["events", "-f", "--since", "1h", "--pane=%3", "-t", "%4", "--json", "-L", "work"])
    assert got == FollowArgs("1h", ("%3", "%4"), True, "work")
    for bad in (
        ["events", "-f", "--bogus"],
        ["events", "-f", "--since"],
        ["events", "-f", "--json=1"],
        ["events", "x"],
    ):
        with pytest.raises(CliError):
            parse(bad)


def test_a_follow_request_is_checked_at_the_far_end():
    assert query_of({"follow": "events"}) == EventsQuery()
    assert query_of(EventsQuery("work", NOW, frozenset({"%3"})).request()) == EventsQuery(
        "work", NOW, frozenset({"%3"})
    )
    for bad in ({"server": "../x"}, {"since": "1h"}, {"since": -1}, {"panes": ["x"]}, {"panes": "%1"}, {"since": True}):
        with pytest.raises(RequestError):
            query_of({"follow": "events", **bad})


def test_a_streamed_event_is_shown_only_in_its_shape():
    assert valid(ev(NOW)) and event_of(ev(NOW, by="rk")) == Event(
        NOW, "state", "%1", "active", "idle", "ok", "hook", "claude", by="rk"
    )
    log = Event(NOW, "log", "%1", entry="e1", reason="due", outcome="delivered")
    assert event_of(log.to_dict()) == log
    assert not valid({**ev(NOW), "ts": "1"}) and not valid({**ev(NOW), "kind": "x"}) and not valid({**ev(NOW), "to": 3})


def test_the_far_end_streams_history_then_live_with_heartbeats_and_ends_when_the_reader_goes(tmp_path, monkeypatch):
    import os

    from rk.channels import events_follow

    monkeypatch.setattr(events_follow, "HEARTBEAT", 0.2)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    change(state, "%1", "active")
    r, w = os.pipe()
    out = os.fdopen(w, "wb")
    server = threading.Thread(target=events_follow.serve, args=(str(state), EventsQuery(), out), daemon=True)
    server.start()
    reader = Lines(r)
    first = [reader.next() for _ in range(2)]
    assert "alive" in first[0] and first[1]["event"]["to"] == "active"
    change(state, "%1", "idle")
    later = [reader.next() for _ in range(3)]
    assert any(m.get("event", {}).get("to") == "idle" for m in later)
    assert any("alive" in m for m in later)  # quiet: a heartbeat
    os.close(r)
    server.join(timeout=10)
    assert not server.is_alive()  # the write that failed ended it


class Lines:
    """JSON lines read from a descriptor, each within a bound (a silent end fails, never hangs)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf = fd, b""

    def next(self, timeout: float = 10.0) -> dict:
        import os
        import select

        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no line within {timeout} s"
            self.buf += os.read(self.fd, 65536)
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


# -- over real ssh


class Stream:
    """`rk events …` running, its lines gathered as they come."""

    def __init__(self, args: list[str], env: dict) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rk", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_sigint,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        for pipe, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=_gather, args=(pipe, into), daemon=True).start()

    def has(self, text: str, count: int = 1) -> bool:
        return sum(text in line for line in self.out) >= count

    def said(self, text: str) -> bool:
        return any(text in line for line in self.err)

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=30)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def _gather(pipe, into: list[str]) -> None:
    for line in pipe:
        into.append(line.rstrip("\n"))


def change(state: Path, pane: str, to: str) -> None:
    state_journal.record({"RK_STATE_DIR": str(state)}, "default", int(time.time()), pane, to, "", "hook", "claude")


@pytest.mark.shell
def test_a_hosts_events_come_labelled_within_a_bound_and_a_killed_link_resumes(world, client):
    b = world.host("b")
    assert run_rk(["host", "add", "b", "b"], client).returncode == 0
    change(b.state, "%1", "active")  # history, shown first
    stream = Stream(["events", "-f", "--host", "b"], client)
    try:
        wait_for(lambda: stream.has("%1 state - -> active"), timeout=60, message="the history")
        assert stream.out[0].startswith("b ")
        started = time.monotonic()
        change(b.state, "%1", "idle")
        wait_for(lambda: stream.has("%1 state active -> idle"), timeout=30, interval=0.01, message="a new line")
        print(f"a line written on b shown here after {time.monotonic() - started:.2f} s")
        for i in range(3):
            assert b.drop_links() >= 1
            wait_for(lambda: stream.said("b: link lost"), timeout=30, message="the drop said")
            wait_for(lambda i=i: sum("following again" in e for e in stream.err) >= i + 1, timeout=60, message="back")
            change(b.state, f"%{i + 2}", "waiting")
            wait_for(
                lambda i=i: stream.has(f"%{i + 2} state - -> waiting"), timeout=30, message=f"line {i} after a kill"
            )
        time.sleep(1)  # nothing told twice (a double would show by now)
        assert len(stream.out) == 5 and all(line.startswith("b ") for line in stream.out), stream.out
        assert stream.interrupt() == 0
    finally:
        stream.close()
    assert not any("Traceback" in line for line in stream.err), stream.err


@pytest.mark.shell
def test_lines_written_all_along_while_links_are_killed_are_each_shown_once(world, client):
    b = world.host("b")
    assert run_rk(["host", "add", "b", "b"], client).returncode == 0
    stream = Stream(["events", "-f", "--host", "b", "--json"], client)
    done, written = threading.Event(), []

    def writer() -> None:
        while not done.is_set():
            pane = f"%{1000 + len(written)}"  # a pane of its own: each line an event, told apart
            state_journal.record({"RK_STATE_DIR": str(b.state)}, "default", int(time.time()), pane, "idle", "ok")
            written.append(pane)
            time.sleep(0.02)

    thread = threading.Thread(target=writer)
    try:
        thread.start()
        for k in range(10):
            wait_for(
                lambda k=k: len(stream.out) > 0 and sum("following again" in e for e in stream.err) >= k, timeout=60
            )
            time.sleep(0.2)  # some lines on this connection
            assert b.drop_links() >= 1
        wait_for(lambda: sum("following again" in e for e in stream.err) >= 10, timeout=60, message="the last link")
        done.set()
        thread.join()
        wait_for(lambda: len(stream.out) >= len(written), timeout=60, message="every line shown")
        time.sleep(1)  # nothing more may come (a double would show here)
    finally:
        done.set()
        stream.close()
    shown = [json.loads(line)["pane"] for line in stream.out]
    assert sorted(shown) == sorted(written) and len(shown) == len(set(shown)), (len(written), len(shown))
    assert len(written) > 100


@pytest.mark.shell
def test_all_hosts_and_this_one_interleaved_with_the_host_in_json(world, client):
    a, b = world.host("a"), world.host("b")
    for name in ("a", "b"):
        assert run_rk(["host", "add", name, name], client).returncode == 0
    here = Path(client["RK_STATE_DIR"])
    here.mkdir(mode=0o700, exist_ok=True)
    env = {k: v for k, v in client.items() if k not in ("TMUX", "TMUX_PANE")}
    # written once it runs: in each host's history (--since 1h) or live, whenever its link comes up
    stream = Stream(["events", "-f", "--host", "all", "--json", "--since", "1h"], env)
    try:
        for state, pane in ((a.state, "%5"), (here, "%6"), (b.state, "%7")):
            change(state, pane, "active")
        wait_for(lambda: len(stream.out) >= 3, timeout=60, message="three events")
        got = sorted((d["host"], d["pane"], d["to"]) for d in map(json.loads, stream.out))
        assert got == [("a", "%5", "active"), ("b", "%7", "active"), ("local", "%6", "active")]
        assert stream.interrupt() == 0
    finally:
        stream.close()


@pytest.mark.shell
def test_a_host_down_is_said_and_tried_again_and_ctrl_c_ends_it(world, client):
    b = world.host("b")
    assert run_rk(["host", "add", "b", "b"], client).returncode == 0
    b.stop()
    stream = Stream(["events", "-f", "--host", "b"], client)
    try:
        wait_for(lambda: sum("b: link lost" in e for e in stream.err) >= 2, timeout=30, message="two tries said")
        assert "trying again in" in stream.err[0] and stream.proc.poll() is None
        b.start()
        change(b.state, "%1", "idle")
        wait_for(lambda: stream.has("%1 state - -> idle"), timeout=60, message="the host back")
        assert stream.interrupt() == 0
    finally:
        stream.close()
    assert not any("Traceback" in line for line in stream.err), stream.err

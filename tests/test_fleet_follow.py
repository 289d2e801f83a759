"""Following another host's state journal: marks per line, the mirror, and the follower
over real ssh with its link killed again and again (nothing lost, nothing twice)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from conftest import wait_for

from rk.core.fleet.hosts import Host
from rk.core.log import states
from rk.engine.follow import Follower
from rk.store import state_journal
from rk.store.journal_feed import feed_of
from rk.store.mirror import Mirror, mirror_path, read_mirror, remote_lines, resume_mark


def write(state: Path, n: int, cap: int = state_journal.JOURNAL_CAP, first: int = 0) -> None:
    env = {"RK_STATE_DIR": str(state)}
    for i in range(first, first + n):
        assert state_journal.append(env, "default", states.render(1_000_000 + i, f"%{i % 7}", "idle", "ok"), cap)


def test_each_line_comes_with_the_mark_to_resume_after_it(tmp_path):
    write(tmp_path, 5)
    feed = feed_of(str(tmp_path), "default")
    got = feed.poll_marked()
    assert [f["ts"] for f, _ in got] == list(range(1_000_000, 1_000_005))
    again = feed_of(str(tmp_path), "default", got[2][1]).poll_marked()
    assert [f["ts"] for f, _ in again] == [1_000_003, 1_000_004]
    write(tmp_path, 2, first=5)
    assert [f["ts"] for f, _ in feed.poll_marked()] == [1_000_005, 1_000_006]


def test_a_mark_in_the_renamed_journal_reads_its_rest_then_the_new_one(tmp_path):
    line = len(states.render(1_000_000, "%1", "idle", "ok"))
    write(tmp_path, 10, cap=line * 10)
    marks = feed_of(str(tmp_path), "default").poll_marked()
    write(tmp_path, 4, cap=line * 10, first=10)  # the 11th line rotates: 0-9 in .1
    resumed = feed_of(str(tmp_path), "default", marks[6][1])
    assert not resumed.gap
    assert [f["ts"] - 1_000_000 for f, _ in resumed.poll_marked()] == [7, 8, 9, 10, 11, 12, 13]


def test_a_mark_rotated_away_twice_is_said_as_a_gap(tmp_path):
    line = len(states.render(1_000_000, "%1", "idle", "ok"))
    write(tmp_path, 3, cap=line * 3)
    mark = feed_of(str(tmp_path), "default").poll_marked()[0][1]
    write(tmp_path, 7, cap=line * 3, first=3)
    feed = feed_of(str(tmp_path), "default", mark)
    assert feed.gap
    assert [f["ts"] - 1_000_000 for f, _ in feed.poll_marked()][-1] == 9


def test_the_mirror_resumes_from_its_newest_whole_line_and_cuts_a_torn_one(tmp_path):
    m = Mirror(str(tmp_path), "b", "default")
    line = {"ts": 1, "pane": "%1", "to": "idle", "end": "ok", "source": "hook", "agent": "claude"}
    assert m.append([(line, (5, 9, 100)), ({**line, "ts": 2}, (5, 9, 200))]) == 2
    assert resume_mark(str(tmp_path), "b", "default") == (5, 9, 200)
    path = mirror_path(str(tmp_path), "b", "default")
    with open(path, "ab") as f:
        f.write(b'{"ts":3,"pane":"%1","to":"act')  # a crash mid-write
    assert resume_mark(str(tmp_path), "b", "default") == (5, 9, 200)
    Mirror(str(tmp_path), "b", "default").append([({**line, "ts": 3}, (5, 9, 300))])
    assert [(x["ts"], x["at"]) for x in read_mirror(str(tmp_path), "b", "default")] == [
        (1, [5, 9, 100]),
        (2, [5, 9, 200]),
        (3, [5, 9, 300]),
    ]
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


def test_the_far_ends_stamps_are_mirrored_with_each_line(tmp_path):
    m = Mirror(str(tmp_path), "b", "default")
    line = {"ts": 1, "pane": "%1", "to": "idle", "end": "ok", "source": "hook", "agent": "claude"}
    odd = 'a "quoted"\nrole'
    m.append(
        [({**line, "by": "rk", "role": "worker", "window": "w 1"}, (5, 9, 100)), ({**line, "role": odd}, (5, 9, 200))]
    )
    got = remote_lines(str(tmp_path), ["role:worker@b"])["b/default"]
    assert [(x.by, x.role, x.window, x.at) for x in got] == [
        ("rk", "worker", "w 1", (5, 9, 100)),
        ("", 'a "quoted" role', "", (5, 9, 200)),  # one line, whatever the name holds
    ]
    assert resume_mark(str(tmp_path), "b", "default") == (5, 9, 200)


@pytest.mark.shell
def test_twenty_killed_links_lose_and_double_no_line(world, tmp_path):
    """Lines are written on host b all along while its links are killed twenty times,
    each time once the far end has answered on the new one: every line is mirrored
    here once, in order."""
    b = world.host("b")
    env = world.client_env(dict(os.environ))
    state = str(tmp_path / "state")
    os.makedirs(state, mode=0o700)
    follower = Follower(Host("b", "b"), "default", state, env).start()
    kills, done, written = 20, threading.Event(), []
    writer = threading.Thread(target=_paced_writer, args=(b.state, done, written))
    try:
        wait_for(lambda: follower.ups == 1, timeout=30, message="the first connection")
        writer.start()
        for k in range(kills):
            wait_for(lambda k=k: follower.ups == k + 1, timeout=60, message=f"connection {k + 1} answered")
            time.sleep(0.05)  # let some lines flow on this connection
            assert b.drop_links() >= 1
        wait_for(lambda: follower.ups == kills + 1, timeout=60, message="the connection after the last kill")
        done.set()
        writer.join()
        wait_for(lambda: len(read_mirror(state, "b", "default")) >= len(written), timeout=60, message="all mirrored")
    finally:
        done.set()
        follower.stop()
    mirrored = [x["ts"] - 1_000_000 for x in read_mirror(state, "b", "default")]
    assert mirrored == list(range(len(written))), (len(written), len(mirrored), len(set(mirrored)))
    assert len(written) > 100


def _paced_writer(state: Path, done: threading.Event, written: list[int]) -> None:
    while not done.is_set():
        write(state, 1, first=len(written))
        written.append(len(written))
        time.sleep(0.01)

"""Claude Code's session registry: the pure verdict, and each check a record must pass
before it counts as a pane's (`rk.store.claude_sessions`), with record files in a tmp
directory and real processes standing in for `claude`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import wait_for

from rk.core.pane.facts import PaneFact, PaneKind
from rk.core.pane.look import STALE_AFTER, asks_registry, needs_look
from rk.core.pane.registry import Record, Verdict, ends_turn, names_pane, parse_record, verdict
from rk.core.pane.state import AgentState
from rk.store import claude_sessions
from rk.store.claude_sessions import Sessions, config_home, proc_start, verdict_for

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "claude_sessions" / "2.1.332-busy.json"
T = 1_796_567_276  # a second the fixture's status was written in


def record(status: str = "idle", at: float = T + 0.5, waiting_for: str = "", tmux: str = "") -> Record:
    return Record(pid=42, proc_start="1", status=status, updated_at=at, tmux=tmux, waiting_for=waiting_for)


# -- the pure verdict -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "state"),
    [("busy", "active"), ("idle", "idle"), ("waiting", "waiting"), ("shell", "idle")],
)
def test_each_status_implies_its_state(status, state):
    assert verdict(record(status), "active", T) == Verdict(AgentState(state), T + 0.5)


def test_waiting_carries_what_it_waits_for():
    found = verdict(record("waiting", waiting_for="permission prompt"), "active", T)
    assert found == Verdict(AgentState.WAITING, T + 0.5, "permission prompt")
    assert verdict(record("idle", waiting_for="x"), "active", T).detail == ""


def test_an_unknown_status_implies_nothing():
    assert verdict(record("napping"), "active", T) is None
    assert verdict(None, "active", T) is None


def test_a_status_older_than_the_state_rk_holds_is_stale():
    assert verdict(record("idle", at=T - 0.1), "active", T) is None
    assert verdict(record("idle", at=T), "active", T) is not None  # the same second: the screen decides


def test_the_verdict_never_ends_a_limit():
    """A usage limit leaves Claude `idle` (or in its limit menu, `waiting`) while it waits."""
    assert verdict(record("idle"), "limited", T) is None
    assert verdict(record("shell"), "limited", T) is None
    assert verdict(record("waiting"), "limited", T) is None
    assert verdict(record("busy"), "limited", T) == Verdict(AgentState.ACTIVE, T + 0.5)


def test_only_rest_on_a_busy_pane_ends_a_turn():
    idle = Verdict(AgentState.IDLE, T)
    assert ends_turn(idle, "active") and ends_turn(idle, "waiting")
    assert not ends_turn(idle, "idle") and not ends_turn(None, "active")
    assert not ends_turn(Verdict(AgentState.WAITING, T), "active")


def test_the_real_files_parse():
    """2.1.332's (busy, with the pane in `tmux`) and 2.1.197's (idle, no `tmux`), as written."""
    doc = json.loads(FIXTURE.read_text())
    found = parse_record(doc, doc["pid"])
    assert found is not None
    assert (found.status, found.tmux, found.updated_at) == ("busy", "agents:@0.%0", doc["statusUpdatedAt"] / 1000)
    assert found.proc_start == "3407531" and found.session_id == doc["sessionId"]
    old = json.loads((FIXTURE.parent / "2.1.197-idle.json").read_text())
    found = parse_record(old, old["pid"])
    assert found is not None and (found.status, found.tmux) == ("idle", "")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"kind": "bg"}, "not interactive"),
        ({"status": None}, "no status yet"),
        ({"statusUpdatedAt": None}, "no time"),
        ({"statusUpdatedAt": True}, "a boolean is not a time"),
        ({"pid": 7}, "the pid is not the file's"),
    ],
)
def test_a_record_rk_cannot_use_parses_to_none(change, why):
    doc = json.loads(FIXTURE.read_text()) | change
    assert parse_record({k: v for k, v in doc.items() if v is not None}, 20926) is None, why
    assert parse_record([doc], 20926) is None


@pytest.mark.parametrize("at", [float("inf"), float("nan"), 10**400, -5, "1796567276714"])
def test_a_time_that_is_no_finite_number_parses_to_none(at):
    doc = json.loads(FIXTURE.read_text()) | {"statusUpdatedAt": at}
    assert parse_record(json.loads(json.dumps(doc)), 20926) is None


def test_a_tmux_field_must_name_the_pane():
    assert names_pane("", "%3")  # 2.1.197 writes none
    assert names_pane("main:@1.%3", "%3")
    assert not names_pane("main:@1.%13", "%3")
    assert not names_pane("main:@1.%3", "")


def pane(state: str = "active", epoch: int = T, **kw) -> PaneFact:
    fields = {"kind": PaneKind.AGENT, "agent": "claude", "pane_pid": 100} | kw
    return PaneFact("%3", state=state, epoch=epoch, **fields)


def test_a_busy_claude_pane_asks_the_registry_before_it_is_stale():
    assert asks_registry(pane(), T + 1)
    assert not asks_registry(pane(), T + STALE_AFTER + 1)  # the screen is looked at anyway
    assert not asks_registry(pane("idle"), T + 1)
    assert not asks_registry(pane(agent="codex"), T + 1)
    assert not asks_registry(pane(dead=True), T + 1)


def test_a_turn_end_in_the_registry_makes_the_tick_look():
    assert not needs_look(pane(), T + 1)
    assert needs_look(pane(), T + 1, Verdict(AgentState.IDLE, T + 0.5))
    assert not needs_look(pane(), T + 1, Verdict(AgentState.ACTIVE, T + 0.5))
    assert not needs_look(pane("limited", reset_at=T + 900), T + 1, Verdict(AgentState.IDLE, T + 0.5))


# -- the checks, with real processes ------------------------------------------------------


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def write(home: Path, pid: int, **fields) -> Path:
    doc = json.loads(FIXTURE.read_text())
    doc.pop("tmux")
    doc |= {"pid": pid, "procStart": proc_start(pid)} | fields
    doc = {k: v for k, v in doc.items() if v is not None}
    sessions = home / "sessions"
    sessions.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = sessions / f"{pid}.json"
    path.write_text(json.dumps(doc))
    return path


ME = os.getpid()  # the "pane's process": every child of this test is in its tree


def test_a_live_child_with_its_own_start_is_the_panes_record(tmp_path, procs):
    claude = procs()
    write(tmp_path, claude.pid, tmux="main:@0.%3")
    found = Sessions().status_for(ME, "%3", str(tmp_path))
    assert found is not None and (found.pid, found.status) == (claude.pid, "busy")


def test_a_dead_pid_is_no_record_and_its_file_is_not_even_read(tmp_path, procs, monkeypatch):
    """Crashed sessions' files pile up where nothing sweeps them (WSL, containers): each
    costs one look at /proc, not a read."""
    claude = procs()
    write(tmp_path, claude.pid)
    claude.kill()
    claude.wait()
    reads: list[str] = []
    real_read = claude_sessions._read
    monkeypatch.setattr(claude_sessions, "_read", lambda fd, name: reads.append(name) or real_read(fd, name))
    assert Sessions().status_for(ME, "%3", str(tmp_path)) is None
    assert reads == []


def test_a_reused_pid_with_another_start_is_no_record(tmp_path, procs):
    claude = procs()
    write(tmp_path, claude.pid, procStart=str(int(proc_start(claude.pid)) - 100))
    assert Sessions().status_for(ME, "%3", str(tmp_path)) is None


def test_a_pid_outside_the_panes_tree_is_no_record(tmp_path, procs):
    claude, other = procs(), procs()
    write(tmp_path, claude.pid, tmux="main:@0.%3")
    assert Sessions().status_for(other.pid, "%3", str(tmp_path)) is None


def test_a_tmux_field_naming_another_pane_is_no_record(tmp_path, procs):
    claude = procs()
    write(tmp_path, claude.pid, tmux="main:@0.%33")
    assert Sessions().status_for(ME, "%3", str(tmp_path)) is None


def test_a_record_without_status_is_none_until_it_has_one(tmp_path, procs):
    claude = procs()
    write(tmp_path, claude.pid, status=None, statusUpdatedAt=None, updatedAt=None)
    reader = Sessions()
    assert reader.status_for(ME, "%3", str(tmp_path)) is None
    write(tmp_path, claude.pid, status="idle")  # the screen came up: the same file, now with a status
    assert reader.status_for(ME, "%3", str(tmp_path)).status == "idle"


def test_a_symlinked_file_is_no_record(tmp_path, procs):
    claude = procs()
    real = write(tmp_path, claude.pid)
    elsewhere = tmp_path / "elsewhere.json"
    real.rename(elsewhere)
    real.symlink_to(elsewhere)
    assert Sessions().status_for(ME, "%3", str(tmp_path)) is None


def test_neither_the_stat_nor_the_read_follows_a_symlink(tmp_path, procs):
    """Two locks on the same door: a file swapped for a symlink between the two is refused too."""
    claude = procs()
    real = write(tmp_path, claude.pid)
    (tmp_path / "sessions" / "link.json").symlink_to(real)
    fd = os.open(tmp_path / "sessions", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert claude_sessions._stamp(fd, real.name, os.getuid()) is not None
        assert claude_sessions._read(fd, real.name) is not None
        assert claude_sessions._stamp(fd, "link.json", os.getuid()) is None
        assert claude_sessions._read(fd, "link.json") is None
    finally:
        os.close(fd)


def test_a_zombie_has_no_start_time():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    wait_for(lambda: Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z")
    try:
        assert proc_start(child.pid) is None
        assert proc_start(ME) is not None
    finally:
        child.wait()


def test_a_symlinked_directory_is_not_read(tmp_path, procs):
    claude = procs()
    write(tmp_path / "real", claude.pid)
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "sessions").symlink_to(tmp_path / "real" / "sessions")
    assert Sessions().status_for(ME, "%3", str(tmp_path / "real")) is not None
    assert Sessions().status_for(ME, "%3", str(tmp_path / "link")) is None


def test_a_file_of_another_user_is_no_record(tmp_path, procs):
    claude = procs()
    write(tmp_path, claude.pid)
    assert Sessions(uid=os.getuid()).status_for(ME, "%3", str(tmp_path)) is not None
    assert Sessions(uid=os.getuid() + 1).status_for(ME, "%3", str(tmp_path)) is None


def test_only_digit_names_are_records(tmp_path, procs):
    claude = procs()
    path = write(tmp_path, claude.pid)
    path.rename(path.with_name(f"pid-{claude.pid}.json"))
    assert Sessions().status_for(ME, "%3", str(tmp_path)) is None


def test_torn_json_is_read_again(tmp_path, procs):
    claude = procs()
    path = write(tmp_path, claude.pid)
    whole = path.read_text()
    path.write_text(whole[: len(whole) // 2])
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        path.write_text(whole)  # the writer finished meanwhile

    found = Sessions(sleep=sleep).status_for(ME, "%3", str(tmp_path))
    assert found is not None and found.pid == claude.pid
    assert waits == [claude_sessions.TORN_DELAY]


def test_json_that_stays_torn_is_no_record(tmp_path, procs):
    claude = procs()
    path = write(tmp_path, claude.pid)
    path.write_text(path.read_text()[:40])
    waits: list[float] = []
    assert Sessions(sleep=waits.append).status_for(ME, "%3", str(tmp_path)) is None
    assert len(waits) == claude_sessions.TORN_RETRIES


def test_json_too_deep_for_the_parser_is_no_record_and_no_error(tmp_path, procs):
    claude = procs()
    path = write(tmp_path, claude.pid)
    path.write_text("[" * 30000 + "]" * 30000)  # under MAX_RECORD
    assert Sessions(sleep=lambda _: None).status_for(ME, "%3", str(tmp_path)) is None


def test_the_outermost_session_in_the_tree_is_the_panes(tmp_path, procs):
    """A `claude` started by another (a tool running `claude -p`) is deeper in the tree."""
    outer = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen(['sleep', '120']); time.sleep(120)"]
    )
    try:
        inner = wait_for(lambda: _children(outer.pid), message="the inner process")[0]
        write(tmp_path, outer.pid)
        write(tmp_path, inner)
        assert Sessions().status_for(ME, "%3", str(tmp_path)).pid == outer.pid
    finally:
        for pid in _children(outer.pid):
            os.kill(pid, 9)
        outer.kill()
        outer.wait()


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_two_sessions_at_the_same_depth_are_no_record(tmp_path, procs):
    first, second = procs(), procs()
    write(tmp_path, first.pid)
    write(tmp_path, second.pid)
    assert Sessions().status_for(ME, "%3", str(tmp_path)) is None


def settled(path: Path, seconds_ago: float = 10) -> None:
    """Give `path` an mtime long enough ago that a read of it is surely of what is there."""
    at = int((time.time() - seconds_ago) * 1e9)
    os.utime(path, ns=(at, at))


def test_an_unchanged_file_is_not_read_again(tmp_path, procs, monkeypatch):
    claude = procs()
    path = write(tmp_path, claude.pid)
    settled(path)
    reader = Sessions()
    assert reader.status_for(ME, "%3", str(tmp_path)).status == "busy"
    reads: list[str] = []
    real_read = claude_sessions._read
    monkeypatch.setattr(claude_sessions, "_read", lambda fd, name: reads.append(name) or real_read(fd, name))
    assert reader.status_for(ME, "%3", str(tmp_path)).status == "busy"
    assert reads == []
    doc = json.loads(path.read_text()) | {"status": "idle", "statusUpdatedAt": (T + 9) * 1000}
    path.write_text(json.dumps(doc) + " ")  # a new size as well as a new mtime
    assert reader.status_for(ME, "%3", str(tmp_path)).status == "idle"
    assert reads == [path.name]


def test_a_file_read_right_after_it_changed_is_read_again(tmp_path, procs):
    """Claude rewrites the file in place, `busy` and `idle` of one length: two writes
    within one step of the mtime's clock leave the same stamp."""
    claude = procs()
    path = write(tmp_path, claude.pid, status="busy")
    reader = Sessions()
    assert reader.status_for(ME, "%3", str(tmp_path)).status == "busy"
    stamp = path.stat().st_mtime_ns
    path.write_text(path.read_text().replace('"busy"', '"idle"'))
    os.utime(path, ns=(stamp, stamp))  # the same inode, size and mtime
    assert reader.status_for(ME, "%3", str(tmp_path)).status == "idle"
    settled(path)
    assert reader.status_for(ME, "%3", str(tmp_path)).status == "idle"
    path.write_text(path.read_text().replace('"idle"', '"busy"'))
    settled(path)  # a stamp of its own: read again
    assert reader.status_for(ME, "%3", str(tmp_path)).status == "busy"


def test_a_remembered_record_whose_process_ended_is_dropped(tmp_path, procs):
    """A crash leaves the file as it was: its stamp unchanged, its process gone."""
    claude = procs()
    settled(write(tmp_path, claude.pid))
    reader = Sessions()
    assert reader.status_for(ME, "%3", str(tmp_path)) is not None
    claude.kill()
    claude.wait()
    assert reader.status_for(ME, "%3", str(tmp_path)) is None


def test_the_config_home_is_claude_config_dir_else_home():
    assert config_home({"HOME": "/h"}) == "/h/.claude"
    assert config_home({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}) == "/c"


def test_verdict_for_reads_the_panes_record(tmp_path, procs):
    claude = procs()
    write(tmp_path, claude.pid, status="idle", statusUpdatedAt=(T + 5) * 1000)
    fact = PaneFact("%3", state="active", epoch=T, kind=PaneKind.AGENT, agent="claude", pane_pid=ME)
    found = verdict_for(fact, {"CLAUDE_CONFIG_DIR": str(tmp_path)}, Sessions())
    assert found == Verdict(AgentState.IDLE, T + 5)
    assert verdict_for(fact, {"HOME": str(tmp_path)}, Sessions()) is None  # no sessions/ under ~/.claude

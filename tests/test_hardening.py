"""Nothing lost, nothing doubled, no single bad value stops anything (issue 8).

Each class of failure found by trying rk as an attacker would gets its tests
here: concurrent mutations, isolation of bad values, the delivery intent, clock
jumps, the state directory, corrupt files, history, bounds, the ticker's clock,
exit codes and the written defaults.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from tests.cli_helpers import make_env, one_line_error, run_in, snapshot, write_private

T0 = 1_800_000_000


def _entries(state: Path) -> list[dict]:
    doc = YAML(typ="safe").load((state / "default.yaml").read_text()) or {}
    return doc.get("entries") or []


def _spawn(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rk", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


# --------------------------------------------------------------------------- 1. one lock for every mutation


def test_parallel_adds_mutes_and_removes_lose_nothing(tmp_path):
    """8 adds, 6 mutes and 6 removes at once: every change lands, each exactly once."""
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = Path(env["RK_STATE_DIR"])
    seeded = [f"e{n:03d}" for n in range(12)]
    write_private(state / "default.yaml", "entries:\n" + "".join(
        f"  - {{id: {i}, schedule: {{kind: every, interval: 5m}}, target: {{kind: role, role: op}}, payload: p{i}}}\n"
        for i in seeded))
    muted, removed = seeded[:6], seeded[6:]
    procs = [_spawn(["cron", "add", f"new {n}", "--every", "5m", "--role", "op", "--json"], env) for n in range(8)]
    procs += [_spawn(["cron", "mute", i], env) for i in muted]
    procs += [_spawn(["cron", "rm", i], env) for i in removed]
    results = [(p.args[3:], *p.communicate(timeout=120), p.returncode) for p in procs]
    assert [r for r in results if r[3] != 0] == [], "every command succeeds"
    entries = _entries(state)
    by_id = {e["id"]: e for e in entries}
    assert len(by_id) == len(entries) == 6 + 8
    assert sorted(e["payload"] for e in entries if e["id"] not in seeded) == [f"new {n}" for n in range(8)]
    assert all(by_id[i].get("muted") is True for i in muted)
    assert not set(removed) & set(by_id)


# --------------------------------------------------------------------------- 6. never rewrite a corrupt file

#: Files the round-trip reader would take but the loader calls corrupt, and plain corrupt ones.
CORRUPT = {
    "unknown-tag": "entries:\n  - !!python/object {id: e001}\n"
                   "  - {id: e002, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p}\n",
    "custom-tag": "entries: !mine\n  - {id: e002, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p}\n",
    "does-not-parse": "entries:\n  - {id: e002, schedule: {kind: every\n",
}
MUTATIONS = {
    "add": ["cron", "add", "x", "--every", "5m", "--role", "op"],
    "rm": ["cron", "rm", "e002"],
    "mute": ["cron", "mute", "e002"],
    "mute-for": ["cron", "mute", "e002", "--for", "5m"],
    "pin": ["cron", "pin", "e002"],
    "edit": ["cron", "edit", "e002", "--name", "n"],
    "run": ["cron", "run", "e002"],
}


@pytest.mark.parametrize("verb", list(MUTATIONS))
@pytest.mark.parametrize("kind", list(CORRUPT))
def test_no_mutation_rewrites_a_file_the_loader_calls_corrupt(tmp_path, kind, verb):
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = Path(env["RK_STATE_DIR"])
    write_private(state / "default.yaml", CORRUPT[kind])
    before = snapshot(state)
    res = run_in(MUTATIONS[verb], env)
    assert res.code == 1, res
    message = one_line_error(res)
    assert "is corrupt (" in message and message.endswith("refusing to mutate"), message
    assert "internal error" not in message
    assert snapshot(state) == before


# --------------------------------------------------------------------------- 12. the flat ladder


@pytest.mark.parametrize("every", [30, 90, 120, 150, 200])  # 60: a 30 s gap may be a late rung
def test_a_flat_ladder_fires_one_step_after_its_last_line_whatever_came_before(every):
    """`--idle-every 90s` with own lines at 0, 30, …, 150 and 240 s: next at 330 s (it was
    630 s: with a 120 s tolerance every gap counted as a rung at the cap)."""
    from rk.ladder import join_anchor

    spam = [30 * k for k in range(6)]  # lines one poll apart (skips, manual runs)
    history = [*spam, spam[-1] + every]
    ladder = join_anchor(epoch=0, history=history, lo=every, hi=every)
    assert ladder.next_fire(every, every) == history[-1] + every



# --------------------------------------------------------------------------- 7. keep history


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_log_n_from_the_newest_end_equals_the_tail_of_the_whole_history(tmp_path_factory, data):
    """`read_newest(n)` reads archives only as far back as needed and gives exactly what
    the whole merged history's last n lines are, with or without an entry filter."""
    from rk.log import LogLine
    from rk.logfile import append_lines, read_history, read_newest, rotate_if_needed

    path = tmp_path_factory.mktemp("log") / "s.log"
    ids = ["a", "b", "c", "d"]
    t = 1_000_000
    for _ in range(data.draw(st.integers(1, 40), label="batches")):
        batch = []
        for _ in range(data.draw(st.integers(1, 30))):
            t += data.draw(st.integers(0, 400))
            batch.append(LogLine(t, data.draw(st.sampled_from(ids)), "%1", "schedule", "delivered"))
        append_lines(path, batch)
        rotate_if_needed(path, t, backoff={}, max_bytes=4096, keep_archives=0, live=set(ids))
    n = data.draw(st.integers(1, 200), label="n")
    only = data.draw(st.sampled_from([None, *ids]), label="entry")
    keep = (lambda line: line.entry == only) if only else (lambda _line: True)
    whole = [line for line in read_history(path) if keep(line)]
    assert read_newest(path, n, keep) == whole[-n:]


def test_history_is_kept_by_default():
    from rk.config import Settings

    assert Settings().log_keep == 0, "every archive is kept unless log_keep says otherwise"


@pytest.mark.parametrize("damage", ["gap", "touched-old", "touched-new", "none"])
def test_log_n_survives_a_missing_or_touched_archive(tmp_path, damage):
    import os

    from rk.log import LogLine
    from rk.logfile import append_lines, archive_path, read_history, read_newest, rotate_if_needed

    path = tmp_path / "s.log"
    t = 1_000_000
    for _ in range(30):
        batch = [LogLine(t := t + 60, f"e{k}", "%1", "schedule", "delivered") for k in range(20)]
        append_lines(path, batch)
        rotate_if_needed(path, t, backoff={}, max_bytes=4096, keep_archives=0, live={"e0"})
    assert archive_path(path, 4).exists()
    if damage == "gap":
        archive_path(path, 2).unlink()
    elif damage == "touched-old":
        os.utime(archive_path(path, 1), (1, 1))  # a bound older than its own lines: distrusted
    elif damage == "touched-new":
        os.utime(archive_path(path, 1), (4_000_000_000, 4_000_000_000))  # too new: just reads on
    for n in (1, 5, 40, 400, 10_000):
        assert read_newest(path, n) == read_history(path)[-n:]


# --------------------------------------------------------------------------- 5. a safe state directory


def _planted(tmp_path) -> tuple[dict, Path]:
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = Path(env["RK_STATE_DIR"])
    write_private(state / "default.yaml", "entries:\n  - {id: e001, schedule: {kind: every, interval: 1m}, "
                                          "target: {kind: pane, pane: '%0'}, payload: planted}\n")
    return env, state


@pytest.mark.parametrize("verb", [["cron", "tick"], ["cron", "add", "x", "--every", "5m", "--role", "op"],
                                  ["cron", "mute", "e001"], ["cron", "run", "e001"]])
def test_a_state_directory_writable_by_others_is_refused_with_the_fix(tmp_path, verb):
    env, state = _planted(tmp_path)
    state.chmod(0o777)
    before = snapshot(state)
    res = run_in(verb, env)
    assert res.code == 1, res
    message = one_line_error(res)
    assert message == f"state directory {state} is writable by others (mode 0777); fix: chmod 700 {state}"
    assert snapshot(state) == before


def test_a_state_directory_under_a_parent_writable_by_others_is_refused(tmp_path):
    env, state = _planted(tmp_path)
    state.parent.chmod(0o777)  # not sticky: anyone could rename the state directory away
    try:
        res = run_in(["cron", "tick"], env)
    finally:
        state.parent.chmod(0o755)
    assert res.code == 1 and f"lies under {state.parent}, writable by others" in one_line_error(res)


def test_a_state_directory_owned_by_someone_else_is_refused(tmp_path):
    import os

    env, state = _planted(tmp_path)
    if os.geteuid() == 0:
        os.chown(state, 65534, 65534)  # as root: hand it to nobody
    else:
        env["RK_STATE_DIR"] = "/"  # owned by root, not us
        state = Path("/")
    res = run_in(["cron", "tick"], env)
    assert res.code == 1, res
    assert f"state directory {state} is owned by uid" in one_line_error(res)


def test_a_symlink_planted_at_a_state_file_is_never_written_through(tmp_path):
    import os
    import stat

    from rk.log import LogLine
    from rk.logfile import append_lines, read_live
    from rk.ticker import _private_append_fd

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    for name in ("default.log", "ticker.log"):
        link = tmp_path / name
        link.symlink_to(victim)
        with pytest.raises(OSError):
            if name == "default.log":
                append_lines(link, [LogLine(T0, "e001", "%0", "schedule", "delivered")])
            else:
                os.close(_private_append_fd(link))
        with pytest.raises(OSError):
            read_live(link)  # and never read through: the tick skips the server (tick-failed)
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644

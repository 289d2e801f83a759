"""Nothing lost, nothing doubled, no single bad value stops anything (issue 8).

Each class of failure found by trying rk as an attacker would gets its tests
here: concurrent mutations, isolation of bad values, the delivery intent, clock
jumps, the state directory, corrupt files, history, bounds, the ticker's clock,
exit codes and the written defaults.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from rk.core.log.delivery import LogLine
from rk.core.schedule.entry import Backoff, CreatedBy, Cron, Entry, Every, Target
from rk.core.schedule.ladder import POLL as CLOCK_SKEW
from tests.cli_helpers import make_env, one_line_error, run_in, snapshot, write_private

T0 = 1_800_000_000


def _entries(state: Path) -> list[dict]:
    doc = YAML(typ="safe").load((state / "default.yaml").read_text()) or {}
    return doc.get("entries") or []


def _spawn(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rk", *args], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


# --------------------------------------------------------------------------- 1. one lock for every mutation


@pytest.mark.slow
def test_parallel_adds_mutes_and_removes_lose_nothing(tmp_path):
    """8 adds, 6 mutes and 6 removes at once: every change lands, each exactly once."""
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = Path(env["RK_STATE_DIR"])
    seeded = [f"e{n:03d}" for n in range(12)]
    write_private(
        state / "default.yaml",
        "entries:\n"
        + "".join(
            f"  - {{id: {i}, schedule: {{kind: every, interval: 5m}},"
            f" target: {{kind: role, role: op}}, payload: p{i}}}\n"
            for i in seeded
        ),
    )
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
#: What a Python traceback starts with (a generated value may itself be the word "Traceback").
TRACEBACK = "Traceback (most recent call last)"

CORRUPT = {
    "unknown-tag": "entries:\n  - !!python/object {id: e001}\n"
    "  - {id: e002, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p}\n",
    "custom-tag": "entries: !mine\n"
    "  - {id: e002, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p}\n",
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


@pytest.mark.slow
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
    from rk.core.schedule.ladder import join_anchor

    spam = [30 * k for k in range(6)]  # lines one poll apart (skips, manual runs)
    history = [*spam, spam[-1] + every]
    ladder = join_anchor(epoch=0, history=history, lo=every, hi=every)
    assert ladder.next_fire(every, every) == history[-1] + every


# --------------------------------------------------------------------------- 7. keep history


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_log_n_from_the_newest_end_equals_the_tail_of_the_whole_history(tmp_path_factory, data):
    """`read_newest(n)` reads archives only as far back as needed and gives exactly what
    the whole merged history's last n lines are, with or without an entry filter."""
    from rk.core.log.delivery import LogLine
    from rk.store.delivery_log import append_lines, read_history, read_newest, rotate_if_needed

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
    from rk.store.config import Settings

    assert Settings().log_keep == 0, "every archive is kept unless log_keep says otherwise"


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["gap", "touched-old", "touched-new", "none"])
def test_log_n_survives_a_missing_or_touched_archive(tmp_path, damage):
    import os

    from rk.core.log.delivery import LogLine
    from rk.store.delivery_log import append_lines, archive_path, read_history, read_newest, rotate_if_needed

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
    write_private(
        state / "default.yaml",
        "entries:\n  - {id: e001, schedule: {kind: every, interval: 1m}, "
        "target: {kind: pane, pane: '%0'}, payload: planted}\n",
    )
    return env, state


@pytest.mark.slow
@pytest.mark.parametrize(
    "verb",
    [
        ["cron", "tick"],
        ["cron", "add", "x", "--every", "5m", "--role", "op"],
        ["cron", "mute", "e001"],
        ["cron", "run", "e001"],
    ],
)
def test_a_state_directory_writable_by_others_is_refused_with_the_fix(tmp_path, verb):
    env, state = _planted(tmp_path)
    state.chmod(0o777)
    before = snapshot(state)
    res = run_in(verb, env)
    assert res.code == 1, res
    message = one_line_error(res)
    assert message == f"state directory {state} is writable by others (mode 0777); fix: chmod 700 {state}"
    assert snapshot(state) == before


@pytest.mark.slow
def test_a_state_directory_under_a_parent_writable_by_others_is_refused(tmp_path):
    env, state = _planted(tmp_path)
    state.parent.chmod(0o777)  # not sticky: anyone could rename the state directory away
    try:
        res = run_in(["cron", "tick"], env)
    finally:
        state.parent.chmod(0o755)
    assert res.code == 1 and f"lies under {state.parent}, writable by others" in one_line_error(res)


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_symlink_planted_at_a_state_file_is_never_written_through(tmp_path):
    import os
    import stat

    from rk.core.log.delivery import LogLine
    from rk.engine.ticker import _private_append_fd
    from rk.store.delivery_log import append_lines, read_live

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


# --------------------------------------------------------------------------- 4. backward clock jumps

TICK = 30
KINDS = {
    "every 5m": (Every(interval=300), 300),
    "cron */5": (Cron(expr="*/5 * * * *"), 300),
    "idle-every 3m": (Backoff(min=180, max=180), 180),
    "backoff 1m..8m": (Backoff(min=60, max=480), 60),
}


@settings(max_examples=80, deadline=None)
@given(
    kind=st.sampled_from(list(KINDS)), jump=st.integers(CLOCK_SKEW + TICK, 400 * 86400), phase=st.integers(0, TICK - 1)
)
@example(kind="every 5m", jump=3600, phase=0)
@example(kind="cron */5", jump=86400, phase=0)
@example(kind="idle-every 3m", jump=3600, phase=7)
def test_after_the_clock_goes_back_no_schedule_is_silent_past_its_period_and_a_poll(kind, jump, phase):
    """The entry's newest line lies `jump` s beyond now (the clock was set back): the
    first tick re-anchors it at now (a `clock` `rescheduled` line), and the next fire
    comes within its own period plus one poll, then the usual cadence (no burst)."""
    from rk.core.schedule.simulate import StateChange, simulate

    schedule, period = KINDS[kind]
    start = 1_800_000_000  # 2027-01-15T08:00:00Z, on a five-minute boundary
    entry = Entry(
        id="e001",
        schedule=schedule,
        target=Target("pane", "%1"),
        payload="p",
        any_program=True,
        created_by=CreatedBy(at=start - 7 * 86400),
    )
    before = [LogLine(start + jump, "e001", "%1", "schedule", "delivered")]  # written before the clock went back
    sim = simulate(
        [entry],
        start=start,
        end=start + 4 * period + 4 * TICK,
        tick=TICK,
        phase=phase,
        script=[StateChange(start - 3600, "%1", "idle")],
        log=before,
    )
    new = sim.lines[len(before) :]
    assert (new[0].reason, new[0].outcome) == ("clock", "rescheduled") and new[0].ts == start + phase
    fires = [line.ts for line in new if line.outcome == "delivered"]
    assert fires and fires[0] - new[0].ts <= period + TICK, (kind, fires)
    assert all(b - a >= period - TICK for a, b in itertools.pairwise(fires)), fires


def test_a_forward_jump_still_gives_one_fire_not_a_burst():
    from rk.core.schedule.simulate import StateChange, simulate

    start = 1_800_000_000
    entry = Entry(
        id="e001",
        schedule=Every(interval=300),
        target=Target("pane", "%1"),
        payload="p",
        any_program=True,
        created_by=CreatedBy(at=start - 86400),
    )
    before = [LogLine(start - 86400, "e001", "%1", "schedule", "delivered")]  # a day of sleep
    sim = simulate(
        [entry], start=start, end=start + 60, tick=TICK, script=[StateChange(start - 10, "%1", "idle")], log=before
    )
    assert [line.ts for line in sim.fires("e001") if line.ts >= start] == [start]


# --------------------------------------------------------------------------- 8 and 13. every number bounded, fuzzed

NUMBERS = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e-9", "1e20", "0", "-0", "0x10", "١٢", "9" * 5000, "", " ", "5m", "1.5"]),
)
DURATIONS = st.one_of(
    NUMBERS,
    st.builds(
        lambda n, u: f"{n}{u}",
        st.integers(-(10**25), 10**25),
        st.sampled_from(["s", "m", "h", "d", "ms", "ns", "y", ""]),
    ),
    st.text(max_size=12),
)
FLAG_CASES = st.one_of(
    st.builds(lambda d: ["cron", "add", "p", "--every", d, "--role", "op"], DURATIONS),
    st.builds(lambda d: ["cron", "add", "p", "--idle-every", d, "--role", "op"], DURATIONS),
    st.builds(
        lambda a, b: ["cron", "add", "p", "--backoff", "--min", a, "--max", b, "--role", "op"], DURATIONS, DURATIONS
    ),
    st.builds(
        lambda d: ["cron", "add", "p", "--wake-on", "agent-state-change", "--wake-debounce", d, "--role", "op"],
        DURATIONS,
    ),
    st.builds(
        lambda c: ["cron", "add", "p", "--cron", c, "--role", "op"],
        st.lists(
            st.sampled_from(["*", "*/0", "*/5", "61", "-1", "0", "1-5", "5-1", "99999999999999999999", "a", ","]),
            min_size=0,
            max_size=6,
        ).map(" ".join),
    ),
    st.builds(lambda d: ["cron", "mute", "e001", "--for", d], DURATIONS),
    st.builds(lambda n: ["cron", "log", "-n", n], NUMBERS),
    st.builds(lambda n: ["cron", "next", "e001", "-n", n], NUMBERS),
    st.builds(lambda n: ["cron", "ticker", "status", "--interval", n], NUMBERS),
    st.builds(lambda a, b: ["cron", "simulate", "--every", "5m", "--for", a, "--tick", b], DURATIONS, DURATIONS),
    st.builds(lambda w: ["cron", "simulate", "--every", "5m", "--for", "10m", "--width", w], NUMBERS),
    st.builds(lambda p: ["agent", "state", "idle", "--pane", "%1", "--pid", p], NUMBERS),
    st.builds(
        lambda t: ["agent", "state", "limited", "--pane", "%1", "--until", t], st.one_of(NUMBERS, st.text(max_size=30))
    ),
)


@pytest.mark.slow
@settings(
    max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(args=FLAG_CASES, now=st.one_of(st.none(), NUMBERS))
def test_no_number_from_a_flag_or_rk_now_crashes_hangs_or_writes_on_refusal(tmp_path_factory, args, now):
    """Thousands of generated values for every numeric flag and RK_NOW: each command
    exits 0, 1, 2 or 3 with its own message, never a traceback or "internal error",
    and a refused one (exit 2) changes no file."""
    root = tmp_path_factory.mktemp("fuzz")
    env = make_env(root, **({"RK_NOW": now} if now is not None else {"RK_NOW": str(T0)}))
    state = Path(env["RK_STATE_DIR"])
    write_private(
        state / "default.yaml",
        "entries:\n  - {id: e001, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p}\n",
    )
    before = snapshot(state)
    res = run_in(args, env)
    text = res.out + res.err
    assert res.code in (0, 1, 2, 3), res
    assert TRACEBACK not in text and "internal error" not in text, res
    if res.code == 2:
        assert snapshot(state) == before, res


VALUES = st.one_of(
    NUMBERS, st.integers(-(10**30), 10**30), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none()
)


@pytest.mark.slow
@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    field=st.sampled_from(["interval", "min", "max", "muted_until", "at", "debounce", "ts"]),
    value=VALUES,
    verb=st.sampled_from(
        [
            ["cron", "list"],
            ["cron", "list", "--json"],
            ["cron", "show", "e001"],
            ["cron", "next", "e001"],
            ["cron", "log"],
            ["cron", "tick", "--dry-run"],
            ["cron", "mute", "e002"],
        ]
    ),
)
def test_no_value_in_a_file_stops_the_other_entries_or_crashes_a_command(tmp_path_factory, field, value, verb):
    """One bad value in one entry (or one log line) is that entry's or line's problem:
    every command still answers, without a traceback, and the other entry is intact."""
    import json

    root = tmp_path_factory.mktemp("files")
    env = make_env(root, RK_NOW=str(T0))
    state = Path(env["RK_STATE_DIR"])
    bad = {
        "id": "e001",
        "schedule": {"kind": "every", "interval": "5m"},
        "target": {"kind": "role", "role": "op"},
        "payload": "p",
        "created_by": {"at": T0 - 600},
    }
    if field in ("interval",):
        bad["schedule"]["interval"] = value
    elif field in ("min", "max"):
        bad["schedule"] = {"kind": "backoff", "min": "1m", "max": "5m", field: value}
    elif field == "at":
        bad["created_by"]["at"] = value
    elif field == "debounce":
        bad["wake_on"] = {"event": "agent-state-change", "debounce": value}
    elif field == "muted_until":
        bad["muted_until"] = value
    good = {
        "id": "e002",
        "schedule": {"kind": "every", "interval": "5m"},
        "target": {"kind": "role", "role": "op"},
        "payload": "q",
        "created_by": {"at": T0 - 600},
    }
    write_private(state / "default.yaml", json.dumps({"entries": [bad, good]}, default=str))  # JSON is YAML
    line = {
        "ts": value if field == "ts" else T0 - 60,
        "entry": "e001",
        "target": "",
        "reason": "schedule",
        "outcome": "delivered",
    }
    write_private(
        state / "default.log",
        json.dumps(line, default=str)
        + "\n"
        + json.dumps({"ts": T0 - 30, "entry": "e002", "target": "", "reason": "schedule", "outcome": "delivered"})
        + "\n",
    )
    res = run_in(verb, env)
    text = res.out + res.err
    assert res.code in (0, 1), res
    assert TRACEBACK not in text and "internal error" not in text, res
    if verb[:2] == ["cron", "list"]:
        assert "e002" in res.out, res


# --------------------------------------------------------------------------- 2. isolation, the rest


@pytest.mark.parametrize(
    "value",
    [
        "idle:1800000000:99999999999999999999",
        "idle:1800000000:2147483648",
        "idle:99999999999999999999999",
        "idle:" + "9" * 5000,
        "active:1800000000:0",
    ],
)
def test_a_pane_state_with_an_epoch_or_pid_out_of_range_is_unknown(value):
    from rk.core.pane.facts import UNKNOWN, parse_state_option

    assert parse_state_option(value) == UNKNOWN


def test_agent_state_refuses_a_pid_past_the_kernels_limit(tmp_path):
    res = run_in(["agent", "state", "idle", "--pane", "%1", "--pid", "99999999999999999999"], make_env(tmp_path))
    assert res.code == 2 and "a process id is between 1 and 4194304" in res.err


MALFORMED_CRONS = [
    "61 * * * *",
    "* 24 * * *",
    "* * 32 * *",
    "* * * 13 *",
    "* * * * 8",
    "*/0 * * * *",
    "5-1 * * * *",
    "a * * * *",
    "* * * * MON-",
    "1,,2 * * * *",
    "-1 * * * *",
    "0 0 30 2 *",
    "0 0 31 4 *",
    "* * 0 * *",
    "* * * 0 *",
    "*/99999999999999999999 * * * *",
    "1-99999999999999999999 * * * *",
    "L * * * *",
    "* * L * *",
    "* * * * 5#2",
    "* * 15W * *",
    "? * * * *",
]


@pytest.mark.slow
@pytest.mark.parametrize("expr", MALFORMED_CRONS)
def test_every_malformed_cron_expression_is_a_usage_error(tmp_path, expr):
    env = make_env(tmp_path, RK_NOW=str(T0))
    res = run_in(["cron", "add", "x", "--cron", expr, "--role", "op"], env)
    assert res.code == 2, res
    assert one_line_error(res).startswith("--cron: ")
    assert not Path(env["RK_STATE_DIR"]).exists()


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["too-big", "too-many"])
def test_an_entries_file_past_its_caps_is_refused_in_bounded_time(tmp_path, shape):
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = Path(env["RK_STATE_DIR"])
    element = "  - {id: e%05d, schedule: {kind: every, interval: 5m}, target: {kind: role, role: op}, payload: p}\n"
    if shape == "too-big":
        text = "entries:\n" + element % 1 + "# " + "x" * (2 << 20) + "\n"  # 2 MiB, mostly a comment
    else:
        text = "entries:\n" + "".join(element % i for i in range(1001))
    write_private(state / "default.yaml", text)
    before = snapshot(state)
    verbs = [["cron", "add", "y", "--every", "5m", "--role", "op"], ["cron", "mute", "e00001"]]
    for verb in verbs if shape == "too-big" else [*verbs, ["cron", "rm", "e00001"]]:
        res = run_in(verb, env)
        assert res.code == 1, res
        message = one_line_error(res)
        assert ("limit is 1,048,576" in message) if shape == "too-big" else ("hard cap is 1000" in message), message
    listing = run_in(["cron", "list"], env)  # said as an error, never an empty list
    assert listing.code == 1 and ("limit is 1,048,576" in listing.err or "hard cap is 1000" in listing.err), listing
    assert snapshot(state) == before
    if shape == "too-big":  # the change that brings it back under the limit is the repair
        assert run_in(["cron", "rm", "e00001"], env).code == 0
        assert run_in(["cron", "list"], env).code == 0


@pytest.mark.parametrize("digits", ["²", "١", "٣٠", "𝟓"])
def test_digits_outside_ascii_are_refused_everywhere_a_number_is_read(digits):
    """`str.isdigit` and `\\d` accept superscripts and other scripts' digits, which
    `int` then rejects or reads: every reader refuses them as bad input instead."""
    from rk.core.durations import DurationError, parse_duration
    from rk.core.schedule.cronexpr import CronError, CronExpr
    from rk.host.clock import ClockError, parse_instant

    with pytest.raises(CronError):
        CronExpr.parse(f"{digits} * * * *")
    with pytest.raises(CronError):
        CronExpr.parse(f"*/{digits} * * * *")
    with pytest.raises(DurationError):
        parse_duration(f"{digits}m")
    with pytest.raises(ClockError):
        parse_instant(digits)

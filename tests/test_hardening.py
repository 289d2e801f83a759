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

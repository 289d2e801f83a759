"""The on-disk cache of the entries file's parsed data (rk.store.entries_cache).

A view reads `<slug>.entries.json` instead of parsing `<slug>.yaml` when the
cache was written for this very state of the file: its lstat key, the format and
the CRC of its bytes. Anything else is the YAML path, and the answer (entries and
diagnostics, down to each value's type) is the same either way. The cache is
written only for a file that has not changed for `RACY_NS`, only for data JSON
gives back exactly, only into a private directory, and read only when private.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rk.store import entries as entries_module
from rk.store import entries_cache
from rk.store.entries import load_entries, parse_entries_text
from rk.store.entries_cache import cache_path, cacheable, settled
from tests.cli_helpers import make_env, run_in

pytestmark = pytest.mark.shell

SCENARIOS = Path(__file__).resolve().parent.parent / "specs" / "scenarios"
#: How far the tests move the cache's clock on: every file they wrote has settled.
LATER = 3_000_000_000

GOOD = """entries:
  - id: e001  # a comment the data does not keep
    name: review
    schedule: {kind: cron, expr: '0 */2 * * *'}
    target: {kind: pane, pane: '%1', server_started: 1796593003, server_pid: 22497}
    payload: "review the open PRs \\u00e9"
    deliver: immediate
    if_absent: skip
    max_per_day: 3
    created_by: {at: 1796593004}
  - id: e002
    schedule: {kind: every, interval: 90s}
    target: {kind: role, role: op}
    payload: |
      two
      lines
    muted: true
    created_by: {at: 1796593004}
  - id: e003
    schedule: {kind: every, interval: -5m}
    target: {kind: role, role: op}
    payload: invalid, and only this one
  - 42
"""


@pytest.fixture
def settled_clock(monkeypatch):
    """The cache's clock 3 s on, so a file the test has just written may be cached."""
    real = time.time_ns
    monkeypatch.setattr(entries_cache, "time_ns", lambda: real() + LATER)


@pytest.fixture
def parses(monkeypatch):
    """Each text the entries loader parsed as YAML."""
    seen: list[str] = []
    real = entries_module.safe_load

    def spy(text: str) -> object:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(entries_module, "safe_load", spy)
    return seen


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    path.chmod(0o600)
    return path


def answer(result) -> str:
    """Entries and diagnostics with every value's type (`1 == True == 1.0` in Python; not here)."""
    return repr((result.entries, result.diagnostics))


def rewrite_cache(path: Path, **changes: object) -> None:
    cached = cache_path(path)
    doc = json.loads(cached.read_text())
    doc.update(changes)
    cached.write_text(json.dumps(doc))
    assert cached.stat().st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------- hit, and what is written


def test_a_settled_file_is_cached_privately_and_read_back_without_parsing(tmp_path, settled_clock, parses):
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    first = load_entries(path)
    assert len(parses) == 1 and [e.id for e in first.entries] == ["e001", "e002"]
    assert len(first.diagnostics) == 2  # e003 and the scalar: each only itself
    cached = cache_path(path)
    assert cached.name == "default.entries.json" and cached.stat().st_mode & 0o777 == 0o600
    doc = json.loads(cached.read_text())
    assert doc["format"] == entries_cache.FORMAT and doc["data"]["entries"][3] == 42
    second = load_entries(path)
    assert len(parses) == 1, "the second load parsed YAML"
    assert answer(second) == answer(first) == answer(parse_entries_text(GOOD))


def test_a_fresh_file_is_not_cached(tmp_path, parses):
    """The real clock: the file changed less than 2 s ago, in the same timestamp tick
    as a change that would leave its key as it is."""
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    assert answer(load_entries(path)) == answer(parse_entries_text(GOOD))
    assert not cache_path(path).exists()
    load_entries(path)
    assert len(parses) == 3  # both loads and the reference parsed


def test_the_racy_window_is_two_seconds():
    now = 1_800_000_000_000_000_000
    assert settled(now - 2_000_000_000, now)
    assert not settled(now - 1_999_999_999, now)
    assert not settled(now, now)
    assert not settled(now + 5, now)  # a ctime ahead of the clock


def test_a_dry_run_tick_leaves_no_cache_and_a_tick_does(env, tmux_server, settled_clock):
    """A dry run writes nothing (specs/cron.md), this cache included."""
    path = write(Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.yaml", GOOD)
    now = dict(env, RK_NOW="1796593100")
    assert run_in(["cron", "tick", "-L", tmux_server.name, "--dry-run"], now).code == 0
    assert not cache_path(path).exists()
    run_in(["cron", "tick", "-L", tmux_server.name], now)
    assert cache_path(path).exists()


# --------------------------------------------------------------------------- misses


@pytest.mark.parametrize(
    "change",
    [{"key": i} for i in range(5)] + [{"format": entries_cache.FORMAT + 1}, {"crc": 0}, {"data": None}],
    ids=["dev", "ino", "size", "mtime", "ctime", "format", "crc", "other-data-key"],
)
def test_each_part_of_the_key_is_compared(tmp_path, settled_clock, parses, change):
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    load_entries(path)
    doc = json.loads(cache_path(path).read_text())
    if "key" in change:
        key = doc["key"]
        key[change["key"]] += 1
        change = {"key": key}
    if "data" in change:
        del doc["data"]
        cache_path(path).write_text(json.dumps(doc))
    else:
        rewrite_cache(path, **change)
    assert answer(load_entries(path)) == answer(parse_entries_text(GOOD))
    assert len(parses) == 3, "a cache for another state of the file was used"


def _chmod(path: Path) -> None:  # the ctime alone
    path.chmod(0o640)
    path.chmod(0o600)


def _touch(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))


def _in_place(path: Path) -> None:  # same size, same inode, one byte
    with open(path, "r+b") as fh:
        fh.seek(GOOD.index("review the") + 1)
        fh.write(b"E")


def _replaced(path: Path) -> None:  # same bytes, a new inode
    spare = path.with_name("spare")
    shutil.copy2(path, spare)
    os.replace(spare, path)


@pytest.mark.parametrize("change", [_chmod, _touch, _in_place, _replaced])
def test_a_changed_file_misses(tmp_path, settled_clock, parses, change):
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    keep = write(tmp_path / "state" / "other.yaml", GOOD)  # holds the first inode: no reuse
    load_entries(path)
    change(path)
    text = path.read_text()
    assert answer(load_entries(path)) == answer(parse_entries_text(text))
    assert len(parses) == 3, f"{change.__name__}: the old cache answered"
    assert keep.exists()
    if change is _in_place:
        assert load_entries(path).entries[0].payload.startswith("rEview")


# --------------------------------------------------------------------------- what is never cached

NOT_JSON = {
    "date": "entries:\n  - {id: e001, created_by: {at: 2026-01-01}}\n",
    "timestamp": "entries:\n  - {id: e001, created_by: {at: 2026-01-01T09:00:00Z}}\n",
    "int-key": "entries:\n  - {id: e001, 1: one}\n",
    "bool-key": "entries:\n  - {id: e001, true: yes}\n",
    "null-key": "entries:\n  - {id: e001, ~: none}\n",
    "float-key": "entries:\n  - {id: e001, 1.5: x}\n",
    "nan": "entries:\n  - {id: e001, max_per_day: .nan}\n",
    "infinity": "entries:\n  - {id: e001, max_per_day: .inf}\n",
    "binary": "entries:\n  - {id: e001, payload: !!binary aGVsbG8=}\n",
    "set": "entries:\n  - {id: e001, payload: !!set {a, b}}\n",
    "surrogate": 'entries:\n  - {id: e001, payload: "\\ud800"}\n',
}


@pytest.mark.parametrize("name", list(NOT_JSON))
def test_data_json_would_not_give_back_is_not_cached(tmp_path, settled_clock, name):
    text = NOT_JSON[name]
    path = write(tmp_path / "state" / "default.yaml", text)
    assert answer(load_entries(path)) == answer(parse_entries_text(text))
    assert not cache_path(path).exists()


def test_the_walk_takes_exact_types_only():
    assert cacheable({"a": [1, 1.5, -0.0, True, None, "é", {"b": []}]})
    assert cacheable(None) and cacheable("") and cacheable(0)
    assert not cacheable({1: "a"}) and not cacheable({"a": {None: 1}})
    assert not cacheable(float("inf")) and not cacheable([float("nan")])
    assert not cacheable("\udc80") and not cacheable({"\ud800": 1})
    assert not cacheable((1, 2)) and not cacheable({"a": {1, 2}}) and not cacheable(b"x")

    class Text(str):
        pass

    assert not cacheable([Text("x")])


LAUGHS = """entries:
  - id: e001
    a: &a [x, x, x, x, x, x, x, x, x, x]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
"""


def test_a_tree_that_aliases_expand_past_the_bound_is_not_cached(tmp_path, settled_clock, monkeypatch):
    monkeypatch.setattr(entries_cache, "MAX_WEIGHT", 5_000)  # the expanded tree holds ~11,000 nodes
    path = write(tmp_path / "state" / "default.yaml", LAUGHS)
    assert answer(load_entries(path)) == answer(parse_entries_text(LAUGHS))
    assert not cache_path(path).exists()
    monkeypatch.setattr(entries_cache, "MAX_WEIGHT", 50_000)
    load_entries(path)
    assert cache_path(path).exists()


def test_a_tree_past_the_depth_bound_is_not_cached(tmp_path, settled_clock):
    deep = "entries:\n  - {id: e001, x: " + "[" * 70 + "]" * 70 + "}\n"
    path = write(tmp_path / "state" / "default.yaml", deep)
    assert answer(load_entries(path)) == answer(parse_entries_text(deep))
    assert not cache_path(path).exists()


def test_no_cache_in_a_directory_others_may_write(tmp_path, settled_clock):
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    path.parent.chmod(0o777)
    assert answer(load_entries(path)) == answer(parse_entries_text(GOOD))
    assert not cache_path(path).exists()


def test_a_file_that_does_not_parse_is_not_cached(tmp_path, settled_clock):
    text = "entries:\n  - {id: e001, schedule: {kind: every\n"
    path = write(tmp_path / "state" / "default.yaml", text)
    assert load_entries(path).unreadable.startswith("entry file does not parse")
    assert not cache_path(path).exists()


@pytest.mark.parametrize(
    "text",
    [
        "- just a list\n",
        "entries: {not: a list}\n",
        "entries:\n" + "".join(f"  - {{id: e{i:05d}, payload: p}}\n" for i in range(1001)),
    ],
    ids=["not-a-mapping", "entries-not-a-list", "past-the-hard-cap"],
)
def test_a_file_refused_as_a_whole_is_not_cached(tmp_path, settled_clock, text):
    """A command that refuses the file writes nothing, the cache included (found when the
    suite ran slow enough for the hard-cap file to be 2 s old at a refused `cron list`)."""
    path = write(tmp_path / "state" / "default.yaml", text)
    assert load_entries(path).unreadable
    assert not cache_path(path).exists()


# --------------------------------------------------------------------------- a bad cache is no cache


def _garbage(cached: Path) -> None:
    cached.write_bytes(b"\x00\xff not json")


def _truncated(cached: Path) -> None:
    cached.write_bytes(cached.read_bytes()[:-3])


def _a_list(cached: Path) -> None:
    cached.write_text("[1, 2]")


def _world_readable(cached: Path) -> None:
    cached.chmod(0o644)


def _group_writable(cached: Path) -> None:
    cached.chmod(0o620)


def _symlinked(cached: Path) -> None:
    elsewhere = cached.with_name("elsewhere.json")
    os.replace(cached, elsewhere)
    cached.symlink_to(elsewhere)


def _a_directory(cached: Path) -> None:
    cached.unlink()
    cached.mkdir()


def _a_fifo(cached: Path) -> None:
    cached.unlink()
    os.mkfifo(cached, 0o600)


def _deeply_nested(cached: Path) -> None:
    cached.write_text("[" * 100_000 + "]" * 100_000)


SPOILS = [_garbage, _truncated, _a_list, _world_readable, _group_writable, _symlinked, _a_directory, _a_fifo]


@pytest.mark.parametrize("spoil", [*SPOILS, _deeply_nested])
def test_a_bad_cache_is_ignored(tmp_path, settled_clock, parses, spoil):
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    load_entries(path)
    spoil(cache_path(path))
    assert answer(load_entries(path)) == answer(parse_entries_text(GOOD))
    assert len(parses) == 3, f"{spoil.__name__}: the cache answered"
    if spoil is _symlinked:  # replaced, never written through
        assert cache_path(path).is_file() and not cache_path(path).is_symlink()
        assert json.loads(cache_path(path).with_name("elsewhere.json").read_text())["format"] == 1


def test_a_cache_of_another_user_is_ignored(tmp_path, settled_clock, parses, monkeypatch):
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    load_entries(path)
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    assert answer(load_entries(path)) == answer(parse_entries_text(GOOD))
    assert len(parses) == 3


def test_a_cache_past_its_size_limit_is_ignored(tmp_path, settled_clock, parses, monkeypatch):
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    load_entries(path)
    monkeypatch.setattr(entries_cache, "MAX_CACHE_BYTES", 100)
    assert answer(load_entries(path)) == answer(parse_entries_text(GOOD))
    assert len(parses) == 3


def test_a_tampered_cache_with_the_key_intact_is_believed(tmp_path, settled_clock):
    """What the cache cannot catch, said plainly: it is a private file of the user's,
    as the entries file is; whoever can rewrite one can rewrite the other."""
    path = write(tmp_path / "state" / "default.yaml", GOOD)
    load_entries(path)
    rewrite_cache(path, data=None)
    assert load_entries(path).entries == []


# --------------------------------------------------------------------------- the same answer either way


def _scenario_texts() -> list[tuple[str, str]]:
    """Each scenario file as an entries file (it has an `entries:` list), and each
    case's own entries as one."""
    from ruamel.yaml import YAML

    out = []
    for scenario in sorted(SCENARIOS.glob("*.yaml")):
        text = scenario.read_text(encoding="utf-8")
        out.append((scenario.stem, text))
        for i, case in enumerate(YAML(typ="safe").load(text).get("cases") or []):
            if isinstance(case, dict) and case.get("entries"):
                out.append((f"{scenario.stem}-{i}", json.dumps({"entries": case["entries"]}, default=str)))
    return out


def test_every_scenario_loads_the_same_from_the_cache(tmp_path, settled_clock, parses):
    texts = _scenario_texts()
    assert len(texts) > 40
    cached = 0
    for name, text in texts:
        path = write(tmp_path / "state" / f"{name}.yaml", text)
        want = answer(parse_entries_text(text))
        assert answer(load_entries(path)) == want, name
        before = len(parses)
        assert answer(load_entries(path)) == want, name
        if cache_path(path).exists():
            cached += 1
            assert len(parses) == before, f"{name}: parsed again"
    assert cached >= len(texts) // 2, f"most scenarios are plain data ({cached} of {len(texts)} cached)"


#: YAML scalars as a person (or a program) might write them.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(["5m", "1h30m", "0 9 * * 1-5", "%3", "2026-01-01", "08:00-19:00", "yes", "0x1f", "1_000", "~"]),
    st.dates(),
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
)
FIELDS = st.sampled_from(["id", "name", "schedule", "target", "payload", "deliver", "muted", "max_per_day", "budget"])
BASE = {
    "id": "e001",
    "schedule": {"kind": "every", "interval": "5m"},
    "target": {"kind": "role", "role": "op"},
    "payload": "p",
    "created_by": {"at": 1796593004},
}
_count = iter(range(10**9))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.dictionaries(FIELDS, VALUES, max_size=3), min_size=1, max_size=4))
def test_generated_files_load_the_same_from_the_cache(tmp_path, settled_clock, parses, overrides):
    import io

    from ruamel.yaml import YAML

    elements = [{**BASE, "id": f"e{i:03d}", **o} for i, o in enumerate(overrides)]
    buf = io.StringIO()
    try:
        YAML(typ="safe").dump({"entries": elements}, buf)
    except Exception:
        return  # a value the dumper does not write: no file to read
    text = buf.getvalue()
    path = write(tmp_path / "state" / f"g{next(_count)}.yaml", text)
    want = answer(parse_entries_text(text))
    assert answer(load_entries(path)) == want
    before = len(parses)
    assert answer(load_entries(path)) == want
    assert (len(parses) == before) == cacheable(YAML(typ="safe").load(text)), "cached exactly what the walk takes"


# --------------------------------------------------------------------------- a view, byte for byte

RUN = """
import contextlib, io, json, sys
from rk.__main__ import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue(), "modules": sorted(sys.modules)}))
"""


def _view(env: dict[str, str], args: list[str]) -> tuple[tuple[int, str, str], bool]:
    """`rk ARGS` in a fresh interpreter: (status, stdout, stderr), and whether it imported ruamel."""
    proc = subprocess.run([sys.executable, "-c", RUN, *args], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    return (got["code"], got["out"], got["err"]), any(m.startswith("ruamel") for m in got["modules"])


@pytest.mark.shell
@pytest.mark.parametrize(
    "args",
    [
        ["cron", "list"],
        ["cron", "list", "--json", "--all"],
        ["cron", "show", "e001"],
        ["cron", "show", "e002", "--json"],
        ["cron", "next", "e001", "-n", "3"],
        ["status", "--json"],
    ],
)
def test_a_view_prints_the_same_bytes_with_and_without_the_cache(tmp_path, settled_clock, args):
    env = make_env(tmp_path, RK_NOW="2026-12-07T09:30:00+00:00", PATH="/usr/bin:/bin")
    path = write(Path(env["RK_STATE_DIR"]) / "default.yaml", GOOD)
    cold, parsed = _view(env, args)
    assert parsed
    cache_path(path).unlink(missing_ok=True)  # a run past the racy window may have left it
    load_entries(path)  # the settled clock: written now
    warm, parsed = _view(env, args)
    assert not parsed, "a view with a warm cache imported the YAML parser"
    assert warm == cold
    assert cold[1].strip()  # status exits 1: the server is not running

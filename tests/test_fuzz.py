"""Fuzz the readers of hand-edited and crash-torn files: the entry file, the
delivery log, the wake cursor.

The contracts (reference §1.4, §2.3, §3.14; module docs):

* `parse_entries_text` / `load_entries` are tolerant: they never raise; a
  document that does not parse gives `entry-file-corrupt`, each bad element of
  `entries:` gives `entry-invalid`, and every good element still loads.
* `rk.core.log.delivery.parse_line` never raises; `rk.store.delivery_log.read_live` keeps every readable
  line whatever garbage or torn line surrounds it, and the next append starts
  on a fresh line.
* `rk.store.cursor.parse_cursor` returns {} for anything unreadable, never raises.
* `EntryDocument.read` (strict) refuses a corrupt file with EntryFileError only.

Inputs deep enough to overflow a C stack run in a subprocess, so a crash of
the interpreter is a test failure and not the end of the test run.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from rk.core.bounds import MAX_EPOCH
from rk.core.log.delivery import LogLine, parse_line
from rk.core.log.diagnostics import Diag
from rk.core.pane.payload import hidden
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.entry import CreatedBy, Cron, Entry, Target
from rk.core.schedule.wake import Observation
from rk.store.config import ServerFiles
from rk.store.cursor import parse_cursor, render_cursor
from rk.store.delivery_log import append_lines, read_live
from rk.store.entries import EntryDocument, EntryFileError, LoadResult, load_entries, parse_entries_text

FUZZ = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)

# --------------------------------------------------------------------------- generators

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.sampled_from(
        [
            "every",
            "cron",
            "backoff",
            "pane",
            "%1",
            "1m",
            "0s",
            "-5s",
            "x",
            "",
            "agent-state-change",
            "once",
            "*/5 * * * *",
        ]
    ),
)
KEYS = st.one_of(
    st.text(max_size=8),
    st.sampled_from(
        [
            "id",
            "schedule",
            "kind",
            "interval",
            "min",
            "max",
            "expr",
            "tz",
            "target",
            "pane",
            "role",
            "session",
            "payload",
            "deliver",
            "wake_on",
            "debounce",
            "created_by",
            "at",
            "respawn",
            "muted_until",
            "entries",
        ]
    ),
)
TREES = st.recursive(
    SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(KEYS, kids, max_size=5)), max_leaves=25
)


@st.composite
def valid_raw_entries(draw, index: int) -> dict:
    """An on-disk element that decodes (id `v<index>`)."""
    kind = draw(st.sampled_from(["every", "backoff", "cron"]))
    if kind == "every":
        schedule = {"kind": "every", "interval": draw(st.sampled_from(["30s", "5m", "1h", "1h30m", "1m0s", "90s"]))}
    elif kind == "backoff":
        schedule = {
            "kind": "backoff",
            "min": draw(st.sampled_from(["1m", "60s", "3m"])),
            "max": draw(st.sampled_from(["30m", "1h0m0s", "24m"])),
        }
    else:
        schedule = {"kind": "cron", "expr": draw(st.sampled_from(["0 9 * * 1-5", "*/15 * * * *", "30 2 * * *"]))}
        if draw(st.booleans()):
            schedule["tz"] = draw(st.sampled_from(["Europe/Berlin", "America/New_York", "UTC"]))
        if draw(st.booleans()):
            schedule["catch_up"] = "once"
    target_kind = draw(st.sampled_from(["pane", "role", "session"]))
    value = {"pane": "%3", "role": "operator", "session": "8c1e-ab"}[target_kind]
    raw: dict = {
        "id": f"v{index}",
        "name": draw(st.text(max_size=12)),
        "schedule": schedule,
        "target": {"kind": target_kind, target_kind: value},
        "payload": draw(st.text(max_size=30)),
        "created_by": {"at": draw(st.integers(0, 2_000_000_000))},
    }
    if draw(st.booleans()):
        raw["wake_on"] = {"event": "agent-state-change", "scope": "server", "debounce": "60s"}
    if draw(st.booleans()):
        raw["deliver"] = draw(st.sampled_from(["immediate", "when-idle", "skip-if-busy"]))
    if draw(st.booleans()):
        raw["unknown_key"] = draw(TREES)  # unknown keys are ignored
    return raw


@st.composite
def garbage_elements(draw, index: int):
    """An element that is junk, or a valid element with one field broken."""
    if draw(st.booleans()):
        junk = draw(TREES)
        if isinstance(junk, dict) and isinstance(junk.get("id"), str):
            junk["id"] = f"g{index}"  # never collides with a valid id
        return junk
    raw = draw(valid_raw_entries(index))
    raw["id"] = f"g{index}"
    path = draw(
        st.sampled_from(
            [
                ("schedule",),
                ("schedule", "kind"),
                ("schedule", "interval"),
                ("schedule", "min"),
                ("schedule", "expr"),
                ("target",),
                ("target", "kind"),
                ("deliver",),
                ("respawn",),
                ("created_by",),
                ("created_by", "at"),
                ("muted",),
                ("wake_on",),
                ("wake_on", "debounce"),
            ]
        )
    )
    node = raw
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = draw(TREES)
    return raw


def _yaml_text(data) -> str:
    """Block-style YAML for `data` that reads back as `data` with the loader rk uses;
    ruamel's emitter does not always manage (see the writer test at the end), then
    the JSON form."""
    buf = io.StringIO()
    try:
        YAML(typ="safe", pure=True).dump(data, buf)
        if YAML(typ="safe").load(buf.getvalue()) == data:
            return buf.getvalue()
    except Exception:
        pass
    return _json_yaml(data)


_SURROGATES = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})")


def _json_yaml(data) -> str:
    """JSON (which is YAML) — except that YAML wants `\\U0001f600`, not a surrogate pair."""

    def join(m: re.Match) -> str:
        hi, lo = int(m.group(1), 16), int(m.group(2), 16)
        return "\\U%08x" % (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))

    return _SURROGATES.sub(join, json.dumps(data))


def _check_load_result(result: LoadResult) -> None:
    assert isinstance(result, LoadResult)
    assert all(isinstance(d.reason, str) and d.reason for d in result.diagnostics)
    if any(d.reason == Diag.ENTRY_FILE_CORRUPT for d in result.diagnostics):
        assert result.entries == []


# --------------------------------------------------------------------------- entry file


@settings(FUZZ, max_examples=120)
@given(data=st.data(), n_valid=st.integers(0, 5), n_junk=st.integers(0, 6), as_json=st.booleans())
def test_valid_entries_load_beside_garbage_elements(data, n_valid, n_junk, as_json):
    """§1.4: each list element is decoded separately — a bad element is skipped with
    `entry-invalid`, the others load (in file order, decoded as on their own)."""
    valid = [data.draw(valid_raw_entries(i)) for i in range(n_valid)]
    junk = [data.draw(garbage_elements(i)) for i in range(n_junk)]
    order = data.draw(st.permutations(range(n_valid + n_junk)))
    elements = [(valid + junk)[i] for i in order]
    doc = {"entries": elements, data.draw(st.sampled_from(["version", "x"])): data.draw(TREES)}
    text = _json_yaml(doc) if as_json else _yaml_text(doc)
    result = parse_entries_text(text)
    _check_load_result(result)

    loaded = {e.id: e for e in result.entries}
    for raw in valid:
        assert raw["id"] in loaded, f"valid element {raw['id']} lost: {[d.detail for d in result.diagnostics]}"
        assert loaded[raw["id"]] == decode_entry(raw)
    valid_ids = [raw["id"] for raw in elements if raw in valid]
    assert [e.id for e in result.entries if e.id.startswith("v")] == valid_ids
    invalid = [d for d in result.diagnostics if d.reason == Diag.ENTRY_INVALID]
    assert len(result.entries) + len(invalid) == len(elements), "every element either loads or is reported"
    assert not any(d.reason == Diag.ENTRY_FILE_CORRUPT for d in result.diagnostics)


@settings(FUZZ, max_examples=120)
@given(tree=TREES)
def test_random_documents_never_raise(tree):
    """Any YAML document: a result, never an exception; wrong shapes are corrupt."""
    for text in (_yaml_text(tree), json.dumps(tree), _json_yaml(tree), _yaml_text({"entries": tree})):
        _check_load_result(parse_entries_text(text))


@FUZZ
@given(text=st.one_of(st.text(), st.text(alphabet="[]{}:-,&*!|>'\"#%@`? \n\tentries", max_size=60)))
@example(text="entries: []\nentries: []")  # duplicate key
@example(text="!!python/object/apply:os.system ['true']")
@example(text="a: &a [*a, *a]\nentries: *a")
@example(text="entries:\n  - &x {id: v1}\n  - *x")
@example(text="entries: !!binary aGVsbG8=")
@example(text="? [a, b]\n: c\n")
@example(text="entries:\n  - {? [1, 2] : 3}\n")
@example(text="\ufeffentries: []")
@example(text="entries: [" * 200)
def test_random_text_never_raises(text):
    _check_load_result(parse_entries_text(text))


@pytest.mark.slow
@FUZZ
@given(blob=st.binary(max_size=300))
@example(blob=b"\xff\xfe\x00e\x00n")
@example(blob=b"entries:\n  - id: \xc3\x28\n")
def test_random_bytes_on_disk_never_raise(tmp_path, blob):
    path = tmp_path / "s.yaml"
    path.write_bytes(blob)
    _check_load_result(load_entries(path))
    _check_load_result(load_entries(path, cache=True))


@pytest.mark.slow
def test_unreadable_and_odd_paths(tmp_path):
    """Absent → nothing; a directory in place of the file → `entry-file-unreadable`."""
    assert load_entries(tmp_path / "absent.yaml") == LoadResult()
    (tmp_path / "dir.yaml").mkdir()
    result = load_entries(tmp_path / "dir.yaml")
    assert [d.reason for d in result.diagnostics] == [Diag.ENTRY_FILE_UNREADABLE]


@pytest.mark.slow
@FUZZ
@given(
    blob=st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200).map(lambda s: s.encode("utf-8")),
        TREES.map(lambda t: _yaml_text(t).encode()),
    )
)
@example(blob=b"entries: 5")
@example(blob=b"entries:\n  - 1\n")
@example(blob=b"- a\n- b\n")
@example(blob=b"\xff")
@example(blob=b"entries: [" * 300)
@example(blob=b"entries: []\nentries: []")
def test_strict_open_refuses_corrupt_files_with_entry_file_error_only(tmp_path, blob):
    """§1.4 strict read: a corrupt file is refused ("refusing to mutate"), nothing else."""
    path = tmp_path / "s.yaml"
    path.write_bytes(blob)
    try:
        doc = EntryDocument.read(path)
    except EntryFileError as exc:
        assert "refusing to mutate" in str(exc)
        return
    assert len(doc) == len(doc.ids()) or len(doc) >= 0
    assert path.read_bytes() == blob  # opening never writes


@pytest.mark.slow
def test_strict_open_of_a_directory_is_entry_file_error(tmp_path):
    (tmp_path / "s.yaml").mkdir()
    with pytest.raises(EntryFileError):
        EntryDocument.read(tmp_path / "s.yaml")


# --------------------------------------------------------------------------- crashes (subprocess)


def _isolated(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
    )


DEEP = 50_000


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [f"'entries: ' + '[' * {DEEP}", f"'entries:\\n' + '- ' * {DEEP} + 'x'"],
    ids=["flow-seqs", "block-seqs"],
)
def test_deeply_nested_entry_file_is_corrupt_not_a_crash(tmp_path, text):
    """A deeply nested document must come back as `entry-file-corrupt`. The C YAML
    loader behind `YAML(typ="safe")` recurses on the C stack and kills the
    interpreter (SIGSEGV) — the ticker process with every server — before any
    Python exception can be caught."""
    path = tmp_path / "s.yaml"
    proc = _isolated(
        f"""
        import json, pathlib
        from rk.store.entries import load_entries, parse_entries_text
        text = {text}
        a = parse_entries_text(text)
        pathlib.Path({str(path)!r}).write_text(text)
        b = load_entries(pathlib.Path({str(path)!r}))
        print(json.dumps([[d.reason for d in a.diagnostics], len(a.entries),
                          [d.reason for d in b.diagnostics], len(b.entries)]))
        """
    )
    assert proc.returncode == 0, f"interpreter died with {proc.returncode}: {proc.stderr[-300:]}"
    reasons_a, n_a, reasons_b, n_b = json.loads(proc.stdout)
    assert reasons_a == reasons_b == [Diag.ENTRY_FILE_CORRUPT] and n_a == n_b == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [f"'{{\"entries\": ' + '[' * {DEEP}", f"'entries:\\n' + '- ' * {DEEP}"],
    ids=["json", "yaml"],
)
def test_deeply_nested_cursor_is_a_cold_start_not_a_crash(text):
    """§3.14: an unparseable cursor means a cold start ({}). JSON nesting raises
    RecursionError (not a ValueError, so not caught); YAML nesting reaches the C
    loader, which overflows the C stack."""
    proc = _isolated(
        f"""
        from rk.store.cursor import parse_cursor
        print(repr(parse_cursor({text})))
        """
    )
    assert proc.returncode == 0, (
        f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] if proc.stderr else ''}"
    )
    assert proc.stdout.strip() == "{}"


# --------------------------------------------------------------------------- delivery log

FIELD_TEXT = st.text(max_size=24)
LINES = st.builds(
    LogLine,
    ts=st.integers(min_value=0, max_value=MAX_EPOCH),
    entry=FIELD_TEXT.filter(bool),
    target=FIELD_TEXT,
    reason=FIELD_TEXT,
    outcome=FIELD_TEXT,
)


@FUZZ
@given(line=LINES)
@example(line=LogLine(1700000000, "a3f9", "%42", "schedule", "delivered"))
@example(line=LogLine(1, 'quo"te', "back\\slash", "new\nline", "tab\there \u2028"))
def test_stored_lines_read_back_identically(line):
    """`to_json` → `parse_line` is the identity (keys in contract order, all present)."""
    text = line.to_json()
    assert "\n" not in text
    assert list(json.loads(text)) == ["ts", "entry", "target", "reason", "outcome"]
    assert parse_line(text) == line
    assert parse_line(text.encode("utf-8")) == line
    assert parse_line(text + "\r") == line


@FUZZ
@given(line=LINES, ts=st.one_of(st.integers(max_value=-1), st.integers(min_value=MAX_EPOCH + 1)))
def test_a_line_whose_ts_is_out_of_range_is_dropped_like_a_torn_one(line, ts):
    """A `ts` before 1970 or past year 9999 could not be shown or compared; it is unreadable."""
    text = LogLine(ts, line.entry, line.target, line.reason, line.outcome).to_json()
    assert parse_line(text) is None


@FUZZ
@given(junk=st.one_of(st.binary(max_size=200), st.text(max_size=200), TREES.map(json.dumps)))
@example(junk=b'{"ts":' + b"9" * 5000 + b',"entry":"a","target":"","reason":"","outcome":""}')
@example(junk='{"ts": 1e400, "entry": "a"}')
@example(junk='{"ts": true, "entry": "a"}')
@example(junk="[" * 5000)
@example(junk='{"ts": 1, "entry": "a", "outcome": 5}')
def test_parse_line_never_raises(junk):
    """§2.3: unparseable lines are skipped — parse_line returns None, never raises."""
    got = parse_line(junk)
    assert got is None or (isinstance(got, LogLine) and isinstance(got.ts, int))


@pytest.mark.slow
@FUZZ
@given(
    lines=st.lists(LINES, max_size=12),
    junk=st.lists(st.binary(max_size=60).filter(lambda b: b"\n" not in b), max_size=12),
    data=st.data(),
)
def test_read_live_keeps_every_valid_line_around_garbage_and_a_torn_tail(tmp_path, lines, junk, data):
    """Garbage lines and a last line torn by a crash are skipped; every valid line is
    read back in order; the next append starts on a fresh line (module doc of
    rk.store.delivery_log) so it is readable too and the torn fragment stays garbage."""
    tagged = [(line.to_json().encode(), line) for line in lines] + [(j, None) for j in junk]
    order = data.draw(st.permutations(range(len(tagged))))
    tagged = [tagged[i] for i in order]
    chunks = [c for c, _ in tagged]
    valid_in_file_order = [line for _, line in tagged if line is not None]
    torn_src = data.draw(LINES).to_json().encode()
    cut = data.draw(st.integers(1, len(torn_src) - 1))
    path = tmp_path / "s.log"
    path.write_bytes(b"".join(c + b"\n" for c in chunks) + torn_src[:cut])

    got = read_live(path)
    expected = [x for x in (parse_line(c) for c in chunks) if x is not None]
    assert got == expected
    it = iter(got)
    assert all(any(line == g for g in it) for line in valid_in_file_order), "a valid line was lost"

    fresh = LogLine(2_000_000_000, "new1", "%1", "schedule", "delivered")
    append_lines(path, [fresh])
    after = read_live(path)
    assert after == expected + [fresh]


@pytest.mark.slow
def test_read_live_of_an_absent_file_is_empty(tmp_path):
    assert read_live(tmp_path / "none.log") == []


# --------------------------------------------------------------------------- cursor

OBSERVATIONS = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.builds(Observation, fingerprint=st.text(max_size=40), observed_at=st.integers(-(10**12), 10**12)),
    max_size=6,
)


@FUZZ
@given(cursor=OBSERVATIONS)
def test_cursor_round_trips(cursor):
    assert parse_cursor(render_cursor(cursor)) == cursor


@FUZZ
@given(
    junk=st.one_of(
        st.text(max_size=300),
        TREES.map(json.dumps),
        TREES.map(_yaml_text),
        TREES.map(lambda t: json.dumps({"entries": t})),
        TREES.map(lambda t: _yaml_text({"entries": {"e1": t}})),
    )
)
@example(junk='{"entries": {"a": {"fingerprint": "%1=idle\\n", "observed_at": true}}}')
@example(junk='{"entries": {"a": {"observed_at": ' + "9" * 5000 + "}}}")
@example(junk="entries: {a: {fingerprint: x, observed_at: 2026-01-01}}")
@example(junk="entries: [1, 2]")
@example(junk="!!python/object/apply:os.system ['true']")
@example(junk="[" * 5000)  # RecursionError from json.loads (deeper ones: see the subprocess test)
def test_parse_cursor_never_raises(junk):
    """§3.14: absent, unparseable or odd cursors read as {} or as the well-typed
    observations only — never an exception."""
    got = parse_cursor(junk)
    assert isinstance(got, dict)
    for key, obs in got.items():
        assert isinstance(key, str)
        assert isinstance(obs.fingerprint, str)
        assert isinstance(obs.observed_at, int) and not isinstance(obs.observed_at, bool)


# --------------------------------------------------------------------------- writer → reader

NO_SPACE = st.text(min_size=1, max_size=16).filter(lambda s: s == s.strip() and not any(c.isspace() for c in s))


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    payload=st.text(max_size=60).filter(lambda t: not hidden(t)),  # what add accepts: no bidi control
    name=st.text(max_size=40),
    kind=st.sampled_from(["role", "session"]),
    value=NO_SPACE,
    respawn=st.lists(st.text(min_size=1, max_size=16), max_size=3),
)
@example(payload="tick", name="n", kind="role", value="operator", respawn=["rk", "operator", "-L", "{server}"])
@example(payload="tick", name="n", kind="session", value="claude:8c1e-ab", respawn=[])  # was corrupt for the tick
@example(payload="tick", name="n", kind="role", value="x?", respawn=[])  # was corrupt for the tick
@example(payload="tick", name="n", kind="role", value=":0", respawn=["curl", "http://h/x?q=1"])  # likewise
@example(
    payload="line one\n\x1b[31mred\x1b[0m", name="n", kind="role", value="r", respawn=[]
)  # fails: corrupt for every reader
@example(payload="one\x85two", name="n", kind="role", value="r", respawn=[])  # fails: payload altered
@example(payload="hi\u2028there", name="n", kind="role", value="r", respawn=[])
@example(payload="tick", name="caf\x85", kind="role", value="r", respawn=[])  # fails: name altered
def test_what_the_writer_saves_loads_back_identically(tmp_path, payload, name, kind, value, respawn):
    """§1.4: the verbs write the entry file; the tolerant load (the tick) and the
    strict read must read back exactly the entry that was added. Never text that
    no longer parses (the whole file goes `entry-file-corrupt`: every entry of
    the server stops) or that parses to something else (another payload typed
    into the agent). Ways it broke:

    * a `:` or `?` inside a value of the flow-style `target:` / `respawn:`
      (`session: claude:8c1e-ab`, an argv `http://h/x`) was written plain; the
      round-trip reader took it, but `load_entries` (C loader behind
      `YAML(typ="safe")`) refused the whole file (fixed in df304ef);
    * a multi-line payload with a control character (ESC of an ANSI colour) is
      written as a `|` block, where YAML forbids control characters — no reader
      takes the file;
    * a NEL (U+0085) is written raw inside a single-quoted scalar and reads
      back as a space (payload `one\\x85two` comes back `one two`)."""
    path = tmp_path / "s.yaml"
    path.unlink(missing_ok=True)
    entry = Entry(
        id="tmp",
        name=name,
        schedule=Cron(expr="*/5 * * * *", tz="Europe/Berlin"),
        target=Target(kind=kind, value=value),
        payload=payload,
        respawn=tuple(respawn),
        if_absent="respawn" if respawn else "",
        created_by=CreatedBy(at=1_750_000_000, pane="%1"),
    )
    with EntryDocument.edit(ServerFiles(path.parent, path.stem)) as doc:
        added = doc.add(entry, 50)
    text = path.read_text(encoding="utf-8")
    result = load_entries(path)
    assert result.diagnostics == [], f"{[d.detail for d in result.diagnostics]} in:\n{text}"
    assert result.entries == [added], f"read back {result.entries} from:\n{text}"
    assert EntryDocument.read(path).get(added.id) == added

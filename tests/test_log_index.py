"""The views read the delivery log fast and read exactly what they read before.

Three speed-ups, each held to the slower form it replaced, kept here as the oracle:
- a chunk of the log is parsed with one scan for the lines in rk's form
  (`rk.core.log.chunk.parse_chunk`), and the rest line by line: the same lines kept
  and the same count of bad ones as `parse_line` on each line;
- a view indexes its lines in one pass (`LogView._index`): the same indexes as the
  old `LogView.add` line after line;
- `cut(view, entry, pane)` (`rk.core.log.about`) answers every query as the view of the filtered lines
  does, also after lines are added to it (a forecast's steps) or to the whole view.
"""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.bounds import MAX_EPOCH
from rk.core.log.about import cut
from rk.core.log.chunk import parse_chunk
from rk.core.log.delivery import LogLine, LogView, Status, counts_for_rate, is_aftermath, parse_line, status_of
from rk.store.delivery_log import _parse_chunk


def line_by_line(data: bytes) -> tuple[list[LogLine], int]:
    """The parse before `parse_chunk`: the chunk decoded at once if it can be, else
    line by line, each line through `parse_line`."""
    raws: list[str] | list[bytes]
    try:
        raws = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raws = data.split(b"\n")
    out, bad = [], 0
    for raw in raws:
        if raw:
            line = parse_line(raw)
            if line is None:
                bad += 1
            else:
                out.append(line)
    return out, bad


# -- the chunk ----------------------------------------------------------------------------------

#: Field text: plain, non-ASCII, what JSON escapes (a quote, a backslash, control characters),
#: white space a line split does not split on, and a surrogate (never valid UTF-8).
field = st.text(
    alphabet=st.sampled_from(["a", "%", "1", " ", "é", "…", '"', "\\", "\t", "\x00", "\r", "\x85", "\u2028", "{", "}"]),
    max_size=5,
)
stamps = st.sampled_from([0, 1, 7, 1_800_000_000, MAX_EPOCH, MAX_EPOCH + 1, -1, 10**19 - 1, 10**19, -(10**18)])
stamp_text = st.one_of(stamps.map(str), st.sampled_from(["-0", "00", "01", "+1", "1.0", "1e3", ""]))
space = st.sampled_from(["", " ", "\r", "\t", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u3000", " \r", "\xa0"])


@st.composite
def canonical(draw: st.DrawFn) -> str:
    """A line in the form rk writes (or looks as if it did), its fields raw, white space after."""
    entry, target, reason, outcome = draw(field), draw(field), draw(field), draw(field)
    line = (
        f'{{"ts":{draw(stamp_text)},"entry":"{entry}","target":"{target}","reason":"{reason}","outcome":"{outcome}"}}'
    )
    return line + draw(space)


@st.composite
def written(draw: st.DrawFn) -> str:
    """A line as rk writes it (`to_json`: escapes where a field needs them)."""
    line = LogLine(draw(stamps), draw(field.filter(bool)), draw(field), draw(field), draw(field))
    return line.to_json() + draw(space)


@st.composite
def other(draw: st.DrawFn) -> str:
    """Valid JSON that is not rk's form: keys in another order, spaces, a field missing or of another type."""
    obj = {"ts": draw(stamps), "entry": draw(field), "target": draw(field), "outcome": draw(field)}
    if draw(st.booleans()):
        obj["reason"] = draw(st.one_of(field, st.integers(), st.none()))
    keys = draw(st.permutations(list(obj)))
    return draw(space) + json.dumps({k: obj[k] for k in keys}, ensure_ascii=draw(st.booleans())) + draw(space)


@st.composite
def broken(draw: st.DrawFn, whole: st.SearchStrategy[str]) -> str:
    """A torn line, two glued, a line after garbage, a byte order mark first."""
    line, more = draw(whole), draw(whole)
    cut = draw(st.integers(0, len(line)))
    return draw(st.sampled_from([line[:cut], line[cut:], line + more, "x" + line, "\ufeff" + line, " " + line]))


texts = st.one_of(
    canonical(), written(), other(), broken(st.one_of(canonical(), written())), st.just(""), space, st.text(max_size=8)
)


@st.composite
def line_bytes(draw: st.DrawFn) -> bytes:
    """One line's bytes: UTF-8, or with a byte that is not (in a field, or alone)."""
    raw = draw(texts).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"])) + raw[at:]
    return raw


chunks = st.builds(
    lambda lines, end: b"\n".join(lines) + end,
    st.lists(line_bytes(), max_size=12),
    st.sampled_from([b"", b"\n", b"\n\n", b"\r\n"]),
)


@settings(max_examples=600, deadline=None)
@given(chunks)
def test_a_chunk_reads_as_line_by_line(data):
    assert parse_chunk(data) == line_by_line(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(written(), min_size=1, max_size=30), st.lists(st.tuples(st.integers(0, 29), line_bytes()), max_size=3))
def test_a_log_of_rks_lines_with_a_few_others_reads_as_line_by_line(lines, others):
    """Mostly rk's own lines, as a real log is, with a few others anywhere among them."""
    raws = [line.encode() for line in lines]
    for at, raw in others:
        raws.insert(at, raw)
    data = b"\n".join(raws) + b"\n"
    bad = [3]
    got = _parse_chunk(data, bad)
    want, want_bad = line_by_line(data)
    assert (got, bad) == (want, [3 + want_bad])


def test_each_kind_of_line_is_read_or_counted():
    """The examples a reader checks by eye: what is read, what is counted bad, what is neither."""
    ok = LogLine(5, "e", "%1", "schedule", "delivered")
    data = b"\n".join(
        [
            ok.to_json().encode(),
            b"",  # blank: neither read nor bad
            ok.to_json().encode() + b"\r",  # a CR LF file
            b'{"ts":-0,"entry":"e","target":"","reason":"","outcome":"x"}',  # -0 is 0
            b'{"ts":-1,"entry":"e","target":"","reason":"","outcome":"x"}',  # bad: before 1970
            b'{"ts":5,"entry":"","target":"","reason":"","outcome":"x"}',  # bad: no entry
            b'{"entry":"e","ts":6,"outcome":"x"}',  # another key order: read
            b'{"ts":7,"entry":"e\xff","target":"","reason":"","outcome":"x"}',  # bad: not UTF-8
            b'{"ts":8,"entry":"e","target":"","reason":"","outcome":"a \\"quoted\\" word"}',  # an escape: read
            ok.to_json().encode()[:30],  # bad: torn
            b"   ",  # bad: white space only
        ]
    )
    lines, bad = parse_chunk(data)
    assert [line.ts for line in lines] == [5, 5, 0, 6, 8]
    assert lines[4].outcome == 'a "quoted" word'
    assert bad == 5
    assert (lines, bad) == line_by_line(data)


def test_a_line_made_by_the_scan_is_the_line_its_class_makes():
    """The scan sets a `LogLine`'s slots itself (no `__init__`): that holds only while the
    class has these five fields and nothing of its own to run when made."""
    assert [f.name for f in fields(LogLine)] == ["ts", "entry", "target", "reason", "outcome"]
    assert not hasattr(LogLine, "__post_init__")
    made = LogLine(5, "e", "%1", "schedule", "delivered")
    (got,), bad = parse_chunk(made.to_json().encode())
    assert (got, hash(got), repr(got), bad) == (made, hash(made), repr(made), 0)
    with pytest.raises(FrozenInstanceError):
        got.ts = 6  # type: ignore[misc]


# -- the view's indexes -------------------------------------------------------------------------

OUTCOMES = (
    *(str(status) for status in Status),
    "failed: paste: no such pane",
    "skipped-busy: working",
    "respawned (kickoff undelivered: x)",
    "delivered [signal x]",
    "no-such-word",
    "",
)
log_lines = st.builds(
    LogLine,
    ts=st.integers(0, 10_000),
    entry=st.sampled_from(("a", "b", "c")),
    target=st.sampled_from(("%0", "%1", "")),
    reason=st.sampled_from(("schedule", "wake", "manual")),
    outcome=st.sampled_from(OUTCOMES),
)
logs = st.lists(log_lines, max_size=30)
SLOTS = ("_by_entry", "_aftermath", "_counted_by_target", "_counted_by_entry", "_delivered_by_entry")


def added_one_by_one(lines: list[LogLine]) -> dict[str, object]:
    """The indexes as the old `LogView.add` made them, a line at a time."""
    by_entry: dict[str, list[LogLine]] = {}
    aftermath: dict[str, list[LogLine]] = {}
    by_target: dict[str, list[int]] = {}
    counted: dict[str, list[int]] = {}
    delivered: dict[str, list[int]] = {}
    for line in lines:
        if is_aftermath(line.outcome):
            aftermath.setdefault(line.entry, []).append(line)
            continue
        by_entry.setdefault(line.entry, []).append(line)
        if counts_for_rate(line.outcome):
            by_target.setdefault(line.target, []).append(line.ts)
            counted.setdefault(line.entry, []).append(line.ts)
            if status_of(line.outcome) == Status.DELIVERED:
                delivered.setdefault(line.entry, []).append(line.ts)
    return dict(zip(SLOTS, (by_entry, aftermath, by_target, counted, delivered)))


def indexes(view: LogView) -> dict[str, object]:
    return {slot: getattr(view, slot) for slot in SLOTS}


@settings(max_examples=300, deadline=None)
@given(logs, logs)
def test_a_view_indexes_its_lines_as_add_did_one_by_one(first, then):
    view = LogView(first)
    for line in then:
        view.add(line)
    assert indexes(view) == added_one_by_one(first + then)
    assert view.lines == tuple(first + then) and len(view) == len(first + then)


# -- about --------------------------------------------------------------------------------------

ENTRIES = ("a", "b", "c", "z")
TARGETS = ("%0", "%1", "", "%9")


def answers(view: LogView) -> dict[str, object]:
    """Every query of a view, for every entry and target."""
    out: dict[str, object] = {"lines": view.lines, "len": len(view)}
    for e in ENTRIES:
        out[e] = (
            list(view.own(e)),
            list(view.aftermath(e)),
            view.newest(e),
            view.anchor(e),
            view.schedule_history(e),
            view.last_delivered(e),
            view.last_delivered(e, "schedule"),
            list(view.delivered_stamps(e)),
            view.missed_since_delivered(e),
            view.orphaned_since(e, 5),
            [view.rate_count(now, entry=e) for now in (0, 3600, 5000, 20_000)],
        )
    for t in TARGETS:
        out[f"target {t}"] = [view.rate_count(now, target=t) for now in (0, 3600, 5000, 20_000)]
    return out


def filtered(lines: tuple[LogLine, ...] | list[LogLine], entry: str, pane: str | None) -> LogView:
    return LogView(line for line in lines if line.entry == entry or (pane and line.target == pane))


@settings(max_examples=200, deadline=None)
@given(logs, logs, logs)
def test_about_answers_as_the_view_of_the_filtered_lines(before, steps, later):
    """Cut from the whole view; then stepped (lines added to the cut, as a forecast does);
    then the whole view grows: the cut keeps what it was cut from, a new cut sees the growth."""
    view = LogView(before)
    for stage in ("cut", "grown"):
        for entry in ENTRIES:
            for pane in (None, *TARGETS):
                sub = cut(view, entry, pane)
                ref = filtered(view.lines, entry, pane)
                assert answers(sub) == answers(ref), (stage, entry, pane)
                for line in steps:
                    sub.add(line)
                    ref.add(line)
                assert answers(sub) == answers(ref), (stage, entry, pane, "stepped")
        for line in later:
            view.add(line)


@settings(max_examples=200, deadline=None)
@given(logs, logs)
def test_a_cut_keeps_the_lines_it_was_cut_from(before, later):
    """Its lines are read only when asked for: still those of the view when it was cut."""
    view = LogView(before)
    subs = {(entry, pane): cut(view, entry, pane) for entry in ENTRIES for pane in (None, *TARGETS)}
    for line in later:
        view.add(line)
    for (entry, pane), sub in subs.items():
        assert sub.lines == filtered(before, entry, pane).lines
        assert answers(sub) == answers(filtered(before, entry, pane))


def test_a_cut_of_a_cut():
    view = LogView([LogLine(1, "a", "%0", "schedule", "delivered"), LogLine(2, "b", "%0", "schedule", "failed: x")])
    sub = cut(view, "a", "%0")
    sub.add(LogLine(3, "c", "%1", "wake", "delivered"))
    assert answers(cut(sub, "c", "%1")) == answers(filtered(sub.lines, "c", "%1"))
    assert answers(cut(sub, "b", None)) == answers(filtered(sub.lines, "b", None))

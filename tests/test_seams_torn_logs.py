"""A crash can tear the last line of the delivery log or of the state journal at
any byte. Cut a valid line at EACH byte boundary, append a valid line after it,
and read: the torn part is skipped and the line after it is never lost."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.log import states
from rk.core.log.delivery import LogLine
from rk.store import state_journal
from rk.store.delivery_log import LiveLogCache, append_lines, read_live

T0 = 1_800_000_000

#: Multi-byte characters in the outcome, so some cuts fall inside a UTF-8 sequence.
TORN = LogLine(T0, "ab12", "%3", "schedule", "failed: paste — écran «fermé» ✓")
NEXT = LogLine(T0 + 60, "cd34", "%4", "wake", "delivered")
BEFORE = LogLine(T0 - 60, "ab12", "%3", "schedule", "delivered")


def _cuts(line: LogLine) -> list[bytes]:
    """Every proper prefix of the line as written (its bytes, without the newline)."""
    data = line.to_json().encode()
    return [data[:k] for k in range(len(data))]


def test_a_delivery_line_torn_at_each_byte_is_skipped_and_the_next_append_is_kept(tmp_path):
    path = tmp_path / "s.log"
    for cut in _cuts(TORN):
        path.unlink(missing_ok=True)
        append_lines(path, [BEFORE])
        with open(path, "ab") as fh:
            fh.write(cut)
        append_lines(path, [NEXT])
        bad = [0]
        assert read_live(path, bad) == [BEFORE, NEXT], cut
        assert bad[0] == (1 if cut else 0), cut
        assert path.read_bytes().endswith(b"\n" + NEXT.to_json().encode() + b"\n")


def test_the_whole_line_without_its_newline_is_read_and_the_next_is_not_glued(tmp_path):
    path = tmp_path / "s.log"
    with open(path, "wb") as fh:
        fh.write(TORN.to_json().encode())
    append_lines(path, [NEXT])
    assert read_live(path) == [TORN, NEXT]


def test_the_ticker_cache_waits_on_a_torn_tail_and_reads_the_next_line_once(tmp_path):
    """The cache parses only whole lines: a torn tail waits; once the next append
    starts a fresh line, the wreck is skipped and the new line read exactly once."""
    path = tmp_path / "s.log"
    for cut in _cuts(TORN):
        path.unlink(missing_ok=True)
        cache = LiveLogCache()
        append_lines(path, [BEFORE])
        assert cache.read(path) == [BEFORE]
        with open(path, "ab") as fh:
            fh.write(cut)
        assert cache.read(path) == [BEFORE], cut
        append_lines(path, [NEXT])
        assert cache.read(path) == [BEFORE, NEXT], cut
        assert cache.read(path) == [BEFORE, NEXT], cut
        assert cache.malformed[str(path)] == (1 if cut else 0), cut


_field = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    entry=st.from_regex(r"[a-z0-9]{4}", fullmatch=True),
    outcome=_field.map(lambda s: "failed: " + s),
    target=st.sampled_from(["", "%1", "%12"]),
    cut=st.floats(0, 1, exclude_max=True),
)
def test_any_delivery_line_cut_anywhere_loses_nothing_after_it(tmp_path_factory, entry, outcome, target, cut):
    torn = LogLine(T0, entry, target, "schedule", outcome)
    data = torn.to_json().encode()
    path = tmp_path_factory.mktemp("torn") / "s.log"
    with open(path, "wb") as fh:
        fh.write(data[: int(cut * len(data))])
    append_lines(path, [NEXT])
    assert read_live(path)[-1:] == [NEXT]
    assert NEXT in LiveLogCache().read(path)


# -- the state journal ---------------------------------------------------------

A = states.render(T0, "%3", "active", "", "hook", "claude")
B = states.render(T0 + 5, "%3", "idle", "ok", "hook", "claude")


def _fields(line: bytes) -> dict[str, object]:
    parsed = states.parse(line)
    assert parsed is not None
    return parsed


def test_a_journal_line_torn_at_each_byte_is_skipped_by_the_reader(tmp_path):
    """A torn line followed by a line of its own: `read_all` keeps the whole lines
    on both sides of it."""
    directory, slug = str(tmp_path), "srv"
    path = state_journal.journal_path(directory, slug)
    before = states.render(T0 - 5, "%3", "waiting", "", "hook", "claude")
    for k in range(len(A) - 1):  # A without its newline and shorter
        with open(path, "wb") as fh:
            fh.write(before + A[:k] + b"\n" + B)
        lines, (_inode, size) = state_journal.read_all(directory, slug)
        assert lines == [_fields(before), _fields(B)], k
        assert size == os.path.getsize(path)


def test_a_journal_follower_holds_a_torn_tail_until_its_line_is_whole(tmp_path):
    """`rk events -f` polls while the hook writes: a part of a line read mid-write
    is held back, not skipped, and the line is yielded once when whole."""
    directory, slug = str(tmp_path), "srv"
    path = state_journal.journal_path(directory, slug)
    for k in range(len(A)):
        with open(path, "wb") as fh:
            fh.write(b"")
        tail = state_journal.Tail(directory, slug, state_journal.mark(path))
        with open(path, "ab") as fh:
            fh.write(A[:k])
        assert tail.poll() == [], k
        with open(path, "ab") as fh:
            fh.write(A[k:] + B)
        assert tail.poll() == [_fields(A), _fields(B)], k
        assert tail.poll() == [], k

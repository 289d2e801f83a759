"""The delivery log: line format, queries, appends, torn lines, rotation and archives."""

from __future__ import annotations

import stat

from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.log.delivery import RATE_WINDOW, LogLine, LogView, counts_for_rate, lines_to_keep, parse_line, status_of
from rk.core.schedule import ladder
from rk.store.delivery_log import append_lines, archives, read_history, read_live, rotate_if_needed


def L(ts, entry="e1", outcome="delivered", target="%1", reason="schedule"):
    return LogLine(ts, entry, target, reason, outcome)


# ---------------------------------------------------------------- format


def test_line_is_compact_json_with_keys_in_contract_order():
    line = L(1700000000, "a3f9", "failed: echo not seen", "%42")
    assert (
        line.to_json()
        == '{"ts":1700000000,"entry":"a3f9","target":"%42","reason":"schedule","outcome":"failed: echo not seen"}'
    )
    assert parse_line(line.to_json()) == line


def test_lines_from_other_writers_parse_too():
    # Go's encoder escapes <, >, & and may reorder nothing but escape unicode
    go = (
        '{"ts":5,"entry":"ab12","target":"","reason":"wake",'
        '"outcome":"respawn-failed: exit status 1: \\u003cboom\\u003e"}'
    )
    assert parse_line(go) == LogLine(5, "ab12", "", "wake", "respawn-failed: exit status 1: <boom>")
    assert parse_line('{"outcome":"missed","ts":7,"entry":"x"}') == LogLine(7, "x", "", "", "missed")


def test_malformed_lines_are_skipped():
    for bad in [
        "",
        "   ",
        "not json",
        "[1,2]",
        '{"ts":"7","entry":"x"}',
        '{"ts":true,"entry":"x"}',
        '{"ts":7}',
        '{"ts":7,"entry":5}',
        '{"ts":7,"entry":"x","outcome":null}',
        '{"ts":1,"entry":"x"',
        b"\xff\xfe",
    ]:
        assert parse_line(bad) is None, bad


def test_status_words():
    assert status_of("failed: agent-state read: boom") == "failed"
    assert status_of("respawned (kickoff undelivered: parked)") == "respawned"
    assert status_of("skipped-busy: active") == "skipped-busy"
    assert [
        counts_for_rate(o)
        for o in (
            "delivered",
            "failed: x",
            "notified-absent",
            "respawned (kickoff undelivered: x)",
            "respawn-failed: y",
            "rate-capped",
            "skipped-absent",
            "missed",
            "held-expired: active",
            "skipped-busy: waiting",
            "rescheduled",
            "no-deliverer",
            "expired-orphan",
        )
    ] == [True] * 5 + [False] * 8


# ---------------------------------------------------------------- queries


def test_newest_and_schedule_history_cut_at_own_rescheduled():
    view = LogView(
        [
            L(1),
            L(2, outcome="rescheduled", reason="edit", target=""),
            L(3),
            L(4, entry="zz", outcome="rescheduled"),
            L(5),
        ]
    )
    assert view.newest("e1") == L(5)
    assert view.schedule_history("e1") == [3, 5]
    assert view.newest("nobody") is None and view.schedule_history("nobody") == []


def test_rate_count_window_is_inclusive_and_keyed_by_pane_or_entry():
    now = 10_000
    view = LogView(
        [
            L(now - RATE_WINDOW - 1),
            L(now - RATE_WINDOW),
            L(now - 5, entry="e2"),
            L(now - 4, outcome="skipped-busy: active"),
            L(now - 3, target="", outcome="notified-absent"),
        ]
    )
    assert view.rate_count(now, target="%1") == 2  # boundary line counts, other entries' lines count, skips do not
    assert view.rate_count(now, entry="e1") == 2  # the boundary line and the absent disposition


def test_orphaned_since():
    view = LogView(
        [
            L(10, outcome="delivered"),
            L(20, outcome="skipped-absent", target=""),
            L(30, outcome="notified-absent", target=""),
            L(35, outcome="rescheduled", reason="edit", target=""),
        ]
    )
    assert view.orphaned_since("e1", created_at=1) == 20  # oldest line after the newest delivery
    assert view.orphaned_since("new", created_at=99) == 99  # no lines: created_by.at
    assert LogView([L(5, outcome="rescheduled")]).orphaned_since("e1", 1) == 0
    assert LogView([L(5), L(6, outcome="respawned")]).orphaned_since("e1", 1) == 0
    assert LogView([L(5, outcome="failed: x"), L(6, outcome="rate-capped")]).orphaned_since("e1", 1) == 5


# ---------------------------------------------------------------- file


def test_append_creates_a_private_file_and_one_line_per_outcome(tmp_path):
    path = tmp_path / "s.log"
    append_lines(path, [L(1), L(2)])
    append_lines(path, [L(3)])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().count("\n") == 3
    assert read_live(path) == [L(1), L(2), L(3)]


def test_a_torn_last_line_is_ignored_and_the_next_append_is_not_glued_to_it(tmp_path):
    path = tmp_path / "s.log"
    append_lines(path, [L(1)])
    with open(path, "a") as fh:
        fh.write('{"ts":2,"entry":"e1","tar')  # crash mid-write
    assert read_live(path) == [L(1)]
    append_lines(path, [L(3)])
    assert read_live(path) == [L(1), L(3)]


def test_absent_log_reads_empty(tmp_path):
    assert read_live(tmp_path / "none.log") == []
    assert read_history(tmp_path / "none.log") == []


def _fill(path, n, start=0, entries=("e1", "e2", "e3")):
    append_lines(path, [L(start + i * 60, entries[i % len(entries)]) for i in range(n)])


def test_rotation_moves_old_lines_into_numbered_archives_and_keeps_what_queries_need(tmp_path):
    path = tmp_path / "s.log"
    _fill(path, 3000)
    now = 3000 * 60
    before = LogView(read_live(path))
    assert rotate_if_needed(path, now, {}, max_bytes=64 * 1024, keep_archives=0)
    after = LogView(read_live(path))
    assert path.stat().st_size < 64 * 1024
    assert [p.name for p in archives(path)] == ["s.log.1"]
    for entry in ("e1", "e2", "e3"):
        assert after.newest(entry) == before.newest(entry)
        assert after.rate_count(now, target="%1") == before.rate_count(now, target="%1")
    # history is whole: archives + live, merged, give back every line once, in order
    assert read_history(path) == list(before.lines)


def test_rotation_retention_shifts_and_drops_the_oldest(tmp_path):
    path = tmp_path / "s.log"
    for round_ in range(4):
        _fill(path, 2000, start=round_ * 2000 * 60)
        rotate_if_needed(path, (round_ + 1) * 2000 * 60, {}, max_bytes=32 * 1024, keep_archives=2)
    assert [p.name for p in archives(path)] == ["s.log.2", "s.log.1"]
    history = read_history(path)
    assert history == sorted(history, key=lambda line: line.ts)


def test_rotation_that_would_free_little_is_skipped(tmp_path):
    path = tmp_path / "s.log"
    now = 1_000_000
    append_lines(path, [L(now - i) for i in range(2000)])  # all inside the rate window: all needed
    assert not rotate_if_needed(path, now, {}, max_bytes=16 * 1024, keep_archives=0)
    assert archives(path) == []


def test_malformed_lines_move_to_the_archive_not_lost(tmp_path):
    path = tmp_path / "s.log"
    _fill(path, 1500)
    with open(path, "a") as fh:
        fh.write("garbage line\n")
    _fill(path, 1500, start=1500 * 60)
    rotate_if_needed(path, 3000 * 60, {}, max_bytes=32 * 1024, keep_archives=0)
    text = "".join(p.read_text() for p in archives(path))
    assert "garbage line" in text


# ---------------------------------------------------------------- rotation keeps derivations (property)

outcomes = st.sampled_from(
    [
        "delivered",
        "delivered",
        "failed: x",
        "skipped-busy: active",
        "notified-absent",
        "skipped-absent",
        "rescheduled",
        "missed",
        "rate-capped",
        "respawned",
        "held-quiet",
        "skipped-paused",
    ]
)


@st.composite
def histories(draw):
    entries = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True))
    n = draw(st.integers(10, 300))
    ts = 1_000_000
    lines = []
    for _ in range(n):
        ts += draw(st.integers(0, 2400))
        lines.append(
            LogLine(
                ts,
                draw(st.sampled_from(entries)),
                draw(st.sampled_from(["%1", "%2", ""])),
                draw(st.sampled_from(["schedule", "schedule", "wake", "manual"])),
                draw(outcomes),
            )
        )
    backoff = {e: (lo, max(lo, lo * draw(st.integers(1, 40)))) for e in entries for lo in [draw(st.integers(1, 600))]}
    return lines, backoff, ts + draw(st.integers(0, 4000))


@settings(max_examples=150, deadline=None)
@given(histories())
def test_the_kept_lines_answer_every_query_as_the_whole_log_does(case):
    lines, backoff, now = case
    whole = LogView(lines)
    kept = LogView([lines[i] for i in lines_to_keep(lines, now, backoff)])
    for entry, (lo, hi) in backoff.items():
        assert kept.newest(entry) == whole.newest(entry)
        assert kept.anchor(entry) == whole.anchor(entry)  # every's and cron's anchor
        assert kept.orphaned_since(entry, 1) == whole.orphaned_since(entry, 1)
        assert kept.last_delivered(entry) == whole.last_delivered(entry)  # {last_delivered}
        assert kept.last_delivered(entry, "schedule") == whole.last_delivered(entry, "schedule")  # the watermark
        assert kept.missed_since_delivered(entry) == whole.missed_since_delivered(entry)  # {missed}
        for target in ("%1", "%2"):
            assert kept.rate_count(now, target=target) == whole.rate_count(now, target=target)
        assert kept.rate_count(now, entry=entry) == whole.rate_count(now, entry=entry)
        full, part = whole.schedule_history(entry), kept.schedule_history(entry)
        if full:
            epoch = full[-1] + 10  # attributed: the walk decides
            assert ladder.join_anchor(epoch, part, lo, hi).next_fire(lo, hi) == ladder.join_anchor(
                epoch, full, lo, hi
            ).next_fire(lo, hi)
        else:
            assert part == []


def test_the_live_log_cache_reads_only_what_was_appended_and_notices_rotation(tmp_path):
    from rk.store.delivery_log import LiveLogCache

    path = tmp_path / "s.log"
    cache = LiveLogCache()
    assert cache.read(path) == []
    append_lines(path, [L(1), L(2)])
    assert cache.read(path) == [L(1), L(2)]
    append_lines(path, [L(3)])
    with open(path, "a") as fh:
        fh.write('{"ts":4,"entry":"e1"')  # a line still being written
    assert cache.read(path) == [L(1), L(2), L(3)]
    with open(path, "a") as fh:
        fh.write(',"target":"%1","reason":"schedule","outcome":"delivered"}\n')
    assert cache.read(path) == [L(1), L(2), L(3), L(4)]
    _fill(path, 3000, start=100)
    rotate_if_needed(path, 3100 * 60, {}, max_bytes=32 * 1024, keep_archives=0)  # a new inode
    assert cache.read(path) == read_live(path)
    path.write_text(L(9).to_json() + "\n")  # rewritten in place, shorter
    assert cache.read(path) == [L(9)]
    path.write_text(L(8).to_json() + "\n" + L(7).to_json() + "\n")  # same inode, longer, different bytes
    assert cache.read(path) == [L(8), L(7)]

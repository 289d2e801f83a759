"""The live log is decoded at once (rk.store.delivery_log._parse_chunk), and a line
that is not UTF-8 still costs only itself: the lines around it are read, it is
counted as malformed, and what is read is what a line-by-line read gives."""

from __future__ import annotations

from rk.core.log.delivery import LogLine, parse_line
from rk.store.delivery_log import read_live

LINES = [LogLine(1_800_000_000 + i, f"e{i % 3}", "%1", "schedule", "delivered") for i in range(5)]


def test_a_line_that_is_not_utf8_is_skipped_alone(tmp_path):
    body = [line.to_json().encode() for line in LINES]
    body.insert(2, b'{"ts":1800000000,"entry":"\xff\xfe","target":"","reason":"","outcome":"x"}')
    body.insert(4, '{"ts":1800000009,"entry":"é…","target":"%2","reason":"r","outcome":"delivered"}'.encode())
    path = tmp_path / "s.log"
    path.write_bytes(b"\n".join(body) + b"\n")
    bad = [0]
    got = read_live(path, bad)
    assert bad == [1]
    assert got == [line for raw in body if (line := parse_line(raw)) is not None]
    assert len(got) == 6 and got[3].entry == "é…"


def test_a_utf8_log_reads_as_line_by_line(tmp_path):
    body = "".join(line.to_json() + "\n" for line in LINES) + '{"ts":5,"entry":"ü","outcome":"x"}\nnot json\n'
    path = tmp_path / "s.log"
    path.write_text(body, encoding="utf-8")
    bad = [0]
    assert read_live(path, bad) == [*LINES, LogLine(5, "ü", "", "", "x")]
    assert bad == [1]

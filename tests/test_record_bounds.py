"""A session record is read in bounded memory: a line longer than the bound is
skipped as it streams past (never held whole), and the lines around it still count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rk.core.cost import usage
from rk.store.transcripts import CHUNK, MAX_LINE, Transcripts

PROMPT = {"type": "user", "timestamp": "2026-12-01T10:00:00Z", "message": {"content": "status?"}}
REPLY = {
    "type": "assistant",
    "timestamp": "2026-12-01T10:00:05Z",
    "message": {"id": "m1", "model": "claude-x", "usage": {"input_tokens": 7, "output_tokens": 3}},
}


def _line(obj: dict) -> bytes:
    return json.dumps(obj).encode() + b"\n"


@pytest.mark.shell
def test_a_line_past_the_bound_is_skipped_and_never_held(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line(PROMPT))
    cache = Transcripts(max_line=1000)
    key = ("claude", str(path))
    assert len(cache.records(*key)[0] or []) == 1
    for _ in range(6):  # the record grows without a newline, tick after tick
        with path.open("ab") as f:
            f.write(b'{"pad": "' + b"x" * 400)
        cache.records(*key)
        assert cache._files[key].held <= 1000
    with path.open("ab") as f:
        f.write(b'"}\n' + _line(REPLY))
    records, why = cache.records(*key)
    assert why == "" and [t.tokens.total for t in usage.turns(records or [])] == [10]
    assert cache.skipped(*key) == 1
    # a line at the bound is still read; one byte more is not
    edge = tmp_path / "edge.jsonl"
    reply = _line(REPLY)
    edge.write_bytes(_line(PROMPT) + reply)
    assert len(Transcripts(max_line=len(reply) - 1).records("claude", str(edge))[0] or []) == 2
    assert len(Transcripts(max_line=len(reply) - 2).records("claude", str(edge))[0] or []) == 1


PROBE = """
import os, resource, sys
from rk.store.transcripts import Transcripts
path, mb = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:
    f.write(b'{"type": "user", "timestamp": "2026-12-01T10:00:00Z", "message": {"content": "hi"}}\\n')
cache = Transcripts()
cache.records("claude", path)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
block = b"x" * (1 << 20)
with open(path, "ab") as f:
    for _ in range(mb):
        f.write(block)
records, why = cache.records("claude", path)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024, len(records or []))
"""


@pytest.mark.slow
def test_a_160_mb_record_without_a_newline_costs_the_reader_no_more_than_its_bound(tmp_path):
    """The ticker's cache reads what a record appended since its last tick: 160 MB
    appended without a newline once grew the reader past 300 MB; now its peak grows
    by less than three times the line bound."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "t.jsonl"), "160"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert proc.returncode == 0, proc.stderr
    grown_mb, records = map(int, proc.stdout.split())
    assert records == 1
    assert grown_mb < 3 * (MAX_LINE + CHUNK) >> 20, f"peak memory grew by {grown_mb} MB"

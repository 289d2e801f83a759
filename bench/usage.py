"""What a budget costs the ticker: reading an agent's session record each tick.

A Claude Code transcript of --turns turns (the real format of
tests/fixtures/usage, each turn padded to --pad bytes of assistant text, as
real transcripts carry tool output), then one more turn appended between two
reads. Times, median of --runs:

- the first read (bounded to the newest `MAX_READ` bytes), as a one-shot `rk cron tick` pays;
- a read of the same file after one turn was appended, through the ticker's
  offset cache (`Transcripts`), what every later tick pays.

Target: the cached read costs under a hundredth of the first.

Usage: python bench/usage.py [--runs N] [--turns N] [--pad BYTES]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _util import met  # noqa: E402

from rk.core.cost import usage  # noqa: E402
from rk.store.transcripts import Transcripts  # noqa: E402

TARGET_RATIO = 0.01
FIXTURE = ROOT / "tests" / "fixtures" / "usage" / "claude-transcript.jsonl"


def _turn_lines(pad: int) -> bytes:
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    keep = [o for o in lines if o.get("type") in ("user", "assistant")][:2]
    keep[1]["message"]["content"][0]["text"] = "x" * pad
    return b"".join(json.dumps(o).encode() + b"\n" for o in keep)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--pad", type=int, default=8000)
    parser.add_argument("--quick", action="store_true", help="a short round (CI)")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.turns = 3, 1500
    turn = _turn_lines(args.pad)
    first, cached = [], []
    with tempfile.TemporaryDirectory(prefix="rk-bench-usage-") as tmp:
        path = Path(tmp) / "t.jsonl"
        for _ in range(args.runs):
            path.write_bytes(turn * args.turns)
            cache = Transcripts()
            t0 = time.perf_counter()
            records, _ = cache.records("claude", str(path))
            first.append(time.perf_counter() - t0)
            with path.open("ab") as f:
                f.write(turn)
            t0 = time.perf_counter()
            records, _ = cache.records("claude", str(path))
            cached.append(time.perf_counter() - t0)
            assert records is not None and len(usage.turns(records)) >= 1
    size = len(turn) * args.turns
    a, b = statistics.median(first), statistics.median(cached)
    print(f"record: {args.turns} turns, {size / 1e6:.1f} MB")
    print(f"first read (bounded to {min(size, 32 << 20) / 1e6:.1f} MB): {a * 1000:.1f} ms")
    print(f"read after one more turn (offset cache): {b * 1000:.2f} ms")
    ratio = b / a if a else 0.0
    print(f"ratio cached/first: {ratio:.4f} (target < {TARGET_RATIO}: {met(ratio < TARGET_RATIO)})")
    return 0  # measured, not asserted: one noisy round on a busy machine must not fail a build


if __name__ == "__main__":
    sys.exit(main())

"""Tokens per fire with and without `--fresh clear`, on the real Claude Code against the mock API.

One heartbeat entry (`--every 1m`, ticked a minute apart) fires N times into a Claude
Code session with rk's hooks (the pinned CLI from the real-agent suite's cache, installed
by npm on first use); then the same into a fresh session with `--fresh clear-always` (the
-always: the measurement is of the tokens, not of the human rule, and ticks a minute
apart on rk's clock are not the hooks' clock). The mock reports each request's own size,
the prefix it shares with the previous request as cache reads (`usage: "measured"`);
the figures are read back from Claude's transcripts as rk reads them.

Printed: input + cache-read tokens per fire, mean and last, each way.

Usage: python bench/fresh.py [--fires N] [--reply-chars N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests", ROOT / "tests" / "agents"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fires", type=int, default=20)
    parser.add_argument("--reply-chars", type=int, default=0, help="the model's answer's length (0: the mock's line)")
    args = parser.parse_args()

    import harness
    from agents.conftest import Rig
    from agents.fresh_measure import fires

    bin_dir = harness.ensure_agents()
    figures = {}
    with tempfile.TemporaryDirectory(prefix="rk-bench-fresh-") as tmp:
        for label, fresh in (("without --fresh", ""), ("with --fresh clear", "clear-always")):
            rig = Rig("claude", Path(tmp) / (fresh or "plain"), bin_dir)
            try:
                figures[label] = fires(rig, fresh, args.fires, reply=("All green. " * 400)[: args.reply_chars])
            finally:
                rig.close()
            print(figures[label].line(label), flush=True)
    plain, fresh = figures["without --fresh"], figures["with --fresh clear"]
    print(f"saved per fire: mean {1 - fresh.mean / plain.mean:.0%}, last {1 - fresh.last / plain.last:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

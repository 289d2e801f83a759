"""What `rk cron log -n 20` costs over a long history, against a short one.

Two state directories: one whose log holds 1,000 lines (the live segment
alone), one whose history holds 1,000,000 archived lines as the tick's
rotation leaves them (archives of about `log_max_bytes`, every one kept, the
default, their mtimes scrambled as a restore from backup leaves them: the read
goes by the archives' names) plus the same live segment. Times, median of --runs after a warm-up:

- `read_newest(log, 20)`, the read behind the command, in this process;
- `rk cron log -n 20` as a whole process (what a user waits for);
- for contrast, `read_history`, the whole merged history.

Target: the long history costs less than 1.5 times the short one.

Usage: python bench/log.py [--runs N] [--lines N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rk.core.log.delivery import LogLine  # noqa: E402
from rk.store.config import Settings  # noqa: E402
from rk.store.delivery_log import archive_path, read_history, read_newest  # noqa: E402

TARGET_RATIO = 1.5
SLUG = "bench"


def write_log(state: Path, live_lines: int, archived_lines: int) -> Path:
    """A live segment of `live_lines` and archives holding `archived_lines`, newest in .1."""
    state.mkdir(mode=0o700, parents=True)
    log = state / f"{SLUG}.log"
    ids = [f"e{n:03d}" for n in range(50)]
    t = 1_700_000_000
    per_archive = max(1, Settings().log_max_bytes // 100)  # ~100 bytes a line
    numbers = (archived_lines + per_archive - 1) // per_archive
    for k in range(numbers, 0, -1):  # oldest archive has the highest number
        count = min(per_archive, archived_lines - (numbers - k) * per_archive)
        text = []
        for i in range(count):
            t += 30
            text.append(LogLine(t, ids[i % 50], "%1", "schedule", "delivered").to_json())
        archive_path(log, k).write_text("\n".join(text) + "\n")
        scrambled = 1_000_000_000 + (k * 7_919_993) % 2_000_000_000  # as a restore or a copy leaves them
        os.utime(archive_path(log, k), (scrambled, scrambled))  # `read_newest` goes by name, not mtime
    text = []
    for i in range(live_lines):
        t += 30
        text.append(LogLine(t, ids[i % 50], "%1", "schedule", "delivered").to_json())
    log.write_text("\n".join(text) + "\n")
    (state / f"{SLUG}.yaml").write_text("entries: []\n")
    return log


def median_seconds(fn, runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--lines", type=int, default=1_000_000, help="archived lines in the long history")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rk-bench-log-") as tmp:
        short = write_log(Path(tmp) / "short", 1000, 0)
        long = write_log(Path(tmp) / "long", 1000, args.lines)
        archives = len(list(long.parent.glob(f"{SLUG}.log.*")))
        print(f"short: 1,000 live lines; long: the same live lines + {args.lines:,} archived in {archives} archives")

        def cli(log: Path):
            env = {"RK_STATE_DIR": str(log.parent), "PATH": "/usr/bin:/bin", "HOME": tmp}
            return lambda: subprocess.run(
                [sys.executable, "-m", "rk", "cron", "log", "-n", "20", "-L", SLUG],
                env=env,
                cwd=ROOT,
                capture_output=True,
                check=True,
            )

        rows = [
            ("read_newest(20)", lambda: read_newest(short, 20), lambda: read_newest(long, 20), args.runs),
            ("rk cron log -n 20", cli(short), cli(long), args.runs),
            ("read_history (all)", lambda: read_history(short), lambda: read_history(long), 3),
        ]
        for label, a, b, runs in rows:
            ta, tb = median_seconds(a, runs), median_seconds(b, runs)
            ratio = tb / ta
            verdict = (
                ""
                if label.startswith("read_history")
                else f"  (target < {TARGET_RATIO}: {'MET' if ratio < TARGET_RATIO else 'NOT MET'})"
            )
            print(f"{label:<20} short {ta * 1000:8.2f} ms   long {tb * 1000:9.2f} ms   ratio {ratio:6.2f}{verdict}")


if __name__ == "__main__":
    main()

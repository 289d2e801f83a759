"""How long the pure core takes: one `due()` call, and a tick's log read.

a. `due()` at 50 and at 1,000 entries with 100 panes: a realistic mix of
   every / cron (local and with tz) / backoff (with ladder histories) entries,
   a quarter with wake_on, pane / role / session targets, some muted; a log of a
   few thousand lines; the wake cursor of the previous tick. Median of many
   calls (LogView, targets and cursor are built once, as a tick does before it
   calls `due()`). Targets: under 5 ms at 50 entries, under 50 ms at 1,000.
   Extra row (no target in the brief): the same 1,000 entries evaluated 30 min
   after a DST change of the local zone.

b. A tick's log read — `rk.store.delivery_log.read_live` + `rk.core.log.delivery.LogView` — with 1,000
   versus 1,000,000 lines of history. The history is written the way ticks
   write it: `append_lines` in batches, each followed by
   `rotate_if_needed(path, now, backoff=<backoff ids>, max_bytes=Settings().log_max_bytes,
   keep_archives=0, live=<ids in the entry file>)`, as the tick calls it. Lines come from a simulated server: 50 entries firing on
   their schedules (every, cron-like grid, backoff climbs), with the outcomes
   a real log has (delivered, skipped-busy, failed, missed, rescheduled, and
   for an entry whose target died, skipped-absent until orphan GC). Two
   histories: the same 50 entries all along, and the same with entry churn
   (now and then an entry is removed — or expires as an orphan — and a new id
   takes its place, ~2 a day). Target: ratio under 1.5.

Runs in a temporary directory (tmpfs when /dev/shm exists, so fsync is
cheap); deletes it afterwards. Prints numbers, asserts nothing.

c. `due()` as a ratio to its cost before the refactor that gave wake fires their
   provenance (commit a740687, unpacked from git and run in alternating processes
   on the same inputs). Target: at most 1.0 at 50 and at 1,000 entries.

Usage: .venv/bin/python bench/due.py [--quick] [--only due|log]
"""

from __future__ import annotations

import argparse
import gc
import heapq
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rk.core.log.delivery import LogLine, LogView  # noqa: E402
from rk.core.pane.facts import PaneFact, resolve_all  # noqa: E402
from rk.core.schedule import ladder  # noqa: E402
from rk.core.schedule.due import due  # noqa: E402
from rk.core.schedule.entry import WAKE_EVENT, Backoff, CreatedBy, Cron, Entry, Every, Target, WakeOn  # noqa: E402
from rk.core.schedule.wake import Observation, fingerprint  # noqa: E402
from rk.store.config import Settings  # noqa: E402
from rk.store.delivery_log import append_lines, archives, read_live, rotate_if_needed  # noqa: E402

LOCAL = ZoneInfo("Europe/Berlin")
NOW = int(datetime(2026, 6, 10, 9, 0, 7, tzinfo=LOCAL).timestamp())
DST_NOW = int(datetime(2026, 3, 29, 1, 30, tzinfo=UTC).timestamp())  # Berlin sprang forward at 01:00Z
CRONS = [
    "*/15 * * * *",
    "0 9 * * 1-5",
    "30 2 * * *",
    "0 */2 * * *",
    "5,35 * * * *",
    "0 0 1 * *",
    "*/5 9-17 * * mon-fri",
    "*/1 * * * *",
]
TZS = ["", "", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]
STATES = ["active", "waiting", "idle", "idle", ""]


def ok(flag: bool) -> str:
    return "met" if flag else "NOT MET"


# =========================================================================== a. due()


def make_panes(rng: random.Random, n: int = 100) -> list[PaneFact]:
    panes = []
    for i in range(n):
        state = rng.choice(STATES)
        panes.append(
            PaneFact(
                pane_id=f"%{i}",
                state=state,
                epoch=NOW - rng.randint(0, 4 * 3600) if state else 0,
                command="claude" if state else "bash",
                session_ref=f"claude:sess-{i}" if i % 5 == 0 else "",
                window_id=f"@{i // 2}",
                role=f"role{i // 2}" if i % 10 == 0 else "",
                active=i % 2 == 0,
            )
        )
    return panes


def make_entries(rng: random.Random, n: int) -> list[Entry]:
    out = []
    for i in range(n):
        kind = ("every", "cron", "backoff")[i % 3]
        if kind == "every":
            schedule = Every(interval=rng.choice([300, 600, 1800, 3600, 7200]))
        elif kind == "cron":
            schedule = Cron(expr=rng.choice(CRONS), tz=rng.choice(TZS), catch_up=rng.choice(["", "", "once"]))
        else:
            lo = rng.choice([60, 120, 180, 300])
            schedule = Backoff(min=lo, max=rng.choice([lo, 1800, 2400, 3600]))
        t = rng.random()
        if t < 0.5:
            target = Target(kind="pane", value=f"%{rng.randrange(100)}")
        elif t < 0.8:
            target = Target(kind="role", value=f"role{rng.randrange(0, 50, 5)}")
        else:
            target = Target(kind="session", value=f"sess-{rng.randrange(0, 100, 5)}")
        out.append(
            Entry(
                id=f"{i:04x}",
                schedule=schedule,
                target=target,
                payload="tick",
                deliver=rng.choice(["", "immediate", "when-idle", "skip-if-busy"]),
                wake_on=WakeOn(event=WAKE_EVENT, debounce=rng.choice([0, 60])) if rng.random() < 0.25 else None,
                muted=rng.random() < 0.03,
                muted_until=NOW + 600 if rng.random() < 0.03 else 0,
                created_by=CreatedBy(at=NOW - 10 * 86400),
            )
        )
    return out


def make_log(rng: random.Random, entries: list[Entry], lines: int, now: int) -> list[LogLine]:
    """Own lines per entry over the last day or two: every/cron at their period,
    backoff as ladder climbs (so the streak walk has work to do)."""
    per_entry = max(2, lines // max(1, len(entries)))
    out: list[LogLine] = []
    for e in entries:
        target = e.target.value if e.target.kind == "pane" else f"%{rng.randrange(100)}"
        if e.schedule.kind == "backoff":
            lo, hi = e.schedule.min, e.schedule.max
            stamps, t, rung = [], now - rng.randint(30, 600), rng.randint(per_entry // 2, per_entry)
            for r in range(rung, 0, -1):
                stamps.append(t)
                t -= ladder.gap(r, lo, hi) + rng.randint(0, 29)
            stamps.reverse()
        else:
            period = getattr(e.schedule, "interval", 0) or 900
            stamps = [now - rng.randint(0, period) - k * period for k in range(per_entry)][::-1]
        for ts in stamps:
            outcome = rng.choices(["delivered", "skipped-busy: active", "failed: pane gone", "missed"], [85, 8, 3, 4])[
                0
            ]
            out.append(LogLine(ts, e.id, "" if outcome == "missed" else target, "schedule", outcome))
        if rng.random() < 0.05:
            out.append(LogLine(stamps[0] - 60, e.id, "", "edit", "rescheduled"))
    out.sort(key=lambda line: line.ts)
    return out


def make_cursor(rng: random.Random, entries: list[Entry], panes: list[PaneFact], now: int) -> dict[str, Observation]:
    """The previous tick's observations: the server as it was, with a few flips."""
    before = {p.pane_id: p.state for p in panes if p.state}
    for pane in rng.sample(sorted(before), 5):
        before[pane] = rng.choice(["active", "waiting", "idle"])
    return {
        e.id: Observation(
            fingerprint=fingerprint(before, exclude=e.target.value if e.target.kind == "pane" else ""),
            observed_at=now - 30,
        )
        for e in entries
        if e.wake_on is not None
    }


def time_due(n_entries: int, now: int, runs: int) -> tuple[float, dict]:
    rng = random.Random(n_entries)
    panes = make_panes(rng)
    entries = make_entries(rng, n_entries)
    lines = make_log(rng, entries, max(3000, 3 * n_entries), now)
    view = LogView(lines)
    targets = resolve_all(entries, panes)
    cursor = make_cursor(rng, entries, panes, now)
    ev = due(entries, view, panes, targets, cursor, now, zone=LOCAL, max_entries=n_entries)  # warm caches
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        due(entries, view, panes, targets, cursor, now, zone=LOCAL, max_entries=n_entries)
        samples.append(time.perf_counter() - t0)
    info = {
        "log lines": len(lines),
        "fires": len(ev.fires),
        "absent": len(ev.absent),
        "missed": len(ev.missed),
        "diags": len(ev.diagnostics),
    }
    info["min ms"] = min(samples) * 1000
    return statistics.median(samples) * 1000, info


# =========================================================================== b. log read vs history


class History:
    """A simulated server's delivery log, line by line, in time order."""

    def __init__(self, seed: int, churn_per_day: float) -> None:
        self.rng = random.Random(seed)
        self.churn_per_day = churn_per_day
        self.t = int(datetime(2025, 1, 1, tzinfo=UTC).timestamp())
        self.queue: list[tuple[int, int, str]] = []
        self.info: dict[str, dict] = {}
        self.seq = 0
        self.dead_ids = 0
        self.next_churn = self._next_churn()
        for _ in range(50):
            self._add()

    def _next_churn(self) -> int:
        if self.churn_per_day <= 0:
            return 1 << 62
        return self.t + int(self.rng.expovariate(self.churn_per_day / 86400))

    def _new_id(self) -> str:
        while True:
            candidate = "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(4))
            if candidate not in self.info:
                return candidate

    def _add(self) -> None:
        rng = self.rng
        eid = self._new_id()
        kind = rng.choice(["every", "cron", "backoff"])
        info = {"kind": kind, "pane": f"%{rng.randrange(100)}", "alive": True, "rung": 0}
        if kind == "every":
            info["period"] = rng.choice([600, 1800, 3600, 7200])
        elif kind == "cron":
            info["period"] = rng.choice([900, 3600, 86400])
        else:
            info["min"], info["max"] = rng.choice([(60, 1800), (180, 1440), (300, 3600)])
        self.info[eid] = info
        self._schedule(eid, self.t + rng.randint(30, 1800))

    def _schedule(self, eid: str, at: int) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (at, self.seq, eid))

    def _churn(self) -> None:
        """Remove one entry (rm, or its target dies and orphan GC takes it a week
        later) and add a new one in its place."""
        live = [eid for eid, i in self.info.items() if i.get("alive") and not i.get("dying")]
        eid = self.rng.choice(live)
        info = self.info[eid]
        if self.rng.random() < 0.5:
            info["dying"] = True  # target gone: skipped-absent each period, GC after 7 days
            info["die_at"] = self.t + 7 * 86400
        else:
            info["alive"] = False  # `rk cron rm`: no more lines
            self.dead_ids += 1
            self._add()

    def lines(self):
        rng = self.rng
        while True:
            at, _, eid = heapq.heappop(self.queue)
            while self.next_churn <= at:
                self.t = self.next_churn
                self._churn()
                self.next_churn = self._next_churn()
            self.t = max(self.t, at)
            info = self.info[eid]
            if not info["alive"]:
                continue
            tick = at + (-at) % 30 + rng.randint(0, 1) * 30  # on a tick, sometimes one late
            if info.get("dying"):
                if tick >= info["die_at"]:
                    info["alive"] = False
                    self.dead_ids += 1
                    yield LogLine(tick, eid, "", "", "expired-orphan")
                    self._add()
                    continue
                yield LogLine(
                    tick, eid, "", "schedule", rng.choice(["skipped-absent", "skipped-absent", "notified-absent"])
                )
                self._schedule(eid, tick + info.get("period", info.get("max", 1800)))
                continue
            if info["kind"] == "backoff":
                if rng.random() < 0.15:
                    info["rung"] = 0  # genuine activity restarts the climb
                info["rung"] += 1
                nxt = tick + ladder.gap(info["rung"], info["min"], info["max"])
                outcome = rng.choices(["delivered", "skipped-busy: active"], [92, 8])[0]
            else:
                nxt = tick + info["period"]
                outcome = rng.choices(
                    ["delivered", "skipped-busy: waiting", "failed: tmux: can't find pane", "missed"], [88, 6, 2, 4]
                )[0]
            if rng.random() < 0.002:
                yield LogLine(tick, eid, "", "edit", "rescheduled")
            yield LogLine(tick, eid, "" if outcome == "missed" else info["pane"], "schedule", outcome)
            self._schedule(eid, nxt)


def build_history(path: Path, total: int, churn_per_day: float, batch: int = 250) -> dict:
    """Append `total` lines in batches, rotating after each batch as the tick does.

    Also keeps a copy of the largest live segment seen over the last quarter of
    the batches (`<path>.peak`): where the history ends within a rotation cycle
    is chance, a tick just before a rotation reads the most."""
    max_bytes = Settings().log_max_bytes
    history = History(seed=7, churn_per_day=churn_per_day)
    gen = history.lines()
    written = rotations = 0
    peak = 0
    late_rotations: list[float] = []
    t0 = time.perf_counter()
    while written < total:
        chunk = [next(gen) for _ in range(min(batch, total - written))]
        append_lines(path, chunk)
        written += len(chunk)
        r0 = time.perf_counter()
        alive = {eid for eid, info in history.info.items() if info["alive"]}  # the tick passes the file's ids
        climbing = {eid for eid in alive if history.info[eid]["kind"] == "backoff"}
        rotated = rotate_if_needed(
            path, chunk[-1].ts, backoff=climbing, max_bytes=max_bytes, keep_archives=0, live=alive
        )
        spent = time.perf_counter() - r0
        rotations += rotated
        if written > total * 3 // 4:
            if rotated:
                late_rotations.append(spent)
            size = path.stat().st_size
            if size > peak:
                peak = size
                shutil.copyfile(path, path.with_name(path.name + ".peak"))
    return {
        "seconds": time.perf_counter() - t0,
        "rotations": rotations,
        "rotation_ms": statistics.median(late_rotations) * 1000 if late_rotations else 0.0,
        "archives": len(archives(path)),
        "dead_ids": history.dead_ids,
        "days": (history.t - int(datetime(2025, 1, 1, tzinfo=UTC).timestamp())) / 86400,
    }


def time_reads(paths: list[Path], runs: int) -> list[tuple[float, int, int]]:
    """Median ms of `LogView(read_live(path))` per path; the paths are read in
    turn (interleaved), with the collector paused, so drift hits all alike."""
    samples: list[list[float]] = [[] for _ in paths]
    sizes = [0] * len(paths)
    gc.collect()
    gc.disable()
    try:
        for i in range(runs + 2):
            for k, path in enumerate(paths):
                t0 = time.perf_counter()
                view = LogView(read_live(path))
                if i >= 2:  # two warm-up rounds
                    samples[k].append(time.perf_counter() - t0)
                sizes[k] = len(view)
    finally:
        gc.enable()
    return [(statistics.median(s) * 1000, n, p.stat().st_size) for s, n, p in zip(samples, sizes, paths)]


# =========================================================================== main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, 200k lines instead of 1M")
    parser.add_argument("--only", choices=["due", "log"], help="run one part")
    args = parser.parse_args()
    runs50, runs1000, reads = (50, 10, 15) if args.quick else (300, 40, 41)
    big = 200_000 if args.quick else 1_000_000

    if args.only != "log":
        bench_due(runs50, runs1000)
        bench_ratio(runs50, runs1000, 5 if args.quick else 11)
    if args.only != "due":
        bench_log(big, reads)


#: The last commit before wake fires carried their provenance (569f0a3, "A Fire carries
#: its cron occurrence and ... the pane whose change fired it"): the cost `due()` is held to.
BEFORE_REFACTOR = "a740687"
#: Its bench's one bug (a typed Cron has no `interval`), fixed as the current bench fixed it.
_OLD_BENCH_FIX = ("period = e.schedule.interval or 900", 'period = getattr(e.schedule, "interval", 0) or 900')

_WORKER = """
import sys
sys.path[:0] = [{tree!r}, {bench!r}]
import due
print(due.time_due({n}, {now}, {runs})[1]["min ms"])
"""


def _tree_of(rev: str, into: Path) -> Path:
    """rk and bench of `rev` from git, unpacked under `into`."""
    import subprocess

    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "rk", "bench"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    bench = into / "bench" / "due.py"
    bench.write_text(bench.read_text().replace(*_OLD_BENCH_FIX))
    return into


def _min_ms(tree: Path, n: int, now: int, runs: int) -> float:
    import subprocess

    code = _WORKER.format(tree=str(tree), bench=str(tree / "bench"), n=n, now=now, runs=runs)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tree)
    return float(done.stdout.strip().splitlines()[-1])


def bench_ratio(runs50: int, runs1000: int, rounds: int) -> None:
    """`due()` now against `due()` before the refactor, on this machine, now: the two
    run in alternating fresh processes on the same inputs, best call of each round,
    then the median over the rounds (a loaded machine slows both alike)."""
    tmp = Path(tempfile.mkdtemp(prefix="rk-bench-due-before-"))
    try:
        try:
            old = _tree_of(BEFORE_REFACTOR, tmp)
        except Exception as exc:  # no git history (an sdist): say so, do not fail the bench
            print(f"\nc. due() against {BEFORE_REFACTOR}: no git history here ({exc.__class__.__name__})")
            return
        print(f"\nc. due() now / due() at {BEFORE_REFACTOR} (before wake provenance), median of {rounds} rounds")
        for n, runs in ((50, runs50), (1000, runs1000)):
            pairs = [(_min_ms(ROOT, n, NOW, runs), _min_ms(old, n, NOW, runs)) for _ in range(rounds)]
            ratio = statistics.median(new / before for new, before in pairs)
            new_ms = statistics.median(p[0] for p in pairs)
            before_ms = statistics.median(p[1] for p in pairs)
            print(
                f"   {n:>5} entries x 100 panes: {new_ms:7.2f} ms / {before_ms:7.2f} ms = {ratio:4.2f}x"
                f"  (target <= 1.0: {ok(ratio <= 1.0)})"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_due(runs50: int, runs1000: int) -> None:
    print("a. due() — one call, median")
    print(
        f"   {'entries':>8} {'panes':>6} {'log lines':>10} {'median ms':>10} {'(min)':>7} {'target':>9}  result   (fires/absent/missed/diags)"
    )
    for n, runs, target, now, label in [
        (50, runs50, 5.0, NOW, ""),
        (1000, runs1000, 50.0, NOW, ""),
        (1000, runs1000, 50.0, DST_NOW, "  [extra: 30 min after a DST change]"),
    ]:
        ms, info = time_due(n, now, runs)
        print(
            f"   {n:>8} {100:>6} {info['log lines']:>10} {ms:>10.2f} {info['min ms']:>7.2f} {f'< {target:g}':>9}  {ok(ms < target):7}  "
            f"({info['fires']}/{info['absent']}/{info['missed']}/{info['diags']}){label}"
        )


def bench_log(big: int, reads: int) -> None:
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
    tmp = Path(tempfile.mkdtemp(prefix="rk-bench-due-", dir=base))
    try:
        print()
        print(f"b. a tick's log read (read_live + LogView), median of {reads}; live segment after real rotation")
        print(f"   max_bytes {Settings().log_max_bytes}, keep_archives=0, batches of 250 lines, in {tmp.parent};")
        print(
            "   'rot. ms' = median rotation over the last quarter; 'at peak' = largest live segment of the last quarter"
        )
        print(
            f"   {'history':>22} {'lines':>9} {'days':>5} {'rot.':>5} {'rot. ms':>7} {'dead ids':>8}"
            f" {'live lines':>10} {'KiB':>5} {'read ms':>8}   {'at peak':>7} {'KiB':>5} {'read ms':>8} {'gen s':>6}"
        )
        paths, rows = [], []
        for churn in (0.0, 2.0):
            for total in (1000, big):
                path = tmp / f"c{churn}-{total}.log"
                gen = build_history(path, total, churn)
                paths += [path, path.with_name(path.name + ".peak")]
                rows.append((churn, total, gen))
        timed = time_reads(paths, reads)  # every file in the same interleaved rounds
        for k, (churn, total, gen) in enumerate(rows):
            (ms, live_lines, size), (pk_ms, pk_lines, pk_size) = timed[2 * k], timed[2 * k + 1]
            name = "stable 50 entries" if churn == 0 else f"churn ~{churn:g} ids/day"
            print(
                f"   {name:>22} {total:>9,} {gen['days']:>5.0f} {gen['rotations']:>5} {gen['rotation_ms']:>7.1f} {gen['dead_ids']:>8}"
                f" {live_lines:>10,} {size / 1024:>5.0f} {ms:>8.2f}   {pk_lines:>7,} {pk_size / 1024:>5.0f} {pk_ms:>8.2f} {gen['seconds']:>6.1f}"
            )
            if total == big:
                small = timed[2 * (k - 1)][0]
                print(
                    f"   {'':>22} ratio {big:,} / 1,000 lines: {ms / small:.2f} at the end, {pk_ms / small:.2f} at the peak"
                    f"  (target < 1.5: {ok(ms / small < 1.5)} / {ok(pk_ms / small < 1.5)})"
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

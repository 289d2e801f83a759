"""Whether a notification channel that hangs or refuses delays the tick.

Three tickers (`rk.engine.ticker.Ticker`, set up as `rk cron ticker` sets its runtime
up) on one private tmux server whose pane runs `cat`, each with its own state
directory, entry (every 1h, not due) and `notify.log`:

- no channel (the tick alone);
- a channel to a hanging receiver: a socket that listens and never answers (the
  kernel completes the connection, nothing reads or replies), default timeout 10s;
- a channel to a refusing receiver: a port bound and never listened on.

Before each tick the pane's `@rk_pane_agent_state` becomes `waiting` since a new
epoch (10 min ago), and the channels have `waiting_after: 0` and `debounce: 0`,
so every tick plans one send and puts it in the channel's outbox: the hanging
channel's one worker is stuck in its first send while the later ones pile up
(told in one summary when the send times out); the refusing one's worker fails
each send at once, on a thread of the ticker's process. The cases
take turns, tick by tick, so load on the machine falls on all three alike.
Measured: `Ticker.tick()` (sweep, then `Notifier.after_tick`, the enqueue path)
and `after_tick` alone; median and p95 of --runs ticks after --warmup; ratios
against the tick with no channel. Apprise is imported first (as in a ticker that
has sent once). Prints figures; asserts nothing.

Usage: python bench/notify.py [--runs N] [--warmup N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import Sandbox, percentile, wait_for

from rk.channels.notify import NOTIFY_LOG, Notifier
from rk.core.channels.notice import Channel
from rk.core.schedule.entry import CreatedBy, Entry, Every, Target
from rk.engine.runtime import Runtime
from rk.engine.ticker import Clocks, Ticker
from rk.store.config import Settings, ensure_private_dir
from rk.store.delivery_log import LiveLogCache
from rk.store.transcripts import Transcripts


class Case:
    """One ticker, its notifier (None: no channel) and its timings."""

    def __init__(self, name: str, sandbox: Sandbox, slug: str, pane: str, url: str | None) -> None:
        from datetime import UTC

        self.name = name
        self.state = sandbox.tmp / f"state-{name}"
        ensure_private_dir(self.state)
        now = int(time.time())
        entry = Entry(
            id="e1", schedule=Every(interval=3600), target=Target("pane", pane), payload="hi", any_program=True,
            created_by=CreatedBy(at=now),
        )  # fmt: skip
        (self.state / f"{slug}.yaml").write_text(json.dumps({"entries": [entry.to_yaml()]}))
        runtime = Runtime(
            state_dir=self.state, settings=Settings(), environ=dict(sandbox.env), zone=UTC, clock=lambda: 0
        )
        runtime.cache_entries, runtime.log_cache, runtime.unreadable = True, LiveLogCache(), {}
        runtime.transcripts = Transcripts()
        self.ticker = Ticker(runtime, interval=1.0, clocks=Clocks(wall=time.time, mono=time.monotonic))
        self.notifier: Notifier | None = None
        if url is not None:
            channel = Channel(name, url, waiting_after=0, debounce=0)
            self.notifier = Notifier(self.state, [channel], UTC)
            self.ticker.notifier = self.notifier
            plan = self.notifier.after_tick

            def timed(servers, now: int) -> None:
                t0 = time.perf_counter()
                plan(servers, now)
                self.enqueue.append(time.perf_counter() - t0)

            self.notifier.after_tick = timed  # type: ignore[method-assign]
        self.ticks: list[float] = []
        self.enqueue: list[float] = []

    def tick(self, keep: bool) -> None:
        before = len(self.enqueue)
        t0 = time.perf_counter()
        self.ticker.tick()
        took = time.perf_counter() - t0
        if keep:
            self.ticks.append(took)
        else:
            del self.enqueue[before:]

    def outcomes(self) -> Counter[str]:
        try:
            text = (self.state / NOTIFY_LOG).read_text()
        except OSError:
            return Counter()
        out: Counter[str] = Counter()
        for line in text.splitlines():
            outcome = json.loads(line)["outcome"]
            out[outcome.split(":")[0] + (" (queue full)" if "queue full" in outcome else "")] += 1
        return out


def _drained(counts: Counter[str]) -> bool:
    """Every queued send has its outcome line (none is still in a worker's hands)."""
    return counts["notify-queued"] == sum(n for outcome, n in counts.items() if outcome != "notify-queued")


def ms(values: list[float], q: float | None = None) -> float:
    return 1000 * (statistics.median(values) if q is None else percentile(values, q))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=120, help="measured ticks per case")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a short round (CI)")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.warmup = 20, 2
    import apprise  # noqa: F401  (as in a ticker that has sent once: not a cost of these ticks)

    hanging = socket.socket()
    hanging.bind(("127.0.0.1", 0))
    hanging.listen(64)
    refusing = socket.socket()
    refusing.bind(("127.0.0.1", 0))  # never listened on: connections are refused
    with Sandbox("notify") as sandbox:
        server = sandbox.server("n")
        pane = server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
        cases = [
            Case("none", sandbox, server.name, pane, None),
            Case("hanging", sandbox, server.name, pane, f"json://127.0.0.1:{hanging.getsockname()[1]}/"),
            Case("refusing", sandbox, server.name, pane, f"json://127.0.0.1:{refusing.getsockname()[1]}/"),
        ]
        epoch = int(time.time()) - 600
        for i in range(args.warmup + args.runs):
            for case in cases[i % 3 :] + cases[: i % 3]:  # each case first as often as the others
                epoch -= 1  # a new waiting occurrence: one send planned per tick
                server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_state", f"waiting:{epoch}")
                case.tick(keep=i >= args.warmup)
        told = {case.name: case.outcomes() for case in cases[1:]}
        hanging.close()  # its held connection is reset: the queued sends fail fast, then the workers idle
        for case in cases[1:]:
            wait_for(lambda c=case: _drained(c.outcomes()), timeout=120, what=f"{case.name}'s queue drained")
            if case.notifier is not None:
                case.notifier.stop()
    refusing.close()

    base = ms(cases[0].ticks)
    print(f"notify bench: {args.runs} ticks per case (after {args.warmup} warm-up), one send planned per tick")
    print(f"{'case':<10} {'tick median':>12} {'tick p95':>10} {'ratio':>7} {'after_tick median':>18} {'p95':>8}")
    for case in cases:
        after = f"{ms(case.enqueue) * 1000:>15.0f} µs {ms(case.enqueue, 95) * 1000:>5.0f} µs" if case.enqueue else ""
        ratio = ms(case.ticks) / base if base else float("nan")
        print(f"{case.name:<10} {ms(case.ticks):>9.1f} ms {ms(case.ticks, 95):>7.1f} ms {ratio:>6.2f}× {after}")
    for name, counts in told.items():
        print(f"  {name}: notify.log {dict(sorted(counts.items()))}")
    print(
        f"ratio hanging/none {ms(cases[1].ticks) / base:.2f}×, refusing/none {ms(cases[2].ticks) / base:.2f}× (median tick)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

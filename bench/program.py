"""What judging panes from their process tree costs a tick.

On a private tmux server with N panes (a third each: an interactive bash at
its prompt, a `python3` REPL, `cat` launched through `sh -c`), time, median
of --runs after a warm-up:

* `Server.pane_facts(concerned=nothing)`: the enumeration with no process read
  (what a tick costs when no pane matters);
* `Server.pane_facts()`: every pane judged (one /proc pass for all of them, as
  a wake_on entry or `rk agent list` asks);
* `read_table` alone for all the panes' ttys, and for one (the delivery guard's
  read before typing);
* `judge` for every pane over one table (the pure part).

Also counts the /proc entries on the machine (the pass reads one stat each).

Usage: python bench/program.py [--panes 10 100] [--runs 30]
Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import Sandbox, wait_for

from rk.core.pane.program import judge
from rk.host.process import own_pids, read_table, tty_device


def _median_ms(fn, runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def _fill(server, n: int) -> None:
    kinds = ["bash --norc --noprofile -i", "python3 -q", "sh -c 'cat; true'"]
    for i in range(n - 1):
        server.run("new-window", "-d", "-t", "main:", kinds[i % 3])
    wait_for(lambda: len(server.list_panes()) == n, 20, what=f"{n} panes")


def _measure(box: Sandbox, n: int, runs: int) -> None:
    server = box.server(f"p{n}", first_command="bash --norc --noprofile -i")
    _fill(server, n)
    time.sleep(1.0)  # let the REPLs and shells start
    rows = server.list_panes()
    ttys = {tty_device(r["pane_tty"]) for r in rows}
    roots = [int(r["pane_pid"]) for r in rows]
    table = read_table(ttys) or {}
    kinds: dict[str, int] = {}
    for root in roots:
        got = judge(table, root, own_pids())
        key = f"{got.kind}/{got.name}" if got else "none"
        kinds[key] = kinds.get(key, 0) + 1
    none = _median_ms(lambda: server.pane_facts(lambda _listed: ()), runs)
    every = _median_ms(server.pane_facts, runs)
    table_all = _median_ms(lambda: read_table(ttys), runs)
    one = next(iter(ttys))
    table_one = _median_ms(lambda: read_table({one}), runs)
    pure = _median_ms(lambda: [judge(table, root, own_pids()) for root in roots], runs)
    print(
        f"{n:>4} panes ({len(table)} processes on their ttys; {kinds}):\n"
        f"      enumeration, nothing judged {none:7.2f} ms | every pane judged {every:7.2f} ms "
        f"(+{every - none:.2f} ms)\n"
        f"      read_table all ttys {table_all:6.2f} ms | one tty (delivery guard) {table_one:6.2f} ms | "
        f"judge all panes (one table) {pure:6.2f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--panes", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    procs = sum(1 for name in os.listdir("/proc") if name.isdigit())
    print(f"/proc holds {procs} processes")
    with Sandbox("program") as box:
        for n in args.panes:
            _measure(box, n, args.runs)


if __name__ == "__main__":
    main()

"""`kill -9` at random moments of a delivering tick, then a restart: duplicates and losses.

Each trial: a pane running `cat > file` (what arrives is what was submitted),
an `every 1m` entry due now, `rk cron tick` started and SIGKILLed after a
random delay spread over the tick's whole life (start-up, enumeration, the
paste, the Enter, the log line), then a second `rk cron tick`, the restart.
A duplicate is a prompt received twice; a loss is a prompt received zero
times after the restart. The restart's recovery diagnostics say which
journal phase each kill interrupted.

Target: 0 duplicates and 0 losses.

Usage: python bench/kills.py [--trials N] [--seed S]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import ROOT, Sandbox, wait_for

T0 = 1_800_000_000


def trial(sb: Sandbox, server, n: int, delay: float) -> tuple[int, list[str], str]:
    """One kill at `delay` s and a restart: (times received, the log's outcomes, what the restart found)."""
    out = sb.tmp / f"received-{n}.txt"
    out.write_text("")
    pane = server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    server.run("respawn-pane", "-k", "-t", pane, f"exec cat > {out}")
    wait_for(lambda pane=pane: server.display(pane, "#{pane_current_command}") == "cat", 5, what="cat")
    payload = f"trial {n} status?"
    base = T0 + 7200 * n  # an hour apart: the per-target rate cap (30 an hour) never bites
    added = sb.rk_json(
        "cron",
        "add",
        payload,
        "--every",
        "1m",
        "--pane",
        pane,
        "--any-program",
        "-L",
        server.name,
        env=dict(sb.env, RK_NOW=str(base)),
    )
    run_env = dict(sb.env, RK_NOW=str(base + 60))
    victim = subprocess.Popen(
        [sys.executable, "-m", "rk", "cron", "tick", "-L", server.name],
        env=run_env,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(delay)  # the fault's moment
    try:
        os.killpg(victim.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    victim.wait(10)
    restart = json.loads(sb.rk("cron", "tick", "-L", server.name, "--json", env=run_env).stdout)["result"]
    phases = [d["detail"].split(": ", 1)[-1] for d in restart["diagnostics"] if d["reason"] == "intent-recovered"]
    try:
        wait_for(lambda: out.read_text().count(payload) >= 1, 5, what="a submission")
    except TimeoutError:
        pass
    log = sb.rk_json("cron", "log", added["id"], "-n", "0", "-L", server.name)
    sb.rk("cron", "rm", added["id"], "-L", server.name)
    if [line["outcome"] for line in log] != ["delivered"] and os.environ.get("RK_BENCH_VERBOSE"):
        print("   ", round(delay, 3), log, restart, repr(out.read_text()), flush=True)
    return out.read_text().count(payload), [line["outcome"] for line in log], phases[0] if phases else "no journal left"


def calibrate(sb: Sandbox, server) -> float:
    """How long one uninterrupted delivering tick lives here (median of 3)."""
    lives = []
    for n in range(3):
        out = sb.tmp / f"calibrate-{n}.txt"
        pane = server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
        server.run("respawn-pane", "-k", "-t", pane, f"exec cat > {out}")
        wait_for(lambda pane=pane: server.display(pane, "#{pane_current_command}") == "cat", 5, what="cat")
        added = sb.rk_json(
            "cron",
            "add",
            f"calibrate {n}",
            "--every",
            "1m",
            "--pane",
            pane,
            "--any-program",
            "-L",
            server.name,
            env=dict(sb.env, RK_NOW=str(T0)),
        )
        started = time.monotonic()
        sb.rk("cron", "tick", "-L", server.name, env=dict(sb.env, RK_NOW=str(T0 + 60)))
        lives.append(time.monotonic() - started)
        sb.rk("cron", "rm", added["id"], "-L", server.name)
    return sorted(lives)[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--from", dest="lo", type=float, default=0.0, help="earliest kill, as a fraction of a tick's life")
    ap.add_argument("--to", dest="hi", type=float, default=1.1, help="latest kill, as a fraction of a tick's life")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    duplicates = losses = log_mismatch = 0
    paths: collections.Counter[str] = collections.Counter()
    with Sandbox("kills") as sb:
        server = sb.server("k")
        life = calibrate(sb, server)
        for n in range(args.trials):
            count, outcomes, phase = trial(sb, server, n + 3, rng.uniform(args.lo * life, args.hi * life))
            duplicates += count > 1
            losses += count == 0
            if count != 1 or outcomes != ["delivered"]:
                print(f"  trial {n}: received {count}x, log {outcomes}, restart: {phase}")
            log_mismatch += outcomes != ["delivered"]
            paths[phase] += 1
    print(
        f"{args.trials} kill -9 trials (delays uniform in {args.lo:g}-{args.hi:g}x an uninterrupted tick's "
        f"{life:.2f} s; seed {args.seed}):"
    )
    print(f"  duplicates {duplicates}, losses {losses}, log not exactly one 'delivered' line: {log_mismatch}")
    for phase, k in paths.most_common():
        print(f"  {k:3d}  {phase}")
    print(f"target 0 duplicates and 0 losses: {'MET' if duplicates == losses == 0 else 'NOT MET'}")


if __name__ == "__main__":
    main()

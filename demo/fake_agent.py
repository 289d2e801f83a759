"""A scripted stand-in for an AI coding agent, for the rk demo.

It reads a prompt line, reports `active` with `rk agent state`, "works" for a
few seconds, answers, and reports `idle`. Every few prompts it asks a question
instead and reports `waiting` until the next line arrives (the answer). That is
all rk needs to see: the same state changes a real agent's hooks would write.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time


def report(state: str) -> None:
    """`rk agent state <state>` for this pane (TMUX and TMUX_PANE come from tmux)."""
    subprocess.run([sys.executable, "-m", "rk", "agent", "state", state], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def work(seconds: float) -> None:
    frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        print(f"\r  {frames[i % len(frames)]} thinking…", end="", flush=True)
        time.sleep(0.1)
        i += 1
    print("\r" + " " * 20 + "\r", end="", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--ask-every", type=int, default=0, help="ask a question every Nth prompt (0: never)")
    parser.add_argument("--work", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX"))
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed if args.seed is not None else os.getpid())
    print(f"[{args.name}] fake agent ready (pane {os.environ.get('TMUX_PANE', '?')})")
    report("idle")
    count = 0
    while True:
        try:
            line = input("› ")
        except EOFError:
            return 0
        if not line.strip():
            continue
        count += 1
        report("active")
        print(f"[{args.name}] got: {line.strip()}")
        work(rng.uniform(*args.work))
        if args.ask_every and count % args.ask_every == 0:
            print(f"[{args.name}] QUESTION: shall I push to main? (waiting for an answer)")
            report("waiting")
            try:
                answer = input("? ")
            except EOFError:
                return 0
            report("active")
            print(f"[{args.name}] thanks, taking '{answer.strip()}' as the answer")
            work(1.0)
        print(f"[{args.name}] done: handled prompt #{count}")
        report("idle")


if __name__ == "__main__":
    sys.exit(main())

"""A scripted stand-in for an AI coding agent, for the rk demo.

It reads a prompt line, reports `active` with `rk agent state`, "works" for a
few seconds, answers, and reports `idle`. Every few prompts it asks a question
instead and reports `waiting` until the next line arrives (the answer). That is
all rk needs from hooks: the same state changes a real agent's hooks write.

Its screen is its own, like a CLI rk has never seen (a `demo> ` prompt, a
`~ working (3s)` line while busy): no layout of rk's reads it, so a draft a
human leaves at its prompt is found by the generic rule alone (the cursor's
line is not the line it showed at rest: `rk.core.pane.idle_line`). Its prompt
is a line editor, as an agent's composer is: what a human types while it works
shows at the prompt when the turn ends, and is held there like any draft.
With `--exit-after N` it "exits" after N seconds and leaves a shell in the pane,
as an agent does when its user quits it.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time


def report(state: str, wait: bool = True) -> None:
    """`rk agent state <state>` for this pane (TMUX and TMUX_PANE come from tmux).
    Without `wait` it runs beside the agent: `idle` is reported once the composer
    is drawn, as a real agent's hook fires when its prompt is back (text typed
    before that would be type-ahead the screen never shows)."""
    argv = [sys.executable, "-m", "rk", "agent", "state", state]
    if wait:
        subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def prompt(text: str) -> str:
    """Read one line at `text`, as an agent's composer does: in raw mode, with a line
    editor, so keys typed during a turn show at the prompt once it is back (a line
    the terminal held for a plain `input()` would be drawn nowhere, and sent glued
    to the next). `idle` is reported once the prompt reads keys, as a real agent's
    hook fires when its prompt is back."""
    import readline

    readline.parse_and_bind("set enable-bracketed-paste off")  # a newline pasted submits, as before
    readline.set_pre_input_hook(lambda: report("idle", wait=False))
    try:
        return input(text)
    finally:
        readline.set_pre_input_hook(None)


def work(seconds: float) -> None:
    start = time.monotonic()
    end = start + seconds
    i = 0
    while time.monotonic() < end:
        glyph = "~-"[i % 2]
        print(f"\r{glyph} working ({int(time.monotonic() - start)}s)", end="", flush=True)
        time.sleep(0.25)
        i += 1
    print("\r" + " " * 40 + "\r", end="", flush=True)


def exit_to_shell(name: str) -> None:
    """What an agent's exit leaves behind: the pane's shell."""
    print(f"\n[{name}] exits; the pane shows a shell now")
    sys.stdout.flush()
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--ask-every", type=int, default=0, help="ask a question every Nth prompt (0: never)")
    parser.add_argument("--work", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX"))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--exit-after", type=float, default=0, help="exit to a shell after this many seconds")
    args = parser.parse_args()
    if args.exit_after:
        import signal

        signal.signal(signal.SIGALRM, lambda *_: exit_to_shell(args.name))
        signal.setitimer(signal.ITIMER_REAL, args.exit_after)
    rng = random.Random(args.seed if args.seed is not None else os.getpid())
    print(f"[{args.name}] fake agent ready (pane {os.environ.get('TMUX_PANE', '?')})")
    count = 0
    while True:
        # its prompt: `demo> ` with a blank line and a status line under it
        print(f"\n\n\n  demo agent · {args.name} · enter sends\x1b[2A\r", end="", flush=True)
        try:
            line = prompt("demo> ")
        except EOFError:
            return 0
        print("\x1b[J", end="")  # the status line goes while the agent answers
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


if __name__ == "__main__":
    sys.exit(main())

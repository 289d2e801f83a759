"""Every view prints the same with two builds: the proof a start-up change changed no output.

On the views bench's state (bench/startup.py: --entries entries over --panes panes
of a private tmux server, a live log of --log-lines lines, the ticker running), each
command line below runs with this checkout's `rk` and with --baseline's (e.g. one
installed from the commit before), at one fixed clock (RK_NOW) and width
(COLUMNS), piped; stdout, stderr and the exit status must be byte-identical. Text
and --json, each view's options, an unknown id, a bad option (typer's errors), and
a hand-written entries file outside the subset rk.core.simple_yaml reads.

Usage: python bench/views_identical.py --baseline RK [--entries N] [--panes N] [--log-lines N]
Exit status: 0 when every command line printed the same, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from _startup import Rig, find_rk
from startup import add_entries, inside, write_log

TOOL = "bench/views_identical.py"
#: argv after `rk`; "{id}" is an entry's id.
LINES = (
    ["cron", "list"],
    ["cron", "list", "--json"],
    ["cron", "list", "--all"],
    ["cron", "list", "--full"],
    ["cron", "list", "--tree"],
    ["--json", "cron", "list", "--all"],
    ["cron", "ls", "-l"],
    ["cron", "show", "{id}"],
    ["cron", "show", "{id}", "--json"],
    ["cron", "show", "zzzz"],
    ["cron", "next", "{id}"],
    ["cron", "next", "{id}", "-n", "5", "--json"],
    ["cron", "next", "{id}", "--full"],
    ["cron", "log"],
    ["cron", "log", "-n", "0"],
    ["cron", "log", "-n", "7", "--json"],
    ["cron", "log", "{id}", "--outcome", "failed"],
    ["cron", "log", "--since", "5h", "--full"],
    ["cron", "log", "{id}", "--gaps"],
    ["status"],
    ["status", "--json"],
    ["status", "--full"],
    ["status", "--format", "json"],
    ["agent", "list"],
    ["agent", "list", "--json"],
    ["agent", "list", "--all"],
    ["cron", "list", "--bogus"],
    ["cron", "next", "{id}", "-n", "x"],
)
#: An entry as a person might write it by hand: a comment after a value, a block
#: scalar, a sign, so the file goes to ruamel (rk.core.simple_yaml gives it back).
HAND_WRITTEN = """
  - id: hand
    name: by hand   # a comment after a value
    schedule: {kind: every, interval: 90m}
    target: {kind: pane, pane: '%0'}
    payload: |
      two lines,
      as typed
    max_per_day: +3
"""


def run(rk: str, args: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    proc = subprocess.run([rk, *args], env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def compare(rigs: dict[str, str], lines: list[list[str]], env: dict[str, str], label: str) -> int:
    """How many of `lines` differ between the two scripts; each difference is printed."""
    differ = 0
    for args in lines:
        got = {name: run(rk, args, env) for name, rk in rigs.items()}
        (b_code, b_out, b_err), (code, out, err) = got["baseline"], got["this"]
        same = (b_code, b_out, b_err) == (code, out, err)
        differ += not same
        print(f"  {'same' if same else 'DIFFERENT':9s} {label}rk {' '.join(args)}  (exit {code}, {len(out)} bytes)")
        if not same:
            print(f"    baseline: exit {b_code}\n{b_out.decode(errors='replace')}{b_err.decode(errors='replace')}")
            print(f"    this:     exit {code}\n{out.decode(errors='replace')}{err.decode(errors='replace')}")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="RK", required=True, help="the other rk script")
    parser.add_argument("--entries", type=int, default=50)
    parser.add_argument("--panes", type=int, default=10)
    parser.add_argument("--log-lines", type=int, default=10_000)
    args = parser.parse_args()
    scripts = {"baseline": args.baseline, "this": find_rk(TOOL)}
    with Rig(TOOL, panes=max(1, args.panes)) as rig:
        ids = add_entries(rig, scripts["this"], max(1, args.entries))
        write_log(rig, ids, args.log_lines)
        entry = next(iter(ids))
        lines = [[a.replace("{id}", entry) for a in line] for line in LINES]
        ticker = [scripts["this"], "cron", "ticker"]
        subprocess.run([*ticker, "start"], env=inside(rig), capture_output=True, check=True)
        try:
            with open(os.path.join(rig.state, "bench.log"), "rb") as fh:
                last = int(fh.read().rstrip().rsplit(b"\n", 1)[-1].split(b",")[0].split(b":")[1])
            env = {**inside(rig), "RK_NOW": str(last + 7200), "COLUMNS": "100"}
            print(f"{len(lines)} command lines, {len(ids)} entries, {args.log_lines} log lines, RK_NOW={env['RK_NOW']}")
            differ = compare(scripts, lines, env, "")
            with open(os.path.join(rig.state, "bench.yaml"), "a", encoding="utf-8") as fh:
                fh.write(HAND_WRITTEN)
            differ += compare(scripts, lines[:3] + lines[7:10], env, "(hand-written file) ")
        finally:
            subprocess.run([*ticker, "stop"], env=inside(rig), capture_output=True)
    print("every view printed the same" if not differ else f"{differ} command lines printed differently")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

"""How long the CLI's views take to answer: a person waits on each one.

Times, as whole processes (median of --runs interleaved runs, after warm-up runs;
`bench/_startup.py`), bytecode cached as an installed rk has it, inside a
private state dir and a private throwaway tmux server ($TMUX names it) with a
realistic state: --panes panes, --entries entries spread over them (every and
cron), and a live log of --log-lines lines over those entries (what `cron list`
forecasts each entry from, and `status` reads):

- `python -c pass` with the interpreter the rk script runs on (the floor);
- that interpreter importing typer and what typer imports to convert an
  option's value (pydantic, in typer 0.2x): what a view would pay before rk's
  own modules if it ran through typer (the views with plain arguments do not:
  `rk.cli.fastpath`; `--help` and every other command still do);
- `rk --version`, `rk --help`, `rk cron list`, `rk cron show ID`,
  `rk cron next ID`, `rk cron log`, `rk status`, `rk agent list`.

Target: each view under 100 ms on a quiet machine (the ratio to the bare
interpreter is printed: what a view adds above it is the modules it reads
with, and its work: the files, one tmux listing).
With --baseline RK the same cases run with another rk script in the same turns.

Usage: python bench/startup.py [--runs N] [--entries N] [--panes N] [--log-lines N] [--baseline RK]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from _startup import (
    Case,
    Rig,
    add_arguments,
    floor_for,
    floors,
    header,
    measure,
    report,
    runs_and_scripts,
)

TARGET_MS = 100.0
TOOL = "bench/startup.py"
#: typer, and its option-value conversion where it has one (`rk --help` loads rich instead).
TYPER = "import typer.main\ntry:\n    import typer._adapters\nexcept ImportError:\n    pass"
#: (label, argv after `rk`); "{id}" is an entry's id.
VIEWS = (
    ("--version", ["--version"]),
    ("--help", ["--help"]),
    ("cron list", ["cron", "list"]),
    ("cron show", ["cron", "show", "{id}"]),
    ("cron next", ["cron", "next", "{id}"]),
    ("cron log", ["cron", "log"]),
    ("status", ["status"]),
    ("agent list", ["agent", "list"]),
)


def inside(rig: Rig) -> dict[str, str]:
    """The environment of a process in the rig's tmux as server `bench`: rk names
    servers by socket name (`-L`), found under $TMUX_TMPDIR, where a link to the
    rig's socket stands."""
    home = os.path.join(rig.tmp, f"tmux-{os.getuid()}")
    link = os.path.join(home, "bench")
    if not os.path.lexists(link):
        os.makedirs(home, mode=0o700, exist_ok=True)
        os.symlink(rig.socket, link)
    return {**rig.env, "TMUX_TMPDIR": rig.tmp, "TMUX": f"{link},{os.getpid()},0", "COLUMNS": "100"}


def add_entries(rig: Rig, rk: str, count: int) -> dict[str, str]:
    """`count` entries over the rig's panes, every two of three `--every`, the third
    `--cron` (added with `rk` itself); their ids and panes, in order."""
    panes = rig.tmux("list-panes", "-s", "-t", "bench", "-F", "#{pane_id}").split()
    ids = {}
    for n in range(count):
        when = ["--cron", f"{n % 60} */2 * * *"] if n % 3 == 0 else ["--every", f"{n + 1}h"]
        argv = [rk, "cron", "add", f"bench prompt {n}", *when, "--pane", panes[n % len(panes)], "--any-program"]
        added = subprocess.run(argv, env=inside(rig), capture_output=True, text=True)
        if added.returncode != 0:
            sys.exit(f"{TOOL}: {argv} failed: {added.returncode} {added.stderr}")
        ids[added.stdout.split()[0]] = panes[n % len(panes)]
    return ids


#: The outcomes the bench's log lines take in turn.
OUTCOMES = ("delivered", "skipped-busy: working", "failed: paste: no such pane", "skipped-quiet", "delivered")


def write_log(rig: Rig, ids: dict[str, str], count: int) -> None:
    """`count` lines a minute apart, ending two hours ago (a failure in the last hour
    would make `rk status` exit 1), over the entries in turn (each on its own pane),
    as the ticker writes them."""
    from rk.core.log.delivery import LogLine

    order = list(ids)
    start = int(time.time()) - count * 60 - 2 * 3600
    with open(os.path.join(rig.state, "bench.log"), "a", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)
        for i in range(count):
            entry = order[i % len(order)]
            line = LogLine(start + i * 60, entry, ids[entry], "schedule", OUTCOMES[i % len(OUTCOMES)])
            fh.write(line.to_json() + "\n")


def cases(rig: Rig, scripts: dict[str, str], entry: str) -> dict[str, Case]:
    env = inside(rig)
    out = floors(list(scripts.values()), env)
    python = out[next(iter(out))].argv[0]
    out["import typer (what the fast path skips)"] = Case([python, "-c", TYPER], env, floor=next(iter(out)))
    for label, rk in scripts.items():
        floor = floor_for(rk, list(scripts.values()))
        for name, args in VIEWS:
            argv = [rk, *(a.replace("{id}", entry) for a in args)]
            out[f"{label}rk {name}"] = Case(argv, env, floor=floor)
    return out


def judge(name: str, ms: float, ratio: float) -> str:
    if "rk " not in name:
        return ""  # import typer: not a view
    return f"{'met' if ms < TARGET_MS else 'NOT met'}: <{TARGET_MS:g} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser, runs=20)
    parser.add_argument("--entries", type=int, default=50)
    parser.add_argument("--panes", type=int, default=10)
    parser.add_argument("--log-lines", type=int, default=10_000)
    args = parser.parse_args()
    runs, scripts = runs_and_scripts(args, TOOL)
    with Rig(TOOL, panes=max(1, args.panes)) as rig:
        ids = add_entries(rig, scripts[""], max(1, args.entries))
        write_log(rig, ids, args.log_lines)
        entry = next(iter(ids))
        ticker = [scripts[""], "cron", "ticker"]
        subprocess.run([*ticker, "start"], env=inside(rig), capture_output=True, check=True)
        try:  # running: `rk status` exits 0 (no fire is due for an hour)
            header("rk CLI views timing", runs, list(scripts.values()))
            print(f"state: {len(ids)} entries on {args.panes} panes, a live log of {args.log_lines} lines")
            table = cases(rig, scripts, entry)
            samples, _ = measure(table, runs, TOOL)
        finally:
            subprocess.run([*ticker, "stop"], env=inside(rig), capture_output=True)
    ok = report(table, samples, judge)
    print("target met" if ok else "target NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What bench/hook.py and bench/statusline.py share: timing whole short-lived `rk`
processes against a bare interpreter's start, in one interleaved run.

- `find_rk` is the console script `make venv` installs (beside this interpreter);
- `Rig` is a temporary directory with a private state dir, a bytecode cache
  (PYTHONPYCACHEPREFIX: an installed rk has its .pyc files, and this workplace may
  set PYTHONDONTWRITEBYTECODE, which would recompile every module on every start)
  and a throwaway tmux server on a socket inside it, killed at the end;
- `measure` runs the cases in turns (a busy machine slows them alike), after
  warm-up runs, and keeps every sample; `floors` adds `python -c pass` of each
  rk script's own interpreter, the figure each ratio is taken against;
- `--baseline RK` (another rk script, e.g. one installed from an earlier commit)
  repeats every rk case with it, so before and after come from the same run.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

FLOOR = "python -c pass"


def find_rk(tool: str) -> str:
    beside = Path(sys.executable).parent / "rk"
    if beside.exists():
        return str(beside)
    found = shutil.which("rk")
    if not found:
        sys.exit(f"{tool}: no `rk` script beside the interpreter or on PATH; run `make venv`")
    return found


def interpreter_of(script: str) -> str:
    """The interpreter of a console script's `#!` line (the floor it is measured against)."""
    with open(script, "rb") as fh:
        first = fh.readline().decode("utf-8", "replace").strip()
    return first[2:].split()[0] if first.startswith("#!") else sys.executable


@dataclass
class Case:
    argv: list[str]
    env: dict[str, str]
    stdin: str | None = None  #: a file fed on stdin (else /dev/null)
    floor: str = FLOOR  #: the case its ratio is taken against ("" for a floor itself)


class Rig:
    """A private state dir, bytecode cache and tmux server with `panes` panes running `cat`."""

    def __init__(self, tool: str, panes: int = 1) -> None:
        if shutil.which("tmux") is None:
            sys.exit(f"{tool}: tmux is required")
        self.tool = tool
        self.tmp = tempfile.mkdtemp(prefix=f"rk-bench-{Path(tool).stem}-")
        self.socket = os.path.join(self.tmp, "bench.sock")
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(self.state, mode=0o700)
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "PYTHONDONTWRITEBYTECODE")}
        env.update(RK_STATE_DIR=self.state, PYTHONPYCACHEPREFIX=os.path.join(self.tmp, "pycache"))
        self.env = env  #: never a real ticker's state, never the caller's tmux
        self.tmux_env = {**env, "LC_CTYPE": "C.UTF-8"}
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "bench", "cat")
        for _ in range(panes - 1):
            self.tmux("new-window", "-d", "-t", "bench", "cat")
        self.pane = self.tmux("display-message", "-p", "-t", "bench", "#{pane_id}").strip()

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-S", self.socket, *args], env=self.tmux_env, check=True, capture_output=True, text=True
        ).stdout

    def inside(self, pane: bool = False) -> dict[str, str]:
        """The environment of a process in the rig's tmux ($TMUX, and with `pane` $TMUX_PANE)."""
        env = {**self.env, "TMUX": f"{self.socket},{os.getpid()},0"}
        if pane:
            env["TMUX_PANE"] = self.pane
        return env

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], env=self.tmux_env, capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: What a sample is: wall milliseconds, or with --cpu the process's own CPU milliseconds
#: (user + system), which a machine loaded by other work inflates far less.
CLOCK = {"cpu": False}


def run_once(case: Case, tool: str) -> tuple[float, str]:
    """Milliseconds of one process (wall, or CPU with --cpu), and its stdout; a failure
    ends the bench."""
    with (
        open(case.stdin or os.devnull, "rb") as stdin,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        start = time.perf_counter()
        proc = subprocess.Popen(case.argv, env=case.env, stdin=stdin, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = (time.perf_counter() - start) * 1000
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0 or stderr:
        sys.exit(f"{tool}: {case.argv} failed: {proc.returncode} {stderr.decode(errors='replace')}")
    if CLOCK["cpu"]:
        elapsed = (usage.ru_utime + usage.ru_stime) * 1000
    return elapsed, stdout.decode("utf-8", "replace").strip()


def floors(scripts: list[str], env: dict[str, str]) -> dict[str, Case]:
    """`python -c pass` of each script's interpreter (one case per distinct interpreter)."""
    out: dict[str, Case] = {}
    for python in dict.fromkeys(interpreter_of(s) for s in scripts):
        name = FLOOR if not out else f"{FLOOR} ({python})"
        out[name] = Case([python, "-c", "pass"], env, floor="")
    return out


def floor_for(script: str, scripts: list[str]) -> str:
    pythons = list(dict.fromkeys(interpreter_of(s) for s in scripts))
    python = interpreter_of(script)
    return FLOOR if python == pythons[0] else f"{FLOOR} ({python})"


def measure(cases: dict[str, Case], runs: int, tool: str, warmup: int = 3) -> tuple[dict[str, list[float]], dict]:
    """Every sample of every case (the cases take turns), and each case's last stdout."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    shown: dict[str, str] = {}
    for _ in range(warmup):  # and the bytecode cache
        for case in cases.values():
            run_once(case, tool)
    for _ in range(runs):
        for name, case in cases.items():
            ms, shown[name] = run_once(case, tool)
            samples[name].append(ms)
    return samples, shown


def p90(values: list[float]) -> float:
    data = sorted(values)
    return data[max(0, int(len(data) * 0.9) - 1)]


def report(cases: dict[str, Case], samples: dict[str, list[float]], judge=None) -> bool:
    """One line a case: median, p90, and for an rk case its ratio to its interpreter's
    start and the milliseconds above it; `judge(name, ms, ratio)` → "" or a verdict
    ("met …"/"NOT met …"). True when no verdict says NOT met."""
    ok = True
    width = max(len(n) for n in cases)
    for name, case in cases.items():
        ms = statistics.median(samples[name])
        line = f"  {name:{width}s} {ms:6.1f} ms (p90 {p90(samples[name]):5.1f})"
        if case.floor:
            floor = statistics.median(samples[case.floor])
            ratio = ms / floor if floor else float("inf")
            line += f"  = {ratio:4.2f}x the interpreter, +{ms - floor:4.1f} ms"
            verdict = judge(name, ms, ratio) if judge else ""
            if verdict:
                ok &= not verdict.startswith("NOT")
                line += f"  [{verdict}]"
        print(line)
    return ok


def header(what: str, runs: int, scripts: list[str]) -> None:
    clock = "CPU (user + system)" if CLOCK["cpu"] else "wall"
    print(f"{what}: median of {runs} interleaved runs, {clock} ms; rk = {', '.join(scripts)}")
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cpus")


def add_arguments(parser, runs: int = 40) -> None:
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--quick", action="store_true", help="CI's smoke: 5 runs")
    parser.add_argument("--cpu", action="store_true", help="time each process's CPU (user + system), not the wall")
    parser.add_argument(
        "--baseline",
        metavar="RK",
        help="another rk script (e.g. installed from an earlier commit): its cases are timed in the same run",
    )


def runs_and_scripts(args, tool: str) -> tuple[int, dict[str, str]]:
    """How many runs (5 with --quick) and the rk scripts to time: this checkout's,
    with --baseline's first when one is given (labelled "baseline ")."""
    CLOCK["cpu"] = bool(getattr(args, "cpu", False))
    scripts = {"": find_rk(tool)}
    if args.baseline:
        scripts = {"baseline ": args.baseline, "": scripts[""]}
    return (5 if args.quick else args.runs), scripts

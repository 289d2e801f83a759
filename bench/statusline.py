"""How long `rk status --format tmux` takes: a status bar runs it every status-interval.

Times whole processes (median of --runs, after warm-up runs), bytecode cached in a
temporary PYTHONPYCACHEPREFIX as an installed rk has it:

- `python3 -c pass` with the interpreter the rk script runs on (the floor);
- `rk status --format tmux` with no tmux server (the ticker's files only);
- the same inside "tmux": $TMUX names a private throwaway tmux server with
  --panes panes, one of them waiting, so one `list-panes` runs and is parsed.

Target: under 20 ms (on a loaded machine, compare with the two floors printed:
rk's own share is the time above the interpreter plus one tmux client). Usage: python bench/statusline.py [--runs N] [--panes N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 20.0


def find_rk() -> str:
    beside = Path(sys.executable).parent / "rk"
    if beside.exists():
        return str(beside)
    found = shutil.which("rk")
    if not found:
        sys.exit("bench/statusline.py: no `rk` script beside the interpreter or on PATH; run `make venv`")
    return found


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0 or proc.stderr:
        sys.exit(f"bench/statusline.py: {argv} failed: {proc.returncode} {proc.stderr.decode(errors='replace')}")
    return elapsed, proc.stdout.decode("utf-8", "replace").strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--panes", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="CI's smoke: 5 runs")
    args = parser.parse_args()
    if args.quick:
        args.runs = 5
    if shutil.which("tmux") is None:
        sys.exit("bench/statusline.py: tmux is required")
    rk = find_rk()
    with tempfile.TemporaryDirectory(prefix="rk-bench-statusline-") as tmp:
        sock = os.path.join(tmp, "bench.sock")
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "PYTHONDONTWRITEBYTECODE")}
        env.update(RK_STATE_DIR=os.path.join(tmp, "state"), PYTHONPYCACHEPREFIX=os.path.join(tmp, "pycache"))
        os.makedirs(env["RK_STATE_DIR"], mode=0o700)
        tmux_env = {**env, "LC_CTYPE": "C.UTF-8"}
        tmux = ["tmux", "-S", sock]
        subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-s", "bench", "cat"], env=tmux_env, check=True)
        try:
            for _ in range(args.panes - 1):
                subprocess.run([*tmux, "new-window", "-d", "-t", "bench", "cat"], env=tmux_env, check=True)
            subprocess.run(
                [*tmux, "set-option", "-p", "-t", "bench", "@rk_pane_agent_state", f"waiting:{int(time.time())}"],
                env=tmux_env,
                check=True,
            )
            cases = {
                "python3 -c pass": ([sys.executable, "-c", "pass"], env),
                "tmux list-panes -a (the other floor)": (
                    [*tmux, "list-panes", "-a", "-F", "#{@rk_pane_agent_state}"],
                    tmux_env,
                ),
                "status --format tmux, no tmux": ([rk, "status", "--format", "tmux"], env),
                f"status --format tmux, {args.panes} panes": (
                    [rk, "status", "--format", "tmux"],
                    {**env, "TMUX": f"{sock},{os.getpid()},0"},
                ),
            }
            samples: dict[str, list[float]] = {name: [] for name in cases}
            shown = ""
            for _ in range(3):
                for argv, case_env in cases.values():
                    run_once(argv, case_env)
            for _ in range(args.runs):
                for name, (argv, case_env) in cases.items():
                    ms, shown = run_once(argv, case_env)
                    samples[name].append(ms)
        finally:
            subprocess.run([*tmux, "kill-server"], env=tmux_env, capture_output=True)
    print(f"rk status --format tmux timing: median of {args.runs} runs, rk = {rk}")
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cpus")
    ok = True
    for name, values in samples.items():
        ms = statistics.median(values)
        floor = name.startswith(("python3", "tmux"))
        met = floor or ms < TARGET_MS
        ok &= met
        mark = "" if floor else f"  [{'met' if met else 'NOT met'}: <{TARGET_MS:g} ms]"
        print(f"  {name:34s} {ms:7.1f} ms (p90 {sorted(values)[int(len(values) * 0.9) - 1]:.1f}){mark}")
    print(f"  (the last segment: {shown!r})")
    print("target met" if ok else "target NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())

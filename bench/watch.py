"""What the watch of active agent panes costs the idle ticker: CPU per minute.

A private tmux server runs 40 stand-in agents as `claude` (tests/fixtures/esc_agent.py,
replaying Claude Code 2.1.332's screens): 20 drawing their spinner every 0.1 s and 20
quiet (one busy frame, then nothing). The state directory has an empty entries file
for the server, so the ticker serves it with no entry on any pane. Three rounds, each
with a fresh `rk cron ticker` (foreground, 30 s poll) and the same panes:

- `none active`: every pane `idle` (the ticker as it was: nothing to watch);
- `20 quiet active`: the quiet ones `active` (glimpsed four times a second; one capture each);
- `20 spinning + 20 quiet active`: all 40 `active` (the spinners captured at each glimpse).

Each round waits for the first tick and a settle, then reads the ticker's
/proc/<pid>/stat over the window: its own CPU (utime+stime) and its reaped
children's (cutime+cstime: the tmux clients it ran), and the tmux server's own
CPU (the spinners' drawing is most of it; its growth over the first round is what
the ticker's listings and captures add). Figures are CPU seconds per minute and
that as a share of one core.

Usage: python bench/watch.py [--seconds 60] [--quick]
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import ROOT, Sandbox, proc_stat, wait_for

STAND_IN = ROOT / "tests" / "fixtures" / "esc_agent.py"
SCREENS = ROOT / "tests" / "fixtures" / "screens" / "claude-2.1.332"
PANES = 20


def stand_ins(sb: Sandbox, server, period: float, count: int) -> list[str]:
    busy = " ".join(str(SCREENS / f"{n}.ansi") for n in ("working_1", "working_2", "working_partial"))
    keys = sb.tmp / "keys"
    command = f"exec -a claude {sys.executable} {STAND_IN} {keys} {period} {SCREENS / 'interrupted.ansi'} {busy}"
    return [
        server.run("new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}", command).strip() for _ in range(count)
    ]


def set_states(server, panes: list[str], state: str) -> None:
    epoch = int(time.time()) - 5
    for pane in panes:
        pid = server.display(pane, "#{pane_pid}")
        server.set_pane_option(pane, "@rk_pane_agent_state", f"{state}:{epoch}:{pid}")


def cpu(pid: int) -> tuple[float, float]:
    stat = proc_stat(pid)
    return stat["utime"] + stat["stime"], stat["cutime"] + stat["cstime"]


def one_round(sb: Sandbox, server, seconds: float, settle: float) -> dict[str, float]:
    """A fresh foreground ticker's CPU (own, its tmux clients', the tmux server's) per minute."""
    status = sb.state / "ticker.status"
    status.unlink(missing_ok=True)
    ticker = sb.popen([sys.executable, "-m", "rk", "cron", "ticker"], env=sb.env, stderr=subprocess.DEVNULL, cwd=ROOT)
    wait_for(lambda: status.exists() and server.name in status.read_text(), timeout=60, what="the first tick")
    time.sleep(settle)
    tmux_pid = int(server.display("main:0.0", "#{pid}"))
    own0, children0 = cpu(ticker.pid)
    tmux0 = sum(cpu(tmux_pid))
    start = time.monotonic()
    time.sleep(seconds)
    own1, children1 = cpu(ticker.pid)
    tmux1 = sum(cpu(tmux_pid))
    took = time.monotonic() - start
    ticker.terminate()
    ticker.wait(30)
    per_minute = 60.0 / took
    return {
        "ticker": (own1 - own0) * per_minute,
        "tmux clients": (children1 - children0) * per_minute,
        "tmux server": (tmux1 - tmux0) * per_minute,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the window of each round")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after the first tick before the window")
    parser.add_argument("--quick", action="store_true", help="10 s windows (CI's short round)")
    args = parser.parse_args()
    seconds = 10.0 if args.quick else args.seconds
    with Sandbox("watch") as sb:
        sb.state.mkdir(mode=0o700)
        server = sb.server("watch")
        (sb.state / f"{server.name}.yaml").write_text('{"entries": []}\n')
        spinning = stand_ins(sb, server, 0.1, PANES)
        quiet = stand_ins(sb, server, 0, PANES)
        wait_for(
            lambda: all(server.display(p, "#{pane_current_command}") == "claude" for p in spinning + quiet),
            timeout=60,
            what="the stand-ins",
        )
        rounds: list[tuple[str, dict[str, float]]] = []
        for label, active in (
            ("none active", []),
            (f"{PANES} quiet active", quiet),
            (f"{PANES} spinning + {PANES} quiet active", spinning + quiet),
        ):
            set_states(server, spinning + quiet, "idle")
            set_states(server, active, "active")
            rounds.append((label, one_round(sb, server, seconds, args.settle)))
    print(f"watch: the idle ticker's CPU with active agent panes, {seconds:g} s windows, s per minute (% of one core)")
    base = rounds[0][1]
    for label, figures in rounds:
        rk_cpu = figures["ticker"] + figures["tmux clients"]
        extra = figures["tmux server"] - base["tmux server"]
        print(
            f"  {label:30} ticker + its tmux clients {rk_cpu:.3f} ({rk_cpu / 60 * 100:.2f} %)"
            f"  [ticker {figures['ticker']:.3f}, clients {figures['tmux clients']:.3f}]"
            f"  tmux server {figures['tmux server']:.3f} ({extra:+.3f} over none active)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

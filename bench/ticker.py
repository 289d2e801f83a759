"""What the idle ticker costs: CPU and memory over idle minutes.

Starts `rk cron ticker` (the foreground process, default 30 s interval unless
--interval) against a private tmux server with a few panes and ~10 entries of
every kind, none due during the window (every 2h+/cron at an hour far away/
backoff from 1h/three wake_on entries on panes whose states do not change).
After its first tick and a short settle, it samples the ticker's
/proc/<pid>/stat (utime+stime: its own CPU; cutime+cstime: CPU of its reaped
children, i.e. the tmux client processes it ran) and /proc/<pid>/status
(VmRSS; VmHWM = peak RSS since start) at the start and the end of the window,
plus VmRSS every few seconds. The private tmux server's own CPU over the window
is reported too (it serves only the ticker meanwhile). Ticks are counted from
the cursor file's mtime (written on every tick).

Targets: under 0.2 % of one core (ticker + its tmux children), peak RSS under 60 MB.

Usage: python bench/ticker.py [--minutes 5] [--interval SECONDS]
Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import Sandbox, met, proc_stat, proc_status_kb, wait_for

CPU_TARGET_PCT = 0.2
RSS_TARGET_MB = 60.0


def setup(sb: Sandbox):
    server = sb.server("ticker")
    s = server
    panes = [s.run("display-message", "-p", "-t", "main:0.0", "#{pane_id}").strip()]
    panes += [s.run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main:", "cat").strip() for _ in range(3)]
    panes.append(s.run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", panes[1], "cat").strip())
    now = int(time.time())
    s.set_pane_option(panes[0], "@rk_pane_agent_state", f"idle:{now - 60}")
    s.set_pane_option(panes[1], "@rk_pane_agent_state", f"active:{now - 30}")
    s.set_pane_option(panes[2], "@rk_pane_agent_state", f"idle:{now - 90}")
    s.set_pane_option(panes[3], "@rk_pane_agent_state", f"waiting:{now - 10}")
    s.set_pane_option(panes[3], "@rk_pane_agent_session", "claude:bench-session")
    s.run("set-option", "-w", "-t", "main:1", "@rk_win_role", "worker")
    hour = (datetime.now().hour + 12) % 24  # a cron hour that cannot come during the window
    L = ["-L", server.name]
    adds = [
        ["status report please", "--every", "2h", "--pane", panes[0]],
        ["check the build", "--every", "6h", "--pane", panes[2], "--deliver", "when-idle"],
        ["daily summary", "--every", "24h", "--role", "worker", "--deliver", "skip-if-busy"],
        ["morning standup", "--cron", f"0 {hour} * * *", "--pane", panes[0]],
        ["weekly review", "--cron", f"30 {hour} * * 1", "--tz", "Europe/Berlin", "--role", "worker"],
        ["are you stuck?", "--backoff", "--min", "1h", "--max", "8h", "--pane", panes[2], "--deliver", "when-idle"],
        ["still there?", "--idle-every", "2h", "--session", "bench-session"],
        ["a worker finished", "--every", "12h", "--pane", panes[0], "--wake-on", "agent-state-change"],
        [
            "someone is waiting",
            "--every",
            "24h",
            "--pane",
            panes[2],
            "--wake-on",
            "agent-state-change",
            "--wake-debounce",
            "0s",
            "--deliver",
            "when-idle",
        ],
        ["review queue", "--every", "8h", "--role", "worker", "--wake-on", "agent-state-change"],
    ]
    for a in adds:
        sb.rk("cron", "add", *a, *L)
    return server, panes, len(adds)


def server_pid(server) -> int:
    return int(server.run("display-message", "-p", "#{pid}").strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="length of the idle window")
    parser.add_argument("--interval", type=float, default=None, help="ticker --interval (default: its own, 30 s)")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after the first tick before the window")
    parser.add_argument("--sample-every", type=float, default=2.0)
    args = parser.parse_args()
    print(
        f"bench/ticker.py: python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    with Sandbox("ticker") as sb:
        server, panes, n_entries = setup(sb)
        dry = sb.rk_json("cron", "tick", "--dry-run", "-L", server.name)
        print(
            f"  dry-run tick before the start: {dry['fires']} fires, {len(dry['diagnostics'])} diagnostics "
            f"({', '.join(sorted({d['reason'] for d in dry['diagnostics']})) or 'none'})"
        )
        state = Path(sb.env["RK_STATE_DIR"])
        cursor_path = state / f"{server.name}.cursor.yaml"
        log_path = sb.tmp / "ticker.stderr"
        argv = [sys.executable, "-m", "rk", "cron", "ticker"]
        if args.interval:
            argv += ["--interval", str(args.interval)]
        with open(log_path, "wb") as err:
            t_spawn = time.monotonic()
            proc = sb.popen(argv, env=sb.env, stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd="/")
        pid = proc.pid
        wait_for(cursor_path.exists, 30, what="the ticker's first tick")
        first_tick = time.monotonic() - t_spawn
        time.sleep(args.settle)
        spid = server_pid(server)
        window = args.minutes * 60
        st0, srv0 = proc_stat(pid), proc_stat(spid)
        rss0 = proc_status_kb(pid, "VmRSS")
        t0 = time.monotonic()
        print(
            f"  ticker pid {pid} ({' '.join(argv[1:])}), {n_entries} entries, {len(panes)} panes on {server.name}; "
            f"first tick {first_tick:.2f} s after spawn; start-up CPU {st0['utime'] + st0['stime']:.2f} s"
        )
        print(f"  window: {args.minutes:g} min, sampling every {args.sample_every:g} s …", flush=True)
        rss_max = rss0
        ticks = 0
        last_mtime = cursor_path.stat().st_mtime_ns
        while time.monotonic() - t0 < window:
            time.sleep(min(args.sample_every, max(0.0, window - (time.monotonic() - t0))))
            if proc.poll() is not None:
                print(f"  the ticker exited early (status {proc.returncode}); see below")
                break
            rss_max = max(rss_max, proc_status_kb(pid, "VmRSS"))
            try:
                m = cursor_path.stat().st_mtime_ns
            except OSError:
                continue
            if m != last_mtime:
                ticks += 1
                last_mtime = m
        elapsed = time.monotonic() - t0
        st1, srv1 = proc_stat(pid), proc_stat(spid)
        rss1 = proc_status_kb(pid, "VmRSS")
        hwm = proc_status_kb(pid, "VmHWM")
        rss_max = max(rss_max, rss1)
        own = (st1["utime"] + st1["stime"]) - (st0["utime"] + st0["stime"])
        kids = (st1["cutime"] + st1["cstime"]) - (st0["cutime"] + st0["cstime"])
        srv = (srv1["utime"] + srv1["stime"]) - (srv0["utime"] + srv0["stime"])
        pct = lambda s: 100.0 * s / elapsed  # noqa: E731
        total = own + kids
        print(f"  over {elapsed:.0f} s ({ticks} ticks seen in the cursor file):")
        print(
            f"    ticker CPU:           {own:6.2f} s = {pct(own):.3f} % of one core "
            f"(user {st1['utime'] - st0['utime']:.2f}, sys {st1['stime'] - st0['stime']:.2f})"
        )
        print(f"    its tmux children:    {kids:6.2f} s = {pct(kids):.3f} %")
        print(
            f"    ticker + children:    {total:6.2f} s = {pct(total):.3f} % of one core  "
            f"[target < {CPU_TARGET_PCT:g} %: {met(pct(total) < CPU_TARGET_PCT)}]"
        )
        if ticks:
            print(
                f"    per tick:             {1000 * own / ticks:.1f} ms ticker + {1000 * kids / ticks:.1f} ms tmux client "
                f"(+ {1000 * srv / ticks:.1f} ms in the tmux server)"
            )
        print(f"    tmux server (private, serving the ticker only): {srv:.2f} s = {pct(srv):.3f} %")
        print(
            f"    RSS: {rss0 / 1024:.1f} MB at window start, {rss1 / 1024:.1f} MB at the end, max sampled "
            f"{rss_max / 1024:.1f} MB, VmHWM (peak since start) {hwm / 1024:.1f} MB  "
            f"[target < {RSS_TARGET_MB:g} MB: {met(max(hwm, rss_max) / 1024 < RSS_TARGET_MB)}]"
        )
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        tail = log_path.read_text(errors="replace").strip().splitlines()
        print(
            f"  ticker exit status {proc.returncode}; its log: {len(tail)} lines"
            + (f", last: {tail[-1]}" if tail else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How long one tick takes, how many tmux processes it starts, and how fast a
state change reaches the operator through the ticker.

a. One tick, in-process: `rk.engine.tick.sweep(runtime, only=<server>)` with
   the entry and log caches on (as the ticker runs it), on a private tmux
   server with 50 panes (10 windows x 5, each running `cat`, most carrying
   `@rk_pane_agent_state`, some with a live pid, roles on 5 windows, session
   refs on 10 panes) and 50 entries (every / cron with and without tz /
   backoff and flat backoff; 10 with wake_on; immediate, when-idle and
   skip-if-busy; pane, role and session targets) and a log of --log-lines
   lines of history. The clock is pinned so that nothing is due: the time
   measured is the evaluation path. Median of --runs ticks after warm-up.
   Two settings: the log kept live (log_max_bytes raised so the history is
   not rotated away), and rk's default settings (the warm-up tick rotates the
   log; the steady state reads what rotation keeps live).
   Then ticks where 5 entries are due and deliver into `cat` panes.
   tmux processes are counted by wrapping `subprocess.Popen` in-process (every
   tmux command rk runs goes through `subprocess.run`).
b. Wake latency, out of process: a `wake_on: agent-state-change` entry with
   debounce 0 targets an operator pane running `cat`; the background ticker
   runs (`rk cron ticker start`, real nudge socket). A worker pane's state is
   flipped with `rk.agent.hook.set_state` (what `rk agent state` runs: the
   tmux write, then the nudge), alternating active (not actionable; we wait
   until the ticker has observed it in the cursor file) and idle (measured).
   Latency = from just before the idle write to the payload appearing in
   `capture-pane` of the operator pane (the paste's echo), and to the submit
   (cat's own copy of the line). Then the same with polling only: a second
   ticker on a different RK_STATE_DIR (the flipper's nudges go to a socket
   nobody listens on), `--interval` --poll-interval; its flips alternate
   waiting/idle (both actionable: with polling, an active->idle pair between
   two polls is one unchanged fingerprint and never wakes) after a random
   wait, so they land at a uniformly random phase of the poll.

Targets: a not-due tick under 50 ms (median); one enumeration (1 tmux
process) per server per tick; wake p95 under 2 s with the nudge.

Usage: python bench/tick.py [--runs 30] [--log-lines 3000] [--wake-samples 20]
       [--poll-interval 30] [--poll-samples 6] [--skip-poll] [--profile]
Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import Sandbox, met, percentile, wait_for

from rk.core.log.delivery import LogLine, LogView
from rk.core.pane.facts import resolve_all
from rk.core.schedule.cronexpr import CronExpr, zone_for
from rk.core.schedule.due import due, next_due
from rk.core.schedule.entry import Backoff, CreatedBy, Cron, Entry, Every, Target, WakeOn
from rk.engine.runtime import Runtime
from rk.engine.tick import sweep
from rk.host import clock
from rk.host.lock import release, try_lock
from rk.store import cursor
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles, Settings
from rk.store.delivery_log import LiveLogCache
from rk.store.entries import EntryDocument, load_entries

TICK_TARGET_MS = 50.0
WAKE_P95_TARGET_S = 2.0
N_PANES = 50
DUE_ENTRIES = 5
DUE_STEP = 600  # the due set is `every 10m`


# --------------------------------------------------------------------------- counting tmux processes


class PopenCounter:
    """Wraps `subprocess.Popen` so every process rk starts in-process is recorded."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self._real = subprocess.Popen

    def __enter__(self) -> PopenCounter:
        real, calls = self._real, self.calls

        class Counting(real):  # type: ignore[misc, valid-type]
            def __init__(self, args, *a, **kw):
                calls.append([str(x) for x in args] if not isinstance(args, (str, bytes)) else [str(args)])
                super().__init__(args, *a, **kw)

        subprocess.Popen = Counting  # subprocess.run looks Popen up at call time
        return self

    def __exit__(self, *exc) -> None:
        subprocess.Popen = self._real

    def tmux_calls(self) -> list[list[str]]:
        return [c for c in self.calls if c and os.path.basename(c[0]) == "tmux"]


# --------------------------------------------------------------------------- part a: the fixture


def build_panes(server) -> list[dict]:
    """10 windows x 5 panes, all running `cat`; returns pane dicts in enumeration order."""
    for w in range(10):
        if w:
            server.run("new-window", "-d", "-t", "main:", "cat")
    windows = server.run("list-windows", "-t", "main", "-F", "#{window_id}").split()
    for wid in windows:
        chain: list[str] = []
        for _ in range(4):
            chain += ["split-window", "-d", "-t", wid, "cat", ";", "select-layout", "-t", wid, "tiled", ";"]
        server.run(*chain[:-1])
    rows = server.run("list-panes", "-a", "-F", "#{pane_id}\t#{window_id}\t#{pane_pid}").splitlines()
    panes = [dict(zip(("id", "window", "pid"), r.split("\t"))) for r in rows if r]
    return panes[:N_PANES]


def decorate_panes(server, panes: list[dict], windows: list[str], T: int) -> None:
    """States (some with the pane's live pid), roles on windows 5-9, sessions on panes 40-49."""
    states = ("idle", "active", "waiting", "idle")
    chain: list[str] = []
    for i, p in enumerate(panes):
        p["state"] = ""
        p["session"] = ""
        if i not in (9, 19, 29):  # three plain panes without an agent state
            state = "idle" if i < DUE_ENTRIES else states[i % 4]
            epoch = T - 120 - (i % 7) * 10
            value = f"{state}:{epoch}:{p['pid']}" if i % 4 == 3 else f"{state}:{epoch}"
            p["state"], p["epoch"] = state, epoch
            chain += [
                "set-option",
                "-p",
                "-t",
                p["id"],
                "@rk_pane_agent_state",
                value,
                ";",
                "set-option",
                "-p",
                "-t",
                p["id"],
                "@rk_agent_state",
                value,
                ";",
            ]
        if i >= 40:
            p["session"] = f"sess-{i}"
            chain += ["set-option", "-p", "-t", p["id"], "@rk_pane_agent_session", f"claude:sess-{i}", ";"]
    for w in range(5, 10):
        chain += ["set-option", "-w", "-t", windows[w], "@rk_win_role", f"role-{w}", ";"]
    server.run(*chain[:-1])


def entry_specs(panes: list[dict]) -> list[dict]:
    """50 entries: (schedule, target, deliver, wake_on, kind) in a realistic mix."""
    specs: list[dict] = []
    pane = lambda i: Target("pane", panes[i]["id"])  # noqa: E731
    for i in range(DUE_ENTRIES):  # the due set: every 10m, newest line 500 s ago
        specs.append(
            dict(
                schedule=Every(interval=DUE_STEP),
                target=pane(i),
                deliver="when-idle" if i >= 3 else "",
                wake=None,
                kind="due",
            )
        )
    for i in range(5, 20):
        interval = (6 * 3600, 12 * 3600, 86400)[i % 3]
        wake = WakeOn(debounce=(0, 60)[i % 2]) if i % 3 == 0 else None
        specs.append(
            dict(
                schedule=Every(interval=interval),
                target=pane(i),
                deliver=("", "when-idle", "skip-if-busy")[i % 3],
                wake=wake,
                kind="every",
            )
        )
    crons = (
        ("0 9 * * 1-5", ""),
        ("0 */6 * * *", ""),
        ("0 3 * * *", "Europe/Berlin"),
        ("0 0 * * 0", ""),
        ("0 12 * * *", "America/New_York"),
    )
    for i in range(20, 30):
        expr, tz = crons[i % 5]
        target = Target("role", f"role-{5 + i % 5}") if i < 25 else pane(i)
        specs.append(
            dict(
                schedule=Cron(expr=expr, tz=tz), target=target, deliver=("", "when-idle")[i % 2], wake=None, kind="cron"
            )
        )
    ladders = ((3600, 8 * 3600), (2 * 3600, 2 * 3600), (3600, 4 * 3600))
    for i in range(30, 40):
        lo, hi = ladders[i % 3]
        target = pane(i) if i < 35 else Target("session", panes[i + 5]["session"])
        specs.append(
            dict(
                schedule=Backoff(min=lo, max=hi),
                target=target,
                deliver=("when-idle", "skip-if-busy")[i % 2],
                wake=None,
                kind="backoff",
            )
        )
    for i in range(40, 50):
        target = (Target("role", f"role-{5 + i % 5}"), Target("session", panes[i]["session"]), pane(i))[i % 3]
        specs.append(
            dict(
                schedule=Every(interval=(12 * 3600, 86400)[i % 2]),
                target=target,
                deliver=("", "when-idle")[i % 2],
                wake=WakeOn(debounce=(0, 60)[i % 2]),
                kind="every",
            )
        )
    return specs


def target_pane(target: Target, panes: list[dict]) -> str:
    if target.kind == "pane":
        return target.value
    if target.kind == "session":
        return next(p["id"] for p in panes if p["session"] == target.value)
    w = int(target.value.split("-")[1])
    return panes[w * 5]["id"]  # close enough for history lines


def write_fixture(state: Path, slug: str, panes: list[dict], T: int, log_lines: int, zone) -> list[str]:
    """The entry file (through rk's own round-trip writer) and the history log. Returns ids."""
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    files = ServerFiles(state, slug)
    specs = entry_specs(panes)
    ids = []
    with EntryDocument.edit(files) as doc:
        for n, spec in enumerate(specs):
            e = Entry(
                id="new",
                name=f"bench {spec['kind']} {n}",
                schedule=spec["schedule"],
                target=spec["target"],
                payload=f"rk-bench payload {n}: please report status",
                deliver=spec["deliver"],
                wake_on=spec["wake"],
                created_by=CreatedBy(at=T - 90 * 86400, pane="%0"),
            )  # no session: see
            # the report (a `claude:<id>` session in flow style makes the file unreadable to the C safe loader)
            ids.append(doc.add(e, 50).id)
    per = max(1, log_lines // len(specs))
    lines: list[LogLine] = []
    for n, (spec, eid) in enumerate(zip(specs, ids)):
        sched, tgt = spec["schedule"], target_pane(spec["target"], panes)
        stamps: list[int] = []
        if spec["kind"] == "due":
            stamps = [T - (DUE_STEP - 100) - k * DUE_STEP for k in range(per)]
        elif sched.kind == "every":
            stamps = [T - 600 - (n * 37) % 900 - k * sched.interval for k in range(per)]
        elif sched.kind == "cron":
            expr, z = CronExpr.parse(sched.expr), (zone_for(sched.tz) if sched.tz else zone)
            t = T
            while len(stamps) < per:
                occ = expr.latest_in(t - 8 * 86400, t, z)
                if occ is None:
                    break
                stamps.append(occ)
                t = occ - 1
        else:  # backoff: an old climb, before the target's current activity epoch
            stamps = [T - 3 * 3600 - k * sched.min for k in range(per)]
        for k, ts in enumerate(stamps):
            outcome = "skipped-busy: active" if (spec["deliver"] == "skip-if-busy" and k % 5 == 2) else "delivered"
            reason = "wake" if spec["wake"] is not None and k % 4 == 1 else "schedule"
            lines.append(LogLine(ts, eid, tgt, reason, outcome))
    lines.sort(key=lambda line: line.ts)
    logfile.append_lines(files.log, lines)
    return ids


# --------------------------------------------------------------------------- part a: measuring


def make_runtime(sandbox: Sandbox, state: Path, settings: Settings, now_box: list[int]) -> Runtime:
    env = dict(sandbox.env, RK_STATE_DIR=str(state))
    rt = Runtime(state_dir=state, settings=settings, environ=env, zone=clock.local_zone(env), clock=lambda: now_box[0])
    rt.cache_entries = True  # as the ticker runs it: entries parsed once,
    rt.log_cache = LiveLogCache()  # and the live log read only where it grew
    rt.unreadable = {}  # and the panes whose screen no layout reads are not captured again
    return rt


def time_not_due(rt: Runtime, slug: str, runs: int, label: str, profile: bool) -> dict:
    first = sweep(rt, only=slug)  # warm-up: cold-start wake cursors, entries cache, (default settings) the rotation,
    for _ in range(2):  # and the first looks at panes whose busy states are stale
        sweep(rt, only=slug)
    first_looks = sum(s.looks.captures for s in first.servers)
    files = ServerFiles(rt.state_dir, slug)
    live = len(logfile.read_live(files.log))
    times, counts, stray, captures = [], [], [], []
    with PopenCounter() as counter:
        for _ in range(runs):
            before = len(counter.calls)
            t0 = time.perf_counter()
            result = sweep(rt, only=slug)
            times.append((time.perf_counter() - t0) * 1000)
            tick_calls = counter.calls[before:]
            counts.append(len([c for c in tick_calls if os.path.basename(c[0]) == "tmux"]))
            captures.append(sum(s.looks.captures for s in result.servers))
            if result.decisions or result.fires:
                stray.append(result.decisions)
        sample_calls = counter.tmux_calls()[-counts[-1] :] if counts[-1] else []
    med = statistics.median(times)
    print(
        f"  [{label}] live log: {live} lines, {files.log.stat().st_size / 1024:.0f} KiB; entries: "
        f"{len(load_entries(files.entries).entries)}; panes: {N_PANES}"
    )
    print(
        f"    not-due tick: median {med:.1f} ms, p10 {percentile(times, 10):.1f}, p90 {percentile(times, 90):.1f}, "
        f"min {min(times):.1f}, max {max(times):.1f} ms over {runs} ticks  "
        f"[target < {TICK_TARGET_MS:g} ms: {met(med < TICK_TARGET_MS)}]"
    )
    procs = sorted(set(counts))
    print(
        f"    tmux processes per not-due tick: {'/'.join(map(str, procs))} "
        f"[goal: 1 enumeration per server per tick: {met(procs == [1])}]"
    )
    print(
        f"    screen captures per not-due tick: {'/'.join(map(str, sorted(set(captures))))} "
        f"(the first tick: {first_looks}, for its stale busy states; fresh hook states cost none, and a screen no "
        "layout reads is not captured again while its state stays)"
    )
    for c in sample_calls:
        print(f"      e.g. {' '.join(c[:3])} {c[3] if len(c) > 3 else ''} …")
    if stray:
        print(f"    WARNING: {len(stray)} 'not-due' ticks made decisions, e.g. {stray[0][:3]}")
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(runs):
            sweep(rt, only=slug)
        prof.disable()
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf).sort_stats("cumulative")
        stats.print_stats(25)
        print(f"    cProfile of {runs} not-due ticks (cumulative, top 25):")
        text = buf.getvalue()
        start = text.find("   ncalls")
        for line in text[start:].splitlines():
            if line.strip():
                print("      " + line[:150])
    return {"median": med, "procs": procs}


def breakdown(rt: Runtime, slug: str, runs: int) -> None:
    """Each pipeline step timed alone (median ms), to see where a tick goes."""
    files = ServerFiles(rt.state_dir, slug)
    server = rt.server(slug)
    now = rt.clock()
    entries = load_entries(files.entries, cache=True).entries
    panes = server.pane_facts()
    targets = resolve_all(entries, panes)
    prev = cursor.read_cursor(files.cursor)
    view = LogView(logfile.read_live(files.log))
    ev = due(entries, view, panes, targets, prev, now, zone=rt.zone)

    def lock_cycle():
        fd = try_lock(files.lock)
        if fd is not None:
            release(fd)

    steps = {
        "is_live (socket connect)": server.is_live,
        "lock take + release": lock_cycle,
        "load_entries (cached)": lambda: load_entries(files.entries, cache=True),
        "load_entries (uncached: YAML parse)": lambda: load_entries(files.entries, cache=False),
        "pane_facts (1 x tmux list-panes -a)": server.pane_facts,
        "read_cursor": lambda: cursor.read_cursor(files.cursor),
        "read_live + LogView": lambda: LogView(logfile.read_live(files.log)),
        "resolve_all": lambda: resolve_all(entries, panes),
        "due()": lambda: due(entries, view, panes, targets, prev, now, zone=rt.zone),
        "next_due()": lambda: next_due(entries, view, targets, now, zone=rt.zone),
        "write_cursor (atomic: fsync file + dir)": lambda: cursor.write_cursor(files.cursor, ev.next_cursor),
    }
    print(f"    breakdown (each step alone, median of {runs}):")
    for name, fn in steps.items():
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1000)
        print(f"      {name:42s} {statistics.median(samples):7.2f} ms")


def time_due(rt: Runtime, slug: str, now_box: list[int], T: int, rounds: int, server, panes) -> None:
    times, counts, outcomes = [], [], []
    with PopenCounter() as counter:
        for k in range(rounds):
            now_box[0] = T + 100 + DUE_STEP * k
            before = len(counter.calls)
            t0 = time.perf_counter()
            result = sweep(rt, only=slug)
            times.append((time.perf_counter() - t0) * 1000)
            counts.append(len([c for c in counter.calls[before:] if os.path.basename(c[0]) == "tmux"]))
            outcomes.append([d.outcome for d in result.decisions])
    now_box[0] = T
    delivered = [sum(1 for o in outs if o == "delivered") for outs in outcomes]
    med = statistics.median(times)
    print(
        f"    tick with {DUE_ENTRIES} due entries (3 immediate, 2 when-idle on idle panes) delivering into `cat`: "
        f"median {med:.0f} ms, min {min(times):.0f}, max {max(times):.0f} ms over {rounds} ticks "
        f"= {med / DUE_ENTRIES:.0f} ms per delivery"
    )
    print(
        f"      delivered per tick: {delivered}; tmux processes per tick: {counts} "
        f"(= 1 enumeration + {(statistics.median(counts) - 1) / DUE_ENTRIES:.1f} per delivery)"
    )
    odd = [o for outs in outcomes for o in outs if o != "delivered"]
    if odd:
        print(f"      WARNING: other outcomes: {odd[:5]}")
    seen = sum(
        1
        for line in server.capture(panes[0]["id"], lines=200).splitlines()
        if line.rstrip().startswith("rk-bench payload 0")
    )
    print(f"      (pane {panes[0]['id']} shows the payload {seen} times: paste echo + cat's copy per delivery)")


def part_a(args) -> None:
    print("== a. one tick, in-process (sweep(runtime, only=server), with the ticker's entry and log caches)")
    with Sandbox("tick") as sb:
        os.environ["RK_STATE_DIR"] = str(sb.state)  # rk.act.keys keeps its pane locks under the process's state dir
        os.environ["TMUX_TMPDIR"] = sb.env["TMUX_TMPDIR"]
        for key in ("TMUX", "TMUX_PANE"):
            os.environ.pop(key, None)
        server = sb.server("tick")
        slug = server.name
        panes = build_panes(server)
        windows = server.run("list-windows", "-t", "main", "-F", "#{window_id}").split()
        hour = int(time.time()) // 3600 * 3600
        T = hour + 450  # hh:07:30 UTC: the due rounds (up to hh:49) cross no cron occurrence (all at minute 0)
        decorate_panes(server, panes, windows, T)
        zone = clock.local_zone(sb.env)
        kept = sb.tmp / "state-kept"
        ids = write_fixture(kept, slug, panes, T, args.log_lines, zone)
        default = sb.tmp / "state-default"
        default.mkdir(mode=0o700)
        for name in (f"{slug}.yaml", f"{slug}.log"):
            shutil.copy2(kept / name, default / name)
        print(
            f"  fixture: {len(ids)} entries, {N_PANES} panes in 10 windows, {args.log_lines} history lines "
            f"({(kept / f'{slug}.log').stat().st_size / 1024:.0f} KiB), clock pinned at {T} (nothing due)"
        )
        now_box = [T]
        rt_kept = make_runtime(sb, kept, Settings(log_max_bytes=64 << 20), now_box)
        dry = sweep(rt_kept, only=slug, dry_run=True)
        if dry.decisions:
            print(f"  WARNING: the dry run finds decisions at T: {[d.to_dict() for d in dry.decisions][:5]}")
        time_not_due(
            rt_kept, slug, args.runs, f"log kept live (log_max_bytes=64 MiB), {args.log_lines} lines", args.profile
        )
        breakdown(rt_kept, slug, args.runs)
        rt_default = make_runtime(sb, default, Settings(), now_box)
        time_not_due(
            rt_default, slug, args.runs, "default settings (log_max_bytes=128 KiB: rotated by the warm-up)", False
        )
        cli_tick_processes(sb, kept, slug, now_box, server, panes, T)
        time_due(rt_kept, slug, now_box, T, args.due_rounds, server, panes)


def cli_tick_processes(sb: Sandbox, state: Path, slug: str, now_box: list[int], server, panes, T: int) -> None:
    """tmux processes of a one-shot `rk cron tick` (no caches, no memory between ticks)
    with 10 of its panes' busy states gone stale, nothing due: the target is 1."""
    env = dict(sb.env, RK_STATE_DIR=str(state))
    stale = [p["id"] for p in panes[:10]]
    for pane in stale:
        server.set_pane_option(pane, "@rk_pane_agent_state", f"active:{T - 3600}")
    rt = Runtime(
        state_dir=state,
        settings=Settings(log_max_bytes=64 << 20),
        environ=env,
        zone=clock.local_zone(env),
        clock=lambda: now_box[0],
    )
    sweep(rt, only=slug)  # the first looks at the stale panes (and marks the unreadable ones)
    with PopenCounter() as counter:
        counts = []
        for _ in range(5):
            before = len(counter.tmux_calls())
            sweep(rt, only=slug)
            counts.append(len(counter.tmux_calls()) - before)
    print(
        f"  one-shot CLI tick, nothing due, {len(stale)} stale `active` panes: tmux processes per tick "
        f"{'/'.join(map(str, sorted(set(counts))))} = {max(counts):.1f}x the one enumeration "
        f"[target 1: {met(max(counts) == 1)}]"
    )


# --------------------------------------------------------------------------- part b: wake latency


class WakeRig:
    def __init__(self, sb: Sandbox) -> None:
        self.sb = sb
        self.server = sb.server("wake")
        s = self.server
        self.operator = s.run("display-message", "-p", "-t", "main:0.0", "#{pane_id}").strip()
        s.run("set-option", "-w", "-t", "main:0", "@rk_win_role", "operator")
        self.worker = s.run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main:", "cat").strip()
        others = [s.run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main:", "cat").strip() for _ in range(3)]
        now = int(time.time())
        for p in others:
            s.set_pane_option(p, "@rk_pane_agent_state", f"idle:{now - 300}")
        self.socket = str(s.path)
        spid = s.run("display-message", "-p", "#{pid}").strip()
        from rk.agent.hook import set_state

        self._set_state = set_state
        # the flipper: exactly the environment a hook inside the worker pane has
        self.flip_env = dict(sb.env, TMUX=f"{self.socket},{spid},0", TMUX_PANE=self.worker)
        self.payload = "rk-bench wake ping"
        ok, msg = self.flip("idle")
        if not ok:
            raise RuntimeError(msg)

    def flip(self, state: str) -> tuple[bool, str]:
        return self._set_state(state, self.worker, self.flip_env)

    def count(self) -> int:
        out = self.server.run("capture-pane", "-p", "-J", "-S", "-", "-t", self.operator)
        return sum(1 for line in out.splitlines() if line.rstrip() == self.payload)

    def cursor_fp(self, state_dir: Path, eid: str) -> str:
        obs = cursor.read_cursor(state_dir / f"{self.server.name}.cursor.yaml").get(eid)
        return obs.fingerprint if obs else ""

    def start_ticker(self, env: dict, interval: float | None = None) -> int:
        args = ["cron", "ticker", "start"] + (["--interval", str(interval)] if interval else [])
        pid = self.sb.rk_json(*args, env=env)["pid"]
        self.sb.pids.append(pid)
        return pid

    def stop_ticker(self, env: dict) -> None:
        self.sb.rk("cron", "ticker", "stop", env=env, check=False)

    def measure_one(self, state: str, timeout: float, poll: float = 0.01) -> tuple[float, float, float]:
        """(write_s, visible_s, submitted_s) from just before the state write."""
        base = self.count()
        t0 = time.perf_counter()
        ok, msg = self.flip(state)
        t_write = time.perf_counter() - t0
        if not ok:
            raise RuntimeError(f"set_state failed: {msg}")
        visible = submitted = float("inf")
        deadline = t0 + timeout
        while time.perf_counter() < deadline:
            n = self.count()
            now = time.perf_counter() - t0
            if n >= base + 1 and visible == float("inf"):
                visible = now
            if n >= base + 2:
                submitted = now
                break
            time.sleep(poll)
        return t_write, visible, submitted


def summarize(label: str, samples: list[tuple[float, float, float]], target: float | None = None) -> float:
    vis = [s[1] for s in samples]
    sub = [s[2] for s in samples]
    lost = sum(1 for v in vis if v == float("inf"))
    ok_vis = [v for v in vis if v != float("inf")] or [float("inf")]
    ok_sub = [v for v in sub if v != float("inf")] or [float("inf")]
    p95 = percentile(vis, 95) if not lost else float("inf")
    line = (
        f"    {label}: n={len(samples)}  visible p50 {percentile(ok_vis, 50):.3f} s, p95 {percentile(ok_vis, 95):.3f} s, "
        f"max {max(ok_vis):.3f} s;  submitted p50 {percentile(ok_sub, 50):.3f} s, p95 {percentile(ok_sub, 95):.3f} s, "
        f"max {max(ok_sub):.3f} s"
    )
    if lost:
        line += f"  ({lost} never arrived)"
    print(line)
    if target is not None:
        print(f"      [target p95 < {target:g} s: {met(p95 < target)}]")
    return percentile(ok_vis, 50)


def part_b(args) -> None:
    print("== b. wake latency: worker state flip -> payload visible in the operator pane")
    rng = random.Random(7)
    with Sandbox("wake") as sb:
        rig = WakeRig(sb)
        env_a = dict(
            sb.env, RK_RATE_PER_HOUR="3600"
        )  # many wake deliveries into one pane within the hour (3600: the limit's ceiling)
        eid = sb.rk_json(
            "cron",
            "add",
            rig.payload,
            "--every",
            "24h",
            "--pane",
            rig.operator,
            "--any-program",
            "--wake-on",
            "agent-state-change",
            "--wake-debounce",
            "0s",
            "-L",
            rig.server.name,
            env=env_a,
        )["id"]
        state_a = Path(env_a["RK_STATE_DIR"])
        pid = rig.start_ticker(env_a)
        try:
            wait_for(lambda: rig.cursor_fp(state_a, eid), 15, what="the ticker's first tick (cold-start cursor)")
            print(
                f"  ticker pid {pid} (default 30 s interval, nudge socket {state_a / 'ticker.sock'}), entry {eid}: "
                f"wake_on agent-state-change, debounce 0, -> operator {rig.operator}; worker {rig.worker}"
            )
            samples, writes = [], []
            for _ in range(args.wake_samples):
                _ok, _msg = rig.flip("active")
                wait_for(
                    lambda: f"{rig.worker}=active" in rig.cursor_fp(state_a, eid),
                    10,
                    what="the ticker observing `active`",
                )
                time.sleep(rng.uniform(0.05, 0.3))
                s = rig.measure_one("idle", timeout=10)
                samples.append(s)
                writes.append(s[0])
            print(
                f"    state write (set_state: tmux set-option + nudge): median {statistics.median(writes) * 1000:.1f} ms"
            )
            nudge_p50 = summarize("with the nudge (idle flips)", samples, WAKE_P95_TARGET_S)
        finally:
            rig.stop_ticker(env_a)
        if args.skip_poll:
            return
        # polling only: a ticker on another state dir; the flipper still nudges state_a, where nobody listens
        state_b = sb.tmp / "state-poll"
        state_b.mkdir(mode=0o700)
        shutil.copy2(state_a / f"{rig.server.name}.yaml", state_b / f"{rig.server.name}.yaml")
        env_b = dict(env_a, RK_STATE_DIR=str(state_b))
        interval = args.poll_interval
        pid = rig.start_ticker(env_b, interval)
        try:
            wait_for(lambda: rig.cursor_fp(state_b, eid), 15, what="the polling ticker's first tick")
            sock_a = state_a / "ticker.sock"
            print(
                f"  polling only: ticker pid {pid} on {state_b} with --interval {interval:g}; the flipper nudges "
                f"{sock_a} ({'exists!' if sock_a.exists() else 'absent: nudges are lost'}); "
                f"{args.poll_samples} flips alternating waiting/idle, each after a random 0-{interval:g} s wait"
            )
            samples = []
            for j in range(args.poll_samples):
                time.sleep(rng.uniform(0, interval))
                samples.append(rig.measure_one("waiting" if j % 2 == 0 else "idle", timeout=interval + 15, poll=0.05))
            summarize(f"polling only, interval {interval:g} s", samples)
            o = nudge_p50
            print(
                f"      model: latency = U(0, interval) + tick & paste ({o:.2f} s, the nudge p50); for the default 30 s "
                f"interval: p50 ~{15 + o:.1f} s, p95 ~{28.5 + o:.1f} s, max ~{30 + o:.1f} s"
            )
            if interval != 30:
                vis = sorted(s[1] for s in samples if s[1] != float("inf"))
                scaled = [(v - o) * 30 / interval + o for v in vis]
                if scaled:
                    print(
                        f"      measured at {interval:g} s, extrapolated to 30 s ((t - {o:.2f}) x 30/{interval:g} + {o:.2f}): "
                        f"p50 {percentile(scaled, 50):.1f} s, p95 {percentile(scaled, 95):.1f} s, max {max(scaled):.1f} s"
                    )
        finally:
            rig.stop_ticker(env_b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="not-due ticks measured (median)")
    parser.add_argument("--log-lines", type=int, default=3000)
    parser.add_argument("--due-rounds", type=int, default=5, help="ticks with 5 due entries")
    parser.add_argument("--wake-samples", type=int, default=20)
    parser.add_argument("--poll-interval", type=float, default=30.0)
    parser.add_argument("--poll-samples", type=int, default=6)
    parser.add_argument("--skip-poll", action="store_true")
    parser.add_argument("--skip-wake", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile the not-due ticks")
    parser.add_argument("--quick", action="store_true", help="CI's smoke: a few runs of each part, no poll part")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.due_rounds, args.wake_samples, args.skip_poll = 5, 1, 3, True
    if shutil.which("tmux") is None:
        sys.exit("bench/tick.py: tmux is required")
    tmux_v = subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.strip()
    print(
        f"bench/tick.py: python {sys.version.split()[0]}, {tmux_v}, {os.cpu_count()} cpus, "
        f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    part_a(args)
    if not args.skip_wake:
        part_b(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the kernel says about processes: an agent pid (alive, on which tty, in
front or not), and the process table of the panes' terminals.

A hook records the agent's pid with its state. Before typing, rk needs to
know that this agent is what the keyboard of the pane reaches: the process is
alive, its controlling terminal is the pane's tty, and its process group is
that tty's foreground group. A pid that is alive but suspended (Ctrl-Z, with
the shell back at its prompt) or behind another program fails the last test,
and the pane is then judged by its foreground command instead.

Linux reads one `/proc/<pid>/stat` line per pid; elsewhere `ps` is asked.

The table (`read_table`) is what `rk.core.pane.program` judges a pane's program
by: one pass over `/proc` (or one `ps`) for all the terminals asked about,
keeping only their processes, bounded in count and size.

The ancestors (`ancestors`) are how a caller is placed (`rk.core.pane.caller`):
the chain from a process up through its parents, which the kernel keeps and
no environment variable can change.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Collection

from rk.core.pane.facts import ProcessInfo
from rk.core.pane.program import Proc

#: At most this many /proc entries are looked at in one pass.
MAX_SCAN = 65536
#: At most this many processes are kept (per pass, for all terminals asked about).
MAX_KEPT = 4096
#: A command line is read up to this many bytes, and up to this many words.
MAX_CMDLINE = 8192
MAX_ARGV = 64

DEAD = ProcessInfo()


def parse_stat(text: str) -> ProcessInfo:
    """A `/proc/<pid>/stat` line → ProcessInfo. The command name may hold spaces and
    parentheses, so fields are counted after the last `)`. A zombie is dead."""
    _, sep, rest = text.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 6:
        return DEAD
    state = fields[0]
    if state in ("Z", "X", "x"):
        return DEAD
    try:
        return ProcessInfo(alive=True, pgrp=int(fields[2]), tty=int(fields[4]), tpgid=int(fields[5]))
    except ValueError:
        return DEAD


def _ps_info(pid: int) -> ProcessInfo:
    try:
        proc = subprocess.run(
            ["ps", "-o", "stat=,pgid=,tpgid=", "-p", str(pid)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=2.0,
        )
    except (OSError, subprocess.SubprocessError):
        return DEAD
    words = proc.stdout.decode("utf-8", "replace").split()
    if proc.returncode != 0 or len(words) < 3 or words[0].startswith("Z"):
        return DEAD
    try:
        return ProcessInfo(alive=True, pgrp=int(words[1]), tpgid=int(words[2]))  # tty unknown: 0 matches any
    except ValueError:
        return DEAD


#: `/proc/<pid>/stat`'s field of the process's start time (clock ticks since boot).
START_FIELD = 22


def start_time(pid: int, proc_root: str = "/proc") -> str:
    """The kernel's start time of a live `pid` (`/proc/<pid>/stat` field 22, clock ticks
    since boot), which a reused pid does not share; "" when it is gone, a zombie, or
    unreadable."""
    try:
        fd = os.open(f"{proc_root}/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            text = os.read(fd, 2048).decode("utf-8", "replace")
        finally:
            os.close(fd)
    except OSError:
        return ""
    fields = text.rpartition(")")[2].split()
    index = START_FIELD - 3  # the fields after the name start with field 3
    if len(fields) <= index or fields[0][:1] in ("Z", "X", "x"):
        return ""
    return fields[index]


def process_info(pid: int, proc_root: str = "/proc") -> ProcessInfo:
    """The kernel's view of `pid` (DEAD for pid ≤ 0, a gone pid, or a zombie)."""
    if pid <= 0:
        return DEAD
    try:
        with open(f"{proc_root}/{pid}/stat", "rb") as fh:
            return parse_stat(fh.read().decode("utf-8", "replace"))
    except FileNotFoundError:
        if os.path.isdir(proc_root) and os.path.exists(f"{proc_root}/self"):
            return DEAD
        return _ps_info(pid)
    except OSError:
        return DEAD


def tty_device(path: str) -> int:
    """The device number of a tty path such as `/dev/pts/3` (0 when unknown)."""
    if not path:
        return 0
    try:
        return os.stat(path).st_rdev
    except OSError:
        return 0


def parse_proc(pid: int, stat: str, cmdline: bytes = b"", comm: str = "") -> Proc | None:
    """A `/proc/<pid>/stat` line, its `cmdline` (NUL-separated) and `comm` → Proc;
    None for a malformed line. The name in stat may hold spaces and parentheses."""
    head, sep, rest = stat.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 6:
        return None
    try:
        ppid, pgrp, tty, tpgid = int(fields[1]), int(fields[2]), int(fields[4]), int(fields[5])
    except ValueError:
        return None
    name = comm.strip() or head.partition("(")[2]
    words = cmdline[:MAX_CMDLINE].split(b"\0")
    while words and not words[-1]:
        words.pop()  # the closing NUL, and the padding of a title set over argv (node's process.title)
    argv = tuple(w.decode("utf-8", "replace") for w in words[:MAX_ARGV])
    return Proc(pid, ppid, pgrp, tty, tpgid, fields[0][:1], name, argv)


def _read(path: str, limit: int = MAX_CMDLINE) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def _proc_table(ttys: Collection[int], proc_root: str) -> dict[int, Proc]:
    """One pass: each pid's stat line (a single read), and the command line of
    those on a wanted terminal only; the name comes from stat (the kernel's comm)."""
    table: dict[int, Proc] = {}
    names = [n for n in os.listdir(proc_root)[:MAX_SCAN] if n.isdigit()]
    for name in names:
        if len(table) >= MAX_KEPT:
            break
        try:
            stat = _read(f"{proc_root}/{name}/stat", 1024).decode("utf-8", "replace")
            fields = stat.rpartition(")")[2].split(None, 6)
            if len(fields) < 6 or not fields[4].isdigit() or int(fields[4]) not in ttys:
                continue
            cmdline = _read(f"{proc_root}/{name}/cmdline")
        except OSError:
            continue  # gone meanwhile
        proc = parse_proc(int(name), stat, cmdline)
        if proc is not None:
            table[proc.pid] = proc
    return table


#: At most this many processes are read up a chain of parents (a deeper one is cut there).
MAX_DEPTH = 64
#: A process's environment is read up to this many bytes (`environ_of`).
MAX_ENVIRON = 65536


def read_proc(pid: int, proc_root: str = "/proc") -> Proc | None:
    """One process from /proc (its stat line and its command line, each bounded); None when gone."""
    try:
        stat = _read(f"{proc_root}/{pid}/stat", 1024).decode("utf-8", "replace")
        cmdline = _read(f"{proc_root}/{pid}/cmdline")
    except OSError:
        return None
    return parse_proc(pid, stat, cmdline)


def chain_of(pid: int, lookup: Callable[[int], Proc | None]) -> tuple[Proc, ...]:
    """`pid`, its parent, its parent's parent, … as `lookup` finds them: up to the
    first pid ≤ 1 or unknown, at most MAX_DEPTH long, never round a loop."""
    chain: list[Proc] = []
    seen: set[int] = set()
    while pid > 1 and pid not in seen and len(chain) < MAX_DEPTH:
        proc = lookup(pid)
        if proc is None:
            break
        chain.append(proc)
        seen.add(pid)
        pid = proc.ppid
    return tuple(chain)


def ancestors(pid: int, proc_root: str = "/proc") -> tuple[Proc, ...]:
    """The chain from `pid` up through its parents (`pid` first, init left out):
    each one's pid, parent, controlling tty, name and bounded argv. From /proc,
    one process at a time; elsewhere from one `ps` (empty when that fails)."""
    if os.path.exists(f"{proc_root}/self/stat"):
        return chain_of(pid, lambda p: read_proc(p, proc_root))
    table = _ps_all()
    return chain_of(pid, (table or {}).get)


def environ_of(pid: int, proc_root: str = "/proc") -> dict[str, str]:
    """A process's initial environment as /proc shows it (bounded; empty when unreadable,
    or where there is no /proc). What a process was started with, not proof of anything."""
    try:
        raw = _read(f"{proc_root}/{pid}/environ", MAX_ENVIRON)
    except OSError:
        return {}
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep and key:
            out[key] = value
    return out


#: `ps` columns for the table where there is no /proc (args last: it holds spaces).
PS_COLUMNS = "pid=,ppid=,pgid=,tpgid=,stat=,tty=,args="


def parse_ps(out: str, device: dict[str, int]) -> dict[int, Proc]:
    """`ps -A -o PS_COLUMNS` → {pid: Proc}, with each tty name turned into its
    device number by `device` (names it lacks, and `?`, are no terminal)."""
    table: dict[int, Proc] = {}
    for line in out.splitlines()[:MAX_SCAN]:
        words = line.split(None, 6)
        if len(words) < 7:
            continue
        try:
            pid, ppid, pgrp, tpgid = (int(w) for w in words[:4])
        except ValueError:
            continue
        argv = tuple(words[6].split()[:MAX_ARGV])
        comm = argv[0].rpartition("/")[2] if argv else ""
        table[pid] = Proc(pid, ppid, pgrp, device.get(words[5], 0), tpgid, words[4][:1], comm, argv)
    return table


def _ps_all() -> dict[int, Proc] | None:
    """Every process `ps` lists, its tty as a device number; None when `ps` fails."""
    try:
        proc = subprocess.run(
            ["ps", "-A", "-ww", "-o", PS_COLUMNS], stdin=subprocess.DEVNULL, capture_output=True, timeout=2.0
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    out = proc.stdout.decode("utf-8", "replace")
    names = {line.split(None, 6)[5] for line in out.splitlines() if len(line.split(None, 6)) == 7}
    device = {name: tty_device(f"/dev/{name}") for name in names if name not in ("?", "??", "-")}
    return parse_ps(out, device)


def _ps_table(ttys: Collection[int]) -> dict[int, Proc] | None:
    table = _ps_all()
    if table is None:
        return None
    return {pid: p for pid, p in table.items() if p.tty in ttys}


def read_table(ttys: Collection[int], proc_root: str = "/proc") -> dict[int, Proc] | None:
    """The processes whose controlling terminal is one of `ttys` (device numbers),
    in one pass; None when the table cannot be read (then the pane's kind is
    judged by its command). Nothing is read when no terminal is asked about."""
    wanted = {t for t in ttys if t}
    if not wanted:
        return {}
    if os.path.exists(f"{proc_root}/self/stat"):
        try:
            return _proc_table(wanted, proc_root)
        except OSError:
            return None
    return _ps_table(wanted)


def own_pids() -> frozenset[int]:
    """rk's own process: never a pane's program."""
    return frozenset({os.getpid()})

"""What the kernel says about an agent pid: alive, on which tty, in front or not.

A hook records the agent's pid with its state. Before typing, rk needs to
know that this agent is what the keyboard of the pane reaches: the process is
alive, its controlling terminal is the pane's tty, and its process group is
that tty's foreground group. A pid that is alive but suspended (Ctrl-Z, with
the shell back at its prompt) or behind another program fails the last test,
and the pane is then judged by its foreground command instead.

Linux reads one `/proc/<pid>/stat` line per pid; elsewhere `ps` is asked.
"""

from __future__ import annotations

import os
import subprocess

from rk.core.facts import ProcessInfo

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

"""The agent process behind a hook: the pid of the agent CLI that ran it, found by
walking up from the hook's parent to the first process whose name is one the
provider's agent runs as (a missing pid beats a wrong one).

The hook path imports this module on every agent event: the standard library
only, and only cheap parts of it (see `rk.agent.hook`).
"""

from __future__ import annotations

import os
from _collections_abc import Callable  # loaded with os: no `collections` import

MAX_HOPS = 5  #: ancestors examined when looking for the agent process

#: `comm` names (as /proc shows them, ≤15 bytes) the agent process of each
#: provider can have. Gemini CLI and the npm builds run under node.
AGENT_COMMS: dict[str, tuple[str, ...]] = {
    "claude": ("claude",),
    "codex": ("codex",),
    "gemini": ("node", "gemini"),
    "opencode": ("opencode", "node", "bun"),
    "copilot": ("copilot", "node"),
    "kimi": ("kimi-code", "kimi"),
    "agy": ("agy", "antigravity"),
}


def valid_provider(provider: str) -> bool:
    """`[a-z][a-z0-9_-]*`, at most 32 characters."""
    if not provider or len(provider) > 32 or not ("a" <= provider[0] <= "z"):
        return False
    return all("a" <= c <= "z" or "0" <= c <= "9" or c in "_-" for c in provider)


def expected_comms(provider: str) -> tuple[str, ...]:
    """The `comm` names the agent process of `provider` can have (an unknown provider: its own name)."""
    names = AGENT_COMMS.get(provider)
    if names is None:
        names = (provider,) if valid_provider(provider) else ()
    return tuple(n[:15] for n in names)


def _proc_step(pid: int, root: str) -> tuple[str, int] | None:
    """(comm, ppid) of `pid` from `<root>/<pid>/comm` and `…/status`."""
    try:
        with open(f"{root}/{pid}/comm", "rb") as fh:
            comm = fh.read().decode("utf-8", "replace").rstrip("\n")
        with open(f"{root}/{pid}/status", "rb") as fh:
            status = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("PPid:"):
            try:
                return comm, int(line.split(":", 1)[1].strip())
            except ValueError:
                return None
    return None


def parse_ps_line(text: str) -> tuple[str, int] | None:
    """`  123 /usr/bin/claude` (ps -o ppid=,comm=) → ("claude", 123)."""
    text = text.strip()
    if not text:
        return None
    head, _, comm = text.partition(" ")
    comm = comm.strip()
    if not (head.isascii() and head.isdigit()) or not comm:
        return None
    return os.path.basename(comm)[:15], int(head)


def _ps_step(pid: int) -> tuple[str, int] | None:
    """(comm, ppid) from `ps` where there is no /proc (macOS, BSD)."""
    import subprocess  # fallback only; the Linux path never pays for it

    try:
        proc = subprocess.run(
            ["ps", "-o", "ppid=,comm=", "-p", str(pid)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=2.0,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return parse_ps_line(proc.stdout.decode("utf-8", "replace").splitlines()[0] if proc.stdout else "")


def find_agent_pid(
    provider: str,
    start: int | None = None,
    *,
    proc_root: str = "/proc",
    max_hops: int = MAX_HOPS,
    ps_step: Callable[[int], tuple[str, int] | None] | None = None,
) -> int:
    """The pid of the agent process: walk up from `start` (default: our parent),
    at most `max_hops` processes, to the first whose comm is one the provider's
    agent runs as. 0 when none validates (a missing pid beats a wrong one).

    /proc is read where it exists; elsewhere `ps` is asked."""
    names = expected_comms(provider)
    if not names:
        return 0
    pid = os.getppid() if start is None else start
    use_proc = os.path.exists(f"{proc_root}/{pid}/status")
    step = (lambda p: _proc_step(p, proc_root)) if use_proc else (ps_step or _ps_step)
    for _ in range(max_hops):
        if pid <= 1:
            return 0
        found = step(pid)
        if found is None:
            return 0
        comm, ppid = found
        if comm in names:
            return pid
        pid = ppid
    return 0

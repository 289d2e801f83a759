"""tmux as the hook drives it: the pane options one state write sets (one `;`-chained
command list, guarded inside tmux when it must not overwrite a limit), and tmux
started with `os.posix_spawnp` (no `subprocess`), waited for with a pidfd, read
from (a Gemini pane's screen, the status line's pane list).

The hook path imports this module on every agent event: the standard library
only, and only cheap parts of it (see `rk.agent.hook`).
"""

from __future__ import annotations

import os
import time
from _collections_abc import Mapping  # loaded with os: no `collections` import

from rk.core.environ import (
    LEGACY_STATE_OPTION,
    SESSION_OPTION,
    SOURCE_OPTION,
    STATE_OPTION,
    TRANSCRIPT_OPTION,
    TURN_END_OPTION,
    child_env,
)
from rk.core.pane.state_words import ACTIVE as ACTIVE_WORD
from rk.core.pane.state_words import INTERRUPTED as INTERRUPTED_WORD

TMUX_TIMEOUT = 5.0
#: A limit whose reset is not known counts as reset this long after it was
#: reported: `rk.core.pane.look.LIMIT_RETRY` (a test keeps the two equal).
LIMIT_RETRY = 15 * 60


def state_value(state: str, epoch: int, pid: int = 0) -> str:
    """A state option's value: `<state>:<epoch>[:<pid>]`."""
    return f"{state}:{epoch}:{pid}" if pid > 0 else f"{state}:{epoch}"


def tmux_commands(
    pane: str,
    state: str | None,
    epoch: int,
    pid: int,
    session: str,
    source: str = "",
    guard: str = "",
    turn_end: str = "",
    transcript: str = "",
) -> list[str]:
    """The argv after `tmux -S <socket>`: the state under both names (and, for a
    state not from a hook, its source note; for a turn's end, how it ended,
    `@rk_pane_turn_end`), then the session stamp, as one
    `;`-chained command list (tmux runs them in order and stops at the first
    error, so the stamp never lands without the state).

    With `guard` (a format), the state is written only when the guard is false
    for the pane, decided inside tmux (`if-shell -F`), so a read-before-write
    costs no second process; the session stamp is written either way."""
    args: list[str] = []
    if state:
        value = state_value(state, epoch, pid)
        writes = [
            ["set-option", "-p", "-t", pane, STATE_OPTION, value],
            ["set-option", "-p", "-t", pane, LEGACY_STATE_OPTION, value],
        ]
        if source:
            writes.append(["set-option", "-p", "-t", pane, SOURCE_OPTION, source])
        if turn_end:
            writes.append(["set-option", "-p", "-t", pane, TURN_END_OPTION, f"{turn_end}:{epoch}"])
        if guard:  # the values are [a-z0-9:%@_]: nothing the command parser could read otherwise
            args += ["if-shell", "-F", "-t", pane, guard, "", " ; ".join(" ".join(w) for w in writes)]
        else:
            for w in writes:
                if args:
                    args.append(";")
                args += w
    if session:
        if args:
            args.append(";")
        args += ["set-option", "-p", "-t", pane, SESSION_OPTION, session]
        if transcript:  # with the session it belongs to, in the same tmux process
            args += [";", "set-option", "-p", "-t", pane, TRANSCRIPT_OPTION, transcript]
    return args


def interrupted_if_active(pane: str, epoch: int) -> list[str]:
    """An idle notice that finds the pane still `active` ends a turn no Stop ended (an
    Esc: Qwen Code's idle notice comes at once, Claude's a minute on): the argv that
    records that turn as `interrupted`, decided inside tmux before the notice's write."""
    active = f"#{{m:{ACTIVE_WORD}:*,#{{{STATE_OPTION}}}}}"
    record = f"set-option -p -t {pane} {TURN_END_OPTION} {INTERRUPTED_WORD}:{epoch}"
    return ["if-shell", "-F", "-t", pane, active, record]


def limit_holds(now: int, retry: int = LIMIT_RETRY) -> str:
    """A tmux format that is true while the pane is `limited` and its reset has not
    come at `now`: the reset in the source note of the state's epoch, or, with no
    reset known, `retry` seconds after the state's epoch (as `rk.core.pane.look`
    counts it). `[^0-9]` stands for `:` in the patterns (a colon ends a modifier)."""
    state = f"#{{{STATE_OPTION}}}"
    epoch = f"#{{s/^limited[^0-9]([0-9]+).*$/\\1/:{STATE_OPTION}}}"
    note_epoch = f"#{{s/^[a-z]+[^0-9]([0-9]+).*$/\\1/:{SOURCE_OPTION}}}"
    note_reset = f"#{{s/^[a-z]+[^0-9][0-9]+[^0-9]([0-9]+)$/\\1/:{SOURCE_OPTION}}}"
    has_reset = f"#{{m/r:^[a-z]+[^0-9][0-9]+[^0-9][0-9]+$,#{{{SOURCE_OPTION}}}}}"
    known = f"#{{&&:#{{==:{epoch},{note_epoch}}},{has_reset}}}"
    before = f"#{{?{known},#{{e|<|:{now},{note_reset}}},#{{e|>|:{epoch},{now - retry}}}}}"
    return f"#{{&&:#{{m:limited:*,{state}}},{before}}}"


def spawn_tmux(socket: str, args: list[str], env: Mapping[str, str]) -> int:
    """Start `tmux -S <socket> <args…>` with stdio on /dev/null; its pid, or 0."""
    argv = ["tmux", "-S", socket, *args]
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    try:
        return os.posix_spawnp("tmux", argv, child_env(env), file_actions=actions)
    except OSError:
        return 0


def reap(pid: int, timeout: float = TMUX_TIMEOUT) -> int | None:
    """Wait for `pid` at most `timeout` seconds (kill it after that); its exit status.

    Where the kernel has pidfds (Linux 5.3+) the wait wakes the moment the child
    exits; elsewhere it polls, a little less often each time."""
    if pid <= 0:
        return None
    deadline = time.monotonic() + timeout
    pidfd = -1
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pass
    pause = 0.0005
    try:
        while True:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if done:
                return os.waitstatus_to_exitcode(status)
            left = deadline - time.monotonic()
            if left <= 0:
                try:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                except OSError:
                    pass
                return None
            if pidfd >= 0:
                import select

                try:
                    select.select([pidfd], [], [], left)
                except (OSError, ValueError):
                    pidfd = -1
            else:
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.02)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def tmux_output(socket: str, args: list[str], env: Mapping[str, str], timeout: float = TMUX_TIMEOUT) -> str:
    """What `tmux -S <socket> <args…>` prints, "" on any failure; at most `timeout` s
    (the hook's screen read, the status line's pane list)."""
    import select

    read_fd, write_fd = os.pipe()
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, write_fd, 1),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_CLOSE, read_fd),
    ]
    try:
        pid = os.posix_spawnp("tmux", ["tmux", "-S", socket, *args], child_env(env), file_actions=actions)
    except OSError:
        os.close(read_fd)
        return ""
    finally:
        os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0 and select.select([read_fd], [], [], left)[0]:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    if reap(pid, max(deadline - time.monotonic(), 0.0)) != 0:
        return ""
    return b"".join(chunks).decode("utf-8", "replace")

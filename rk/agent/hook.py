"""`rk agent hook --agent <provider> <token>`: the hook every agent event runs.

It writes the pane option `@rk_pane_agent_state` (and the legacy
`@rk_agent_state`) = `<state>:<epoch>[:<pid>]` on the pane named by
`$TMUX_PANE`, on the server named by the first comma field of `$TMUX`, then
`@rk_pane_agent_session` = `<provider>:<session id>` when the harness's JSON
payload on stdin carries a session id (and `@rk_pane_transcript` = its
`transcript_path`, the agent's own record, where rk reads token usage), and, when the event ends a turn,
`@rk_pane_turn_end` = `<ok|failed|interrupted|limited>:<epoch>` (`rk.core.pane.turn`).
Then it appends the change to the server's state journal and pings every
waiting `rk agent await` (`rk.store.state_journal`), and nudges the running ticker
(when its socket is there). What follows the tmux write is made ready while it runs.
Gemini CLI's AfterAgent for a turn that gave no text says neither error nor Esc:
then, and only then, the hook reads the pane's screen first (`gemini_screen_end`).

The contract with the agent harness: never fail (always exit 0, print nothing
on success), never block (stdin is read only when it is not a terminal, capped
at 1 MiB and a short timeout, and one JSON object is enough; tmux gets a 5 s
timeout), do nothing outside tmux, never record a wrong pid (omit it instead).

This module runs on every agent event, so it imports the standard library
only, and only cheap parts of it: no `subprocess` (tmux is started with
`os.posix_spawnp`), no `json` package (the C scanner `_json` decodes the
payload; `json` pulls `re`), no `socket` (the nudge is sent with `_socket`),
no `rk.tmux.server`/`rk.core.pane.facts`/`rk.host.clock`/`rk.host.nudge` (pathlib, dataclasses, enum…).
The rules it shares with them (the state directory, the child env, RK_NOW, the
pane id) are written once in `rk.core.environ`, which is as cheap.
"""

from __future__ import annotations

import os
import sys
import time

from rk.core.environ import (
    LEGACY_STATE_OPTION,
    SESSION_OPTION,
    SOURCE_OPTION,
    STATE_OPTION,
    TRANSCRIPT_OPTION,
    TURN_END_OPTION,
    child_env,
    fixed_now,
    is_pane_id,
    nudge_socket,
    state_dir,
)

STATES = ("active", "waiting", "idle", "limited")
#: `stamp`: the session identity plus a boot-ready idle; `failed`: a turn that
#: ended on an error, whose payload's error says whether it hit a limit.
#: `idle-notice`: an agent's "waiting for your input" notification, which
#: arrives long after the turn ended (Claude's idle_prompt, ~60 s): it ends a
#: turn that ended without a Stop, but never a limit before its reset.
NOTICE = "idle-notice"
#: `interrupted`: a turn cut short (Codex's Interrupt): idle, the turn end `interrupted`.
TOKENS = (*STATES, "stamp", "failed", NOTICE, "interrupted")
# SOURCE_OPTION applies only while its epoch equals the state's, so any later
# hook write voids it without touching it.

#: Error words in a failed turn's payload that mean a usage or rate limit
#: (Claude's StopFailure `error`: rate_limit, billing_error "usage limit
#: reached"; API codes others report). Any other failure ends the turn: idle.
LIMIT_ERRORS = frozenset(
    {
        "rate_limit",
        "billing_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "usage_limit_reached",
        "usage_limit_exceeded",
        "quota_exceeded",
        "insufficient_quota",
        "resource_exhausted",
        "429",
    }
)
#: Phrases of a failed request's error message that mean a limit (Codex's
#: PostModelRequest: "exceeded retry limit, last status: 429 Too Many Requests",
#: "Quota exceeded. Check your plan…", "You've hit your usage limit…").
LIMIT_PHRASES = ("429", "too many requests", "rate limit", "rate_limit", "usage limit", "quota", "resource_exhausted")
#: `status` values of a request-end payload that are not a failure (no state change).
NOT_FAILED = frozenset({"completed", "complete", "succeeded", "success", "ok", "cancelled", "canceled"})

STDIN_CAP = 1 << 20  #: bytes of payload read at most
#: Seconds the payload may take in all. Agent CLIs write the whole payload and
#: close stdin at once (Claude, Codex and Gemini from node; the OpenCode plugin
#: with `stdin.end(…)`), so a payload arrives within milliseconds even in 64 KiB
#: pipe chunks; a second covers a loaded machine and stays far below every
#: CLI's hook timeout (60 s and more).
STDIN_BOUND = 1.0
HOOK_LOG = "hook.log"  #: in the state directory: why a hook could not do all it should
LOG_CAP = 64 * 1024  #: bytes; past this the log starts again
TMUX_TIMEOUT = 5.0
MAX_HOPS = 5  #: ancestors examined when looking for the agent process
#: A limit whose reset is not known counts as reset this long after it was
#: reported: `rk.core.pane.look.LIMIT_RETRY` (a test keeps the two equal).
LIMIT_RETRY = 15 * 60

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

#: Payload keys that carry the session id, in order of preference
#: (claude/codex/gemini: session_id; copilot: sessionId; opencode: sessionID;
#: agy: conversationId).
SESSION_KEYS = ("session_id", "sessionId", "sessionID", "conversationId", "conversation_id")

#: `source` values of a SessionStart that fires mid-turn (context compaction):
#: a stamp then must not write `idle` over the running turn's `active`.
COMPACT_SOURCES = frozenset({"compact"})

USAGE = "usage: rk agent hook --agent <provider> active|waiting|idle|limited|stamp|failed|idle-notice|interrupted"


# -- pure helpers -----------------------------------------------------------


def parse_args(argv: list[str]) -> tuple[str, str]:
    """`--agent claude idle` (or `--agent=claude`, any order) → (provider, token).

    ValueError with a one-line reason for anything else."""
    provider = ""
    token = ""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--agent", "-a"):
            if i + 1 >= len(argv):
                raise ValueError("--agent needs a value")
            provider = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--agent="):
            provider = arg.split("=", 1)[1]
        elif arg.startswith("-") and arg != "-":
            raise ValueError(f"unknown option {arg}")
        elif token:
            raise ValueError(f"unexpected argument {arg!r}")
        else:
            token = arg
        i += 1
    if not token:
        raise ValueError("missing the state token")
    if token not in TOKENS:
        raise ValueError(
            f"unknown token {token!r} (use active, waiting, idle, limited, stamp, failed, idle-notice or interrupted)"
        )
    return provider, token


def valid_provider(provider: str) -> bool:
    """`[a-z][a-z0-9_-]*`, at most 32 characters."""
    if not provider or len(provider) > 32 or not ("a" <= provider[0] <= "z"):
        return False
    return all("a" <= c <= "z" or "0" <= c <= "9" or c in "_-" for c in provider)


def valid_session_ref(ref: object) -> bool:
    """Non-empty, at most 256 characters, no whitespace or control characters."""
    if not isinstance(ref, str) or not ref or len(ref) > 256:
        return False
    return all(c.isprintable() and not c.isspace() for c in ref)


def session_id_of(payload: object) -> str:
    """The session id a harness payload carries, or ""."""
    if not isinstance(payload, dict):
        return ""
    for key in SESSION_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and valid_session_ref(value):
            return value
    return ""


def _error_words(value: object, depth: int = 0) -> list[str]:
    """The error identifiers a payload's `error` value carries, lower-cased: a
    string, or the `type`/`code`/`status` members of an object (one level deep)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (str, int)):
        return [str(value).strip().lower()]
    if isinstance(value, dict) and depth < 2:
        words: list[str] = []
        for key in ("type", "code", "status", "error"):
            if key in value:
                words += _error_words(value[key], depth + 1)
        return words
    return []


def failed_state(payload: object) -> str | None:
    """The state after a turn (or a model request) that ended on an error:
    `limited` for a usage or rate limit, else `idle` (the turn is over; the
    agent waits for a prompt). None when the payload's `status` says the
    request did not fail (Codex's PostModelRequest fires for every request)."""
    if not isinstance(payload, dict):
        return "idle"
    status = payload.get("status")
    if isinstance(status, str) and status.strip().lower() in NOT_FAILED:
        return None
    words = _error_words(payload.get("error")) + _error_words(payload.get("error_type"))
    if any(w in LIMIT_ERRORS or any(p in w for p in LIMIT_PHRASES) for w in words):
        return "limited"
    return "idle"


def socket_of(tmux_env: str) -> str:
    """The socket path in `$TMUX` (`<path>,<server pid>,<session>`), or ""."""
    return tmux_env.split(",", 1)[0].strip() if tmux_env else ""


def epoch_now(env) -> int:
    """Unix seconds: `RK_NOW` when set (ValueError when unreadable), else the wall clock."""
    fixed = fixed_now(env)
    return int(time.time()) if fixed is None else fixed


def transcript_of(payload: object) -> str:
    """The payload's `transcript_path` (Claude Code, Codex), or "" for none or one
    tmux could misread: an absolute path, printable, at most 4096 bytes, not
    ending in `;` (tmux's command separator)."""
    path = payload.get("transcript_path") if isinstance(payload, dict) else None
    if not isinstance(path, str) or not path.startswith("/") or len(path) > 4096 or path.endswith(";"):
        return ""
    return path if path.isprintable() else ""


def state_value(state: str, epoch: int, pid: int = 0) -> str:
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


def payload_reset(payload: object, since: int, env) -> int:
    """The reset instant a failed turn's payload names (Claude's StopFailure
    `last_assistant_message` "…· resets 4:20pm (Europe/London)", Codex's
    "…try again at 3:28 PM"), or 0. Read with the screen's own rule; its imports
    (re, datetime, zoneinfo) are paid only on this rare path."""
    if not isinstance(payload, dict):
        return 0
    texts = [payload.get(k) for k in ("last_assistant_message", "error_details", "error", "message")]
    text = " ".join(t for t in texts if isinstance(t, str))[:4000]
    if not text:
        return 0
    try:
        from rk.core.pane.screen.resets import reset_instant

        reset = reset_instant(text, since, _local_zone(env), now=since)
    except Exception:
        return 0
    return reset if reset > since else 0


def _local_zone(env):
    """`$TZ` as an IANA zone, else the machine's current UTC offset (a reset is
    hours away at most, and Claude names its zone anyway). `rk.host.clock` is not
    imported: the hook path stays off it."""
    from datetime import timedelta, timezone

    name = env.get("TZ", "").lstrip(":")
    if name:
        try:
            from zoneinfo import ZoneInfo

            return ZoneInfo(name)
        except Exception:
            pass
    return timezone(timedelta(seconds=time.localtime().tm_gmtoff))


# -- the agent process ----------------------------------------------------


def expected_comms(provider: str) -> tuple[str, ...]:
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
    provider: str, start: int | None = None, *, proc_root: str = "/proc", max_hops: int = MAX_HOPS, ps_step=None
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


# -- stdin ------------------------------------------------------------------


def read_payload(fd: int = 0, cap: int = STDIN_CAP, timeout: float = STDIN_BOUND) -> object:
    """The payload's JSON value, or None (see `read_input`)."""
    return read_input(fd, cap, timeout)[0]


def read_input(fd: int = 0, cap: int = STDIN_CAP, timeout: float = STDIN_BOUND) -> tuple[object, str]:
    """(the JSON value on `fd` or None, why there is none: "" when nothing is amiss).

    Reads until end of input, or until one complete JSON object has arrived
    (a writer that never closes), whatever the chunking, and never past
    `timeout` seconds in all. Never reads a terminal. Past `cap` bytes the rest
    is drained (so the harness does not get EPIPE) but ignored."""
    try:
        if os.isatty(fd):
            return None, ""
    except OSError:
        return None, ""
    import select

    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    eof = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):
            break
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            break
        if not chunk:
            eof = True
            break
        size += len(chunk)
        if size > cap:
            chunks = []
            continue
        chunks.append(chunk)
        if chunk.rstrip().endswith(b"}"):  # perhaps the end of the object: no need to wait for EOF
            value = _decode(b"".join(chunks))
            if isinstance(value, dict):
                return value, ""
    late = "" if eof else f" (input still open after {timeout:g}s)"
    if size > cap:
        return None, f"payload over {cap} bytes ignored{late}"
    buf = b"".join(chunks)
    if not buf.strip():
        return None, "" if eof or size else f"no payload{late}"
    value = _decode(buf)
    if value is _BAD:
        return None, f"payload of {size} bytes is not JSON{late or ' (or is truncated)'}"
    return value, ""


_BAD = object()
_SCAN: list = []


class _ScanContext:
    """What the C JSON scanner reads off a decoder: the settings of `json.loads`."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


def _scanner():
    """`scan(text, index) -> (value, end)`. The C scanner alone costs ~0.4 ms to
    import; the `json` package pulls `re` (~6 ms where nothing loaded it yet)."""
    try:
        from _json import make_scanner

        return make_scanner(_ScanContext())  # type: ignore[arg-type]  # duck-typed as json.JSONDecoder
    except Exception:  # no C accelerator: the real thing
        import json

        return json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__


def _decode(buf: bytes) -> object:
    """The first JSON value of `buf` (invalid UTF-8 replaced), or `_BAD`.

    Any exception is a bad payload: the C scanner raises StopIteration,
    ValueError or RecursionError (deep nesting), and SystemError for a syntax
    error when `json.decoder` is not loaded (it looks its error class up there)."""
    text = buf.decode("utf-8", "replace").lstrip()
    if not text:
        return _BAD
    if not _SCAN:
        _SCAN.append(_scanner())
    try:
        value, _ = _SCAN[0](text, 0)
    except Exception:
        return _BAD
    return value


# -- the log ----------------------------------------------------------------


def log_line(env, line: str) -> None:
    """Append one line to `hook.log` in the state directory: why a hook could not
    do all it should. Private (0600), never through a symlink, never a FIFO,
    emptied when it passes LOG_CAP bytes; every failure ignored (the hook never
    prints to the agent)."""
    try:
        directory = state_dir(env)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(os.path.join(directory, HOOK_LOG), flags, 0o600)
    except (OSError, ValueError):
        return
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o170000 != 0o100000:  # not a regular file
            return
        if st.st_mode & 0o077:
            os.fchmod(fd, 0o600)
        if st.st_size > LOG_CAP:
            os.ftruncate(fd, 0)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        text = line.replace("\n", " ")[:500]
        os.write(fd, f"{stamp} {text}\n".encode("utf-8", "replace"))
    except OSError:
        pass
    finally:
        os.close(fd)


# -- tmux -------------------------------------------------------------------


def _spawn_tmux(socket: str, args: list[str], env) -> int:
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


def _reap(pid: int, timeout: float = TMUX_TIMEOUT) -> int | None:
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


#: Seconds a Gemini hook watches the screen for how a textless turn ended: the
#: CLI draws its error or "Request cancelled." within ~0.1 s of AfterAgent.
GEMINI_SCREEN_WAIT = 2.0
GEMINI_SCREEN_STEP = 0.05


def gemini_screen_end(socket: str, pane: str, env) -> tuple[str, int]:
    """How Gemini's textless turn ended, read from the pane's screen (AfterAgent
    fires before the CLI draws it, so the screen is watched until it shows an
    error, a limit or a cancel, at most `GEMINI_SCREEN_WAIT` s): (`failed`|`limited`|`interrupted`,
    the reset instant or 0), or ("", 0) when it shows none (an empty reply)."""
    from rk.core.pane.screen.gemini import turn_end_of

    zone = _local_zone(env)
    deadline = time.monotonic() + GEMINI_SCREEN_WAIT
    while True:
        styled = _capture(socket, pane, env)
        if styled:
            end, reset = turn_end_of(styled, int(time.time()), zone)
            if end:
                return end, reset
        if time.monotonic() >= deadline:
            return "", 0
        time.sleep(GEMINI_SCREEN_STEP)


def _capture(socket: str, pane: str, env) -> str:
    """`capture-pane -p -J -e` of `pane` ("" when tmux fails)."""
    return tmux_output(socket, ["capture-pane", "-p", "-J", "-e", "-t", pane], env)


def tmux_output(socket: str, args: list[str], env, timeout: float = TMUX_TIMEOUT) -> str:
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
    if _reap(pid, max(deadline - time.monotonic(), 0.0)) != 0:
        return ""
    return b"".join(chunks).decode("utf-8", "replace")


def _ticker_socket(env) -> str:
    """The ticker's nudge socket when one is there, else "" (no ticker runs: no
    nudge, and no `_socket` import). The socket module is loaded here, ahead of
    the send, so the hook can do it while its tmux write runs."""
    path = nudge_socket(env)
    try:
        if os.lstat(path).st_mode & 0o170000 != 0o140000:  # not a socket
            return ""
        import _socket  # noqa: F401
    except ImportError:  # not CPython: `_nudge` sends through rk.host.nudge
        pass
    except (OSError, ValueError):
        return ""
    return path


def _nudge(slug: str, env, path: str = "") -> None:
    """Tell the running ticker to tick server `slug` now: one non-blocking datagram
    to `path` (default: the nudge socket of `env`), as `rk.host.nudge.send` sends it;
    every failure ignored."""
    try:
        import _socket
    except ImportError:  # not CPython: the module itself
        try:
            from rk.host import nudge

            nudge.send(slug, env)
        except Exception:
            pass
        return
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
    except OSError:
        return
    try:
        sock.setblocking(False)
        sock.sendto(slug.encode("utf-8", "replace")[:255], path or nudge_socket(env))
    except OSError:
        pass
    finally:
        sock.close()


# -- entry points -----------------------------------------------------------


def run(argv: list[str], env=None, stdin_fd: int = 0) -> int:
    """The hook, with its outside facts passed in (tests call this).

    The token decides the state; the payload only adds the session id, whether
    a failure was a limit (and when it resets), and for a compaction's stamp
    that no state is written. Whatever the payload (late, truncated, huge, not
    JSON), the state is written; what went wrong goes to `hook.log`."""
    env = os.environ if env is None else env
    pane = env.get("TMUX_PANE", "")
    if not pane:
        return 0  # not in tmux: nothing to do, and not even an error
    try:
        provider, token = parse_args(argv)
    except ValueError as exc:
        print(f"rk agent hook: {exc}; {USAGE}", file=sys.stderr)
        log_line(env, f"{pane} {' '.join(argv)[:80]!r}: {exc}")
        return 0
    where = f"{pane} {provider or '-'} {token}"
    socket = socket_of(env.get("TMUX", ""))
    if not socket or not is_pane_id(pane):
        # cannot tell which server's pane this is: writing would risk another pane
        log_line(env, f"{where}: no state written: $TMUX or $TMUX_PANE unusable")
        return 0
    payload, why = read_input(stdin_fd)
    if why:
        log_line(env, f"{where}: {why}; the state is written without it")
    session_id = session_id_of(payload)
    session = f"{provider}:{session_id}" if session_id and valid_provider(provider) else ""
    notice = token == NOTICE or (
        token == "idle" and isinstance(payload, dict) and payload.get("hook_event_name") == "Notification"
    )
    state: str | None = "idle" if token in (NOTICE, "interrupted") else token
    if token == "stamp":
        source = payload.get("source") if isinstance(payload, dict) else None
        state = None if source in COMPACT_SOURCES else "idle"
    elif token == "failed":
        state = failed_state(payload)
    pid = 0
    epoch = 0
    note = ""
    if state:
        try:
            epoch = epoch_now(env)
        except ValueError:
            epoch = int(time.time())
            log_line(env, f"{where}: RK_NOW unreadable; the wall clock is used")
        pid = find_agent_pid(provider)
        if state == "limited" and token == "failed":
            reset = payload_reset(payload, epoch, env)
            note = f"hook:{epoch}:{reset}" if reset else ""
    # imported here, past the not-in-tmux exit: the no-op path pays for none of it
    from rk.core.pane.turn import hook_turn_end, reads_gemini_screen

    event = payload.get("hook_event_name") if isinstance(payload, dict) else None
    end = "" if notice else hook_turn_end(token, state, event)
    if state and reads_gemini_screen(provider, token, payload):
        seen, reset = gemini_screen_end(socket, pane, env)
        if seen:
            end = seen
        if seen == "limited":
            state = "limited"
            note = f"hook:{epoch}:{reset}" if reset > epoch else ""
    guard = limit_holds(epoch) if notice else ""
    transcript = transcript_of(payload) if session else ""
    args = tmux_commands(pane, state, epoch, pid, session, note, guard=guard, turn_end=end, transcript=transcript)
    if not args:
        return 0
    pid_tmux = _spawn_tmux(socket, args, env)
    # While tmux writes (its client and server take ~2 ms), what comes after the
    # write is made ready: the journal's imports and line, and the nudge's socket.
    from rk.core.log.states import render as journal_line
    from rk.store.state_journal import append as journal_append
    from rk.store.state_journal import wake as wake_awaits

    slug = os.path.basename(socket)
    line = b""
    if state and not notice:  # a notice's write is guarded inside tmux: what it wrote is not known here
        line = journal_line(epoch, pane, state, end, "hook", provider if valid_provider(provider) else "")
    ticker = _ticker_socket(env)
    status = _reap(pid_tmux)
    if status == 0:
        if line:
            journal_append(env, slug, line)
        if state:
            wake_awaits(env)
        if ticker:
            _nudge(slug, env, ticker)
    elif not pid_tmux:
        log_line(env, f"{where}: no state written: tmux could not be started")
    else:
        what = "timed out" if status is None else f"exit status {status}"
        log_line(env, f"{where}: no state written: tmux {what} (pane or server gone?)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`rk agent hook …`: always 0, whatever happens."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        print(
            "Writes @rk_pane_agent_state on $TMUX_PANE; meant to be run by agent hooks "
            "(install them with `rk agent setup`)."
        )
        return 0
    try:
        return run(args)
    except BaseException:
        return 0


def set_state(
    state: str, pane: str | None = None, env=None, *, pid: int = 0, socket: str | None = None, until: int = 0
) -> tuple[bool, str]:
    """`rk agent state`: write `state` on `pane` (default `$TMUX_PANE`) of the
    server of `$TMUX` (or `socket`), noted as a manual report (with the reset
    instant `until` for `limited`), then nudge the ticker. (ok, message)."""
    env = os.environ if env is None else env
    if state not in STATES:
        return False, f"unknown state {state!r} (use active, waiting, idle or limited)"
    if until and state != "limited":
        return False, "a reset time only goes with the state limited"
    socket = socket or socket_of(env.get("TMUX", ""))
    if not socket:
        return False, "not inside tmux ($TMUX is not set): run this from a tmux pane"
    pane = pane or env.get("TMUX_PANE", "")
    if not pane:
        return False, "no pane: $TMUX_PANE is not set; pass --pane %N"
    if not is_pane_id(pane):
        return False, f"bad pane {pane!r}: use a pane id like %3"
    if pid < 0:
        return False, f"bad pid {pid}"
    try:
        epoch = epoch_now(env)
    except ValueError as exc:
        return False, str(exc)
    import subprocess

    source = f"manual:{epoch}" + (f":{until}" if until else "")
    end = "limited" if state == "limited" else ""
    argv = ["tmux", "-S", socket, *tmux_commands(pane, state, epoch, pid, "", source, turn_end=end)]
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=TMUX_TIMEOUT, env=child_env(env)
        )
    except FileNotFoundError:
        return False, "tmux is not installed (not on PATH)"
    except subprocess.TimeoutExpired:
        return False, f"tmux timed out after {TMUX_TIMEOUT:g}s"
    except OSError as exc:
        return False, f"cannot run tmux: {exc}"
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[0] if lines else f"exit status {proc.returncode}"
        return False, f"tmux: {why}"
    from rk.core.log.states import render as journal_line
    from rk.host import nudge
    from rk.store.state_journal import append as journal_append
    from rk.store.state_journal import wake as wake_awaits

    slug = os.path.basename(socket)
    journal_append(env, slug, journal_line(epoch, pane, state, "limited" if state == "limited" else "", "manual"))
    wake_awaits(env)
    nudge.send(slug, env)
    return True, f"{pane} {STATE_OPTION}={state_value(state, epoch, pid)}"

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
timeout), do nothing outside tmux, never record a wrong pid (omit it instead),
and write nothing into a state directory the CLI would refuse (a symbolic link,
another user's, one others may write to: `rk.host.private`); the pane's option,
tmux's own, is still written, and the CLI names the fix.

This module holds the entry points and the order of the work; the parts are
beside it: `rk.agent.hook_event` (the payload on stdin and what it says, the
agent's pid), `rk.agent.hook_tmux` (the writes, and tmux started and read),
and, for the rare turn ends the payload does not spell out, `rk.agent.hook_turn_end`.
They run on every agent event, so they import the standard library only, and
only cheap parts of it: no `subprocess` (tmux is started with
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
from _collections_abc import Mapping  # loaded with os: no `collections` import

from rk.core.environ import (
    STATE_OPTION,
    child_env,
    fixed_now,
    is_pane_id,
    nudge_socket,
    state_dir,
)
from rk.core.pane import state_words as _words
from rk.host import private

STATES = _words.STATES
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

HOOK_LOG = "hook.log"  #: in the state directory: why a hook could not do all it should
LOG_CAP = 64 * 1024  #: bytes; past this the log starts again

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


def socket_of(tmux_env: str) -> str:
    """The socket path in `$TMUX` (`<path>,<server pid>,<session>`), or ""."""
    return tmux_env.split(",", 1)[0].strip() if tmux_env else ""


def epoch_now(env: Mapping[str, str]) -> int:
    """Unix seconds: `RK_NOW` when set (ValueError when unreadable), else the wall clock."""
    fixed = fixed_now(env)
    return int(time.time()) if fixed is None else fixed


# -- the log ----------------------------------------------------------------


def log_line(env: Mapping[str, str], line: str) -> None:
    """Append one line to `hook.log` in the state directory: why a hook could not
    do all it should. Private (0600), never through a symlink, never a FIFO,
    emptied when it passes LOG_CAP bytes; every failure ignored (the hook never
    prints to the agent); nothing at all when the state directory is not private."""
    try:
        directory = state_dir(env)
        if private.ensure_dir(directory):
            return  # not private: nothing is written there (the CLI says why)
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


def private_state(env: Mapping[str, str]) -> bool:
    """Whether the state directory is private (created 0700 if need be), as the CLI
    demands (`rk.host.private`): the hook writes nothing there otherwise, and says
    nothing to the agent; rk's CLI names the fix."""
    try:
        return not private.ensure_dir(state_dir(env))
    except (OSError, ValueError):
        return False


def _ticker_socket(env: Mapping[str, str]) -> str:
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


def _nudge(slug: str, env: Mapping[str, str], path: str = "") -> None:
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


def _state_of(token: str, payload: object) -> str | None:
    """The state a hook's token writes, given its payload: None for a compaction's
    stamp (mid-turn: no `idle` over the running turn), and for a request that
    did not fail; a failure's state is `limited` or `idle`."""
    from rk.agent.hook_event import COMPACT_SOURCES, failed_state

    if token == "stamp":
        source = payload.get("source") if isinstance(payload, dict) else None
        return None if source in COMPACT_SOURCES else _words.IDLE
    if token == "failed":
        return failed_state(payload)
    return _words.IDLE if token in (NOTICE, _words.INTERRUPTED) else token


def run(argv: list[str], env: Mapping[str, str] | None = None, stdin_fd: int = 0) -> int:
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
    # imported here, past the not-in-tmux exit: the no-op path pays for none of it
    from rk.agent import hook_event, hook_tmux
    from rk.core.pane.turn import hook_turn_end, reads_gemini_screen

    payload, why = hook_event.read_input(stdin_fd)
    if hook_event.from_subagent(provider, payload):
        return 0  # a subagent's turn inside the pane's: nothing of the pane's changes
    if why:
        log_line(env, f"{where}: {why}; the state is written without it")
    session_id = hook_event.session_id_of(payload)
    session = f"{provider}:{session_id}" if session_id and hook_event.valid_provider(provider) else ""
    notice = token == NOTICE or (
        token == _words.IDLE and isinstance(payload, dict) and payload.get("hook_event_name") == "Notification"
    )
    state = _state_of(token, payload)
    pid, epoch, note = 0, 0, ""
    if state:
        try:
            epoch = epoch_now(env)
        except ValueError:
            epoch = int(time.time())
            log_line(env, f"{where}: RK_NOW unreadable; the wall clock is used")
        pid = hook_event.find_agent_pid(provider)
        if state == _words.LIMITED and token == _words.FAILED:
            from rk.agent.hook_turn_end import payload_reset  # rare: a limit's failure

            reset = payload_reset(payload, epoch, env)
            note = f"hook:{epoch}:{reset}" if reset else ""
    event = payload.get("hook_event_name") if isinstance(payload, dict) else None
    end = "" if notice else hook_turn_end(token, state, event)
    if state and reads_gemini_screen(provider, token, payload):
        from rk.agent.hook_turn_end import gemini_screen_end  # rare: Gemini's textless turn

        seen, reset = gemini_screen_end(socket, pane, env)
        if seen:
            end = seen
        if seen == _words.LIMITED:
            state = _words.LIMITED
            note = f"hook:{epoch}:{reset}" if reset > epoch else ""
    guard = hook_tmux.limit_holds(epoch) if notice else ""
    transcript = hook_event.transcript_of(payload) if session else ""
    args = hook_tmux.tmux_commands(
        pane, state, epoch, pid, session, note, guard=guard, turn_end=end, transcript=transcript
    )
    if not args:
        return 0
    if notice and state:
        args = [*hook_tmux.interrupted_if_active(pane, epoch), ";", *args]
    pid_tmux = hook_tmux.spawn_tmux(socket, args, env)
    # While tmux writes (its client and server take ~2 ms), what comes after the
    # write is made ready: the journal's imports and line, and the nudge's socket.
    from rk.core.log.states import render as journal_line
    from rk.store.state_journal import append as journal_append
    from rk.store.state_journal import wake as wake_awaits

    slug = os.path.basename(socket)
    line = b""
    if state and not notice:  # a notice's write is guarded inside tmux: what it wrote is not known here
        line = journal_line(epoch, pane, state, end, "hook", provider if hook_event.valid_provider(provider) else "")
    safe = private_state(env)
    ticker = _ticker_socket(env) if safe else ""
    status = hook_tmux.reap(pid_tmux)
    if status == 0 and not safe:
        pass  # the pane's option is written; the state directory, not private, is left alone
    elif status == 0:
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
    state: str,
    pane: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    pid: int = 0,
    socket: str | None = None,
    until: int = 0,
) -> tuple[bool, str]:
    """`rk agent state`: write `state` on `pane` (default `$TMUX_PANE`) of the
    server of `$TMUX` (or `socket`), noted as a manual report (with the reset
    instant `until` for `limited`), then nudge the ticker. (ok, message)."""
    env = os.environ if env is None else env
    if state not in STATES:
        return False, f"unknown state {state!r} (use active, waiting, idle or limited)"
    if until and state != _words.LIMITED:
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
        unsafe = private.ensure_dir(state_dir(env))
    except (OSError, ValueError) as exc:
        unsafe = f"state directory: {exc}"
    if unsafe:
        return False, unsafe
    try:
        epoch = epoch_now(env)
    except ValueError as exc:
        return False, str(exc)
    import subprocess

    from rk.agent.hook_tmux import TMUX_TIMEOUT, state_value, tmux_commands

    source = f"manual:{epoch}" + (f":{until}" if until else "")
    end = _words.LIMITED if state == _words.LIMITED else ""
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
    journal_append(
        env, slug, journal_line(epoch, pane, state, _words.LIMITED if state == _words.LIMITED else "", "manual")
    )
    wake_awaits(env)
    nudge.send(slug, env)
    return True, f"{pane} {STATE_OPTION}={state_value(state, epoch, pid)}"

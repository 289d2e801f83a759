"""`rk agent …`: state, setup, hook, await (list: `rk.cli.panes`).

`rk agent hook` is declared here for --help and completion only: the real
entry point is dispatched by `rk/__main__.py` before typer is imported (the
hook runs on every agent event and must start in milliseconds).
Errors are one line on stderr; exit codes 0 ok, 1 operational, 2 usage.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from rk.cli.environment import CliError, ErrorCode, ExitStatus, environment, rfc3339
from rk.cli.options import JsonOpt, ServerOpt, command_with
from rk.cli.panes import AgentRow as AgentRow  # re-exported: `rk doctor` shows the agent panes with it
from rk.core.bounds import MAX_PID
from rk.core.environ import is_pane_id
from rk.core.pane.facts import LIMITED

if TYPE_CHECKING:
    from rk.cli.environment import Environment
    from rk.tmux.server import Server


def _error(command: str, message: str, status: ExitStatus) -> CliError:
    code = ErrorCode.USAGE if status == ExitStatus.USAGE else ErrorCode.OPERATIONAL
    return CliError(f"agent {command}: {message}", status, code)


def cmd_state(
    ctx: typer.Context,
    state: Annotated[str, typer.Argument(metavar="active|waiting|idle|limited", help="The state to record.")],
    pane: Annotated[
        str | None,
        typer.Option("--pane", "-t", metavar="%N", help="Pane id on the current server (default: $TMUX_PANE)."),
    ] = None,
    pid: Annotated[
        int | None, typer.Option("--pid", metavar="PID", help="Record this agent pid with the state (liveness check).")
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="TIME", help="With limited: when the limit resets (ISO-8601 or unix seconds)."),
    ] = None,
) -> None:
    """Write @rk_pane_agent_state on the current pane (or --pane) and nudge the ticker.

    Example: rk agent state limited --until 2026-12-01T15:00:00+01:00 --pane %3
    """
    env = environment(ctx)
    from rk.agent import hook

    if state not in hook.STATES:
        raise _error("state", f"unknown state {state!r} (use active, waiting, idle or limited)", ExitStatus.USAGE)
    reset = 0
    if until is not None:
        if state != LIMITED:
            raise _error("state", f"--until only goes with the state {LIMITED}", ExitStatus.USAGE)
        from rk.host.clock import ClockError, parse_instant

        try:
            reset = parse_instant(until)
        except ClockError as exc:
            raise _error("state", f"--until: {exc}", ExitStatus.USAGE) from None
    if pane is not None and not is_pane_id(pane):
        raise _error("state", f"bad pane {pane!r}: use a pane id like %3", ExitStatus.USAGE)
    if pid is not None and not 0 < pid <= MAX_PID:
        raise _error("state", f"bad pid {pid}: a process id is between 1 and {MAX_PID}", ExitStatus.USAGE)
    socket = None
    if env.server_flag:  # a global -L names the server (then --pane says which pane)
        from rk.tmux.server import socket_dir

        socket = str(socket_dir(env.environ) / env.server)
        if pane is None:
            raise _error("state", "with -L, pass --pane %N (the pane on that server)", ExitStatus.USAGE)
    ok, message = hook.set_state(state, pane, env.environ, pid=pid or 0, socket=socket, until=reset)
    if not ok:
        raise _error("state", message, ExitStatus.ERROR)
    env.out(message)


def cmd_setup(
    ctx: typer.Context,
    agents: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[claude|codex|gemini|opencode|tmux]...",
            help="Agent CLIs to configure (default: those on PATH; all four for --uninstall); "
            "tmux: rk's segment in the status line.",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the diff; write nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write without asking.")] = False,
    uninstall: Annotated[bool, typer.Option("--uninstall", help="Remove rk's hooks (only those).")] = False,
    mcp: Annotated[
        bool, typer.Option("--mcp", help="Register (or with --uninstall remove) `rk mcp` as an MCP server instead.")
    ] = False,
) -> None:
    """Install (or remove) the hooks that report agent state to rk; with tmux, rk's
    segment in tmux's status-right (the config file, and the running server: -L's,
    else the caller's, else the default one).

    Example: rk agent setup claude codex --dry-run
    """
    from rk.agent.setup import SetupOptions, run_setup
    from rk.tmux.server import socket_dir, socket_from_tmux_env

    env = environment(ctx)
    socket = None
    if "tmux" in (agents or ()):  # the server whose status line is set too: -L's, else the caller's
        own = socket_from_tmux_env(env.environ.get("TMUX", ""))
        socket = own if own and not env.server_flag else str(socket_dir(env.environ) / env.server)
    errors = io.StringIO()
    code = run_setup(
        agents or (),
        SetupOptions(dry_run=dry_run, yes=yes, uninstall=uninstall, mcp=mcp, tmux_socket=socket),
        env=env.environ,
        stdout=env.stdout,
        stderr=errors,
    )
    if code:
        message = errors.getvalue().strip().removeprefix("rk agent setup: ") or "failed"
        raise _error("setup", message, ExitStatus(code))


#: The hook parses its own arguments: typer passes them through untouched.
HOOK_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def cmd_hook(
    ctx: typer.Context,
    token: Annotated[str, typer.Argument(metavar="active|waiting|idle|stamp")],
    agent: Annotated[str, typer.Option("--agent", help="The agent CLI: claude, codex, gemini, opencode…")] = "",
) -> None:
    """The hook agents run on every event (installed by `rk agent setup`). Always exits 0.

    Example: rk agent hook --agent claude idle   (what the installed hooks run)
    """
    from rk.agent.hook import main as hook_main

    hook_main(["--agent", agent, token, *ctx.args] if agent else [token, *ctx.args])


def printable(text: str) -> str:
    """`text` with control and other unprintable characters escaped (`\\x1b`)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


@dataclass(frozen=True)
class AwaitFlags:
    """What `rk agent await` was given."""

    until: Annotated[
        str,
        typer.Option(
            "--until",
            metavar="COND[,COND…]",
            help="idle, waiting, limited, failed, interrupted, gone (comma-separated).",
        ),
    ] = ""
    pane: Annotated[str | None, typer.Option("--pane", "-t", metavar="%N", help="The pane to wait on.")] = None
    role: Annotated[
        str | None, typer.Option("--role", metavar="ROLE", help="Every pane whose window has this role.")
    ] = None
    session: Annotated[
        str | None, typer.Option("--session", "-s", metavar="NAME", help="Every pane of this session.")
    ] = None
    after_active: Annotated[
        bool, typer.Option("--after-active", help="Count a pane only once it was seen active (the turn just started).")
    ] = False
    any_: Annotated[bool, typer.Option("--any", help="Return when any target is done (the default).")] = False
    all_: Annotated[bool, typer.Option("--all", help="Return when every target is done.")] = False
    timeout: Annotated[
        str | None, typer.Option("--timeout", metavar="DURATION", help="Give up after this long (exit 1).")
    ] = None
    as_json: JsonOpt = False
    server: ServerOpt = None


def _await(ctx: typer.Context, flags: AwaitFlags) -> None:
    """Block until the target pane(s) reach one of the --until conditions; print which
    (pane, state, since). A target that is gone (closed, its server dead or restarted,
    another process in it) ends the wait at once, whatever --until says. Exit 0 when
    reached, 1 on timeout or on gone unasked, 2 on usage.

    Example: rk agent await --role worker --all --until idle,failed --after-active --timeout 10m
    """
    env = environment(ctx, flags.server, flags.as_json)
    until, pane, role, session = flags.until, flags.pane, flags.role, flags.session
    any_, all_, timeout = flags.any_, flags.all_, flags.timeout
    from rk.core.channels.awaiting import ALL, ANY, GONE, Spec, parse_until

    if not until:
        raise _error("await", "--until is required (e.g. --until idle,waiting)", ExitStatus.USAGE)
    try:
        wanted = parse_until(until)
    except ValueError as exc:
        raise _error("await", str(exc), ExitStatus.USAGE) from None
    if any_ and all_:
        raise _error("await", "pass --any or --all, not both", ExitStatus.USAGE)
    if pane is not None and not is_pane_id(pane):
        raise _error("await", f"bad pane {printable(pane)!r}: use a pane id like %3", ExitStatus.USAGE)
    if not (pane or role or session):
        raise _error("await", "name the target: --pane %N, --role R or --session S", ExitStatus.USAGE)
    seconds: float | None = None
    if timeout is not None:
        from rk.core.durations import DurationError, parse_duration

        try:
            seconds = parse_duration(timeout)
        except DurationError as exc:
            raise _error("await", f"--timeout: {exc}", ExitStatus.USAGE) from None
    spec = Spec(wanted, flags.after_active, ALL if all_ else ANY)
    from rk.channels.waiter import AwaitError, run_await

    try:
        result = run_await(
            env.caller_server() if not env.server_flag else _named(env),
            spec,
            pane or "",
            role or "",
            session or "",
            seconds,
            env.environ,
        )
    except AwaitError as exc:
        raise _error("await", str(exc), ExitStatus.ERROR) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    records = [r.to_dict() for r in result.reached]
    doc = {"condition": result.condition, "panes": records, "waited": round(result.waited, 3)}
    zone = env.zone()
    lines = [] if result.reached else [result.condition]
    for r in result.reached:
        v = r.view
        since = rfc3339(v.since, zone) if v.since else "-"
        state = printable(v.state) if v.present else GONE
        why = f" ({printable(v.why)})" if v.why else ""
        lines.append(f"{r.condition} {v.pane} state={state or '-'} since={since}{why}")
    env.result(doc, lines)
    if not result.answered(spec):
        raise typer.Exit(int(ExitStatus.ERROR))


cmd_await = command_with(_await, AwaitFlags)


def _named(env: Environment) -> Server:
    from rk.tmux.server import Server

    return Server(name=env.server, env=env.environ)

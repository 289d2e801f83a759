"""`rk agent …`: state, setup, hook.

`rk agent hook` is declared here for --help and completion only: the real
entry point is dispatched by `rk/__main__.py` before typer is imported.
Errors are one line on stderr; exit codes 0 ok, 1 operational, 2 usage.
"""

from __future__ import annotations

import io
from typing import List, Optional

import typer

from rk.core.bounds import MAX_PID

agent_app = typer.Typer(
    no_args_is_help=True,
    help="Agent state: the hook agents run, a manual state write, and hook installation.",
)


def _error(command: str, message: str, code: int) -> Exception:
    """The failure to raise: the root CLI's `CliError` (one line on stderr, or the
    JSON error envelope, and the exit status), else a plain line and typer.Exit."""
    try:
        from rk.cli import CliError, ExitStatus
    except ImportError:  # pragma: no cover - agent_app mounted elsewhere
        typer.echo(f"rk agent {command}: {message}", err=True)
        return typer.Exit(code)
    return CliError(f"agent {command}: {message}", ExitStatus(code), "usage" if code == 2 else "operational")


@agent_app.command("state")
def state_command(
    ctx: typer.Context,
    state: str = typer.Argument(..., metavar="active|waiting|idle|limited", help="The state to record."),
    pane: Optional[str] = typer.Option(None, "--pane", "-t", metavar="%N",
                                       help="Pane id on the current server (default: $TMUX_PANE)."),
    pid: Optional[int] = typer.Option(None, "--pid", metavar="PID",
                                      help="Record this agent pid with the state (liveness check)."),
    until: Optional[str] = typer.Option(None, "--until", metavar="TIME",
                                        help="With limited: when the limit resets (ISO-8601 or unix seconds)."),
) -> None:
    """Write @rk_pane_agent_state on the current pane (or --pane) and nudge the ticker.

    Example: rk agent state limited --until 2026-12-01T15:00:00+01:00 --pane %3
    """
    from rk.agent import hook

    if state not in hook.STATES:
        raise _error("state", f"unknown state {state!r} (use active, waiting, idle or limited)", 2)
    reset = 0
    if until is not None:
        if state != "limited":
            raise _error("state", "--until only goes with the state limited", 2)
        from rk.clock import ClockError, parse_instant

        try:
            reset = parse_instant(until)
        except ClockError as exc:
            raise _error("state", f"--until: {exc}", 2) from None
    if pane is not None and not hook.valid_pane(pane):
        raise _error("state", f"bad pane {pane!r}: use a pane id like %3", 2)
    if pid is not None and not 0 < pid <= MAX_PID:
        raise _error("state", f"bad pid {pid}: a process id is between 1 and {MAX_PID}", 2)
    socket = None
    env = ctx.obj  # the root CLI's Environment: a global -L names the server (then --pane says which pane)
    if env is not None and env.server_flag:
        from rk.tmux import socket_dir

        socket = str(socket_dir(env.environ) / env.server)
        if pane is None:
            raise _error("state", "with -L, pass --pane %N (the pane on that server)", 2)
    ok, message = hook.set_state(state, pane, pid=pid or 0, socket=socket, until=reset)
    if not ok:
        raise _error("state", message, 1)
    typer.echo(message)


@agent_app.command("setup")
def setup_command(
    agents: Optional[List[str]] = typer.Argument(
        None, metavar="[claude|codex|gemini|opencode]...",
        help="Agent CLIs to configure (default: those on PATH; all four for --uninstall)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the diff; write nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Write without asking."),
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove rk's hooks (only those)."),
) -> None:
    """Install (or remove) the hooks that report agent state to rk."""
    from rk.agent.setup import run_setup

    errors = io.StringIO()
    code = run_setup(agents or (), dry_run=dry_run, yes=yes, uninstall=uninstall, stderr=errors)
    if code:
        message = errors.getvalue().strip().removeprefix("rk agent setup: ") or "failed"
        raise _error("setup", message, code)


@agent_app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def hook_command(
    ctx: typer.Context,
    agent: str = typer.Option("", "--agent", help="The agent CLI: claude, codex, gemini, opencode…"),
    token: str = typer.Argument(..., metavar="active|waiting|idle|stamp"),
) -> None:
    """The hook agents run on every event (installed by `rk agent setup`). Always exits 0."""
    from rk.agent.hook import main as hook_main

    hook_main(["--agent", agent, token, *ctx.args] if agent else [token, *ctx.args])

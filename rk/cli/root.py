"""The typer tree (`app`: cron, role, operator, agent) and `main`, which runs it.

Commands are plain functions in the verb modules, registered here in the
order `--help` lists them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Annotated

import typer

try:  # recent typer vendors click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - typer on top of click
    from click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # type: ignore[assignment]

from rk.cli import (
    agent,
    doctor,
    entries,
    events,
    listing,
    notifying,
    pausing,
    running,
    send,
    simulate,
    status,
    views,
    windows,
)
from rk.cli import usage as usage_view
from rk.cli.environment import CliError, Environment, ExitStatus, environment, usage
from rk.cli.flags import bare_only_if_changed
from rk.cli.options import ServerOpt
from rk.core.schedule.cronexpr import CronError
from rk.core.schedule.entry import EntryError
from rk.store.config import ConfigError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    help="rk types prompts into the tmux panes where AI coding agents run, on a schedule.",
)
cron_app = typer.Typer(no_args_is_help=True, help="Schedule prompts: add, list, edit, mute, tick, ticker…")
agent_app = typer.Typer(
    no_args_is_help=True,
    help="Agent state: the hook agents run, a manual state write, and hook installation.",
)
app.add_typer(cron_app, name="cron")
notify_app = typer.Typer(no_args_is_help=True, help="Notifications: test the config.yaml notify: channels.")


@cron_app.callback()
def _cron_root(ctx: typer.Context, server: ServerOpt = None) -> None:
    environment(ctx, server)


def _version(value: bool) -> None:
    if value:
        from rk import __version__

        typer.echo(f"rk {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    server: ServerOpt = None,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_version, help="Print rk's version and exit.")
    ] = False,
) -> None:
    environment(ctx, server)


cron_app.command("add")(entries.cmd_add)
cron_app.command("edit")(entries.cmd_edit)
cron_app.command("list")(listing.cmd_list)
cron_app.command("ls", hidden=True)(listing.cmd_list)
cron_app.command("show")(views.cmd_show)
cron_app.command("rm")(entries.cmd_rm)
cron_app.command("mute")(entries.cmd_mute)
cron_app.command("pin")(entries.cmd_pin)
cron_app.command("log")(views.cmd_log)
cron_app.command("next")(views.cmd_next)
cron_app.command("run")(running.cmd_run)
cron_app.command("tick")(running.cmd_tick)
cron_app.command("ticker")(running.cmd_ticker)
cron_app.command("pause")(pausing.cmd_pause)
cron_app.command("resume")(pausing.cmd_resume)
cron_app.command("simulate")(simulate.cmd_simulate)
cron_app.command("usage")(usage_view.cmd_usage)


def cmd_mcp(ctx: typer.Context) -> None:
    """Serve rk's tools over MCP on stdin/stdout (for an agent CLI to start; see `rk agent setup --mcp`).

    The caller is the pane of the inherited $TMUX_PANE: it may change only the
    entries it created, unless its window has the role operator. The SDK is
    imported only when this command runs (rk.channels.mcp), so no other command,
    and not the hook, pays for it.

    Example: claude mcp add rk -- rk mcp
    """
    environment(ctx)
    from rk.channels.mcp import serve

    serve(main)  # the tools run this CLI in-process: handed in, so the server never imports it


app.command("send")(send.cmd_send)
app.command("status")(status.cmd_status)
app.command("events")(events.cmd_events)
app.command("doctor")(doctor.cmd_doctor)
app.command("role")(windows.cmd_role)
app.command("operator")(windows.cmd_operator)
app.command("mcp")(cmd_mcp)

agent_app.command("state")(agent.cmd_state)
agent_app.command("setup")(agent.cmd_setup)
agent_app.command("list")(agent.cmd_list)
agent_app.command("await")(agent.cmd_await)
agent_app.command("hook", context_settings=agent.HOOK_CONTEXT)(agent.cmd_hook)
app.add_typer(agent_app, name="agent")
notify_app.command("test")(notifying.cmd_notify_test)
app.add_typer(notify_app, name="notify")


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None, stdout=None, stderr=None) -> int:
    """Run the CLI; return the exit status. Never lets a traceback reach the user.

    One `Environment` per call, handed to the commands as the click context's
    `obj` (see `rk.cli.environment.environment`).
    """
    args = bare_only_if_changed(list(sys.argv[1:] if argv is None else argv))
    env = Environment(
        environ=dict(os.environ if environ is None else environ),
        stdout=stdout or sys.stdout,
        stderr=stderr or sys.stderr,
        # Sniffed only so that a usage error click raises before any command runs
        # (a missing argument, an unknown option, a bad root -L) still gets the
        # JSON envelope; once a command runs, its own --json option decides.
        json="--json" in args[: args.index("--")] if "--" in args else "--json" in args,
    )
    command = typer.main.get_command(app)
    try:
        status = command.main(args=args, prog_name="rk", standalone_mode=False, obj=env)
        if isinstance(status, int) and not isinstance(status, bool):
            return status  # a command's typer.Exit(code), returned in non-standalone mode
    except CliError as exc:
        return env.fail(exc)
    except NoArgsIsHelpError:
        return int(ExitStatus.USAGE)  # the help was printed
    except UsageError as exc:
        return env.fail(usage(exc.format_message()))
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except (typer.Abort, KeyboardInterrupt):
        env.err("rk: aborted")
        return int(ExitStatus.ERROR)
    except ClickException as exc:
        return env.fail(CliError(exc.format_message()))
    except (CronError, EntryError, ConfigError) as exc:  # a stored entry or config: operational, as their status says
        return env.fail(exc)
    except OSError as exc:
        return env.fail(CliError(f"{str(exc.filename) + ': ' if exc.filename else ''}{exc.strerror or exc}"))
    except Exception as exc:
        if env.environ.get("RK_DEBUG"):
            raise
        return env.fail(CliError(f"internal error ({type(exc).__name__}: {exc}); rerun with RK_DEBUG=1 for details"))
    return int(ExitStatus.OK)

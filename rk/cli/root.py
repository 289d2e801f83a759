"""The typer tree (`app`: cron, role, operator, agent) and `main`, which runs it.

Commands are plain functions in the verb modules, named here in the order
`--help` lists them. A verb module is imported only when its command is looked
up (to run it, or to list it in a `--help`): `rk cron list` loads the listing,
not the agent panes, the doctor or the simulator (`Lazy`, `LazyGroup`). A view's
module names typer and the shared options for type checking only, so that the
fast path (`rk.cli.fastpath`) runs it without typer; `declared` gives typer its
annotations evaluated.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from types import ModuleType
from typing import Annotated, Any, ClassVar, TextIO

import typer
import typer.main
from typer.core import TyperGroup

try:  # recent typer vendors click
    from typer._click.core import Command, Context
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - typer on top of click
    from click.core import Command, Context  # type: ignore[assignment]
    from click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # type: ignore[assignment]

from rk.cli.environment import CliError, ExitStatus, environment, failed, for_args, group_options, usage
from rk.cli.options import ServerOpt
from rk.cli.rich_deferred import defer

#: `rk.cli.flags.ONLY_IF_CHANGED`, the one flag `main` rewrites (named here so that
#: the flags, and the schedule rules they import, load only when it is given).
ONLY_IF_CHANGED = "--only-if-changed"


@dataclass(frozen=True)
class Lazy:
    """A command whose function (in `rk.cli.<module>`) is imported when the
    command is first looked up, and declared then as `Typer.command` would."""

    module: str
    function: str
    hidden: bool = False
    context: str = ""  #: the name of a dict in the module: the command's click context settings

    def build(self, name: str) -> Command:
        module = importlib.import_module(f"rk.cli.{self.module}")
        single = typer.Typer(add_completion=False)
        settings = getattr(module, self.context) if self.context else None
        function = declared(getattr(module, self.function), module)
        single.command(name, hidden=self.hidden, context_settings=settings)(function)
        return typer.main.get_command(single)


def declared(function: Callable[..., Any], module: ModuleType) -> Callable[..., Any]:
    """`function` as typer reads it: its signature with the annotations evaluated in its
    module's names over `rk.cli.options`' (typer, `Annotated`, the shared options), which
    a view imports for type checking only."""
    from rk.cli import options

    names = {**vars(options), **vars(module)}
    signature = inspect.signature(function, eval_str=True, globals=names)

    def command(**given: Any) -> Any:
        return function(**given)

    command.__signature__ = signature  # type: ignore[attr-defined]
    command.__name__ = command.__qualname__ = function.__name__
    command.__doc__ = function.__doc__
    command.__module__ = function.__module__
    return command


class LazyCommands(MutableMapping[str, Command]):
    """A group's commands by name, in order: the `Lazy` ones built on first access."""

    def __init__(self, lazy: Mapping[str, Lazy], built: Mapping[str, Command]) -> None:
        self._entries: dict[str, Command | Lazy] = {**lazy, **built}

    def __getitem__(self, name: str) -> Command:
        entry = self._entries[name]
        if isinstance(entry, Lazy):
            entry = self._entries[name] = entry.build(name)
        return entry

    def __setitem__(self, name: str, command: Command) -> None:
        self._entries[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


class LazyGroup(TyperGroup):
    """A typer group whose `LAZY` commands come first, then typer's own (its sub-groups)."""

    LAZY: ClassVar[Mapping[str, Lazy]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(self.LAZY, self.commands)

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # the names only: nothing imported to list them


class RootGroup(LazyGroup):
    LAZY: ClassVar[Mapping[str, Lazy]] = {
        "send": Lazy("send", "cmd_send"),
        "signal": Lazy("signalling", "cmd_signal"),
        "status": Lazy("status", "cmd_status"),
        "events": Lazy("events", "cmd_events"),
        "doctor": Lazy("doctor", "cmd_doctor"),
        "role": Lazy("windows", "cmd_role"),
        "operator": Lazy("windows", "cmd_operator"),
        "uninstall": Lazy("uninstalling", "cmd_uninstall"),
        "mcp": Lazy("root", "cmd_mcp"),
        "remote": Lazy("remote", "cmd_remote", hidden=True),
    }


class CronGroup(LazyGroup):
    LAZY: ClassVar[Mapping[str, Lazy]] = {
        "add": Lazy("entries", "cmd_add"),
        "edit": Lazy("entries", "cmd_edit"),
        "list": Lazy("listing", "cmd_list"),
        "ls": Lazy("listing", "cmd_list", hidden=True),
        "show": Lazy("views", "cmd_show"),
        "rm": Lazy("entries", "cmd_rm"),
        "mute": Lazy("entries", "cmd_mute"),
        "wake": Lazy("waking", "cmd_wake"),
        "pin": Lazy("entries", "cmd_pin"),
        "log": Lazy("views", "cmd_log"),
        "next": Lazy("views", "cmd_next"),
        "run": Lazy("running", "cmd_run"),
        "tick": Lazy("running", "cmd_tick"),
        "ticker": Lazy("running", "cmd_ticker"),
        "pause": Lazy("pausing", "cmd_pause"),
        "resume": Lazy("pausing", "cmd_resume"),
        "simulate": Lazy("simulate", "cmd_simulate"),
        "usage": Lazy("usage", "cmd_usage"),
        "runs": Lazy("runs", "cmd_runs"),
    }


class AgentGroup(LazyGroup):
    LAZY: ClassVar[Mapping[str, Lazy]] = {
        "state": Lazy("agent", "cmd_state"),
        "setup": Lazy("agent", "cmd_setup"),
        "list": Lazy("panes", "cmd_list"),
        "await": Lazy("agent", "cmd_await"),
        "read": Lazy("reading", "cmd_read"),
        "hook": Lazy("agent", "cmd_hook", context="HOOK_CONTEXT"),
    }


class HostGroup(LazyGroup):
    LAZY: ClassVar[Mapping[str, Lazy]] = {
        "add": Lazy("hosts", "cmd_host_add"),
        "list": Lazy("hosts", "cmd_host_list"),
        "rm": Lazy("hosts", "cmd_host_rm"),
        "check": Lazy("hosts", "cmd_host_check"),
    }


class NotifyGroup(LazyGroup):
    LAZY: ClassVar[Mapping[str, Lazy]] = {"test": Lazy("notifying", "cmd_notify_test")}


app = typer.Typer(
    cls=RootGroup,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    help="rk types prompts into the tmux panes where AI coding agents run, on a schedule.",
)
cron_app = typer.Typer(
    cls=CronGroup, no_args_is_help=True, help="Schedule prompts: add, list, edit, mute, tick, ticker…"
)
agent_app = typer.Typer(
    cls=AgentGroup,
    no_args_is_help=True,
    help="Agent state: the hook agents run, a manual state write, and hook installation.",
)
app.add_typer(cron_app, name="cron")
notify_app = typer.Typer(
    cls=NotifyGroup, no_args_is_help=True, help="Notifications: test the config.yaml notify: channels."
)


#: `--json` before the command: the command's own (`rk --json cron list`), so that every
#: place the README shows a flag in works; a command that prints no JSON refuses it.
RootJsonOpt = Annotated[bool, typer.Option("--json", help="The command's --json: print one JSON document.")]


def _root_json(ctx: typer.Context, server: str | None, as_json: bool) -> None:
    group_options(environment(ctx), server, as_json)


@cron_app.callback()
def _cron_root(ctx: typer.Context, server: ServerOpt = None, as_json: RootJsonOpt = False) -> None:
    _root_json(ctx, server, as_json)


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
    as_json: RootJsonOpt = False,
) -> None:
    _root_json(ctx, server, as_json)


def cmd_mcp(
    ctx: typer.Context,
    places: Annotated[
        bool, typer.Option("--places", hidden=True, help="Where this host's panes are, as JSON.")
    ] = False,
) -> None:
    """Serve rk's tools over MCP on stdin/stdout (for an agent CLI to start; see `rk agent setup --mcp`).

    The caller is the pane of the inherited $TMUX_PANE: it may change only the
    entries it created, unless its window has the role operator. The SDK is
    imported only when this command runs (rk.channels.mcp), so no other command,
    and not the hook, pays for it.

    Example: claude mcp add rk -- rk mcp
    """
    env = environment(ctx)
    if places:  # what another host's rk mcp asks before it acts here (rk.channels.mcp_places)
        from rk.channels.mcp_places import places_document

        env.out(places_document(env.environ, env.server))
        return
    from rk.channels.mcp import serve

    serve(main)  # the tools run this CLI in-process: handed in, so the server never imports it


host_app = typer.Typer(
    cls=HostGroup, no_args_is_help=True, help="Other machines, reached with your own ssh: add, list, rm, check."
)
app.add_typer(agent_app, name="agent")
app.add_typer(host_app, name="host")
app.add_typer(notify_app, name="notify")


def main(
    argv: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the CLI; return the exit status. Never lets a traceback reach the user.

    One `Environment` per call, handed to the commands as the click context's
    `obj` (see `rk.cli.environment.environment`).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if ONLY_IF_CHANGED in args:
        from rk.cli.flags import bare_only_if_changed

        args = bare_only_if_changed(args)
    env = for_args(args, os.environ if environ is None else environ, stdout or sys.stdout, stderr or sys.stderr)
    if any(a == "--host" or a.startswith("--host=") for a in args):
        from rk.cli.fleet import dispatch

        try:
            status = dispatch(args, env.environ, env.stdout, env.stderr, main)
        except Exception as exc:
            return failed(env, exc)
        if status is not None:
            return status
    defer()  # a help or a usage error prints without markdown-it and pygments
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
    except Exception as exc:
        return failed(env, exc)
    return int(ExitStatus.OK)

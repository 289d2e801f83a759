"""What every command shares: the outside world (`Environment`), the failures it
reports (`CliError`, an `RkError` with its own exit status), and the output helpers.

`rk.cli.root.main` builds one `Environment` per invocation (`for_args`) and hands
it to the commands as the click context's `obj`; nothing here is module-level state.
Nothing here imports typer: the views run without it (`rk.cli.fastpath`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from rk.cli.table import escape_controls
from rk.core.environ import is_pane_id, socket_from_tmux_env
from rk.core.errors import ErrorCode as ErrorCode  # re-exported, as ExitStatus: what the commands import
from rk.core.errors import ExitStatus as ExitStatus
from rk.core.errors import RkError, code_for
from rk.core.settings import Settings
from rk.core.suggest import did_you_mean, known_list
from rk.core.wallclock import moment as moment  # the views' one time format, re-exported
from rk.core.wallclock import stamp as stamp
from rk.core.wallclock import zone_label as zone_label
from rk.host import clock
from rk.store.config import (
    ConfigError,
    ServerFiles,
    check_private_dir,
    check_slug,
    known_servers,
    load_settings,
    state_dir,
)

if TYPE_CHECKING:
    from rk.tmux.server import Server  # imported by the commands that talk to tmux


class CliError(RkError):
    """A user-facing failure: one line, and this one's own exit status and JSON error code."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.OPERATIONAL, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code_for(status) if code is None else code


def usage(message: str) -> CliError:
    return CliError(message, ExitStatus.USAGE)


def not_found(entry_id: str) -> CliError:
    return CliError(f"no entry {entry_id}", ExitStatus.OPERATIONAL, ErrorCode.NOT_FOUND)


@dataclass(eq=False)
class Environment:
    """Everything the commands read from the outside world; tests replace it."""

    environ: dict[str, str]
    stdout: TextIO
    stderr: TextIO
    server_flag: str = ""  #: -L as given ("" = not given)
    json: bool = False
    root_json: bool = False  #: `rk --json <command>`: the command's own --json, given before it
    _dir_checked: bool = field(default=False, repr=False)
    _zone: tzinfo | None = field(default=None, repr=False)  #: `zone()` once found

    @property
    def server(self) -> str:
        """-L, else the socket name of $TMUX, else `default` (validated)."""
        name = self.server_flag or Path(socket_from_tmux_env(self.environ.get("TMUX", ""))).name or "default"
        try:
            return check_slug(name)
        except ConfigError as exc:
            raise usage(str(exc)) from None

    def known_server(self) -> Environment:
        """This Environment, when -L names a server rk knows (it has an entries file, a log
        or a pause) or tmux runs; else the not-found error naming the servers there are, so that a
        mistyped -L is not read as a server with nothing in it (an empty list, exit 0)."""
        if not self.server_flag:
            return self
        files = self.files()
        if any(os.path.lexists(path) for path in (files.entries, files.log, files.pause)):
            return self
        from rk.tmux.server import Server  # only now: `rk cron log` reads files, never tmux

        if Server(name=self.server, env=self.environ).is_live():
            return self
        known = set(known_servers(self.state_dir())) | set(self._live_servers())
        raise CliError(
            f"-L {self.server}: no such server: no entries file, and no tmux server of that name is running"
            f"{did_you_mean(self.server, known)}; servers: {known_list(known)}",
            ExitStatus.OPERATIONAL,
            ErrorCode.NOT_FOUND,
        )

    def _live_servers(self) -> list[str]:
        """The socket names of this user's running tmux servers."""
        from rk.tmux.server import socket_dir, socket_is_live

        try:
            return [p.name for p in socket_dir(self.environ).iterdir() if socket_is_live(p)]
        except OSError:
            return []

    def given(self, server: str | None = None, as_json: bool | None = None) -> Environment:
        """This Environment with a command's --json (None: it has none) and a level's -L
        (validated now: a bad -L is a usage error for every command) applied."""
        if as_json is not None:
            self.json = as_json or self.root_json
        if server:
            self.server_flag = server
            _ = self.server
        return self

    def now(self) -> int:
        try:
            return clock.now(self.environ)
        except clock.ClockError as exc:
            raise usage(str(exc)) from None

    def state_dir(self) -> Path:
        return state_dir(self.environ)

    def warn_if_unsafe(self) -> None:
        """Check the state dir the way ssh checks `~/.ssh` before a read, once per command:
        the writes refuse a dir others can write or own; a read goes on, but says so
        (on stderr, so --json output stays one document)."""
        if self._dir_checked:
            return
        self._dir_checked = True
        directory = self.state_dir()
        if not directory.exists():
            return
        try:
            check_private_dir(directory)
        except ConfigError as exc:
            self.err(f"rk: warning: {exc}; what it holds may not be yours")

    def files(self) -> ServerFiles:
        return ServerFiles(self.state_dir(), self.server)

    def settings(self) -> Settings:
        try:
            return load_settings(self.environ)
        except ConfigError as exc:
            raise CliError(str(exc)) from None

    def zone(self) -> tzinfo:
        """The machine's zone (`rk.host.clock.local_zone`), found once: a view asks for
        it for every entry, and each look resolves /etc/localtime (~30 µs)."""
        if self._zone is None:
            self._zone = clock.local_zone(self.environ)
        return self._zone

    def caller_pane(self) -> str:
        """$TMUX_PANE ("" outside tmux)."""
        pane: str = self.environ.get("TMUX_PANE", "")
        if pane and not is_pane_id(pane):
            raise usage(f"malformed $TMUX_PANE {pane!r}")
        return pane

    def caller_server(self) -> Server:
        """The server of $TMUX, else the -L/default one."""
        from rk.tmux.server import Server, socket_from_tmux_env

        socket_path = socket_from_tmux_env(self.environ.get("TMUX", ""))
        if socket_path:
            return Server(socket_path=socket_path, env=self.environ)
        return Server(name=self.server, env=self.environ)

    def out(self, text: str = "") -> None:
        """A line of output; for humans, control characters escaped (JSON escapes its own)."""
        print(text if self.json else escape_controls(text, keep="\n"), file=self.stdout)

    def err(self, text: str) -> None:
        print(escape_controls(text, keep="\n"), file=self.stderr)

    def notice(self, text: str) -> None:
        """`rk: <text>` on stderr for humans; nothing with --json."""
        if not self.json:
            self.err(f"rk: {text}")

    def result(self, result: object, human: list[str] | str | None = None) -> None:
        """Print the JSON envelope, or the human lines."""
        if self.json:
            self.out(json.dumps({"ok": True, "result": result}, ensure_ascii=False))
        elif human is not None:
            for line in [human] if isinstance(human, str) else human:
                self.out(line)

    def fail(self, exc: RkError) -> int:
        """Report a failure (one line, or the JSON error envelope with its `code`); its exit status."""
        text = str(exc)
        message = " ".join(text.split()) if text else "error"
        if self.json:
            self.out(json.dumps({"ok": False, "error": {"code": exc.code, "message": message}}, ensure_ascii=False))
        else:
            self.err(f"rk: {message}")
        return int(exc.status)


class Invocation(Protocol):
    """What `environment` reads of a command's context: click's, or the fast path's
    (`rk.cli.fastpath.Invocation`)."""

    @property
    def obj(self) -> Any: ...

    @property
    def command(self) -> Any: ...

    @property
    def command_path(self) -> str: ...


def environment(ctx: Invocation, server: str | None = None, as_json: bool | None = None) -> Environment:
    """The Environment `main` built (carried as the context's obj), with this
    level's -L and the command's --json applied."""
    env = ctx.obj
    if not isinstance(env, Environment):
        raise RuntimeError("rk commands run through rk.cli.main, which supplies the Environment")
    if as_json is None and env.root_json and not _is_group(ctx.command):
        raise usage(f"{ctx.command_path.removeprefix('rk ')} prints no JSON: drop --json")
    return env.given(server, as_json)


def _is_group(command: object) -> bool:
    from typer.core import TyperGroup  # a command without --json runs through typer only

    return isinstance(command, TyperGroup)


def group_options(env: Environment, server: str | None, as_json: bool) -> None:
    """A group's -L and --json (`rk -L x --json cron …`, `rk cron -L x --json …`): -L as
    the command's, --json for the command that prints JSON (else its usage error)."""
    env.given(server)
    env.root_json = env.root_json or as_json


def for_args(args: list[str], environ: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> Environment:
    """The Environment of one invocation with these arguments."""
    return Environment(
        environ=dict(environ),
        stdout=stdout,
        stderr=stderr,
        # Sniffed only so that a usage error click raises before any command runs
        # (a missing argument, an unknown option, a bad root -L) still gets the
        # JSON envelope; once a command runs, its own --json option decides.
        json="--json" in args[: args.index("--")] if "--" in args else "--json" in args,
    )


def failed(env: Environment, exc: Exception) -> int:
    """Report an exception no command turned into a `CliError` (an entry or config.yaml
    that does not load, an OSError, a bug: then one line, never a traceback, unless
    RK_DEBUG is set, when it is raised again); the exit status."""
    if isinstance(exc, RkError) and _input_error(exc):  # a stored entry or config: operational, as their status says
        return env.fail(exc)
    if isinstance(exc, OSError):
        return env.fail(CliError(f"{str(exc.filename) + ': ' if exc.filename else ''}{exc.strerror or exc}"))
    if env.environ.get("RK_DEBUG"):
        raise exc
    return env.fail(CliError(f"internal error ({type(exc).__name__}: {exc}); rerun with RK_DEBUG=1 for details"))


#: The failures of a cron expression, an entry and config.yaml, reported as one
#: line: (module, class), looked up in the modules already loaded only (one never
#: imported raised nothing), so that `main` imports none of them.
INPUT_ERRORS = (
    ("rk.core.schedule.cronexpr", "CronError"),
    ("rk.core.schedule.entry", "EntryError"),
    ("rk.store.config", "ConfigError"),
)


def _input_error(exc: Exception) -> bool:
    """Whether `exc` is one of `INPUT_ERRORS`."""
    for module, name in INPUT_ERRORS:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, getattr(loaded, name)):
            return True
    return False


def rfc3339(ts: int, zone: tzinfo) -> str:
    return datetime.fromtimestamp(ts, zone).isoformat(timespec="seconds")

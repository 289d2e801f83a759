"""What every command shares: the outside world (`Environment`), the failures it
reports (`CliError`, an `RkError` with its own exit status), and the output helpers.

`rk.cli.root.main` builds one `Environment` per invocation and hands it to the
commands as the click context's `obj`; nothing here is module-level state.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import typer
from typer.core import TyperGroup

from rk.cli.table import escape_controls
from rk.core.environ import is_pane_id
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


@dataclass
class Environment:
    """Everything the commands read from the outside world; tests replace it."""

    environ: dict[str, str]
    stdout: TextIO
    stderr: TextIO
    server_flag: str = ""  #: -L as given ("" = not given)
    json: bool = False
    root_json: bool = False  #: `rk --json <command>`: the command's own --json, given before it
    _dir_checked: bool = field(default=False, repr=False)

    @property
    def server(self) -> str:
        """-L, else the socket name of $TMUX, else `default` (validated)."""
        from rk.tmux.server import socket_from_tmux_env

        name = self.server_flag or Path(socket_from_tmux_env(self.environ.get("TMUX", ""))).name or "default"
        try:
            return check_slug(name)
        except ConfigError as exc:
            raise usage(str(exc)) from None

    def known_server(self) -> Environment:
        """This Environment, when -L names a server rk knows (it has an entries file, a log
        or a pause) or tmux runs; else the not-found error naming the servers there are, so that a
        mistyped -L is not read as a server with nothing in it (an empty list, exit 0)."""
        from rk.tmux.server import Server

        if not self.server_flag:
            return self
        files = self.files()
        if any(os.path.lexists(path) for path in (files.entries, files.log, files.pause)):
            return self
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
        return clock.local_zone(self.environ)

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


def environment(ctx: typer.Context, server: str | None = None, as_json: bool | None = None) -> Environment:
    """The Environment `main` built (carried as the context's obj), with this
    level's -L and the command's --json applied."""
    env = ctx.obj
    if not isinstance(env, Environment):
        raise RuntimeError("rk commands run through rk.cli.main, which supplies the Environment")
    if as_json is not None:
        env.json = as_json or env.root_json
    elif env.root_json and not isinstance(ctx.command, TyperGroup):
        raise usage(f"{ctx.command_path.removeprefix('rk ')} prints no JSON: drop --json")
    if server:
        env.server_flag = server
        _ = env.server  # validates the slug now: a bad -L is a usage error for every command
    return env


def rfc3339(ts: int, zone: tzinfo) -> str:
    return datetime.fromtimestamp(ts, zone).isoformat(timespec="seconds")

"""`rk uninstall`: remove what `rk agent setup` and `rk cron ticker install` wrote.

rk's hooks, MCP servers and allow rules from every agent CLI, its status segment
from the tmux config and the running server (`rk.agent.setup.removal`: only rk's
own entries), the running ticker and the systemd unit rk wrote; with `--purge`,
asked separately, the state directory and config.yaml too. Consent as `rk agent
setup` asks it: what would change is shown, `[y/N]` on a terminal, `--yes` goes
ahead, `--dry-run` shows and changes nothing, and anything else is refused (exit 2).
The program itself is running, so it stays: the last line is the one command that
removes it, the way contrib/install.sh put it there (`make uninstall` runs both).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from rk.cli.environment import CliError, Environment, ExitStatus, environment, usage
from rk.cli.options import JsonOpt, ServerOpt
from rk.core.environ import home
from rk.core.tickerconf import user_lines
from rk.store.config import config_path

if TYPE_CHECKING:  # the setup plans load when uninstall runs, not for `rk --help`
    from rk.agent.setup.plan import Plan

#: The first line of the unit `rk cron ticker install` writes: only such a unit is removed.
UNIT_MARK = "# Written by `rk cron ticker install`"


@dataclass
class Unit:
    """The systemd user unit file, as found."""

    path: Path
    ours: bool  #: written by `rk cron ticker install` (a regular file, its first line ours)


@dataclass
class Work:
    """Everything an uninstall would do, planned before anything is done."""

    changes: list[Plan]  #: the files (and the running tmux server) to edit
    plans: list[Plan]
    errors: list[str]  #: files that cannot be read: left as they are
    ticker_pid: int  #: the running ticker's (0: none)
    unit: Unit | None
    purge: list[Path]  #: what --purge deletes (that exists)
    kept: list[str]  #: what stays, and why (one line each)
    done: list[str] = field(default_factory=list)  #: what was done, for the human
    removed: list[str] = field(default_factory=list)  #: the purged paths

    @property
    def anything(self) -> bool:
        """Whether there is something to remove besides the purge."""
        return bool(self.changes or self.ticker_pid or (self.unit is not None and self.unit.ours))


def _tmux_socket(env: Environment) -> str:
    """The server whose status line loses the segment too: -L's, else the caller's, else the default."""
    from rk.tmux.server import socket_dir, socket_from_tmux_env

    own = socket_from_tmux_env(env.environ.get("TMUX", ""))
    return own if own and not env.server_flag else str(socket_dir(env.environ) / env.server)


def _unit(env: Environment) -> Unit | None:
    from rk.engine.ticker import unit_path

    path = unit_path(env.environ)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return Unit(path, False)
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return Unit(path, False)
    return Unit(path, first.decode("utf-8", "replace").startswith(UNIT_MARK))


def _ticker_pid(env: Environment) -> int:
    from rk.engine.ticker import find_running

    state = env.state_dir()
    if not state.is_dir():
        return 0
    found = find_running(state)
    return found.pid if found is not None else 0


def _purge_targets(env: Environment) -> tuple[list[Path], list[str]]:
    """(what --purge deletes, what it leaves and why): the state directory and
    config.yaml, never through a symbolic link."""
    targets: list[Path] = []
    kept: list[str] = []
    for path, kind in ((env.state_dir(), stat.S_ISDIR), (config_path(env.environ), stat.S_ISREG)):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            kept.append(f"{path}: {exc.strerror or exc}; left as it is")
            continue
        if stat.S_ISLNK(st.st_mode):
            kept.append(f"{path} is a symbolic link; left as it is (never followed)")
        elif not kind(st.st_mode) or st.st_uid != os.getuid():
            kept.append(f"{path} is not what rk writes there (or not yours); left as it is")
        else:
            targets.append(path)
    return targets, kept


def _kept(env: Environment) -> list[str]:
    """Where the state and config stay, without --purge."""
    out = []
    for path, what in ((env.state_dir(), "entries, logs and state"), (config_path(env.environ), "settings")):
        if os.path.lexists(path):
            out.append(f"kept: {path} ({what}; rk uninstall --purge deletes it)")
    return out


def _tmux_lines(env: Environment) -> list[str]:
    """A line of the user's tmux config that starts the ticker (contrib/tmux.conf's) is
    theirs: said, not edited."""
    base = Path(home(env.environ))
    xdg = env.environ.get("XDG_CONFIG_HOME")
    files = [base / ".tmux.conf", *([Path(xdg) / "tmux" / "tmux.conf"] if xdg else []), base / ".config/tmux/tmux.conf"]
    out = []
    for path in dict.fromkeys(files):
        try:
            text = path.read_text("utf-8", "replace")
        except OSError:
            continue
        for n, _ in user_lines(text):  # rk's own block goes with the removal plans
            out.append(f"kept: {path}:{n} starts the ticker with tmux (a line rk did not write): delete it")
    return out


def _plan(env: Environment, purge: bool) -> Work:
    from rk.agent.setup.removal import removal_plans  # when it runs: `rk --help` lists it without them

    removal = removal_plans(env.environ, _tmux_socket(env))
    targets, kept = _purge_targets(env) if purge else ([], _kept(env))
    kept += _tmux_lines(env)
    return Work(
        changes=[p for p in removal.plans if p.changed],
        plans=removal.plans,
        errors=removal.errors,
        ticker_pid=_ticker_pid(env),
        unit=_unit(env),
        purge=targets,
        kept=kept,
    )


def program_removal(environ: dict[str, str], prefix: str, executable: str) -> tuple[str, str]:
    """(how rk was installed, the command that removes it): contrib/install.sh's
    pipx, or its venv under $XDG_DATA_HOME/rk with the ~/.local/bin/rk link; else
    pip, in the environment rk runs from."""
    real = os.path.realpath(prefix)
    data = Path(environ.get("XDG_DATA_HOME") or Path(home(environ)) / ".local" / "share") / "rk"
    if real == os.path.realpath(data / "venv"):
        link = Path(home(environ)) / ".local" / "bin" / "rk"
        ours = link.is_symlink() and os.path.realpath(link).startswith(real + os.sep)
        return "venv", shlex.join(["rm", "-r", str(data), *([str(link)] if ours else [])])
    parent = Path(real).parent
    if Path(real).name == "rk" and parent.name == "venvs" and "pipx" in parent.parent.name:
        return "pipx", "pipx uninstall rk"
    return "pip", f"{shlex.quote(executable)} -m pip uninstall rk"


def _preview(work: Work) -> list[str]:
    """What would be done: the files' diffs, then the ticker, the unit and the purge."""
    lines = [p.diff().rstrip("\n") for p in work.changes]
    if work.unit is not None and work.unit.ours:
        lines.append(f"# the ticker's unit: systemctl --user disable --now rk-ticker.service; rm {work.unit.path}")
    if work.ticker_pid:
        lines.append(f"# the ticker: stop it (pid {work.ticker_pid})")
    return lines


def _purge_question(work: Work) -> list[str]:
    return [
        "--purge also deletes, for good:",
        *(
            f"  {p}{'/ (every entry, log and state of rk)' if p.is_dir() else ' (settings, notify URLs)'}"
            for p in work.purge
        ),
    ]


def _ask(stdin: TextIO, env: Environment, question: str) -> bool:
    env.stdout.write(question + " [y/N] ")
    env.stdout.flush()
    try:
        answer = stdin.readline()
    except (OSError, ValueError):
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _consent(env: Environment, stdin: TextIO, work: Work, yes: bool) -> bool:
    """Whether to go ahead with the purge (the rest: go ahead, or CliError). Asks on a
    terminal, each part separately; refuses (exit 2) anything else without --yes."""
    if yes:
        return True
    if env.json:
        raise usage("--json does not ask: pass --yes to remove, or --dry-run to see what would go")
    if not _isatty(stdin):
        raise usage("not a terminal: pass --yes to remove, or --dry-run to see what would go")
    if work.anything:
        for line in _preview(work):
            env.out(line)
        if not _ask(stdin, env, "Remove rk's entries from these files, and its ticker?"):
            raise CliError("aborted: nothing removed")
    if not work.purge:
        return False
    for line in _purge_question(work):
        env.out(line)
    return _ask(stdin, env, "Delete them?")


def _stop_ticker(env: Environment, work: Work) -> None:
    """Disable the unit (systemd stops its ticker), stop any ticker still running, remove the unit file."""
    from rk.cli.running import systemctl
    from rk.engine import ticker

    unit = work.unit
    if unit is not None and unit.ours:
        done = systemctl(env, "disable", "--now", ticker.UNIT_NAME)
        try:
            unit.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise CliError(f"{unit.path}: {exc.strerror or exc}") from None
        if done.returncode == 0:
            systemctl(env, "daemon-reload")
            work.done.append(f"systemd unit: disabled and removed {unit.path}")
        else:
            why = done.reason or "systemctl --user disable failed"
            work.done.append(f"systemd unit: removed {unit.path} (systemctl could not disable it: {why})")
    if work.ticker_pid:
        try:
            stopped = ticker.stop_background(env.state_dir())
        except (ticker.TickerError, OSError) as exc:
            raise CliError(f"the ticker: {exc}") from None
        work.done.append(f"ticker: stopped (pid {stopped.pid})" if stopped else "ticker: stopped by systemd")


def _purge(work: Work) -> None:
    for path in work.purge:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)  # never follows a link inside (or the one it was given)
            else:
                os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CliError(f"{path}: {exc.strerror or exc}") from None
        work.removed.append(str(path))
        work.done.append(f"deleted {path}")
        try:
            path.parent.rmdir()  # `…/rk`, when it held only this
        except OSError:
            pass


def _carry_out(env: Environment, work: Work, purge: bool) -> None:
    from rk.agent.setup.plan import SetupError, apply

    _stop_ticker(env, work)
    for p in work.changes:
        try:
            apply(p, env.environ)
        except SetupError as exc:
            work.errors.append(str(exc))
    work.done += [p.summary for p in work.plans if p.changed]
    if purge:
        _purge(work)
    elif work.purge:
        work.kept += [f"kept: {p} (you answered no)" for p in work.purge]
        work.purge = []


def _document(work: Work, dry_run: bool, how: str, command: str) -> dict[str, object]:
    return {
        "dry_run": dry_run,
        "files": [
            {
                "path": str(p.path),
                "agent": p.agent,
                "action": "unchanged" if p.old == p.new else "deleted" if p.new is None else "edited",
                "tmux_server": p.server if p.live else None,
                "summary": p.summary,
            }
            for p in work.plans
        ],
        "ticker_pid": work.ticker_pid,
        "unit": None if work.unit is None else {"path": str(work.unit.path), "ours": work.unit.ours},
        "purge": [str(p) for p in work.purge] if dry_run else work.removed,
        "kept": work.kept,
        "errors": work.errors,
        "done": work.done,
        "program": {"how": how, "command": command},
    }


def cmd_uninstall(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be removed; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Remove without asking.")] = False,
    purge: Annotated[
        bool, typer.Option("--purge", help="Also delete the state directory and config.yaml (asked separately).")
    ] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Remove what rk set up: its hooks, MCP servers and allow rules from every agent CLI,
    its tmux status segment, the ticker and its systemd unit; --purge: its state and
    config too. The program stays (it is running); the last line says how to remove it.

    Example: rk uninstall --dry-run
    """
    env = environment(ctx, server, as_json)
    code = run_uninstall(env, sys.stdin, dry_run=dry_run, yes=yes, purge=purge)
    if code:
        raise typer.Exit(code)


def run_uninstall(env: Environment, stdin: TextIO, *, dry_run: bool, yes: bool, purge: bool) -> int:
    """The command; its exit status (0 done or nothing to do, 1 a file left unreadable, 2 usage)."""
    work = _plan(env, purge)
    how, command = program_removal(env.environ, sys.prefix, sys.executable)
    last = f"the program stays (it is running); remove it with: {command}"
    for line in work.errors:
        env.notice(f"warning: {line}")
    if not work.anything and not work.purge:
        env.result(_document(work, dry_run, how, command), ["nothing to remove", *work.kept, last])
        return int(ExitStatus.ERROR) if work.errors else 0
    if dry_run:
        human = [*_preview(work), *(_purge_question(work) if work.purge else []), *work.kept]
        env.result(_document(work, dry_run, how, command), [*human, "dry run: nothing removed", last])
        return 0
    purge = _consent(env, stdin, work, yes) and purge
    _carry_out(env, work, purge)
    agents = any(p.agent != "tmux" for p in work.changes)
    notes = ["restart running agent sessions: the hooks and MCP servers they loaded stay until then"] if agents else []
    env.result(_document(work, dry_run, how, command), [*work.done, *work.kept, *notes, last])
    return int(ExitStatus.ERROR) if work.errors else 0

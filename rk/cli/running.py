"""`rk cron run | tick | ticker`: the commands that deliver, through the tick's runtime."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rk.cli.environment import CliError, Environment, ExitStatus, environment, moment, not_found, usage
from rk.cli.options import IdArg, JsonOpt, ServerOpt
from rk.cli.store import stored, waiting_note
from rk.core import bounds
from rk.store import delivery_log as logfile
from rk.store.config import ConfigError, check_private_dir
from rk.store.entries import busy

if TYPE_CHECKING:
    from rk.channels.notify import Told
    from rk.core.channels.notice import Channel
    from rk.engine.result import ServerTick
    from rk.engine.runtime import Runtime


def _runtime(env: Environment) -> Runtime:
    from rk.engine.runtime import Runtime

    env.now()  # an unreadable RK_NOW is a usage error, before anything runs
    try:
        runtime = Runtime.from_environ(env.environ)
        if runtime.state_dir.exists():
            check_private_dir(runtime.state_dir)  # entries planted in a shared directory are never delivered
        return runtime
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def cmd_run(ctx: typer.Context, entry_id: IdArg, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Fire an entry now through its deliver policy (logged with reason `manual`).

    Example: rk cron run 3f2a
    """
    env = environment(ctx, server, as_json)
    from rk.engine.manual import run_now
    from rk.host.lock import LockHeld, locked

    runtime = _runtime(env)
    files = env.files()
    stored(files, entry_id)  # a corrupt file or an unknown id, before the lock
    try:
        with locked(files.lock, retry_every=0.05, retry_for=env.settings().lock_wait, on_wait=waiting_note(env, files)):
            report = run_now(runtime, files, entry_id)
    except LockHeld as exc:
        raise CliError(busy(files.slug, exc)) from None
    except KeyError:
        raise not_found(entry_id) from None
    env.result(report.to_dict(), report.human)
    if report.failed:
        raise typer.Exit(ExitStatus.ERROR)


def cmd_tick(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Evaluate and print decisions; deliver and write nothing.")
    ] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """One sweep over every live server (or -L one), exactly as a ticker iteration,
    notifications included (it waits 10 s at most for their sends; the rest stay queued).

    Example: rk cron tick --dry-run --json
    """
    env = environment(ctx, server, as_json)
    from rk.engine.tick import sweep

    runtime = _runtime(env)
    only = env.server if env.server_flag else None
    channels = [] if dry_run else _channels(env)
    runtime.heard = frozenset(event for channel in channels for event in channel.on)
    started = runtime.clock()
    result = sweep(runtime, only=only, dry_run=dry_run)
    told = _tell(runtime, channels, result.servers, started) if channels else None
    said = told is not None and bool(told.notified or told.failed or told.queued)
    if all(s.held for s in result.servers) and result.servers and not env.json and not said:
        return  # another tick holds every lock: a quiet no-op
    human = []
    if dry_run:
        for d in result.decisions:
            human.append(f"would: {d.server} {d.entry} {d.reason} {d.pane or '-'} {d.outcome}")
    human.append(
        f"tick: {result.servers_swept} servers swept, {result.fires} fires, {len(result.diagnostics)} diagnostics"
    )
    data = result.to_json()
    if told is not None:
        data["notify"] = told.to_dict()
    if told is not None and said:
        human.append(told.human)
    env.result(data, human)
    failures = result.failures(only)
    if failures:
        srv, diag = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        if not env.json:
            env.err(f"rk: tick could not do its work: {srv}: {diag.reason}: {diag.detail}{more}")
        raise typer.Exit(ExitStatus.ERROR)


def _channels(env: Environment) -> list[Channel]:
    """config.yaml's `notify:` channels; each one that cannot be used said on one line."""
    from rk.channels.notify_config import ChannelsFile

    source = ChannelsFile(env.environ)
    source.changed()
    if not env.json:
        for problem in source.problems:
            env.err(f"rk: {problem}")
    return source.channels


def _tell(runtime: Runtime, channels: list[Channel], servers: list[ServerTick], now: int) -> Told:
    """The tick's notifications, sent after its deliveries, waiting TICK_WAIT seconds at most
    for them (what is not told by then stays queued). Beside a running ticker, only what this
    tick found: what is queued is the ticker's to tell."""
    from rk.channels.notify import tell_once
    from rk.engine.ticker import find_running

    owner = find_running(runtime.state_dir) is None
    return tell_once(runtime.state_dir, channels, runtime.zone, (servers, now), owner=owner)


def cmd_ticker(
    ctx: typer.Context,
    action: Annotated[str | None, typer.Argument(help="start | stop | status (none: run in the foreground)")] = None,
    interval: Annotated[float | None, typer.Option("--interval", help="Seconds between polls (default 30).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log diagnostics too.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="install: print what it would write; write and start nothing.")
    ] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Run the 30-second ticker (foreground), start/stop/status it in the background, or
    install it: a systemd user unit, else (no user bus) start it now and with every tmux server.

    Example: rk cron ticker install
    """
    env = environment(ctx, server, as_json)
    from rk.engine import ticker

    if action not in (None, "start", "stop", "status", "install"):
        raise usage("ticker action must be start, stop, status or install")
    if interval is not None:
        try:
            bounds.interval(interval)
        except bounds.OutOfRange as exc:
            raise usage(str(exc)) from None
    if action == "install":
        _install(env, dry_run)
        return
    runtime = _runtime(env)
    if action is None:
        ticker.setup_logging(runtime.state_dir, foreground=True, verbose=verbose)
        loop = ticker.Ticker(runtime, interval)
        loop.install_signal_handlers()
        runtime.cache_entries = True
        runtime.log_cache = logfile.LiveLogCache()
        runtime.unreadable = {}
        from rk.store.transcripts import Transcripts

        runtime.transcripts = Transcripts()  # the budgets read only what the agents appended since
        try:
            loop.run()
        except ticker.TickerRunning as exc:  # the unit and the tmux.conf line both start one: a clean no-op
            env.result({"running": True, "started": False}, f"{exc}; this one exits")
        except ticker.TickerError as exc:
            raise CliError(str(exc)) from None
        return
    if action == "start":
        document, human = _start(runtime, interval, verbose)
        env.result(document, human)
        return
    if action == "stop":
        try:
            stopped = ticker.stop_background(runtime.state_dir)
        except ticker.TickerError as exc:
            raise CliError(str(exc)) from None
        env.result(
            {"stopped": stopped is not None, "pid": stopped.pid if stopped else 0},
            f"ticker stopped (pid {stopped.pid})" if stopped else "no ticker running",
        )
        return
    found = ticker.find_running(runtime.state_dir)
    if found is not None:
        since = f", since {moment(found.started_at, env.zone())}" if found.started_at else ", its pid file gone"
        env.result(
            {"running": True, "pid": found.pid, "started_at": found.started_at},
            f"ticker running (pid {found.pid}{since})",
        )
    else:
        env.result({"running": False}, "ticker not running")
        raise typer.Exit(ExitStatus.NOT_RUNNING)


def _start(runtime: Runtime, interval: float | None, verbose: bool) -> tuple[dict[str, object], str]:
    """Start the ticker in the background unless one serves this state directory
    already (a harmless no-op, so tmux's line can run it every time): (JSON, human)."""
    from rk.engine import ticker

    already = ticker.find_running(runtime.state_dir)
    if already is not None:
        return {"running": True, "pid": already.pid, "started": False}, f"ticker already running (pid {already.pid})"
    argv = [sys.executable, "-m", "rk", "cron", "ticker"]
    if interval is not None:
        argv += ["--interval", str(interval)]
    if verbose:
        argv.append("--verbose")
    try:
        rec = ticker.start_background(runtime, argv)
    except ticker.TickerError as exc:
        raise CliError(str(exc)) from None
    return (
        {"running": True, "pid": rec.pid, "started": True},
        f"ticker started (pid {rec.pid}); log: {runtime.state_dir / ticker.LOG_NAME}",
    )


def rk_argv() -> list[str]:
    """How to run this very rk again: its console script, else this interpreter with -m rk."""
    import os

    script = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "rk" and os.access(script, os.X_OK):
        return [script]
    return [os.path.abspath(sys.executable), "-m", "rk"]  # not realpath: a venv's python is a symlink


@dataclass(frozen=True)
class Systemctl:
    """One `systemctl --user` answer: its exit status, stdout, and why it failed."""

    returncode: int
    stdout: str = ""
    reason: str = ""


def systemctl(env: Environment, *args: str) -> Systemctl:
    """Run `systemctl --user ARGS` from env's PATH (tests put a fake one there)."""
    import shutil
    import subprocess

    program = shutil.which("systemctl", path=env.environ.get("PATH"))
    if program is None:
        return Systemctl(127, reason="systemctl is not on PATH")
    try:
        done = subprocess.run(
            [program, "--user", *args], capture_output=True, text=True, timeout=30, env=dict(env.environ)
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Systemctl(126, reason=str(exc))
    lines = (done.stderr or done.stdout).strip().splitlines()
    return Systemctl(done.returncode, done.stdout, lines[0] if lines and done.returncode else "")


def no_user_bus(environ: Mapping[str, str]) -> str:
    """Why `systemctl --user` cannot reach systemd here ("" when it may): no systemctl,
    or neither of the two ways it finds the user bus (as `sd_bus_open_user` looks)."""
    import os
    import shutil
    import stat

    if shutil.which("systemctl", path=environ.get("PATH")) is None:
        return "systemctl is not on PATH"
    if environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return ""
    runtime_dir = environ.get("XDG_RUNTIME_DIR", "")
    try:
        if runtime_dir and stat.S_ISSOCK(os.stat(os.path.join(runtime_dir, "bus")).st_mode):
            return ""
    except OSError:
        pass
    return "DBUS_SESSION_BUS_ADDRESS unset, no $XDG_RUNTIME_DIR/bus"


def _install(env: Environment, dry_run: bool) -> None:
    """systemd's user unit where there is a user bus; else (or when systemctl fails)
    the ticker started now and tmux's line that starts it with every tmux server."""
    why = no_user_bus(env.environ)
    if not why:
        why = _install_unit(env, dry_run)
        if not why:
            return
    _install_tmux_line(env, why, dry_run)


def _install_unit(env: Environment, dry_run: bool) -> str:
    """Write `~/.config/systemd/user/rk-ticker.service` and enable it: "" when done,
    else why systemctl could not (the unit stays written for a later bus)."""

    from rk.engine import ticker
    from rk.host.files import atomic_write

    text = ticker.unit_text([*rk_argv(), "cron", "ticker"], dict(env.environ))
    path = ticker.unit_path(env.environ)
    if dry_run:
        env.result({"path": str(path), "unit": text, "enabled": False}, [f"# {path}", text.rstrip("\n")])
        return ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"), mode=0o644)
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None
    for step in (["daemon-reload"], ["enable", "--now", ticker.UNIT_NAME]):
        done = systemctl(env, *step)
        if done.returncode != 0:
            why = done.reason or f"systemctl --user {' '.join(step)} failed"
            env.notice(f"warning: wrote {path} but could not enable it ({why})")
            return why
    env.result({"path": str(path), "unit": text, "enabled": True}, f"installed and started {ticker.UNIT_NAME} ({path})")
    return ""


def _tmux_socket(env: Environment) -> str:
    """The server whose loaded config files say where the line goes: -L's, else the caller's, else the default."""
    from rk.tmux.server import socket_dir, socket_from_tmux_env

    own = socket_from_tmux_env(env.environ.get("TMUX", ""))
    return own if own and not env.server_flag else str(socket_dir(env.environ) / env.server)


def tmux_line(environ: Mapping[str, str], state_dir: Path) -> str:
    """tmux's line that starts this very rk's ticker (`rk.core.tickerconf`): rk by its
    absolute path (`-P`: never an `rk` package in tmux's working directory), the shared
    settings, errors over the state directory's `ticker-start.log`. CliError when a
    path or setting has a character the line cannot carry."""
    from rk.core import tickerconf
    from rk.engine import ticker

    rk = rk_argv()
    argv = [rk[0], "-P", *rk[1:]] if len(rk) > 1 else rk
    settings = {k: environ[k] for k in ticker.SHARED_SETTINGS if environ.get(k)}
    log = str(state_dir / ticker.START_LOG_NAME)
    bad = tickerconf.unsafe([*argv, *settings.values(), log])
    if bad:
        raise CliError(
            f"cannot start the ticker with tmux: {bad!r} has a character tmux's line cannot carry"
            " (a space, quote, $, #, ~ or :); run `rk cron ticker start` after each boot instead"
        )
    return tickerconf.line(tickerconf.command([*argv, "cron", "ticker", "start"], settings, log))


def _install_tmux_line(env: Environment, why: str, dry_run: bool) -> None:
    """No user bus: start the ticker now, and write tmux's line that starts it with every
    tmux server (once; a line of an older rk is replaced). Its last run's errors, from
    an earlier line, are cleared: they were about that line."""
    from rk.agent.setup.plan import SetupError, apply
    from rk.agent.setup.ticker_line import plan_ticker_line
    from rk.engine import ticker

    runtime = _runtime(env)
    line = tmux_line(env.environ, runtime.state_dir)
    try:
        plan = plan_ticker_line(env.environ, line, _tmux_socket(env))
    except SetupError as exc:
        raise CliError(str(exc)) from None
    document: dict[str, object] = {"enabled": False, "bus": why, "tmux_conf": str(plan.path), "line": line}
    if dry_run:
        human = [f"no systemd user bus ({why}): the ticker would start now, and with tmux:"]
        human.append(plan.diff().rstrip("\n") or plan.summary)
        env.result({**document, "written": False, "running": False, "started": False}, human)
        return
    started, started_line = _start(runtime, None, False)
    try:
        apply(plan)
        (runtime.state_dir / ticker.START_LOG_NAME).unlink(missing_ok=True)
    except (SetupError, OSError) as exc:
        raise CliError(f"{started_line}; but tmux will not start it: {exc}") from None
    written = plan.old != plan.new
    said = f"{plan.summary} (its errors: {runtime.state_dir / ticker.START_LOG_NAME})" if written else plan.summary
    env.result(
        {**document, "written": written, **started},
        [f"no systemd user bus ({why}): tmux starts the ticker", started_line, said],
    )

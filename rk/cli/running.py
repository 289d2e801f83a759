"""`rk cron run | tick | ticker`: the commands that deliver, through the tick's runtime."""

from __future__ import annotations

import sys
from dataclasses import dataclass
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
        bool, typer.Option("--dry-run", help="install: print the unit; write and enable nothing.")
    ] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Run the 30-second ticker (foreground), start/stop/status it in the background, or
    install it as a systemd user unit.

    Example: rk cron ticker install
    """
    env = environment(ctx, server, as_json)
    from rk.engine import ticker

    if action not in (None, "start", "stop", "status", "install"):
        raise usage("ticker action must be start, stop, status or install")
    if action == "install":
        _install_unit(env, dry_run)
        return
    if interval is not None:
        try:
            bounds.interval(interval)
        except bounds.OutOfRange as exc:
            raise usage(str(exc)) from None
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
        already = ticker.find_running(runtime.state_dir)
        if already is not None:  # a harmless no-op, so a tmux.conf line can run it every time
            env.result(
                {"running": True, "pid": already.pid, "started": False}, f"ticker already running (pid {already.pid})"
            )
            return
        argv = [sys.executable, "-m", "rk", "cron", "ticker"]
        if interval is not None:
            argv += ["--interval", str(interval)]
        if verbose:
            argv.append("--verbose")
        try:
            rec = ticker.start_background(runtime, argv)
        except ticker.TickerError as exc:
            raise CliError(str(exc)) from None
        env.result(
            {"running": True, "pid": rec.pid, "started": True},
            f"ticker started (pid {rec.pid}); log: {runtime.state_dir / ticker.LOG_NAME}",
        )
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


def rk_argv() -> list[str]:
    """How to run this very rk again: its console script, else this interpreter with -m rk."""
    import os

    script = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "rk" and os.access(script, os.X_OK):
        return [script]
    return [os.path.abspath(sys.executable), "-m", "rk"]  # not realpath: a venv's python is a symlink


#: contrib/tmux.conf's line: tmux starts the ticker with its server (a second start is a no-op).
TMUX_LINE = "run-shell -b 'rk cron ticker start >/dev/null 2>&1 || true'"


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


def _install_unit(env: Environment, dry_run: bool) -> None:
    """Write `~/.config/systemd/user/rk-ticker.service` and enable it; without a
    user bus, say the tmux.conf line that starts the ticker instead (exit 0)."""

    from rk.engine import ticker
    from rk.host.files import atomic_write

    text = ticker.unit_text([*rk_argv(), "cron", "ticker"], dict(env.environ))
    path = ticker.unit_path(env.environ)
    if dry_run:
        env.result({"path": str(path), "unit": text, "enabled": False}, [f"# {path}", text.rstrip("\n")])
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"), mode=0o644)
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None
    why = None
    for step in (["daemon-reload"], ["enable", "--now", ticker.UNIT_NAME]):
        done = systemctl(env, *step)
        if done.returncode != 0:
            why = done.reason or f"systemctl --user {' '.join(step)} failed"
            break
    if why is None:
        env.result(
            {"path": str(path), "unit": text, "enabled": True}, f"installed and started {ticker.UNIT_NAME} ({path})"
        )
        return
    # No user bus (a container, ssh without lingering): the unit stays written for
    # later, and tmux starts the ticker with its server instead.
    env.notice(f"warning: wrote {path} but could not enable it ({why}); add to tmux.conf instead:")
    env.result({"path": str(path), "unit": text, "enabled": False, "fallback": TMUX_LINE}, TMUX_LINE)

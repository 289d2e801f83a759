"""`rk signal NAME [--data TEXT]`: tell a server's `--wake-on signal:NAME` entries
that something happened in the world (CI finished, a push landed, a webhook came).

The signal goes to one tmux server's entries, chosen as every command chooses
(`-L`, else the server of `$TMUX`, else `default`): from CI over ssh, from a git
hook or a cron job outside tmux it reaches the default server. It is recorded in
`<slug>.signals` (`rk.store.signals`) and logged in the server's delivery log
(`rk cron log`, `rk events`) as a line of entry `signal:NAME`, reason `signal`;
the ticker is nudged, so a listener fires within about a second, not at its next
poll. Nobody listening is said on stderr and in the log, and is no failure (a CI
step does not fail for it) unless `--require-listener` makes it one (exit 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from rk.cli.environment import CliError, environment, usage
from rk.cli.options import JsonOpt, ServerOpt

if TYPE_CHECKING:  # the rest is imported when a signal is sent: `rk --help` lists this command cheaply
    from rk.core.log.delivery import LogLine
    from rk.core.schedule.world import Signal

#: The delivery log's words for a signal (its entry is `signal:NAME`).
REASON = "signal"
HEARD, UNHEARD = "signalled", "unheard"


def log_line(signal: Signal, heard_by: list[str]) -> LogLine:
    """The signal's line in the server's delivery log."""
    from rk.core.log.delivery import LogLine
    from rk.core.log.wake_mark import SIGNAL

    if heard_by:
        outcome = f"{HEARD}: #{signal.id} for {', '.join(heard_by)}"
    else:
        outcome = f"{UNHEARD}: #{signal.id}: no entry listens for signal {signal.name}"
    return LogLine(signal.ts, f"{SIGNAL}:{signal.name}", "", REASON, outcome)


def cmd_signal(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="The signal's name: a word of a-z, 0-9, '.', '_', '-'.", show_default=False)
    ],
    data: Annotated[
        str | None, typer.Option("--data", help="Text the listeners may type as {signal_data} (one line is best).")
    ] = None,
    require_listener: Annotated[
        bool, typer.Option("--require-listener", help="Exit 1 when no entry listens for the signal.")
    ] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Send a signal: the server's `--wake-on signal:NAME` entries fire (each under its
    deliver policy and debounce) with {signal} and {signal_data} filled in.

    Example: ssh devbox rk signal ci-done --data "$GITHUB_SHA $JOB_STATUS"
    """
    from rk.core.bounds import OutOfRange
    from rk.core.schedule.entry import EntryError
    from rk.core.schedule.world import check_name, clean_data
    from rk.host import nudge
    from rk.host.lock import LockHeld
    from rk.store import delivery_log as logfile
    from rk.store.config import ConfigError, ensure_private_dir
    from rk.store.entries import load_entries
    from rk.store.signals import append, listeners

    env = environment(ctx, server, as_json)
    try:
        check_name(name)
        text = clean_data(data or "")
    except (EntryError, OutOfRange) as exc:
        raise usage(str(exc)) from None
    files = env.files()
    now = env.now()
    try:
        ensure_private_dir(env.state_dir())
        loaded = load_entries(files.entries)
        heard_by = [e.id for e in listeners(loaded.entries, name)]
        signal = append(files, name, text, now)
        logfile.append_lines(files.log, [log_line(signal, heard_by)])
    except (ConfigError, LockHeld, OSError) as exc:
        raise CliError(f"signal {name} not recorded: {exc}") from None
    if loaded.unreadable:  # the ticker fires nothing from it either; the signal waits for a readable file
        env.notice(f"warning: {loaded.unreadable}: who listens for signal {name} is unknown")
    if heard_by and not nudge.send(files.slug, env.environ):  # the ticker ticks the server now, not at its poll
        env.notice("warning: no ticker is running: the listeners fire at the next tick (rk cron ticker start)")
    elif not heard_by and require_listener:
        raise CliError(f"signal {name} #{signal.id} recorded, but no entry listens for it on server {files.slug}")
    elif not heard_by and not env.json:
        env.err(f"rk: no entry listens for signal {name} on server {files.slug}")
    env.result(
        {"server": files.slug, "signal": name, "id": signal.id, "listeners": heard_by},
        f"signal {name} #{signal.id} for {', '.join(heard_by)} on {files.slug}" if heard_by else None,
    )

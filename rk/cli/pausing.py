"""`rk cron pause | resume`: silence a whole server for a while, or until resumed."""

from __future__ import annotations

from typing import Annotated

import typer

from rk.cli.environment import CliError, environment, moment
from rk.cli.flags import duration
from rk.cli.options import AllOpt, JsonOpt, ServerOpt
from rk.cli.store import servers_of
from rk.host import nudge
from rk.store.config import ConfigError, ensure_private_dir
from rk.store.pause import end_pause, write_pause


def cmd_pause(
    ctx: typer.Context,
    for_: Annotated[
        str | None, typer.Option("--for", help="Lapse by itself after this long, e.g. 2h (default: until resume).")
    ] = None,
    every: AllOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Pause a server: its entries stay silent, as with a mute. A cron or --at
    occurrence due meanwhile is dropped (logged skipped-paused, never caught up),
    even when no tick ran during the pause (a laptop asleep); every, backoff and
    wake entries go on when it ends.

    Example: rk cron pause --for 2h
    """
    env = environment(ctx, server, as_json)
    lease = duration("--for", for_) if for_ is not None else 0
    now = env.now()
    until = now + lease if lease else 0
    servers = servers_of(env, every)
    try:
        ensure_private_dir(env.state_dir())
        for files in servers:
            write_pause(files.pause, now, until)
    except (ConfigError, OSError) as exc:
        raise CliError(str(exc)) from None
    when = f"until {moment(until, env.zone())}" if until else "until resumed"
    env.result(
        [{"server": f.slug, "until": until} for f in servers],
        [f"paused {f.slug} {when}" for f in servers] or "no server has entries",
    )


def cmd_resume(ctx: typer.Context, every: AllOpt = False, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """End a pause; the server's entries fire again from the next tick (what came
    due while it lasted stays dropped).

    Example: rk cron resume -L work
    """
    env = environment(ctx, server, as_json)
    servers = servers_of(env, every)
    results = []
    now = env.now()
    try:
        for files in servers:
            results.append((files.slug, end_pause(files.pause, now)))  # a lapsed pause is no pause
    except OSError as exc:
        raise CliError(str(exc)) from None
    for slug, was in results:
        if was:
            nudge.send(slug, env.environ)  # the ticker ticks it now, not at its next poll
    env.result(
        [{"server": slug, "resumed": was} for slug, was in results],
        [f"resumed {slug}" if was else f"{slug} was not paused" for slug, was in results] or "no server has entries",
    )

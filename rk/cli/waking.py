"""`rk cron wake ID`: end an entry's dormancy by hand, and `--dormant-after`'s value.

An entry goes dormant when its last N deliveries started no turn
(`rk.core.schedule.dormant`); it wakes by itself when its pane shows life. This
ends it at once: a `woken` line in the log, from which its unanswered deliveries
count again (no state of its own: the log is the clock's memory).
"""

from __future__ import annotations

from collections.abc import Mapping

import typer

from rk.cli.environment import CliError, environment, usage
from rk.cli.options import IdArg, JsonOpt, ServerOpt
from rk.cli.store import stored
from rk.core.log.delivery import LogView
from rk.core.pane.facts import resolve_target
from rk.core.schedule.dormant import dormancy, parse_dormant_after, woken_line
from rk.core.schedule.entry import Entry, EntryError
from rk.host import nudge
from rk.store import delivery_log as logfile


def dormant_after_flag(value: str | None) -> int | None:
    """`--dormant-after N|off`: None when not given, 0 for off, else N (a usage error otherwise)."""
    if value is None:
        return None
    try:
        return parse_dormant_after(value, "--dormant-after")
    except EntryError as exc:
        raise usage(str(exc)) from None


def cmd_wake(ctx: typer.Context, entry_id: IdArg, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """End an entry's dormancy: it types again at its next due time, its unanswered
    deliveries forgotten (logged woken). It also wakes by itself when its pane shows life.

    Example: rk cron wake 3f2a
    """
    env = environment(ctx, server, as_json)
    files = env.files()
    entry = stored(files, entry_id)
    now = env.now()
    was = _was_dormant(env.environ, files.slug, entry, LogView(logfile.read_live(files.log)))
    try:
        logfile.append_lines(files.log, [woken_line(entry.id, now)])
    except OSError as exc:
        raise CliError(f"{exc.filename or files.dir}: {exc.strerror or exc}") from None
    nudge.send(files.slug, env.environ)  # the ticker ticks it now, not at its next poll
    human = f"woke {entry.id}" if was else f"{entry.id} was not dormant (its count of unanswered deliveries restarts)"
    env.result({"id": entry.id, "woken": True, "was_dormant": was}, human)


def _was_dormant(environ: Mapping[str, str], slug: str, entry: Entry, view: LogView) -> bool:
    """Whether the entry is dormant now, from its target's facts (False when the server cannot be read)."""
    from rk.tmux.server import Server, TmuxError

    tmux = Server(name=slug, env=environ)
    try:
        panes = tmux.pane_facts() if tmux.is_live() else None
    except TmuxError:
        panes = None
    if panes is None:
        return False
    return dormancy(entry, view, resolve_target(entry.target, panes, entry.any_program)).held

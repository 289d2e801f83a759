"""`rk cron runs [ID] [--since 1d] [--json]`: every run on record.

One row per attempt of a fire (`rk.core.log.runs`): when rk typed, the turn it
started (from the state journal), how it ended, how long it ran, its tokens and
cost (the agent's own record, as `rk cron usage` reads it) and the first line of
the reply (secrets masked). A retry shows its fire (`retry 1/2 of 14:02:00`).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Annotated

import typer

from rk.cli.environment import environment, not_found
from rk.cli.flags import since_instant
from rk.cli.options import JsonOpt, ServerOpt
from rk.cli.table import Column, layout, terminal_width
from rk.core.cost.budget import format_tokens
from rk.core.durations import format_duration
from rk.core.log import runs as ledger
from rk.core.log.runs import RunRow
from rk.core.schedule import retry
from rk.store import delivery_log as logfile
from rk.store.config import load_prices
from rk.store.entries import load_entries
from rk.store.pane_history import journal_of
from rk.store.runs import run_facts
from rk.store.transcripts import delivered
from rk.tmux.server import Server


def cmd_runs(
    ctx: typer.Context,
    entry_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="Only this entry.")] = None,
    since: Annotated[
        str, typer.Option("--since", metavar="WHEN", help="From this long ago (1d, 12h) or this time on.")
    ] = "1d",
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Each fire that delivered (and each failed attempt): its turn, how it ended, what it cost, the reply.

    Reads the log (archives too), the state journal, and the session record of
    each target pane (one tmux call per pane). A turn is the delivery's when it
    began within a minute of it, the agent at rest before. What no record shows
    is `unknown`, never 0.

    Example: rk cron runs 3f2a --since 7d --json
    """
    env = environment(ctx, server, as_json)
    now = env.now()
    start = since_instant(since, now)
    env.warn_if_unsafe()
    files = env.files()
    entries = {e.id: e for e in load_entries(files.entries).entries}
    history = logfile.read_history(files.log)
    if entry_id is not None and entry_id not in entries and not any(line.entry == entry_id for line in history):
        raise not_found(entry_id)
    prices, problems = load_prices(env.environ)
    for problem in problems:
        env.notice(problem)
    try:
        journal = journal_of(str(files.dir), files.slug)
    except OSError:
        journal = {}
    wanted = [line for line in delivered(history, start) if entry_id is None or line.entry == entry_id]
    context = [line for line in delivered(history, start - 86400) if line.entry in entries]
    tmux = Server(name=env.server, env=env.environ)
    facts = run_facts(tmux, wanted, entries, env.environ, prices or {}, context) if wanted else {}
    rows = ledger.since(ledger.runs(history, journal, facts, start), start, entry_id)
    zone = env.zone()
    names = {e.id: e.label for e in entries.values()}
    if env.json:
        env.result([r.to_dict() | {"name": names.get(r.entry, "")} for r in rows])
        return
    if not rows:
        env.out("no runs" + (f" of {entry_id}" if entry_id else "") + f" since {since}")
        return
    columns = [
        Column("WHEN"),
        Column("ENTRY"),
        Column("NAME", priority=3, shrink_to=8),
        Column("FIRE", priority=2),
        Column("TURN", priority=1),
        Column("ENDED"),
        Column("TOOK"),
        Column("TOKENS"),
        *([Column("COST", priority=2)] if prices else []),
        Column("REPLY", priority=1, shrink_to=12),
    ]
    cells = [_cells(r, names.get(r.entry, ""), zone, bool(prices)) for r in rows]
    for text in layout(columns, cells, terminal_width(env.stdout, env.environ, False)):
        env.out(text)
    for r in [r for r in rows if r.why and r.ended != ledger.UNDELIVERED][:5]:
        env.notice(f"{r.entry} {_clock(r.at, zone)}: {r.why}")


def _clock(ts: int, zone: tzinfo) -> str:
    return datetime.fromtimestamp(ts, zone).strftime("%m-%d %H:%M:%S")


def _fire(r: RunRow, zone: tzinfo) -> str:
    """`schedule`, `wake`, or `retry 1/2 of 14:02:00`."""
    attempt = retry.parse(r.reason)
    if attempt is None:
        return r.reason or "-"
    return f"retry {attempt.number}/{attempt.of} of {datetime.fromtimestamp(attempt.fire, zone):%H:%M:%S}"


def _cells(r: RunRow, name: str, zone: tzinfo, priced: bool) -> list[str]:
    took = format_duration(r.seconds) if r.seconds is not None else "-"
    tokens = format_tokens(r.tokens.total) if r.tokens is not None else ledger.UNKNOWN
    cost = "-" if r.cost is None else f"{r.cost:.2f}" if r.cost >= 1 else f"{r.cost:.4f}"
    reply = r.why if r.ended == ledger.UNDELIVERED else r.reply or "-"
    return [
        _clock(r.at, zone),
        r.entry,
        name or "-",
        _fire(r, zone),
        datetime.fromtimestamp(r.start, zone).strftime("%H:%M:%S") if r.start else "-",
        r.ended,
        took,
        tokens if r.ended != ledger.UNDELIVERED else "-",
        *([cost] if priced else []),
        reply,
    ]

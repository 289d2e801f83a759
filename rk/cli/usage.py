"""`rk cron usage [ID] [--since 7d] [--json]`: the tokens each entry's deliveries cost.

Per entry and local day (in the entry's zone): how many deliveries, the tokens
of the turns they started as the agent recorded them (input, output, cache
reads and writes), and, with a `prices:` table in the config, the money. A
day whose usage no record shows says `unknown`, never 0 (specs/usage.md).
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Annotated

import typer

from rk.cli.environment import environment, not_found, zone_label
from rk.cli.flags import since_instant
from rk.cli.options import JsonOpt, ServerOpt
from rk.cli.table import Column, layout, terminal_width
from rk.core.cost.budget import format_tokens
from rk.core.cost.usage import DayUsage, per_day
from rk.core.schedule.due import entry_zone
from rk.store import delivery_log as logfile
from rk.store.config import load_prices
from rk.store.entries import load_entries
from rk.store.transcripts import Transcripts, attribute_lines, delivered
from rk.tmux.server import Server

UNKNOWN = "unknown"


def cmd_usage(
    ctx: typer.Context,
    entry_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="Only this entry.")] = None,
    since: Annotated[
        str, typer.Option("--since", metavar="WHEN", help="From this long ago (7d, 12h) or this time on.")
    ] = "7d",
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Tokens (and cost, with `prices:` in the config) per entry per local day.

    Reads the log (archives too), the entries file, and the session record of each
    target pane (found through the pane's options: one tmux call per pane). A turn
    counts when rk's delivery started it; a human's turns never do. Usage that no
    record shows is `unknown`, never 0.

    Example: rk cron usage 3f2a --since 30d --json
    """
    env = environment(ctx, server, as_json)
    now = env.now()
    start = since_instant(since, now)
    env.warn_if_unsafe()
    files = env.files()
    entries = {e.id: e for e in load_entries(files.entries).entries}
    if entry_id is not None and entry_id not in entries:
        raise not_found(entry_id)
    prices, problems = load_prices(env.environ)
    for problem in problems:
        env.notice(problem)
    history = [line for line in logfile.read_history(files.log) if line.entry in entries]
    context = delivered(history, start - 86400)
    wanted = [line for line in delivered(history, start) if entry_id is None or line.entry == entry_id]
    tmux = Server(name=env.server, env=env.environ)
    rows = attribute_lines(tmux, wanted, entries, env.environ, Transcripts(), context)
    zone = env.zone()
    zones = {e.id: entry_zone(e, zone) for e in entries.values()}
    days = per_day(rows, zones, prices or None)
    if env.json:
        env.result([_record(d, entries[d.entry].label, zones[d.entry]) for d in days])
        return
    if not days:
        env.out("no deliveries" + (f" of {entry_id}" if entry_id else "") + f" since {since}")
        return
    columns = [
        Column("DAY"),
        Column("ENTRY"),
        Column("NAME", priority=2, shrink_to=8),
        Column("SENT"),
        Column("INPUT"),
        Column("OUTPUT"),
        Column("CACHE-R", priority=1),
        Column("CACHE-W", priority=1),
        Column("TOTAL"),
        *([Column("COST")] if prices else []),
        Column("UNKNOWN", priority=3),
    ]
    cells = [_cells(d, entries[d.entry].label, bool(prices)) for d in days]
    for text in layout(columns, cells, terminal_width(env.stdout, env.environ, False)):
        env.out(text)
    unknown = [d for d in days if d.unknown]
    for d in unknown[:5]:
        env.notice(f"{d.entry} {d.day}: {d.unknown} of {d.deliveries} deliveries unknown: {d.why}")
    for d in [d for d in days if d.odd][:5]:
        env.notice(odd_note(d))
    if any(zones[d.entry] != zone for d in days):
        env.notice(f"days are each entry's own (its cron tz); others are {zone_label(zone)}")


def odd_note(d: DayUsage) -> str:
    """The line that says a day's session record held token counts rk did not count."""
    counts = "a token count" if d.odd == 1 else f"{d.odd} token counts"
    return (
        f"{d.entry} {d.day}: {counts} in the session record not a whole number "
        f"({d.odd_example}{', …' if d.odd > 1 else ''}); not counted"
    )


def _count(d: DayUsage, value: int) -> str:
    return format_tokens(value) if d.known else UNKNOWN


def _cells(d: DayUsage, name: str, priced: bool) -> list[str]:
    t = d.tokens
    cost = UNKNOWN if not d.known or d.cost is None else f"{d.cost:.2f}" if d.cost >= 1 else f"{d.cost:.4f}"
    return [
        str(d.day),
        d.entry,
        name,
        str(d.deliveries),
        _count(d, t.input),
        _count(d, t.output),
        _count(d, t.cache_read),
        _count(d, t.cache_write),
        _count(d, t.total) + ("+" if d.known and d.unknown else ""),
        *([cost] if priced else []),
        str(d.unknown) if d.unknown else "-",
    ]


def _record(d: DayUsage, name: str, zone: tzinfo) -> dict[str, object]:
    """One day of one entry: `tokens` null when none of its usage is known; `cost`
    null without a price table or with a model that has none."""
    return {
        "entry": d.entry,
        "name": name,
        "day": str(d.day),
        "zone": zone_label(zone),
        "deliveries": d.deliveries,
        "unknown": d.unknown,
        "tokens": d.tokens.to_dict() if d.known else None,
        "cost": d.cost if d.known else None,
        "why_unknown": d.why,
        "not_counted": d.odd,
    }

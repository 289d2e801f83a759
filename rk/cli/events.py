"""`rk events [-f] [--json] [--since 1h] [--pane %N …]`: the server's state changes
and delivery outcomes in one stream, oldest first; `-f` follows it live.

Errors are one line on stderr; exit codes 0 ok, 2 usage (a bad pane id, or more
than `MAX_PANES` of them).
"""

from __future__ import annotations

import json
from datetime import tzinfo
from typing import Annotated

import typer

from rk.cli.environment import Environment, environment, moment, usage
from rk.cli.options import JsonOpt, ServerOpt
from rk.core.environ import is_pane_id
from rk.core.log.events import MAX_PANES, STATE, Event


def line_of(event: Event, zone: tzinfo) -> str:
    """One human line: time, pane, then the change or the outcome."""
    from rk.cli.agent import printable  # here, not at the top: `rk --help` lists this command without it

    when = moment(event.ts, zone)
    if event.kind == STATE:
        end = f" ({event.turn_end})" if event.turn_end else ""
        agent = f" {event.agent}" if event.agent else ""
        by = f" by {event.by}" if event.by else ""
        text = f"{when} {event.pane} state {event.from_ or '-'} -> {event.to}{end} [{event.source}{agent}]{by}"
    else:
        text = f"{when} {event.pane or '-'} log {event.entry} {event.outcome} ({event.reason})"
    return printable(text)


def _emit(env: Environment, event: Event, zone: tzinfo) -> None:
    env.out(json.dumps(event.to_dict(), ensure_ascii=False) if env.json else line_of(event, zone))


def cmd_events(
    ctx: typer.Context,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing events as they happen.")] = False,
    since: Annotated[
        str | None, typer.Option("--since", metavar="WHEN", help="Only events since then: 1h, 30m, or a time.")
    ] = None,
    pane: Annotated[
        list[str] | None,
        typer.Option("--pane", "-t", metavar="%N", help=f"Only this pane's events (repeatable, up to {MAX_PANES})."),
    ] = None,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The panes' state changes (pane, from, to, turn end, source; `by rk` or `by human`:
    who started the turn, on a change a wake reacts to) and the log's outcomes
    (delivered, skipped-…, failed…), oldest first; one JSON object a line with --json.

    Example: rk events -f --since 1h --pane %3
    """
    env = environment(ctx, server, as_json)
    from rk.cli.agent import printable
    from rk.cli.flags import since_instant

    if len(pane or ()) > MAX_PANES:
        raise usage(f"events: {len(pane or ()):,} --pane given; at most {MAX_PANES}")
    panes = frozenset(pane or ())
    bad = next((p for p in panes if not is_pane_id(p)), None)
    if bad is not None:
        raise usage(f"events: bad pane {printable(bad[:40])!r}: use a pane id like %3")
    start = since_instant(since, env.now()) if since is not None else None
    from rk.channels import event_stream as eventstream

    files = env.files()
    zone = env.zone()
    snap = eventstream.read(files.dir, files.slug, files.log, start, panes)
    for event in snap.events:
        _emit(env, event, zone)
    if not follow:
        return
    env.stdout.flush()
    try:
        for event in eventstream.follow(files.dir, files.slug, files.log, snap, panes):
            _emit(env, event, zone)
            env.stdout.flush()
    except KeyboardInterrupt:
        return

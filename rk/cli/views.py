"""`rk cron list | show | log | next`: the commands that only read.

list, show and log read files only and never run tmux; `next` asks the
server for the target's facts when a backoff needs them. `record()` is the
`list --json` contract.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from rk import logfile
from rk.cli import preview
from rk.cli.environment import Environment, environment, rfc3339, usage
from rk.cli.options import IdArg, JsonOpt, ServerOpt
from rk.cli.store import find, load_for_listing
from rk.core import bounds
from rk.core.durations import format_go
from rk.core.entry import Backoff, Cron, Deliver, Entry, Every, IfAbsent, Schedule, WakeOnly
from rk.core.log import LogView
from rk.core.orphan import expires_at, orphaned_since
from rk.tmux import Server, TmuxError


def cmd_list(ctx: typer.Context, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """List entries (reads only files; never runs tmux)."""
    env = environment(ctx, server, as_json)
    entries, view, now = load_for_listing(env)
    if env.json:
        env.result([record(e, view, now) for e in entries])
        return
    if not entries:
        env.out(f"no cron entries on server {env.server}")
        return
    from rich.console import Console
    from rich.table import Table

    zone = env.zone()
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("ID", "NAME", "SCHEDULE", "TARGET", "DELIVER", "FLAGS", "LAST-FIRED"):
        table.add_column(col, overflow="fold")
    for e in entries:
        newest = view.newest(e.id)
        table.add_row(
            e.id,
            e.name,
            _schedule_cell(e),
            e.target.summary,
            e.deliver or Deliver.IMMEDIATE,
            _flags(e, now),
            rfc3339(newest.ts, zone) if newest else "-",
        )
    Console(
        file=env.stdout, soft_wrap=True, width=200 if not getattr(env.stdout, "isatty", lambda: False)() else None
    ).print(table)


def cmd_show(ctx: typer.Context, entry_id: IdArg, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Show one entry in full (reads only files)."""
    env = environment(ctx, server, as_json)
    entries, view, now = load_for_listing(env)
    entry = find(entries, entry_id)
    extra, typed_lines = preview.show(entry, view, now, env.zone())
    rec = record(entry, view, now) | extra
    if env.json:
        env.result(rec)
        return
    zone = env.zone()
    wake = f"{entry.wake_on.event} (debounce {_short(entry.wake_on.debounce)})" if entry.wake_on else "-"
    lines = [
        f"id:         {entry.id}",
        f"name:       {entry.name}",
        f"schedule:   {entry.schedule.summary}",
        f"wake_on:    {wake}",
        f"target:     {entry.target.summary}",
        f"deliver:    {entry.deliver or Deliver.IMMEDIATE}",
        f"if_absent:  {entry.if_absent or IfAbsent.SKIP}" + (f" {list(entry.respawn)}" if entry.respawn else ""),
        f"flags:      {_flags(entry, now)}",
        f"types into: {'any program but a shell (any_program)' if entry.any_program else 'agents only'}",
        f"created:    {rfc3339(entry.created_by.at, zone)}"
        + (f" from {entry.created_by.pane}" if entry.created_by.pane else ""),
        f"last fired: {rfc3339(rec['last_fired'], zone) if rec['last_fired'] else '-'}",
        f"payload:    {entry.payload}",
        *typed_lines,
    ]
    if rec["expires_at"]:
        lines.append(
            f"expires:    {rfc3339(rec['expires_at'], zone)}"
            f" (target missing since {rfc3339(rec['orphaned_since'], zone)})"
        )
    env.result(rec, lines)


def _schedule_cell(entry: Entry) -> str:
    """The SCHEDULE column: the schedule, `+wake` with a wake_on, or `on <event>` for a wake-only entry."""
    if isinstance(entry.schedule, WakeOnly) and entry.wake_on is not None:
        return f"on {entry.wake_on.event}"
    return entry.schedule.summary + (" +wake" if entry.wake_on else "")


def _flags(entry: Entry, now: int) -> str:
    flags = []
    if entry.muted:
        flags.append("muted")
    elif entry.muted_until > now:
        flags.append(f"muted({_short(entry.muted_until - now)})")
    if entry.pinned:
        flags.append("pinned")
    if entry.any_program:
        flags.append("any-program")
    return ",".join(flags) or "-"


def _short(seconds: int) -> str:
    from rk.core.durations import format_duration

    return format_duration(max(0, seconds))


def _schedule_json(s: Schedule) -> dict:
    out: dict = {"kind": str(s.kind)}
    if isinstance(s, Every):
        out["interval"] = format_go(s.interval)
    elif isinstance(s, Backoff):
        out["min"] = format_go(s.min)
        out["max"] = format_go(s.max)
    elif isinstance(s, Cron):
        out["expr"] = s.expr
        if s.catch_up:
            out["catch_up"] = s.catch_up
        if s.tz:
            out["tz"] = s.tz
    return out


def record(entry: Entry, view: LogView, now: int) -> dict:
    """One `list --json` record (a cross-tool contract: keys and shapes are stable)."""
    newest = view.newest(entry.id)
    since = orphaned_since(entry, view)
    rec = {
        "id": entry.id,
        "name": entry.name,
        "schedule": _schedule_json(entry.schedule),
        "schedule_summary": entry.schedule.summary,
        "wake_on": None
        if entry.wake_on is None
        else {
            "event": entry.wake_on.event,
            "scope": entry.wake_on.scope,
            "debounce": format_go(entry.wake_on.debounce),
        },
        "target": entry.target.summary,
        "deliver": str(entry.deliver or ""),
        "if_absent": str(entry.if_absent or ""),
        "respawn": list(entry.respawn),
        "pinned": entry.pinned,
        "any_program": entry.any_program,
        "muted": entry.is_muted(now),
        "last_fired": newest.ts if newest else 0,
        "orphaned_since": since,
        "expires_at": expires_at(entry, since),
    }
    if entry.muted_until > now:
        rec["muted_until"] = entry.muted_until
    return rec


def cmd_log(
    ctx: typer.Context,
    entry_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="Only this entry's lines.")] = None,
    n: Annotated[int, typer.Option("-n", help="How many of the newest lines (0 = all).")] = 20,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The delivery log, archives included, oldest first."""
    env = environment(ctx, server, as_json)
    if n < 0:
        raise usage("-n must be ≥ 0")
    log = env.files().log
    if n:
        lines = logfile.read_newest(log, n, (lambda line: line.entry == entry_id) if entry_id else (lambda _line: True))
    else:
        lines = [line for line in logfile.read_history(log) if not entry_id or line.entry == entry_id]
    if env.json:
        env.result([line.to_dict() for line in lines])
        return
    if not lines:
        env.out("no log lines" + (f" for {entry_id}" if entry_id else ""))
        return
    zone = env.zone()
    for line in lines:
        env.out(
            f"{rfc3339(line.ts, zone)}  {line.entry:<6} {line.target or '-':<5} {line.reason or '-':<8} {line.outcome}"
        )


def cmd_next(
    ctx: typer.Context,
    entry_id: IdArg,
    n: Annotated[int, typer.Option("-n", help="How many fire times.")] = 5,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The next fire times in local time and UTC (backoff: if the target stays quiet)."""
    env = environment(ctx, server, as_json)
    from rk.core.due import cron_zone
    from rk.core.schedule import upcoming

    if not 1 <= n <= bounds.MAX_FIRES:
        raise usage(f"-n must be between 1 and {bounds.MAX_FIRES}")
    entries, view, now = load_for_listing(env)
    entry = find(entries, entry_id)
    sched = entry.schedule
    zone = cron_zone(sched, env.zone()) if isinstance(sched, Cron) else env.zone()  # a cron entry's own zone
    target = _target_fact(env, entry) if isinstance(sched, Backoff) else None
    plan = upcoming(entry, view, now, n + 1, zone=env.zone(), target=target, poll=env.settings().tick_interval)
    fires = []
    human = []
    overdue = [item for item in plan.fires if item.ts <= now]
    if overdue:
        human.append(
            f"due now (since {datetime.fromtimestamp(overdue[0].ts, zone).isoformat(timespec='seconds')});"
            " fires on the next tick"
        )
    for item in [item for item in plan.fires if item.ts > now][:n]:
        local = datetime.fromtimestamp(item.ts, zone).isoformat(timespec="seconds")
        utc = datetime.fromtimestamp(item.ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        rec = {"ts": item.ts, "local": local, "utc": utc}
        if item.rung:
            rec["rung"] = item.rung
        fires.append(rec)
        human.append(f"{local}  ({utc})" + (f"  rung {item.rung}" if item.rung else ""))
    if plan.note:
        human.append(plan.note)
    first = preview.first_fire(entry, view, plan.fires, now, env.zone())
    if first is not None:
        human.append(f"typed (first fire): {first}")
    if entry.is_muted(now):
        human.insert(0, "muted: " + ("until unmuted" if entry.muted else f"until {rfc3339(entry.muted_until, zone)}"))
    typed_key = {"typed": first} if first is not None else {}
    env.result({"id": entry.id, "fires": fires} | typed_key, human or ["no upcoming fires"])


def _target_fact(env: Environment, entry: Entry):
    """The target's facts now, if the server is live (backoff needs the epoch)."""
    from rk.core.facts import TargetFact, resolve_target

    server = Server(name=env.server, env=env.environ)
    if not server.is_live():
        return TargetFact(why=f"server {env.server} is not running")
    try:
        return resolve_target(entry.target, server.pane_facts())
    except TmuxError as exc:
        return TargetFact(why=str(exc))

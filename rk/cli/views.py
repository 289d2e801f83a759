"""`rk cron list | show | log | next`: the commands that only read.

log reads files only (the log, and the entries file for names); list, show
and next read the files and, when the server's socket answers, one listing of
its panes for the target's facts (a stopped server is never started); their
NEXT and fire times are `rk.core.schedule.forecast`'s. Tables fit the terminal
(rk.cli.table); every human view prints times one way, local, with the zone
named once. `record()` is the
`list --json` contract. `log` reads no forecast: show and next import theirs
(rk.cli.listing, rk.cli.preview) when they run, so `rk cron log` starts sooner.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from rk.cli.environment import Environment, environment, moment, rfc3339, stamp, usage, zone_label
from rk.cli.store import find, load_for_listing
from rk.cli.table import GAP, Column, escape_controls, fixed_line, layout, terminal_width, wrapped
from rk.core import bounds
from rk.core.cost.budget import Spent, format_tokens
from rk.core.log.delivery import LogLine, LogView, Status
from rk.core.schedule import retry
from rk.core.schedule.entry import Cron, Deliver, Entry, IfAbsent, TargetKind, WakeEvent, WakeOn
from rk.store import delivery_log as logfile
from rk.store.entries import load_entries

if TYPE_CHECKING:  # the declarations only (rk.cli.root.declared): the fast path runs without typer
    import typer

    from rk.cli.options import FullOpt, IdArg, JsonOpt, ServerOpt


def cmd_show(ctx: typer.Context, entry_id: IdArg, as_json: JsonOpt = False, server: ServerOpt = None) -> None:
    """Show one entry in full, times local with the zone named first.

    Reads the entries file, the log and the pause file; the `now:` line (the target's
    live state) comes from one listing of the server's panes when its socket answers
    (a stopped server is never started, and no tmux runs for it).

    Example: rk cron show 3f2a --json
    """
    env = environment(ctx, server, as_json)
    from rk.cli import preview  # the forecast and its rules: `log` goes without them
    from rk.cli.listing import caps_text, left_cell, record, row_record, schedule_cell, server_view, target_cell

    entries, view, now = load_for_listing(env)
    entry = find(entries, entry_id)
    row = next(r for r in server_view(env, env.files(), entries, view, now, entry_id).rows if r.entry.id == entry_id)
    base = record(entry, view, now, env.zone())
    extra, typed_lines = preview.show(entry, view, now, env.zone())
    rec = row_record(row, base, False) | extra
    budget_line = ""
    if entry.budget is not None:
        spent = _spent_today(env, entry, view, now)
        rec["budget_today"] = {"tokens": spent.tokens, "unknown": spent.unknown, "why_unknown": spent.why}
        if spent.tokens is None:
            budget_line = f"{entry.budget.text} (usage unknown: {spent.why}; the budget cannot be enforced)"
        else:
            known = f"{format_tokens(spent.tokens)} spent today" + (
                f", {spent.unknown} unknown" if spent.unknown else ""
            )
            budget_line = f"{entry.budget.text} ({known})"
    if env.json:
        env.result(rec)
        return
    zone = env.zone()
    capped = caps_text(entry, row.left, base.get("delivered_today"))
    wake = _wake_text(entry.wake_on)
    lines = [
        f"times in:   {zone_label(zone)}",
        f"id:         {entry.id}",
        f"name:       {entry.name}",
        f"schedule:   {schedule_cell(entry, zone)}",
        *([f"active:     {entry.active_hours.text}"] if entry.active_hours else []),
        *([f"caps:       {capped}"] if capped else []),
        *([f"turn:       timeout {entry.timeout_summary}"] if entry.turn_timeout else []),
        *([f"budget:     {budget_line}"] if budget_line else []),
        *([f"retry:      {retry.text(entry)}"] if entry.retry else []),
        f"wake_on:    {wake}",
        f"target:     {entry.target.summary}" + _server_note(entry, zone),
        f"deliver:    {entry.deliver or Deliver.IMMEDIATE}",
        f"if_absent:  {entry.if_absent or IfAbsent.SKIP}" + (f" {list(entry.respawn)}" if entry.respawn else ""),
        f"flags:      {_flags(entry, now)}",
        *([f"if changed: {_changed_words(entry.only_if_changed)}"] if entry.only_if_changed else []),
        f"types into: {'any program but a shell (any_program)' if entry.any_program else 'agents only'}",
        f"created:    {stamp(entry.created_by.at, zone)}"
        + (f" from {entry.created_by.pane}" if entry.created_by.pane else "")
        + (f" in a turn {entry.parent}'s fire started" if entry.parent else ""),
        f"next:       {stamp(row.next, zone) if row.next is not None else '-'} ({left_cell(row, now)})",
        f"last:       {f'{stamp(row.last_ts, zone)} {row.last_outcome}' if row.last_ts else '-'}",
        f"now:        {target_cell(row)}",
        f"payload:    {entry.payload}",
        *typed_lines,
    ]
    if base["expires_at"] and not (row.target is not None and row.target.resolved):  # a live pane is no orphan
        lines.append(
            f"expires:    {stamp(base['expires_at'], zone)}"
            f" (target missing since {stamp(base['orphaned_since'], zone)})"
        )
    width = terminal_width(env.stdout, env.environ, False)
    lines = [part for line in lines for part in wrapped(line, width, KEY_WIDTH)]
    env.result(rec, lines)


#: `show`'s keys are padded to this many columns; a wrapped value continues under its start.
KEY_WIDTH = 12


def _server_note(entry: Entry, zone: tzinfo) -> str:
    """Which tmux server's pane a pane target means (its ids are reused after a restart)."""
    server = entry.target.server
    if not server.known:
        return " (tmux server not recorded yet)" if entry.target.kind == TargetKind.PANE else ""
    return f" (of the tmux server started {stamp(server.started, zone)}, pid {server.pid})"


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


def _wake_text(wake: WakeOn | None) -> str:
    """`show`'s wake_on line: the event, its debounce, and whose ended turns wake it."""
    if wake is None:
        return "-"
    origin = f", from {wake.from_}" if wake.event == WakeEvent.AGENT_STATE_CHANGE else ""
    return f"{wake.event} (debounce {_short(wake.debounce)}{origin})"


def _changed_words(mode: str) -> str:
    """`show`'s only_if_changed line: what a skipped-unchanged fire compares."""
    what = "the panes its wake watches" if mode == "scope" else "the target"
    return f"{mode} (skipped-unchanged when {what} had no new turn and no screen change since the last answer)"


def _spent_today(env: Environment, entry: Entry, view: LogView, now: int) -> Spent:
    """The entry's tokens so far today, as the tick reads them for its budget."""
    from rk.store.transcripts import spent_today
    from rk.tmux.server import Server

    server = Server(name=env.server, env=env.environ)
    return spent_today(server, [entry], view.lines, now, env.zone(), env.environ)[entry.id]


def _short(seconds: int) -> str:
    from rk.core.durations import format_duration

    return format_duration(max(0, seconds))


def cmd_log(
    ctx: typer.Context,
    entry_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="Only this entry's lines.")] = None,
    n: Annotated[int, typer.Option("-n", help="How many of the newest lines (0 = all).")] = 20,
    since: Annotated[
        str | None, typer.Option("--since", help="Only lines from this long ago (2h, 7d) or this time on.")
    ] = None,
    outcome: Annotated[
        str | None, typer.Option("--outcome", help="Only lines whose outcome starts so (delivered, skipped, failed…).")
    ] = None,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Then print lines as they are appended, across rotation (Ctrl-C ends)."),
    ] = False,
    gaps: Annotated[
        bool, typer.Option("--gaps", help="A cron entry's occurrences that have no delivered line, and why.")
    ] = False,
    full: FullOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The delivery log, archives included, oldest first.

    Reads the log files and the entries file (for the names; --gaps: the entry's
    schedule); never tmux. On a terminal the columns shrink, then drop, to fit;
    --full shows all.

    Example: rk cron log -f --outcome failed, or rk cron log 3f2a --gaps --since 7d
    """
    env = environment(ctx, server, as_json)
    from rk.cli.flags import outcome_prefix, since_instant  # the rules of --since and --outcome

    outcome = outcome_prefix(outcome)
    if not follow:  # -f waits for lines, from a server yet to start too
        env.known_server()
    if gaps:
        if follow or outcome is not None:
            raise usage("--gaps goes with --since only")
        _log_gaps(env, entry_id, since, terminal_width(env.stdout, env.environ, full))
        return
    if n < 0:
        raise usage("-n must be ≥ 0")
    if follow and env.json:
        raise usage("--follow prints lines as they come; it does not go with --json")
    start = since_instant(since, env.now()) if since is not None else None

    def keep(line: LogLine) -> bool:
        return (
            (not entry_id or line.entry == entry_id)
            and (start is None or line.ts >= start)
            and (outcome is None or line.outcome.startswith(outcome))
        )

    env.warn_if_unsafe()
    log = env.files().log

    def read() -> list[LogLine]:
        return logfile.read_newest(log, n, keep) if n else [line for line in logfile.read_history(log) if keep(line)]

    lines, end, newest = _read_marked(log, read) if follow else (read(), None, None)
    if env.json:
        env.result([line.to_dict() for line in lines])
        return
    names = _names(env)
    zone = env.zone()
    if not lines and not follow:
        env.out("no log lines" + (f" for {entry_id}" if entry_id else ""))
        return
    if follow:  # lines come one at a time: fixed widths, so they stay under the header
        fmt = follow_format(terminal_width(env.stdout, env.environ, full))
        for text in [*_log_row(None, names, zone, fmt), *(t for ln in lines for t in _log_row(ln, names, zone, fmt))]:
            env.out(text)
        _follow(env, log, end or (0, 0), newest, keep, names, fmt)  # (0, 0): no log yet
        return
    rows = [_log_cells(line, names, zone) for line in lines]
    for text in layout(_log_columns(zone), rows, terminal_width(env.stdout, env.environ, full)):
        env.out(text)


def _log_columns(zone: tzinfo) -> list[Column]:
    """The log's columns: the time, the entry, its name and the outcome are kept (the name
    and the outcome's detail shortened last); the reason, then the pane, go first."""
    return [
        Column(f"TIME ({zone_label(zone)})"),
        Column("ENTRY"),
        Column("NAME", shrink_to=8),
        Column("TARGET", priority=1),
        Column("REASON", priority=3),
        Column("OUTCOME", shrink_to=20),
    ]


def _log_cells(line: LogLine, names: dict[str, str], zone: tzinfo) -> list[str]:
    return [
        stamp(line.ts, zone),
        line.entry,
        names.get(line.entry, "-"),
        line.target or "-",
        line.reason or "-",
        line.outcome,
    ]


#: `log -f`'s fixed widths when piped (the outcome, last, runs on).
FOLLOW_WIDTHS = (19, 6, 20, 6, 8, 0)
#: On a terminal: the id, the pane and the reason in their own widths, room for the
#: longest status word (an outcome's status is never cut), the name gets what is left.
FOLLOW_ID, FOLLOW_PANE, FOLLOW_REASON, FOLLOW_NAME_MIN = 4, 6, 8, 6
OUTCOME_ROOM = max(len(status) for status in Status)


@dataclass(frozen=True)
class FollowFormat:
    """`log -f`'s widths; on a terminal, the outcome's room on the line and the width
    (None: piped, the outcome whole)."""

    widths: tuple[int, ...]
    room: int | None = None
    width: int = 0


def follow_format(width: int | None) -> FollowFormat:
    """`log -f`'s columns for a terminal `width` wide (None: piped, FOLLOW_WIDTHS)."""
    if width is None:
        return FollowFormat(FOLLOW_WIDTHS)
    fixed = 19 + FOLLOW_ID + FOLLOW_PANE + FOLLOW_REASON + len(GAP) * 5
    name = max(FOLLOW_NAME_MIN, width - fixed - OUTCOME_ROOM)
    widths = (19, FOLLOW_ID, name, FOLLOW_PANE, FOLLOW_REASON, 0)
    return FollowFormat(widths, max(OUTCOME_ROOM, width - fixed - name), width)


def _log_row(line: LogLine | None, names: dict[str, str], zone: tzinfo, fmt: FollowFormat) -> list[str]:
    """One followed line (None: the header) in `fmt`'s widths; on a terminal, an outcome
    longer than its room goes on below, under the id, its status word whole."""
    cells = [c.header for c in _log_columns(zone)] if line is None else _log_cells(line, names, zone)
    if fmt.room is None:
        return [fixed_line(cells, fmt.widths)]
    if line is None:
        cells[1] = "ID"  # ENTRY abbreviated to the ids' width
    first, rest = _outcome_split(escape_controls(cells[-1]), fmt.room)
    indent = fmt.widths[0] + len(GAP)
    more = textwrap.wrap(rest, max(fmt.width - indent, OUTCOME_ROOM), break_on_hyphens=False) if rest else []
    return [fixed_line([*cells[:-1], first], fmt.widths), *(" " * indent + part for part in more)]


def _outcome_split(outcome: str, room: int) -> tuple[str, str]:
    """The outcome's words that fit `room` (its status word at least), and the rest."""
    if len(outcome) <= room:
        return outcome, ""
    cut = outcome.rfind(" ", 0, room + 1)
    if cut <= 0:
        cut = room
    return outcome[:cut].rstrip(), outcome[cut:].strip()


def _names(env: Environment) -> dict[str, str]:
    """The entries' names by id, as the entries file has them now."""
    return {e.id: e.name for e in load_entries(env.files().entries).entries}


def _read_marked(
    log: Path, read: Callable[[], list[LogLine]]
) -> tuple[list[LogLine], tuple[int, int] | None, LogLine | None]:
    """What `-f` shows first, with the mark it follows from and the newest line.

    Read again while the log grew during the read (a ticker writing), so
    the mark is exactly where the shown lines end: none lost, none twice.
    """
    for _ in range(5):
        start = logfile.mark(log)
        lines = read()
        newest = logfile.read_newest(log, 1)
        if logfile.mark(log) == start:
            break
    return lines, start, newest[-1] if newest else None


def _follow(
    env: Environment,
    log: Path,
    start: tuple[int, int],
    after: LogLine | None,
    keep: Callable[[LogLine], bool],
    names: dict[str, str],
    fmt: FollowFormat,
) -> None:
    """Print lines appended after `start` until interrupted; Ctrl-C ends it with exit 0.
    An entry added since it started is named: an id not met yet reads the entries again."""
    zone = env.zone()
    try:
        for line in logfile.follow(log, after, start=start):
            if not keep(line):
                continue
            if line.entry not in names:
                names.update(_names(env))
                names.setdefault(line.entry, "-")  # gone again (retired, removed): read once, not per line
            for text in _log_row(line, names, zone, fmt):
                env.out(text)
            env.stdout.flush()
    except KeyboardInterrupt:
        return


def _log_gaps(env: Environment, entry_id: str | None, since_text: str | None, width: int | None) -> None:
    """`--gaps`: a cron entry's occurrences with no delivered line."""
    from rk.cli.flags import since_instant
    from rk.core.schedule.cronexpr import CronExpr
    from rk.core.schedule.due import cron_zone
    from rk.core.schedule.gaps import gaps, occurrences

    if entry_id is None:
        raise usage("--gaps needs an entry id")
    entries, _, now = load_for_listing(env)
    entry = find(entries, entry_id)
    sched = entry.schedule
    if not isinstance(sched, Cron):
        raise usage(f"--gaps lists cron occurrences; {entry_id} is {sched.summary}")
    start = entry.created_by.at  # occurrences from before the entry existed are no one's gaps
    if since_text is not None:
        start = max(start, since_instant(since_text, now))
    zone = cron_zone(sched, env.zone())
    times = occurrences(CronExpr.parse(sched.expr), start, now, zone, bounds.MAX_FIRES)
    own = [line for line in logfile.read_history(env.files().log) if line.entry == entry_id]
    found = gaps(times, own, now, zone)
    if env.json:
        env.result([{"ts": g.occurrence, "local": rfc3339(g.occurrence, zone), "what": g.what} for g in found])
        return
    if not found:
        env.out(f"no gaps: every one of {len(times)} occurrences since {moment(start, zone)} was delivered")
        return
    columns = [Column(f"OCCURRENCE ({zone_label(zone)})"), Column("WHAT", shrink_to=12)]
    for text in layout(columns, [[stamp(g.occurrence, zone), g.what] for g in found], width):
        env.out(text)


def cmd_next(
    ctx: typer.Context,
    entry_id: IdArg,
    n: Annotated[int, typer.Option("-n", help="How many fire times.")] = 5,
    full: FullOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The next deliveries in local time and UTC, as the ticker would make them.

    Reads the entries file, the log, the pause file and, when the server runs,
    the target's facts. Active hours, a pause, a mute, the rate cap and the
    target's facts (when the server does not run: the fires it would make if it
    ran) drop or defer fires as the tick would; a backoff assumes the target
    stays quiet.

    Example: rk cron next 3f2a -n 10
    """
    env = environment(ctx, server, as_json)
    from rk.cli import preview
    from rk.cli.listing import forecast_of
    from rk.core.schedule.due import cron_zone
    from rk.core.schedule.implied import dst_note
    from rk.store.pause import paused_until

    if not 1 <= n <= bounds.MAX_FIRES:
        raise usage(f"-n must be between 1 and {bounds.MAX_FIRES}")
    entries, view, now = load_for_listing(env)
    entry = find(entries, entry_id)
    sched = entry.schedule
    zone = cron_zone(sched, env.zone()) if isinstance(sched, Cron) else env.zone()  # a cron entry's own zone
    paused = paused_until(env.files().pause, now)
    told = forecast_of(env, entries, view, entry, now, n + 1)  # one more: the first may be due now
    fires = []
    listed: list[int] = []
    cells = []
    notes = []
    overdue = [item for item in told.fires if item.ts <= now]
    if overdue:
        notes.append(f"due now (since {moment(overdue[0].ts, zone)}); fires on the next tick")
    for item in [item for item in told.fires if item.ts > now][:n]:
        local = datetime.fromtimestamp(item.ts, zone).isoformat(timespec="seconds")
        utc = datetime.fromtimestamp(item.ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        rec = {"ts": item.ts, "local": local, "utc": utc}
        if item.rung:
            rec["rung"] = item.rung
        fires.append(rec)
        listed.append(item.ts)
        cells.append([stamp(item.ts, zone), stamp(item.ts, UTC), str(item.rung) if item.rung else "-"])
    after = []
    if told.note:
        after.append(told.note)
    dst = dst_note(sched, listed, now, zone) if isinstance(sched, Cron) else ""
    if dst:
        after.append(dst)
    first = preview.first_fire(entry, view, list(told.fires), now, env.zone())
    if first is not None:
        after.append(f"typed (first fire): {first}")
    if told.left:
        after.append(f"{told.left} deliver{'y' if told.left == 1 else 'ies'} left, then it retires (max_total)")
    why = told.why_not
    if paused is not None:
        until = "until resumed" if paused == 0 else f"until {moment(paused, zone)}"
        notes.insert(
            0,
            f"server paused {until}: cron and at fires due before then are dropped (skipped-paused),"
            " every and backoff fire when it ends",
        )
    elif entry.is_muted(now):
        notes.insert(0, "muted: " + ("until unmuted" if entry.muted else f"until {moment(entry.muted_until, zone)}"))
    elif why is not None:
        notes.insert(0, f"will not fire: {why}" if not fires else f"note: {why}")
    width = terminal_width(env.stdout, env.environ, full)
    columns = [Column(f"TIME ({zone_label(zone)})"), Column("UTC", priority=2)]
    if any(item.rung for item in told.fires):
        columns.append(Column("RUNG", priority=1))
    table = layout(columns, [c[: len(columns)] for c in cells], width) if cells else ["no upcoming fires"]
    human = [part for line in [*notes, *table, *after] for part in wrapped(line, width)]
    result: dict[str, object] = {"id": entry.id, "fires": fires}
    if why is not None:
        result["why_not"] = why
    if dst:
        result["dst"] = dst
    if first is not None:
        result["typed"] = first
    if told.left is not None:
        result["left"] = told.left  # max_total: the deliveries before it retires
    env.result(result, human)

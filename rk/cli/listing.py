"""`rk cron list`, in the shape of `systemctl list-timers`: what fires next,
what happened last, and, for an entry that cannot fire, why not.

The entries and the log come from the files; the targets' live states from
one enumeration of the server's panes, only when its socket answers (a
stopped server is never started, and no tmux runs for it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from rk.cli.environment import CliError, Environment, environment, moment, stamp, zone_label
from rk.cli.store import servers_of
from rk.cli.table import Column, full_view, layout, terminal_width
from rk.core.cost import caps
from rk.core.durations import format_duration, format_go
from rk.core.log.delivery import LogView, status_of
from rk.core.pane.facts import PaneFact, TargetFact, resolve_target
from rk.core.schedule import retry
from rk.core.schedule.entry import (
    DORMANT_AFTER,
    DORMANT_OFF,
    At,
    Backoff,
    Cron,
    Entry,
    Every,
    OnTimeout,
    Schedule,
    TargetKind,
    WakeEvent,
    WakeFrom,
    WakeOnly,
    catch_up_fields,
    catch_up_summary,
)
from rk.core.schedule.forecast import Forecast, PauseOptions, forecast
from rk.core.schedule.health import DORMANT
from rk.core.schedule.orphan import expires_at, orphaned_since
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles
from rk.store.entries import FILE_PROBLEMS, load_entries
from rk.store.pause import pause_span, paused_until

if TYPE_CHECKING:  # the declarations only (rk.cli.root.declared): the fast path runs without typer
    import typer

    from rk.cli.options import AllOpt, FullOpt, JsonOpt, ServerOpt, TreeOpt
    from rk.cli.tree import GoneParent


@dataclass(frozen=True, eq=False)
class Row:
    """One entry as the operator sees it."""

    server: str
    entry: Entry
    next: int | None  #: the next delivery (`forecast`), None when none comes or it fires on an event only
    last_ts: int
    last_outcome: str
    target: TargetFact | None  #: None: the server's panes could not be read
    why_not: str | None  #: what keeps it from firing (`forecast`), None: nothing
    left: int | None = None  #: a `max_total` entry's deliveries left (`forecast`)


def schedule_cell(entry: Entry, zone: tzinfo | None = None) -> str:
    """The SCHEDULE column: the schedule, `+wake` with a wake_on, or `on <event>` for a
    wake-only entry; an `at` instant in `zone`'s wall time (the header names the zone)."""
    if isinstance(entry.schedule, WakeOnly) and entry.wake_on is not None:
        return f"on {entry.wake_on.event}"
    text = schedule_text(entry.schedule, zone, named=False) if zone is not None else entry.schedule.summary
    return text + (" +wake" if entry.wake_on else "")


def schedule_text(schedule: Schedule, zone: tzinfo, named: bool = True) -> str:
    """The schedule as a human view says it: an `at` instant in `zone` (the entry's),
    with the zone's abbreviation when `named`; the others as their summary (the JSON
    form, in UTC, stays the machine's)."""
    if not isinstance(schedule, At):
        return schedule.summary
    when = moment(schedule.at, zone) if named else stamp(schedule.at, zone)
    return f"at {when}" + catch_up_summary(schedule.catch_up, schedule.catch_up_within)


def _schedule_json(s: Schedule) -> dict[str, object]:
    out: dict[str, object] = {"kind": str(s.kind)}
    if isinstance(s, Every):
        out["interval"] = format_go(s.interval)
    elif isinstance(s, Backoff):
        out["min"] = format_go(s.min)
        out["max"] = format_go(s.max)
    elif isinstance(s, At):
        out["at"] = s.at
        out |= catch_up_fields(s.catch_up, s.catch_up_within, format_go)
    elif isinstance(s, Cron):
        out["expr"] = s.expr
        out |= catch_up_fields(s.catch_up, s.catch_up_within, format_go)
        if s.tz:
            out["tz"] = s.tz
    return out


def record(entry: Entry, view: LogView, now: int, zone: tzinfo | None = None) -> dict[str, Any]:
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
            **({"from": str(entry.wake_on.from_)} if entry.wake_on.event == WakeEvent.AGENT_STATE_CHANGE else {}),
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
        "created_by": entry.created_by.to_yaml(),
        "parent": entry.parent or None,  #: the entry whose fire started the turn that made it
    }
    if entry.muted_until > now:
        rec["muted_until"] = entry.muted_until
    if entry.active_hours is not None:
        rec["active_hours"] = entry.active_hours.text
    if entry.only_if_changed:
        rec["only_if_changed"] = entry.only_if_changed
    if entry.budget is not None:
        rec["budget"] = entry.budget.text
    if entry.fresh is not None:  # the CLI's /clear or /compact before each payload (rk.core.schedule.fresh)
        rec["fresh"] = str(entry.fresh)
    if entry.dormant_after != DORMANT_AFTER:
        rec["dormant_after"] = entry.dormant_after or DORMANT_OFF
    return rec | caps_record(entry, caps.left(entry, view), caps_today(entry, view, now, zone))


def caps_today(entry: Entry, view: LogView, now: int, zone: tzinfo | None = None) -> int | None:
    """A `max_per_day` entry's deliveries in its local day now (None without one)."""
    from rk.core.schedule.due import entry_zone
    from rk.host.clock import local_zone

    cap = caps.day_cap(entry, view, now, entry_zone(entry, zone or local_zone()))
    return cap.count if cap is not None else None


def caps_record(entry: Entry, left: int | None, today: int | None = None) -> dict[str, object]:
    """The caps' JSON keys, only those set: `max_per_day` (and `delivered_today`), `max_total` (and `left`)."""
    rec: dict[str, object] = {}
    if entry.max_per_day:
        rec["max_per_day"] = entry.max_per_day
        if today is not None:
            rec["delivered_today"] = today
    if entry.max_total:
        rec["max_total"] = entry.max_total
        if left is not None:
            rec["left"] = left
    if entry.turn_timeout:  # the turn its delivery starts is watched (`rk.core.cost.turn_timeout`)
        rec["turn_timeout"] = format_go(entry.turn_timeout)
        rec["on_timeout"] = str(entry.timeout_policy)
    return rec | retry.record(entry)  # a failed delivery's retries (`rk.core.schedule.retry`)


def caps_text(entry: Entry, left: int | None, today: int | None = None) -> str:
    """The caps in words (`show`, the receipt): `3/day (2 today), 10 in all (4 left)`; "" without."""
    parts = []
    if entry.max_per_day:
        parts.append(f"{entry.max_per_day}/day" + (f" ({today} today)" if today is not None else ""))
    if entry.max_total:
        parts.append(f"{entry.max_total} in all" + (f" ({left} left, then it retires)" if left is not None else ""))
    return ", ".join(parts)


@dataclass(frozen=True, eq=False)
class ServerView:
    """One server as `list`, `show` and `status` show it, read once: its rows, its live
    log, its panes (None when the server's panes could not be read), its pause."""

    slug: str
    rows: list[Row]
    view: LogView
    panes: list[PaneFact] | None
    pause_note: str  #: "" when not paused
    unreadable: str = ""  #: why its entries file could not be read ("" when it was): then no row, and an error


def load_server(env: Environment, files: ServerFiles) -> tuple[list[Entry], LogView]:
    """The loadable entries (the others reported on stderr, by server) and the live log."""
    env.warn_if_unsafe()
    loaded = load_entries(files.entries)
    for diag in loaded.diagnostics:
        env.err(f"rk: {files.slug}: {diag.reason}: {diag.detail}")
    return loaded.entries, LogView(logfile.read_live(files.log))


def read_server(env: Environment, files: ServerFiles, now: int) -> ServerView:
    """The server's view as `list` and `doctor` show it: its invalid entries reported on
    stderr, a file it cannot read at all kept in `unreadable` (the caller's error)."""
    env.warn_if_unsafe()
    loaded = load_entries(files.entries)
    for diag in loaded.diagnostics:
        if diag.reason not in FILE_PROBLEMS:
            env.err(f"rk: {files.slug}: {diag.reason}: {diag.detail}")
    sv = server_view(env, files, loaded.entries, LogView(logfile.read_live(files.log)), now)
    return replace(sv, unreadable=loaded.unreadable)


def unreadable_error(views: list[ServerView]) -> CliError | None:
    """The error of a listing that met entries files it cannot read (None when it met none)."""
    broken = [f"server {sv.slug}: {sv.unreadable}" for sv in views if sv.unreadable]
    if not broken:
        return None
    return CliError(
        f"cannot read the entries file of {'; '.join(broken)}; none of its entries fires "
        "(rk doctor says how to repair it)"
    )


def server_view(
    env: Environment, files: ServerFiles, entries: list[Entry], view: LogView, now: int, only: str | None = None
) -> ServerView:
    """The rows of one server's `entries`, with one enumeration of its panes; with
    `only`, the row of that entry alone (`cron show`: one forecast, not one an entry)."""
    settings = env.settings()
    paused = paused_until(files.pause, now)
    pause = PauseOptions(paused_until=paused, paused_span=pause_span(files.pause))
    panes = _panes(env, files.slug)
    rows = []
    for index, entry in enumerate(entries):
        if only is not None and entry.id != only:
            continue
        target = resolve_target(entry.target, panes, entry.any_program) if panes is not None else None
        told = forecast(entry, view, target, now, zone=env.zone(), settings=settings, index=index, **pause)
        newest = view.newest(entry.id)
        rows.append(
            Row(
                files.slug,
                entry,
                told.next,
                newest.ts if newest else 0,
                newest.outcome if newest else "",
                target,
                told.why_not,
                told.left,
            )
        )
    note = ""
    if paused is not None:
        note = "paused until resumed" if paused == 0 else f"paused until {_when(paused, env.zone())}"
    return ServerView(files.slug, rows, view, panes, note)


def forecast_of(env: Environment, entries: list[Entry], view: LogView, entry: Entry, now: int, n: int = 1) -> Forecast:
    """One entry of -L's server, as `next` and the add/edit receipt forecast it: from its
    target's facts when the server runs, else as if it ran (the warnings say it does not)."""
    files = env.files()
    panes = _panes(env, files.slug)
    target = resolve_target(entry.target, panes, entry.any_program) if panes is not None else None
    return forecast(
        entry,
        view,
        target,
        now,
        zone=env.zone(),
        settings=env.settings(),
        paused_until=paused_until(files.pause, now),
        paused_span=pause_span(files.pause),
        index=entries.index(entry),
        n=n,
        if_running=True,
    )


def _panes(env: Environment, slug: str) -> list[PaneFact] | None:
    from rk.tmux.server import Server, TmuxError

    server = Server(name=slug, env=env.environ)
    if not server.is_live():
        return None
    try:
        return server.pane_facts()
    except TmuxError:
        return None


def sorted_rows(rows: list[Row]) -> list[Row]:
    """By the next fire; entries that fire on an event, then those that cannot fire, last."""
    return sorted(rows, key=lambda r: (r.next is None, r.why_not is not None, r.next or 0))


def _when(ts: int, zone: tzinfo) -> str:
    return moment(ts, zone)


def target_cell(row: Row, short: bool = False) -> str:
    """The target and its live state; `short`: a session's id cut to its first 8
    characters (as git shortens a hash), so the state still shows at 80 columns."""
    summary = row.entry.target.summary
    if short and row.entry.target.kind == TargetKind.SESSION:
        provider, _, session = row.entry.target.value.rpartition(":")
        if len(session) > SHORT_SESSION:
            summary = f"{TargetKind.SESSION}:{provider + ':' if provider else ''}{session[:SHORT_SESSION]}…"
    if row.target is None:
        return summary
    if not row.target.resolved:
        return f"{summary} (missing)"
    return f"{summary} ({row.target.state or 'no state'})"


#: A session id's characters a fitted view keeps (`session:claude:565428b4…`).
SHORT_SESSION = 8
#: A reason longer than this loses its detail in a fitted view (`target missing: …`).
SHORT_WHY = 20


def left_cell(row: Row, now: int, short: bool = False) -> str:
    """How long to the next delivery, and what defers it (a mute, a pause, the rate cap);
    what keeps the entry from firing when none comes. `short` (a fitted table): a long
    reason without its detail (`target missing`; TARGET and `cron show` say which)."""
    why = row.why_not
    if why is not None and short and len(why) > SHORT_WHY:
        why = why.split(": ", 1)[0].split(" (", 1)[0]
    if row.next is None:
        return why or ("on its event" if isinstance(row.entry.schedule, WakeOnly) else "-")
    left = "now" if row.next <= now else format_duration(row.next - now)
    left = f"{left}, {why}" if why else left
    return left + (f", {row.left} left" if row.left is not None else "")  # then a max_total entry retires


def flags_cell(entry: Entry) -> str:
    flags = [name for name, on in (("pinned", entry.pinned), ("any-program", entry.any_program)) if on]
    if entry.wake_on is not None:
        flags.append(f"wake:{entry.wake_on.event}" + ("/any" if entry.wake_on.from_ == WakeFrom.ANY else ""))
    if entry.active_hours is not None:
        flags.append(f"hours:{entry.active_hours.text}")
    if entry.only_if_changed:
        flags.append(f"if-changed:{entry.only_if_changed}")
    if entry.max_per_day:
        flags.append(f"max:{entry.max_per_day}/day")
    if entry.max_total:
        flags.append(f"max:{entry.max_total}")
    if entry.turn_timeout:
        flags.append(
            f"{'interrupt' if entry.on_timeout == OnTimeout.INTERRUPT else 'timeout'}:{entry.turn_timeout_text}"
        )
    if entry.budget is not None:
        flags.append(f"budget:{entry.budget.text}")
    if entry.dormant_after != DORMANT_AFTER:  # rk.core.schedule.dormant; the default goes unsaid
        flags.append(f"dormant-after:{entry.dormant_after or DORMANT_OFF}")
    return ",".join(flags) or "-"


def row_record(row: Row, base: dict[str, object], with_server: bool) -> dict[str, object]:
    """The `list --json` record with `next`, `last` and `why_not` (and `server` for --all)."""
    rec = dict(base)
    rec["next"] = row.next
    rec["last"] = {"ts": row.last_ts, "outcome": row.last_outcome} if row.last_ts else None
    rec["why_not"] = row.why_not
    rec["dormant"] = (row.why_not or "").startswith(DORMANT)  # rk.core.schedule.dormant: its agent never answered
    if with_server:
        rec = {"server": row.server, **rec}
    return rec


def cmd_list(
    ctx: typer.Context,
    every: AllOpt = False,
    full: FullOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
    tree: TreeOpt = False,
) -> None:
    """List entries by their next fire, with the last outcome and the target's live state.

    Reads the entries file and the log; the TARGET state comes from one listing of the
    server's panes when its socket answers (a stopped server is never started). On a
    terminal the columns shrink, then drop (flags first) to fit, ID, NAME, NEXT, LEFT and
    TARGET kept; --full shows all (a field a line when the terminal is too narrow).

    Example: rk cron list --all
    """
    env = environment(ctx, server, as_json)
    servers = servers_of(env, every)
    env.known_server()
    now = env.now()
    views = [read_server(env, files, now) for files in servers]
    rows = [r for sv in views for r in sv.rows]
    notes = [f"server {sv.slug} is {sv.pause_note}" for sv in views if sv.pause_note]
    broken = unreadable_error(views)  # never an empty list that looks like no entries
    if env.json:
        if broken is not None:
            raise broken
        env.result([row_record(r, record(r.entry, sv.view, now, env.zone()), every) for sv in views for r in sv.rows])
        return
    for note in notes:
        env.out(note)
    if rows:
        render_table(env, sorted_rows(rows), now, every, full, tree)
    elif broken is None:
        env.out("no cron entries" + ("" if every else f" on server {env.server}"))
    if broken is not None:  # the other servers' rows above, then the error
        raise broken


#: The list's columns at 80: the id, the name, when and how long to the next fire and
#: the target are kept (shortened last, ending in `…`), so entries of one name on
#: several panes stay apart; the rest shrink, then go, flags first.
LIST_COLUMNS = (
    Column("ID"),
    Column("NAME", shrink_to=10),
    Column("SCHEDULE", priority=3, shrink_to=16),
    Column("NEXT"),
    Column("LEFT", shrink_to=14),
    Column("LAST", priority=4, shrink_to=19),
    Column("TARGET", shrink_to=12),
    Column("FLAGS", priority=5, shrink_to=8),
)


def render_table(
    env: Environment, rows: list[Row], now: int, with_server: bool, full: bool = False, tree: bool = False
) -> None:
    """The list's table, fitted to the terminal (whole when piped); `--full` on a
    terminal too narrow for the whole table: one record per entry, a field a line.
    Times in the local zone, named once in the NEXT header. `tree`: who made what
    (`rk.cli.tree`)."""
    zone = env.zone()
    width = terminal_width(env.stdout, env.environ, False)
    fitted = width is not None and not full
    columns = [Column("SERVER", shrink_to=8)] if with_server else []
    columns += [Column(f"NEXT ({zone_label(zone)})") if c.header == "NEXT" else c for c in LIST_COLUMNS]
    cells = []
    for r, depth in _in_order(rows, tree):
        if not isinstance(r, Row):  # a parent no longer in the file (--tree)
            cells.append(r.cells(len(columns), with_server))
            continue
        last = f"{stamp(r.last_ts, zone)} {status_of(r.last_outcome)}" if r.last_ts else "-"
        cells.append(
            [
                *((r.server,) if with_server else ()),
                _id_cell(r.entry.id, depth),
                r.entry.name,
                schedule_cell(r.entry, zone),
                stamp(r.next, zone) if r.next is not None else "-",
                left_cell(r, now, short=fitted),
                last,
                target_cell(r, short=fitted),
                flags_cell(r.entry),
            ]
        )
    title = 3 if with_server else 2  # a record is headed by its (server,) id and name
    lines = layout(columns, cells, width) if fitted else full_view(columns, cells, width, title)
    for line in lines:
        env.out(line)


def _in_order(rows: list[Row], tree: bool) -> list[tuple[Row | GoneParent, int]]:
    """The rows with their depths: as they are, or with --tree who made what (only
    then is `rk.cli.tree` and the lineage loaded)."""
    if not tree:
        return [(r, 0) for r in rows]
    from rk.cli.tree import tree_order

    return tree_order(rows)


def _id_cell(entry_id: str, depth: int) -> str:
    if depth == 0:
        return entry_id
    from rk.cli.tree import indented

    return indented(entry_id, depth)

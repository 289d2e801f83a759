"""`rk status`: the ticker, then each server's entries and agent panes, at a glance.

Exit 0 when all is well; 1 when the ticker is down, an entry cannot fire (its target
missing, a shell, its server down, rate-capped: a mute or a pause is not trouble) or an
entry's delivery failed in the last hour, so a status line or a script can use it.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

from rk.cli.environment import Environment, ExitStatus, environment, moment, stamp, zone_label
from rk.cli.table import Block, Column, layout, screenful, terminal_height, terminal_width, wrapped
from rk.core.log.delivery import RATE_WINDOW, Status, status_of

if TYPE_CHECKING:  # the listing and the entries load when the command runs, not for `rk --help`
    import typer  # the declarations only (rk.cli.root.declared): the fast path runs without typer

    from rk.cli.listing import Row
    from rk.cli.options import FullOpt, JsonOpt, ServerOpt

#: Statuses that make `rk status` exit 1 when one was logged in the last hour.
FAILING = frozenset({Status.FAILED, Status.RESPAWN_FAILED})
WATCH_EVERY = 2.0


def _ticker(env: Environment) -> dict[str, object]:
    from rk.store import ticker_record as ticker  # the records only: not the tick

    rec = ticker.read_pid(env.state_dir())
    running = rec is not None and rec.alive()
    last = ticker.read_status(env.state_dir()) if running else None
    return {
        "running": running,
        "pid": rec.pid if rec is not None and running else None,
        "since": rec.started_at if rec is not None and running else None,
        "last_tick": (last or {}).get("last_tick"),
        "servers": (last or {}).get("servers", []),
        "last_error": (last or {}).get("last_error"),
    }


def gather(env: Environment) -> dict[str, object]:
    """Everything `rk status` shows, as one JSON-ready value: -L's server, else every one."""
    from rk.cli.listing import load_server, record, row_record, server_view, sorted_rows
    from rk.cli.panes import AgentRow
    from rk.cli.store import servers_of
    from rk.core.schedule.health import is_trouble
    from rk.store.grants import load_grants

    now = env.now()
    servers = []
    failed: list[str] = []
    trouble: list[str] = []
    for files in servers_of(env, not env.server_flag):
        sv = server_view(env, files, *load_server(env, files), now)
        trouble += [f"{sv.slug} {r.entry.id}: {r.why_not}" for r in sv.rows if is_trouble(r.why_not)]
        failed += [
            f"{sv.slug} {line.entry}: {line.outcome}"
            for line in sv.view.lines
            if line.ts >= now - RATE_WINDOW and status_of(line.outcome) in FAILING
        ]
        servers.append(
            {
                "server": sv.slug,
                "paused": sv.pause_note or None,
                "entries": [
                    row_record(r, record(r.entry, sv.view, now, env.zone()), False) for r in sorted_rows(sv.rows)
                ],
                "panes": [asdict(AgentRow.of(sv.slug, p)) for p in sv.panes or ()],
                "_rows": sv.rows,
            }
        )
    ticker = _ticker(env)
    ok = bool(ticker["running"]) and not failed and not trouble
    grants, problems = load_grants(env.environ)
    mcp = {"grants": [g.describe() for g in grants], "problems": problems}
    return {"ok": ok, "ticker": ticker, "failed": failed, "trouble": trouble, "mcp": mcp, "servers": servers}


#: `status`'s entry table, as `list` keeps its columns at 80: the id, the name, the next
#: fire, how long to it and the target stay (shortened, ending in `…`).
ENTRY_COLUMNS = (
    Column("ID"),
    Column("NAME", shrink_to=10),
    Column("NEXT"),
    Column("LEFT", shrink_to=14),
    Column("TARGET", shrink_to=12),
)
INDENT = "  "
#: Rows under the output a terminal keeps for the command line and the next prompt,
#: so the first line stays on the screen.
PROMPT_ROWS = 2


def _lines(env: Environment, state: dict[str, object], full: bool = False, height: int | None = None) -> list[str]:
    """The screenful: whole when piped or `--full`; on a terminal, in `height` rows, each
    list cut to its top rows with a line naming the command that shows the rest."""
    width = terminal_width(env.stdout, env.environ, full)
    blocks = [*_notes(env, state, width), *_server_blocks(env, state, width)]
    return screenful(blocks, None if full else height, "rk status --full")


def _notes(env: Environment, state: dict[str, object], width: int | None) -> list[Block]:
    """The ticker's line, then what failed, what cannot fire and the MCP grants."""
    zone = env.zone()
    t = state["ticker"]
    assert isinstance(t, dict)
    ticker = []
    if t["running"]:
        last = f", last tick {moment(int(t['last_tick']), zone)}" if t.get("last_tick") else ""
        served = ", ".join(t.get("servers") or []) or "none yet"
        ticker.append(f"ticker: running (pid {t['pid']}, since {moment(int(t['since']), zone)}{last}); serves {served}")
        error = t.get("last_error")
        if isinstance(error, dict):
            ticker.append(f"  last error {moment(int(error['ts']), zone)}: {error['message']}")
    else:
        ticker.append("ticker: NOT RUNNING (start it: rk cron ticker start)")
    mcp = state.get("mcp")
    grants = [f"rk mcp grant: {grant}" for grant in mcp["grants"]] if isinstance(mcp, dict) else []
    grants += [f"rk mcp grant not used: {problem}" for problem in mcp["problems"]] if isinstance(mcp, dict) else []
    failed = state["failed"] if isinstance(state["failed"], list) else []
    trouble = state["trouble"] if isinstance(state["trouble"], list) else []

    def items(lines: list[str]) -> list[list[str]]:
        return [wrapped(line, width, len(INDENT)) for line in lines]

    return [
        Block([], "", lead=[part for line in ticker for part in wrapped(line, width, len(INDENT))]),
        Block(
            items([f"failed in the last hour: {line}" for line in failed]), "rk status --full", ("failure", "failures")
        ),
        Block(items([f"cannot fire: {line}" for line in trouble]), "rk status --full", ("entry", "entries")),
        Block(items(grants), "rk status --full", ("grant line", "grant lines")),
    ]


def _server_blocks(env: Environment, state: dict[str, object], width: int | None) -> list[Block]:
    """Each server's entries (by the next fire) and its agent panes, as two tables."""
    from rk.cli.listing import left_cell, sorted_rows, target_cell

    zone = env.zone()
    now = env.now()
    inner = None if width is None else max(width - len(INDENT), 20)
    label = zone_label(zone)
    blocks = []
    for srv in state["servers"] if isinstance(state["servers"], list) else []:
        slug = srv["server"]
        lead = ["", f"server {slug}" + (f" ({srv['paused']})" if srv["paused"] else "")]
        rows: list[Row] = srv["_rows"]
        columns = [Column(f"NEXT ({label})") if c.header == "NEXT" else c for c in ENTRY_COLUMNS]
        short = inner is not None
        cells = [
            [
                r.entry.id,
                r.entry.name,
                stamp(r.next, zone) if r.next is not None else "-",
                left_cell(r, now, short=short),
                target_cell(r, short=short),
            ]
            for r in sorted_rows(rows)
        ]
        table = [INDENT + line for line in layout(columns, cells, inner)]
        if not rows:
            lead.append(f"{INDENT}no entries")
        hint = f"rk cron list -L {slug}"
        blocks.append(Block([[line] for line in table[1:]], hint, ("entry", "entries"), lead, table[:1], INDENT))
        panes = [
            [
                p["pane"],
                p["program"] or "-",
                p["state"] or "-",
                stamp(int(p["since"]), zone) if p["since"] else "-",
                "seen" if p["hooks_seen"] else "never",
            ]
            for p in srv["panes"]
        ]
        if panes:
            table = [INDENT + line for line in layout(pane_columns(label), panes, inner)]
            hint = f"rk agent list -L {slug}"
            blocks.append(Block([[line] for line in table[1:]], hint, ("pane", "panes"), [""], table[:1], INDENT))
    return blocks


def pane_columns(label: str) -> list[Column]:
    """The agent panes under each server: the state since when, and whether hooks report it."""
    return [
        Column("PANE"),
        Column("PROGRAM", shrink_to=8),
        Column("STATE"),
        Column(f"SINCE ({label})", priority=2),
        Column("HOOKS", priority=1),
    ]


def cmd_status(
    ctx: typer.Context,
    watch: Annotated[
        bool, typer.Option("--watch", help=f"Redraw in place every {WATCH_EVERY:g} s (Ctrl-C ends).")
    ] = False,
    full: FullOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            metavar="tmux|json",
            help="One short segment from cached state for a status bar: tmux markup (status-right: "
            "#(rk status --format tmux)) or JSON (waybar, polybar).",
        ),
    ] = None,
) -> int:
    """The ticker, then each server's entries (as in list) and its agent panes.

    Reads the ticker's pid and heartbeat files, each server's entries file, log and
    pause file, and one listing of each live server's panes (a stopped server is
    never started). On a terminal it fits the screen: the tables shrink, then drop columns,
    and each list keeps its top rows and says which command shows the rest; --full shows all.

    Example: rk status || echo "rk needs attention"
    """
    env = environment(ctx, server, as_json)
    if fmt is not None:
        from rk.channels.statusline import main as statusline_main

        return statusline_main(fmt, env.environ)
    state = gather(env)
    if env.json:
        for srv in state["servers"] if isinstance(state["servers"], list) else []:
            srv.pop("_rows", None)
        env.result(state)
    elif not watch:
        height = terminal_height(env.stdout, env.environ)
        for line in _lines(env, state, full, None if height is None else height - PROMPT_ROWS):
            env.out(line)
    else:
        state = _watch(env, state, full)
    return int(ExitStatus.OK if state["ok"] else ExitStatus.ERROR)


def _watch(env: Environment, state: dict[str, object], full: bool) -> dict[str, object]:
    """Redraw every WATCH_EVERY s until Ctrl-C: in place on a terminal (nothing piles into
    the scrollback), as plain frames one after another when piped; the last state."""
    from rk.cli.table import escape_controls

    isatty = getattr(env.stdout, "isatty", None)
    tty = bool(isatty and isatty())  # a terminal that reports no size is still one to draw over
    first = True
    try:
        while True:
            height = terminal_height(env.stdout, env.environ)
            lines = [escape_controls(line) for line in _lines(env, state, full, None if height is None else height - 1)]
            env.stdout.write(redraw(lines, height, first) if tty else "\n".join(lines) + "\n\n")
            env.stdout.flush()
            first = False
            time.sleep(WATCH_EVERY)
            state = gather(env)
    except KeyboardInterrupt:
        pass
    finally:
        if tty:
            env.stdout.write(SHOW_CURSOR)
            env.stdout.flush()
    return state


HOME, CLEAR_LINE, CLEAR_BELOW, HIDE_CURSOR, SHOW_CURSOR = "\x1b[H", "\x1b[2K", "\x1b[J", "\x1b[?25l", "\x1b[?25h"


def redraw(lines: list[str], rows: int | None, first: bool) -> str:
    """One frame written over the last one: home, each line cleared then written, the
    rest of the screen cleared. The first frame scrolls what the screen showed into the
    scrollback (once; a clear-screen would push every frame there in some terminals)."""
    scroll = "\n" * (rows or 0) + HIDE_CURSOR if first else ""
    return scroll + HOME + "".join(CLEAR_LINE + line + "\n" for line in lines) + CLEAR_BELOW

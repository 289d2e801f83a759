"""`rk status`: the ticker, then each server's entries and agent panes, at a glance.

Exit 0 when all is well; 1 when the ticker is down, an entry cannot fire (its target
missing, a shell, its server down, rate-capped: a mute or a pause is not trouble) or an
entry's delivery failed in the last hour, so a status line or a script can use it.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Annotated

import typer

from rk.cli.environment import Environment, ExitStatus, environment, rfc3339
from rk.cli.listing import Row, load_server, row_record, server_view, sorted_rows
from rk.cli.options import JsonOpt, ServerOpt
from rk.cli.store import servers_of
from rk.core.health import is_trouble
from rk.core.log import RATE_WINDOW, Status, status_of

#: Statuses that make `rk status` exit 1 when one was logged in the last hour.
FAILING = frozenset({Status.FAILED, Status.RESPAWN_FAILED})
WATCH_EVERY = 2.0


def _ticker(env: Environment) -> dict[str, object]:
    from rk import ticker

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
    from rk.cli.agent import AgentRow
    from rk.cli.listing import record

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
                "entries": [row_record(r, record(r.entry, sv.view, now), False) for r in sorted_rows(sv.rows)],
                "panes": [asdict(AgentRow.of(sv.slug, p)) for p in sv.panes or ()],
                "_rows": sv.rows,
            }
        )
    ticker = _ticker(env)
    ok = bool(ticker["running"]) and not failed and not trouble
    return {"ok": ok, "ticker": ticker, "failed": failed, "trouble": trouble, "servers": servers}


def _lines(env: Environment, state: dict[str, object]) -> list[str]:
    from rk.cli.listing import left_cell, target_cell

    zone = env.zone()
    now = env.now()
    t = state["ticker"]
    assert isinstance(t, dict)
    out = []
    if t["running"]:
        last = f", last tick {rfc3339(int(t['last_tick']), zone)}" if t.get("last_tick") else ""
        served = ", ".join(t.get("servers") or []) or "none yet"
        out.append(f"ticker: running (pid {t['pid']}, since {rfc3339(int(t['since']), zone)}{last}); serves {served}")
        error = t.get("last_error")
        if isinstance(error, dict):
            out.append(f"  last error {rfc3339(int(error['ts']), zone)}: {error['message']}")
    else:
        out.append("ticker: NOT RUNNING (start it: rk cron ticker start)")
    for line in state["failed"] if isinstance(state["failed"], list) else []:
        out.append(f"failed in the last hour: {line}")
    for line in state["trouble"] if isinstance(state["trouble"], list) else []:
        out.append(f"cannot fire: {line}")
    for srv in state["servers"] if isinstance(state["servers"], list) else []:
        out.append("")
        out.append(f"server {srv['server']}" + (f" ({srv['paused']})" if srv["paused"] else ""))
        rows: list[Row] = srv["_rows"]
        for r in sorted_rows(rows):
            nxt = rfc3339(r.next, zone) if r.next is not None else "-"
            out.append(f"  {r.entry.id:<6} {r.entry.name[:24]:<24} {nxt:<25} {left_cell(r, now):<28} {target_cell(r)}")
        if not rows:
            out.append("  no entries")
        for p in srv["panes"]:
            since = rfc3339(int(p["since"]), zone) if p["since"] else "-"
            hooks = "hooks seen" if p["hooks_seen"] else "no hooks seen"
            out.append(f"  pane {p['pane']:<5} {p['program'] or '-':<9} {p['state'] or '-':<8} since {since}  {hooks}")
    return out


def cmd_status(
    ctx: typer.Context,
    watch: Annotated[
        bool, typer.Option("--watch", help=f"Redraw in place every {WATCH_EVERY:g} s (Ctrl-C ends).")
    ] = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The ticker, then each server's entries (as in list) and its agent panes.

    Example: rk status || echo "rk needs attention"
    """
    env = environment(ctx, server, as_json)
    state = gather(env)
    if env.json:
        for srv in state["servers"] if isinstance(state["servers"], list) else []:
            srv.pop("_rows", None)
        env.result(state)
    elif not watch:
        for line in _lines(env, state):
            env.out(line)
    else:
        try:
            while True:
                env.stdout.write("\x1b[H\x1b[2J")
                for line in _lines(env, state):
                    env.out(line)
                env.stdout.flush()
                time.sleep(WATCH_EVERY)
                state = gather(env)
        except KeyboardInterrupt:
            pass
    if not state["ok"]:
        raise typer.Exit(ExitStatus.ERROR)

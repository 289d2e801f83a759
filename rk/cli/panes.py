"""`rk agent list`: every pane of a server with its kind, program and agent state,
from live tmux only. `AgentRow` is its record, which `rk status` and `rk doctor`
show too.

No typer here at run time: the fast path (`rk.cli.fastpath`) runs `cmd_list`
without it; typer reads its declaration through `rk.cli.root.declared`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated

from rk.cli.environment import CliError, ExitStatus, environment, stamp, zone_label
from rk.cli.table import Column, layout, terminal_width
from rk.core.pane.facts import PaneFact, Source
from rk.core.redact import redact

if TYPE_CHECKING:
    import typer

    from rk.cli.options import FullOpt, JsonOpt, ServerOpt
    from rk.tmux.server import Server


def cmd_list(
    ctx: typer.Context,
    every: Annotated[bool, typer.Option("--all", help="Every live tmux server of this user.")] = False,
    full: FullOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Every pane with its kind, program, agent state, since when, where the state came
    from, how its last turn ended (ok, failed, interrupted, limited) and when, and the
    process the kind was judged by.

    Reads live tmux state only (one listing of each server's panes and their
    options; the process table for the kind), never the entries file or the log.
    On a terminal the columns shrink, then drop (the process first) to fit; --full shows all.

    Example: rk agent list --all
    """
    env = environment(ctx, server, as_json)
    from rk.tmux.server import Server, TmuxError, socket_dir, socket_is_live

    if every and env.server_flag:
        raise CliError("agent list: pass -L or --all, not both", ExitStatus.USAGE)
    if every:
        base = socket_dir(env.environ)
        try:
            names = sorted(p.name for p in base.iterdir() if socket_is_live(p))
        except OSError:
            names = []
    else:
        names = [env.server]
    zone = env.zone()
    rows: list[AgentRow] = []
    for name in names:
        try:
            tmux = Server(name=name, env=env.environ)
            facts = tmux.pane_facts()
            ends = turn_ends(tmux)
        except TmuxError as exc:
            if not every:
                raise CliError(f"agent list: server {name}: {exc}", ExitStatus.ERROR) from None
            continue
        rows.extend(AgentRow.of(name, fact, *ends.get(fact.pane_id, ("", 0))) for fact in facts)
    records = [asdict(r) for r in rows]
    if env.json:
        env.result(records)
        return
    if not rows:
        env.result(records, "no panes" + ("" if every else f" on server {env.server}"))
        return
    label = zone_label(zone)
    columns = [
        Column("SERVER", priority=4, shrink_to=8),
        Column("PANE"),
        Column("KIND", priority=3),
        Column("PROGRAM", shrink_to=8),
        Column("STATE"),
        Column(f"SINCE ({label})", priority=2),
        Column("FROM", priority=6),
        Column("HOOKS", priority=1),
        Column(f"TURN END ({label})", priority=5, shrink_to=8),
        Column("PROCESS", priority=7, shrink_to=12),
    ]
    cells = [
        [
            r.server,
            r.pane,
            r.kind,
            r.program or "-",
            r.state or "-",
            stamp(r.since, zone) if r.since else "-",
            r.source or "-",
            "seen" if r.hooks_seen else "never",
            f"{r.turn_end} {stamp(r.turn_end_at, zone)}" if r.turn_end else "-",
            f"{r.process} (pid {r.process_pid})" if r.process_pid else "-",
        ]
        for r in rows
    ]
    lines = layout(columns, cells, terminal_width(env.stdout, env.environ, full))
    env.result(records, lines)


@dataclass(frozen=True)
class AgentRow:
    """One `agent list` record. Hooks were seen when a hook stamped the pane's session
    or wrote its current state (a state with no source note is a hook's). `process`
    and `process_pid` name the process the kind was judged by (its short command
    line; "" and 0 when the process tree could not be read)."""

    server: str
    pane: str
    program: str
    kind: str
    state: str
    since: int
    source: str
    hooks_seen: bool
    process: str
    process_pid: int
    turn_end: str = ""  #: how the last turn ended: ok, failed, interrupted, limited ("" not known)
    turn_end_at: int = 0

    @staticmethod
    def of(server: str, fact: PaneFact, turn_end: str = "", turn_end_at: int = 0) -> AgentRow:
        source = fact.source or (Source.HOOK if fact.state else "")
        return AgentRow(
            server,
            fact.pane_id,
            fact.provider or fact.program_name,
            str(fact.kind),
            fact.state,
            fact.epoch,
            str(source),
            bool(fact.session_ref) or source == Source.HOOK,
            redact(fact.program_argv),
            fact.program_pid,
            turn_end,
            turn_end_at,
        )


def turn_ends(server: Server) -> dict[str, tuple[str, int]]:
    """Each pane's last turn end and when (`@rk_pane_turn_end`), one listing."""
    from rk.core.environ import TURN_END_OPTION
    from rk.core.pane.turn import parse_turn_end

    rows = server.listing("list-panes", ("pane_id", TURN_END_OPTION))
    return {row["pane_id"]: parse_turn_end(row[TURN_END_OPTION]) for row in rows}

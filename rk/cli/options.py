"""The options several commands share, declared once (`Annotated` aliases)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force", help="Accept an --every, --idle-every or --min shorter than the ticker's poll (tick_interval)."
    ),
]
ServerOpt = Annotated[
    str | None,
    typer.Option("-L", "--server", help="tmux server (socket name); default: the server of $TMUX, else 'default'."),
]


def complete_ids(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of entry ids (with their names), from the server's entries file."""
    import os
    from pathlib import Path

    from rk.store.config import ServerFiles, state_dir
    from rk.store.entries import load_entries
    from rk.tmux.server import socket_from_tmux_env

    server = ctx.params.get("server") or ""
    if not server and ctx.parent is not None:
        server = ctx.parent.params.get("server") or ""
    server = server or Path(socket_from_tmux_env(os.environ.get("TMUX", ""))).name or "default"
    try:
        entries = load_entries(ServerFiles(state_dir(), server).entries).entries
    except Exception:  # completion never fails loudly
        return []
    return [(e.id, e.name) for e in entries if e.id.startswith(incomplete)]


def _choices(*values: str) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        return [v for v in values if v.startswith(incomplete)]

    return complete


IdArg = Annotated[str, typer.Argument(metavar="ID", autocompletion=complete_ids)]
AllOpt = Annotated[bool, typer.Option("--all", help="Every server that has an entries file.")]
FullOpt = Annotated[
    bool, typer.Option("--full", "-l", help="Every column whole, whatever the terminal's width (as when piped).")
]

# The flags shared by add, edit and simulate.
EveryOpt = Annotated[str | None, typer.Option("--every", help="Fixed interval, e.g. 5m.")]
IdleEveryOpt = Annotated[
    str | None,
    typer.Option("--idle-every", help="After this much quiet, then every this long while quiet (flat backoff)."),
]
BackoffOpt = Annotated[bool, typer.Option("--backoff", help="Doubling ladder from the target's last activity.")]
MinOpt = Annotated[str | None, typer.Option("--min", help="Backoff first gap (default 60s).")]
MaxOpt = Annotated[str | None, typer.Option("--max", help="Backoff largest gap (default 30m).")]
CronOpt = Annotated[str | None, typer.Option("--cron", help='Five-field cron expression, e.g. "0 9 * * 1-5".')]
CatchUpOpt = Annotated[
    str | None,
    typer.Option(
        "--catch-up", help="'once': one late fire after a gap instead of 'missed'.", autocompletion=_choices("once")
    ),
]
AtOpt = Annotated[
    str | None,
    typer.Option(
        "--at", help="Once, at 14:00 (the next time the clock shows it) or an ISO-8601 instant; then it retires."
    ),
]
InOpt = Annotated[str | None, typer.Option("--in", help="Once, this long from now (30m, 2h); then it retires.")]
CatchUpWithinOpt = Annotated[
    str | None,
    typer.Option(
        "--catch-up-within",
        help="With --catch-up once: fire a missed occurrence only when at most this late, e.g. 12h.",
    ),
]
ActiveHoursOpt = Annotated[
    str | None,
    typer.Option(
        "--active-hours",
        help='Times of day it may fire, in its zone, e.g. "08:00-19:00" or "22:00-02:00,09:00-12:00"; '
        "a fire due outside is logged skipped-quiet (edit: none/off removes it).",
    ),
]
BudgetOpt = Annotated[
    str | None,
    typer.Option(
        "--budget",
        help="Tokens per local day, e.g. 2M/day: once the agent's records show them spent, its fires "
        "are skipped-budget until midnight (edit: off removes it).",
    ),
]
TzOpt = Annotated[str | None, typer.Option("--tz", help="IANA zone for --cron (default: the ticker's local zone).")]
NameOpt = Annotated[
    str | None, typer.Option("--name", help="Display name (default: the prompt's first 40 characters).")
]
DeliverOpt = Annotated[
    str | None,
    typer.Option(
        "--deliver",
        help="immediate | when-idle | skip-if-busy",
        autocompletion=_choices("immediate", "when-idle", "skip-if-busy"),
    ),
]
IfAbsentOpt = Annotated[
    str | None,
    typer.Option("--if-absent", help="skip | notify | respawn", autocompletion=_choices("skip", "notify", "respawn")),
]
RespawnOpt = Annotated[
    list[str] | None,
    typer.Option("--respawn", help="One argv element of the respawn command (repeat). {server} is replaced."),
]
WakeOnOpt = Annotated[
    str | None,
    typer.Option(
        "--wake-on",
        autocompletion=_choices("agent-state-change", "limit-reset", "none"),
        help="agent-state-change: also fire when another pane goes idle/waiting or vanishes; "
        "limit-reset: fire when this target's usage limit has reset and it is at rest. "
        "Without a schedule flag the entry fires on the event only (edit: none/off removes it).",
    ),
]
OnlyIfChangedOpt = Annotated[
    str | None,
    typer.Option(
        "--only-if-changed",
        autocompletion=_choices("pane", "scope", "off"),
        help="Skip a fire (skipped-unchanged) when, since its last prompt was answered, the target (pane, the "
        "default) or the panes its wake watches (scope) had no new turn and their screens changed only in "
        "spinner and clock (edit: off clears it).",
    ),
]
AnyProgramOpt = Annotated[
    bool,
    typer.Option(
        "--any-program", help="Also type into a program rk does not know as an agent (a REPL, a TUI). Never a shell."
    ),
]
WakeScopeOpt = Annotated[str | None, typer.Option("--wake-scope", help="server (the only scope).")]
WakeDebounceOpt = Annotated[
    str | None,
    typer.Option("--wake-debounce", help="Hold wake edges this long after the entry's last line (default 60s)."),
]

# The caps (rk.core.cost.caps), shared by add, edit and simulate.
MaxPerDayOpt = Annotated[
    int | None,
    typer.Option(
        "--max-per-day",
        help="At most N deliveries a local day (in its --tz, else local time); past it a fire is logged "
        "skipped-cap once a day (edit: 0 removes it).",
    ),
]
MaxTotalOpt = Annotated[
    int | None,
    typer.Option(
        "--max-total",
        help="After its N-th delivery the entry retires (logged retired: max-total; edit: 0 removes it).",
    ),
]
TurnTimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--turn-timeout",
        help="When a turn this entry's delivery started is still busy this long after it (20m), log turn-timeout "
        "and notify (edit: 0/off removes it).",
    ),
]
OnTimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--on-timeout",
        help="notify (default) | interrupt: also press the agent's interrupt key (Esc) once, never over a "
        "draft, a dialog or copy-mode.",
        autocompletion=_choices("notify", "interrupt"),
    ),
]

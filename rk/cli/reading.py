"""`rk agent read`: the last lines of a pane's screen, as words (`rk.core.pane.readout`).

The command behind rk mcp's `pane_read`, so that tool has a `--host` path like the
others: on another host, the screen is read there (`rk.cli.fleet`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from rk.cli.environment import CliError, ExitStatus, environment, usage

if TYPE_CHECKING:
    import typer

    from rk.cli.options import JsonOpt, ServerOpt

#: The most lines one read returns.
MAX_LINES = 200


def cmd_read(
    ctx: typer.Context,
    pane: Annotated[str, typer.Option("--pane", help="The pane, by id (%3).")],
    lines: Annotated[int, typer.Option("-n", "--lines", help=f"How many of the last lines (1-{MAX_LINES}).")] = 40,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """The last lines of a pane's screen, escapes and control characters removed.

    Example: rk agent read --pane %3 -n 20 --host buildbox
    """
    env = environment(ctx, server, as_json)
    from rk.core.environ import is_pane_id
    from rk.core.pane.readout import screen_lines
    from rk.tmux.server import Server, TmuxError

    if not is_pane_id(pane):
        raise usage(f"bad pane {pane[:40]!r}: use a pane id like %3")
    if not 1 <= lines <= MAX_LINES:
        raise usage(f"-n must be 1 to {MAX_LINES}, not {lines}")
    tmux = Server(name=env.server, env=env.environ) if env.server_flag else env.caller_server()
    try:
        text = tmux.capture(pane, lines)
    except TmuxError as exc:
        raise CliError(f"agent read: {exc}", ExitStatus.OPERATIONAL) from None
    rows = screen_lines(text, lines)
    env.result({"pane": pane, "lines": rows}, rows)

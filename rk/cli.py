"""The rk command line (skeleton; the full CLI is declared here)."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, add_completion=True, help="rk: schedule prompts into tmux agent panes.")

try:  # the agent group lives in rk.agent.cli
    from rk.agent.cli import agent_app

    app.add_typer(agent_app, name="agent")
except ImportError:  # pragma: no cover - during bring-up
    pass


def main(argv: list[str] | None = None) -> int:
    try:
        app(args=argv, prog_name="rk", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0

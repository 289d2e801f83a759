"""`rk mcp`: the stdio MCP server (rk.mcpserver), for agents that act through tools.

The SDK is imported only when this command runs, so no other command (and not
the hook) pays for it.
"""

from __future__ import annotations

import typer

from rk.cli.environment import environment


def cmd_mcp(ctx: typer.Context) -> None:
    """Serve rk's tools over MCP on stdin/stdout (for an agent CLI to start; see `rk agent setup --mcp`).

    The caller is the pane of the inherited $TMUX_PANE: it may change only the
    entries it created, unless its window has the role operator.

    Example: claude mcp add rk -- rk mcp
    """
    environment(ctx)
    from rk.mcpserver import serve

    serve()

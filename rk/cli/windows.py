"""`rk role | operator`: tag the caller's tmux window, or ensure the server's operator window.

Each command imports the tmux layer and the flags when it runs (`rk --help` lists them without).
"""

from __future__ import annotations

from typing import Annotated

import typer

from rk.cli.environment import CliError, environment, usage
from rk.cli.options import JsonOpt, ServerOpt

_CLEAR = "clear"


def cmd_role(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A role for the current window (e.g. operator), or 'clear'.")],
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Tag the current tmux window with a role, which cron entries can target.

    Example: rk role operator
    """
    env = environment(ctx, server, as_json)
    from rk.cli.flags import no_space
    from rk.tmux.roles import set_role
    from rk.tmux.server import TmuxError

    pane = env.caller_pane()
    if not pane:
        raise usage("not inside a tmux pane: rk role tags the current window")
    if name != _CLEAR:
        no_space("role", name)
    try:
        window = set_role(env.caller_server(), pane, None if name == _CLEAR else name)
    except TmuxError as exc:
        raise CliError(str(exc)) from None
    human = f"cleared the role of window {window}" if name == _CLEAR else f"window {window} is now role:{name}"
    env.result({"window": window, "role": "" if name == _CLEAR else name}, human)


def cmd_operator(
    ctx: typer.Context,
    command: Annotated[
        str | None,
        typer.Option("--command", help="Agent command to run (default: settings operator_command, 'claude')."),
    ] = None,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Ensure this server has one operator window (role operator) running an agent.

    The agent starts in rk's own directory, `<state dir>/operator`, which
    `rk agent setup claude --mcp` marks trusted (Gemini CLI is told so for that
    process), so no trust screen stands in its way. Claude Code, Codex, Gemini CLI and
    OpenCode are started with rk's server-wide tools (cron_pause, cron_resume) allowed
    without a dialog, for the operator alone.

    Example: rk operator --command "claude --model opus"
    """
    env = environment(ctx, server, as_json)
    import os
    import shlex

    from rk.agent.setup import operator_launch
    from rk.agent.setup.workspace import TRUST_ENV, operator_dir, trust_note
    from rk.store.config import ensure_private_dir
    from rk.tmux.roles import ensure_operator
    from rk.tmux.server import Server, TmuxError

    settings = env.settings()
    target = Server(name=env.server, env=env.environ)
    if not env.server_flag and env.environ.get("TMUX"):
        target = env.caller_server()
    if not target.is_live():
        raise CliError(f"no tmux server {env.server} is running")
    try:
        given = shlex.split(command or settings.operator_command)
        argv, grants = operator_launch(given, env.environ)
        program = os.path.basename(given[0]) if given else ""
        cwd = ensure_private_dir(operator_dir(env.environ))
        variables = {**grants, **TRUST_ENV.get(program, {})}
        created, window = ensure_operator(target, argv, home=str(cwd), env=variables)
    except (TmuxError, ValueError) as exc:
        raise CliError(str(exc)) from None
    granted = created and (argv != given or bool(grants))
    note = trust_note(program, env.environ) if created else ""
    human = f"operator window {window} started in {cwd}" if created else "Operator tab already present."
    if granted:
        human += " (cron_pause and cron_resume run there without a dialog)"
    if note:
        human += f"\n{note}"
    result: dict[str, object] = {"created": created, "window": window, "unattended_server_tools": granted}
    if created:  # an adopted window runs where it was started
        result["cwd"] = str(cwd)
    if note:
        result["first_screen"] = note
    env.result(result, human)

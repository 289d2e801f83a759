"""`rk send PROMPT`: type one prompt into a pane, once, now.

The same verified delivery as a scheduled fire, guards included (never into a
shell, over a draft, into a dialog or a limited agent): an entry that exists
for this one fire, under the deliver policy `immediate`, logged with reason
`manual` under the id `(send)`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rk.cli.environment import CliError, ErrorCode, ExitStatus, environment, usage
from rk.cli.options import AnyProgramOpt, JsonOpt, ServerOpt


def cmd_send(
    ctx: typer.Context,
    prompt: Annotated[str, typer.Argument(help="The text typed into the agent and submitted (never executed).")],
    pane: Annotated[str | None, typer.Option("--pane", help="This pane id (%N).")] = None,
    role: Annotated[str | None, typer.Option("--role", help="The window carrying this role.")] = None,
    session: Annotated[str | None, typer.Option("--session", help="The pane carrying this agent session.")] = None,
    any_program: AnyProgramOpt = False,
    as_json: JsonOpt = False,
    server: ServerOpt = None,
) -> None:
    """Deliver a prompt once, now, through the same guarded delivery as a fire.

    Example: rk send --role operator "worker-2 is done; review its branch"
    """
    from rk.cli.flags import target_from_flags  # when it runs: `rk --help` lists it without them
    from rk.cli.receipt import absent_role, check_visible
    from rk.cli.receipt import default_target as _default_target
    from rk.cli.running import _runtime
    from rk.cli.store import waiting_note
    from rk.core.log.delivery import Status, status_of
    from rk.core.schedule.entry import CreatedBy, Deliver, Entry, IfAbsent, WakeOnly
    from rk.engine.manual import SEND_ID, fire_now
    from rk.host.lock import LockHeld, locked
    from rk.store.config import ConfigError, ensure_private_dir
    from rk.store.entries import busy

    env = environment(ctx, server, as_json)
    if not prompt.strip():
        raise usage("the prompt must not be empty")
    check_visible(prompt)
    target = target_from_flags(role, session, pane)
    if target is None:
        caller = env.caller_pane()
        if not caller:
            raise usage("not inside a tmux pane: pass --pane, --role or --session")
        target, _ = _default_target(env, caller)
    if why := absent_role(env, target):  # a mistyped role would only answer skipped-absent
        raise CliError(f"--role {target.value}: {why}; nothing sent", ExitStatus.OPERATIONAL, ErrorCode.NOT_FOUND)
    now = env.now()
    entry = Entry(
        id=SEND_ID,
        name="send",
        schedule=WakeOnly(),
        target=target,
        payload=prompt.replace("{", "{{").replace("}", "}}"),  # typed as written: no placeholders
        deliver=Deliver.IMMEDIATE,
        if_absent=IfAbsent.SKIP,
        any_program=any_program,
        created_by=CreatedBy(at=now),
    )
    runtime = _runtime(env)
    files = env.files()
    try:
        ensure_private_dir(files.dir)
    except (ConfigError, OSError) as exc:
        raise CliError(str(exc)) from None
    try:
        with locked(files.lock, retry_every=0.05, retry_for=env.settings().lock_wait, on_wait=waiting_note(env, files)):
            report = fire_now(runtime, files, entry)
    except LockHeld as exc:
        raise CliError(busy(files.slug, exc)) from None
    env.result(report.to_dict(), report.human)
    if report.held or status_of(report.outcome) != Status.DELIVERED:  # a skip or a failure: not sent
        raise typer.Exit(ExitStatus.ERROR)

"""The `cron_*` tools of `rk mcp`: schedules made, changed and read.

cron_add's and cron_edit's inputs are made from the field table
(`rk.core.schedule.fields`): each is an entry field with the flag it becomes,
so the schema offers what the command line accepts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from rk.channels.mcp_runner import Runner, check_intervals, flag_argv
from rk.core.channels import mcpguard
from rk.core.channels.mcpguard import Action, Refusal
from rk.core.schedule import fields
from rk.core.schedule.fields import Shape, Surface

#: Registers a tool function with the server (`rk.channels.mcp.build`).
Register = Callable[[Callable[..., str]], Callable[..., str]]

Id = Annotated[str, Field(description="The entry id (as cron_list shows it).")]

#: cron_edit's inputs that change how often an entry fires (a chain's floor bounds them).
_TIMING = ("every", "idle_every", "backoff", "min", "max", "cron", "at", "in_", "wake_on", "wake_debounce")

#: Inputs that are Python keywords: the parameter is named with `_` (`rk.channels.mcp_runner.aliased`).
_PARAMETERS = {"in": "in_"}


def field_input(field: fields.Field, surface: Surface, *, required: bool = False) -> inspect.Parameter:
    """The tool input of `field` on `surface`: its type, bounds and description."""
    name = _PARAMETERS.get(field.key, field.key)
    info: dict[str, Any] = {"alias": field.key} if name != field.key else {}
    info["description"] = field.help_on(surface)
    if field.bounded:  # the field table's bound, as the command line and the entries file apply it
        info["max_length"] = field.most
    annotation: object
    default: object = None
    if field.shape == Shape.FLAG:
        annotation, default = Annotated[bool, Field(**info)], False
    elif field.shape == Shape.COUNT:
        low, high = field.bounds_on(surface)
        annotation = Annotated[int | None, Field(ge=low, le=high, **info)]
    elif required:
        annotation, default = Annotated[str, Field(**info)], inspect.Parameter.empty
    else:
        annotation = Annotated[str | None, Field(**info)]
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default)


def field_inputs(surface: Surface, *, required: tuple[str, ...] = ()) -> list[inspect.Parameter]:
    """The inputs of every field `surface` offers, in its order."""
    return [field_input(f, surface, required=f.key in required) for f in fields.on(surface)]


def field_flags(surface: Surface, given: dict[str, Any], *, skip: str = "") -> list[str]:
    """The command line's flags for the fields given (`skip`: the one passed as the positional)."""
    pairs = [(f.flag, given.get(_PARAMETERS.get(f.key, f.key))) for f in fields.on(surface) if f.key != skip]
    return flag_argv(pairs)


def typed(fn: Callable[..., str], inputs: list[inspect.Parameter]) -> Callable[..., str]:
    """`fn` (which takes `**given`) with `inputs` as its signature, so the schema is made from them."""
    fn.__signature__ = inspect.Signature(inputs, return_annotation=str)  # type: ignore[attr-defined]
    return fn


def schedule_tools(tool: Register, runner: Runner) -> None:
    """cron_add, cron_edit, cron_rm, cron_mute, cron_pin, cron_list, cron_show, cron_next, cron_log,
    cron_runs, cron_pause and cron_resume."""
    entry_tools(tool, runner)
    reading_tools(tool, runner)
    server_tools(tool, runner)


def entry_tools(tool: Register, runner: Runner) -> None:
    """The tools that add and change entries."""

    def cron_add(**given: Any) -> str:
        """Schedule a prompt (rk cron add): into this pane unless role, session or pane says otherwise.
        Give one of every, idle_every, backoff, cron, at, in (or wake_on). Made in a turn a scheduled
        prompt started, it is that entry's child: no more often than it, chains at most max_chain_depth (2) deep."""
        prompt: str = given["prompt"]
        argv = ["cron", "add"] + field_flags(Surface.CRON_ADD, given, skip="prompt")

        def check() -> None:
            limits = runner.limits()
            mcpguard.check_payload("prompt", prompt, limits)
            check_intervals(limits, every=given.get("every"), idle_every=given.get("idle_every"), min=given.get("min"))
            runner.prefetch()
            targets = runner.targets(given.get("pane"), given.get("role"), given.get("session"))
            runner.check_reach(Action.SCHEDULE, targets)
            caller, entries = runner.caller(), runner.entries()
            most = runner.settings().max_entries
            mcpguard.check_room(caller, runner.pending(caller, entries), len(entries), most, limits)
            runner.check_one_shot(given.get("at"), given.get("in_"), targets, entries)
            runner.check_remote_child(bool(given.get("at") or given.get("in_")) and not given.get("wake_on"))

        return runner.mutate("cron_add", argv, [prompt], check, serial=True)

    tool(typed(cron_add, field_inputs(Surface.CRON_ADD, required=("prompt",))))

    def cron_edit(**given: Any) -> str:
        """Change fields of an entry you created (rk cron edit), keeping its id and history."""
        id: str = given["id"]
        prompt: str | None = given.get("prompt")
        argv = ["cron", "edit"] + field_flags(Surface.CRON_EDIT, given)

        def check() -> None:
            limits = runner.limits()
            if prompt is not None:
                mcpguard.check_payload("prompt", prompt, limits)
            check_intervals(limits, every=given.get("every"), idle_every=given.get("idle_every"), min=given.get("min"))
            runner.check_owner(id)
            if runner.host and runner.entry(id).get("parent") and any(given.get(k) for k in _TIMING):
                raise Refusal(
                    f"refused: entry {id} on host {runner.host!r} was made in a turn a fire started there; "
                    "how often it may fire is known on that host only: change its timing there"
                )
            if given.get("pane") or given.get("role") or given.get("session"):
                targets = runner.targets(given.get("pane"), given.get("role"), given.get("session"))
                runner.check_reach(Action.SCHEDULE, targets)
            if given.get("at") or given.get("in_"):
                entries = [rec for rec in runner.entries() if rec.get("id") != id]
                runner.check_one_shot(given.get("at"), given.get("in_"), runner.targets(None, None, None), entries)

        return runner.mutate("cron_edit", argv, [id], check)

    id_input = inspect.Parameter("id", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Id)
    tool(typed(cron_edit, [id_input, *field_inputs(Surface.CRON_EDIT)]))

    def cron_rm(id: Id) -> str:
        """Remove an entry you created (rk cron rm); its log lines stay."""
        return runner.mutate("cron_rm", ["cron", "rm"], [id], lambda: runner.check_owner(id))

    tool(cron_rm)

    def cron_mute(
        id: Id,
        for_: Annotated[str | None, Field(alias="for", description="Mute for this long (a lease), e.g. 30m.")] = None,
        off: Annotated[bool, Field(description="Unmute.")] = False,
    ) -> str:
        """Mute an entry you created (rk cron mute): for good, for a while, or off."""
        argv = ["cron", "mute"] + flag_argv([("--for", for_), ("--off", off)])
        return runner.mutate("cron_mute", argv, [id], lambda: runner.check_owner(id))

    tool(cron_mute)

    def cron_pin(id: Id, off: Annotated[bool, Field(description="Unpin.")] = False) -> str:
        """Pin an entry you created so it never expires as an orphan (rk cron pin), or off."""
        argv = ["cron", "pin"] + flag_argv([("--off", off)])
        return runner.mutate("cron_pin", argv, [id], lambda: runner.check_owner(id))

    tool(cron_pin)

    def cron_wake(id: Id) -> str:
        """End the dormancy of an entry you created (rk cron wake): it types again at its next due time."""
        return runner.mutate("cron_wake", ["cron", "wake"], [id], lambda: runner.check_owner(id))

    tool(cron_wake)


def reading_tools(tool: Register, runner: Runner) -> None:
    """The tools that read entries and the log."""

    def cron_list() -> str:
        """The entries you may see (yours, and those typing into panes in your scope) by their
        next fire (rk cron list), with created_by."""
        return runner.visible_entries()

    tool(cron_list)

    def cron_show(id: Id) -> str:
        """One entry in full (rk cron show)."""
        runner.check_visible(id)
        return runner.run(["cron", "show"], [id])

    tool(cron_show)

    def cron_next(id: Id, n: Annotated[int, Field(ge=1, le=100, description="How many fire times.")] = 5) -> str:
        """The next deliveries of an entry, as the ticker would make them (rk cron next)."""
        runner.check_visible(id)
        return runner.run(["cron", "next", "-n", str(n)], [id])

    tool(cron_next)

    def cron_log(
        id: Annotated[str | None, Field(description="Only this entry's lines.")] = None,
        n: Annotated[int, Field(ge=1, le=500, description="How many of the newest lines.")] = 20,
        since: Annotated[str | None, Field(description="Only lines since then: 2h, 7d, or a time.")] = None,
        outcome: Annotated[str | None, Field(description="Only outcomes starting so: delivered, skipped…")] = None,
        gaps: Annotated[bool, Field(description="A cron entry's occurrences with no delivery, and why.")] = False,
    ) -> str:
        """The delivery log, oldest first (rk cron log), or a cron entry's gaps."""
        argv = ["cron", "log"] + flag_argv([("--since", since), ("--outcome", outcome), ("--gaps", gaps)])
        if not gaps:
            argv += ["-n", str(n)]
        if id:
            runner.check_visible(id)
            return runner.run(argv, [id])
        return runner.visible_log(argv)

    tool(cron_log)

    def cron_runs(
        id: Annotated[str | None, Field(description="Only this entry's runs.")] = None,
        since: Annotated[str | None, Field(description="Runs since then: 12h, 7d, or a time (default 1d).")] = None,
    ) -> str:
        """Every run on record (rk cron runs): each fire's attempt into a pane you may read, the turn
        it started, how it ended (ok, failed, interrupted, limited, timeout, running, unknown,
        undelivered), how long it ran, its tokens and the first line of the reply."""
        argv = ["cron", "runs"] + flag_argv([("--since", since)])
        if id:
            runner.check_visible(id)
            return runner.run(argv, [id])
        return runner.visible_log(argv)

    tool(cron_runs)


def server_tools(tool: Register, runner: Runner) -> None:
    """Pausing and resuming the whole server (an operator window only)."""

    def cron_pause(
        for_: Annotated[str | None, Field(alias="for", description="Lapse after this long, e.g. 2h.")] = None,
    ) -> str:
        """Pause this tmux server's entries (rk cron pause). Only an operator window may."""

        def check() -> None:
            caller = runner.caller()
            mcpguard.check_placed(caller)
            if not (caller.operator or runner.limits().any_owner):
                raise Refusal(f"refused: only a window with the role {mcpguard.OPERATOR_ROLE} may pause the server")

        return runner.mutate("cron_pause", ["cron", "pause"] + flag_argv([("--for", for_)]), None, check)

    tool(cron_pause)

    def cron_resume() -> str:
        """Resume this tmux server's entries (rk cron resume). Only an operator window may."""

        def check() -> None:
            caller = runner.caller()
            mcpguard.check_placed(caller)
            if not (caller.operator or runner.limits().any_owner):
                raise Refusal(f"refused: only a window with the role {mcpguard.OPERATOR_ROLE} may resume the server")

        return runner.mutate("cron_resume", ["cron", "resume"], None, check)

    tool(cron_resume)

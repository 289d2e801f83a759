"""The options of `rk cron add | edit | simulate`, made from the field table.

Each command's parameters are built from `rk.core.schedule.fields` (flag, help,
type, completion) and arrive in one `EntryFlags`; typer reads them from the
command function's `__signature__`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from rk.cli.options import ForceOpt, IdArg, JsonOpt, ServerOpt, param, typer_command
from rk.core.schedule.fields import BY_KEY, POSITIONAL, Field, Shape, Surface, on


@dataclass(frozen=True)
class EntryFlags:
    """What add, edit or simulate was given (None or False: not given)."""

    every: str | None = None
    idle_every: str | None = None
    backoff: bool = False
    lo: str | None = None
    hi: str | None = None
    cron: str | None = None
    catch_up: str | None = None
    tz: str | None = None
    at: str | None = None
    in_: str | None = None
    catch_up_within: str | None = None
    name: str | None = None
    prompt: str | None = None
    deliver: str | None = None
    if_absent: str | None = None
    respawn: list[str] | None = None
    pinned: bool = False
    any_program: bool | None = None
    role: str | None = None
    session: str | None = None
    pane: str | None = None
    follow_session: bool = False
    wake_on: str | None = None
    wake_scope: str | None = None
    wake_from: str | None = None
    wake_debounce: str | None = None
    active_hours: str | None = None
    only_if_changed: str | None = None
    budget: str | None = None
    max_per_day: int | None = None
    max_total: int | None = None
    turn_timeout: str | None = None
    on_timeout: str | None = None
    retry: int | None = None
    retry_after: str | None = None
    fresh: str | None = None
    dormant_after: str | None = None
    force: bool = False
    as_json: bool = False
    server: str | None = None
    entry_id: str | None = None
    # simulate's own
    states: str = ""
    other: list[str] | None = None
    for_: str = ""
    tick: str = ""
    busy: str = ""
    start: str | None = None
    width: int | None = None


def _completer(words: tuple[str, ...]) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        return [w for w in words if w.startswith(incomplete)]

    return complete


_TYPES: dict[Shape, object] = {
    Shape.FLAG: bool,
    Shape.COUNT: int | None,
    Shape.LIST: list[str] | None,
}


def field_option(field: Field, surface: Surface) -> inspect.Parameter:
    """The typer option of `field` on `surface`."""
    extra: dict[str, Any] = {"autocompletion": _completer(field.complete)} if field.complete else {}
    option = typer.Option(field.flag_on(surface), help=field.help_on(surface), **extra)
    kind = _TYPES.get(field.shape, str | None)
    default: object = None
    if field.shape == Shape.FLAG:
        tristate = bool(field.edit_flag) and surface == Surface.EDIT  # --x/--no-x: None when neither
        kind, default = (bool | None, None) if tristate else (bool, False)
    return param(field.name, Annotated[kind, option], default)


def prompt_argument() -> inspect.Parameter:
    """add's positional prompt."""
    return param("prompt", Annotated[str, typer.Argument(help=BY_KEY[POSITIONAL[Surface.ADD]].help)])


def id_argument() -> inspect.Parameter:
    """edit's entry id."""
    return param("entry_id", IdArg)


def output(force: bool = True) -> tuple[inspect.Parameter, ...]:
    """The options after the fields: `--force` (add, edit), `--json`, `-L`."""
    forced = (param("force", ForceOpt, False),) if force else ()
    return (*forced, param("as_json", JsonOpt, False), param("server", ServerOpt, None))


def command(
    run: Callable[[typer.Context, EntryFlags], None],
    surface: Surface,
    before: Sequence[inspect.Parameter] = (),
    after: Sequence[inspect.Parameter] = (),
) -> Callable[..., None]:
    """A typer command whose options are `before`, the fields of `surface`, then `after`;
    it calls `run` with the values in one `EntryFlags` (its help is `run`'s docstring)."""

    params = [*before, *(field_option(f, surface) for f in on(surface)), *after]
    return typer_command(run, EntryFlags, params, f"cmd_{surface.value}")

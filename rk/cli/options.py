"""The options several commands share, declared once (`Annotated` aliases), and a
command whose many options arrive in one options object (`command_with`).

An entry's own fields are declared in `rk.core.schedule.fields` (`rk.cli.entry_flags`)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, get_type_hints

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


IdArg = Annotated[str, typer.Argument(metavar="ID", autocompletion=complete_ids)]
AllOpt = Annotated[bool, typer.Option("--all", help="Every server that has an entries file.")]
FullOpt = Annotated[
    bool, typer.Option("--full", "-l", help="Every column whole, whatever the terminal's width (as when piped).")
]
TreeOpt = Annotated[
    bool, typer.Option("--tree", help="Who made what: each entry an agent made under the entry that started its turn.")
]
AnyProgramOpt = Annotated[
    bool,
    typer.Option(
        "--any-program", help="Also type into a program rk does not know as an agent (a REPL, a TUI). Never a shell."
    ),
]


def param(name: str, annotation: object, default: object = inspect.Parameter.empty) -> inspect.Parameter:
    """One parameter of a command built from a declaration (typer reads its annotation)."""
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default)


def typer_command(
    run: Callable[[typer.Context, Any], None], make: Callable[..., Any], params: Sequence[inspect.Parameter], name: str
) -> Callable[..., None]:
    """A typer command with `ctx` and then `params` (typer reads the `__signature__`); it
    calls `run` with the given values made into one options object by `make`. Its help is
    `run`'s docstring."""

    def cmd(ctx: typer.Context, **given: Any) -> None:
        run(ctx, make(**given))

    cmd.__signature__ = inspect.Signature([param("ctx", typer.Context), *params], return_annotation=None)  # type: ignore[attr-defined]
    cmd.__name__ = cmd.__qualname__ = name
    cmd.__doc__ = run.__doc__
    cmd.__module__ = run.__module__
    return cmd


def command_with(run: Callable[[typer.Context, Any], None], flags: type) -> Callable[..., None]:
    """A typer command whose options are the fields of the dataclass `flags` (each an
    `Annotated` typer option with its default, in order); it calls `run` with them in
    one `flags` object."""
    hints = get_type_hints(flags, include_extras=True)
    params = [param(f.name, hints[f.name], f.default) for f in dataclasses.fields(flags)]
    return typer_command(run, flags, params, run.__name__.lstrip("_"))

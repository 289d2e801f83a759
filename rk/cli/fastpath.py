"""The read-only views without typer: `rk cron list|show|next|log`, `rk status` and
`rk agent list` run their command's function directly when every argument is plain.

typer and what it converts values with (pydantic) take ~120 ms to import, several
times what a view's own work takes; a person waits on each view. So the process
entry (`rk/__main__.py`) asks `run` first. It parses the arguments as click would,
by the `VIEWS` grammar (each level's -L/--server and --json, the command's own
options and arguments), calls the same function typer would call, and reports its
failures as `rk.cli.root.main` does. It answers only what it is sure of: anything
else (--help, `--`, an unknown, repeated or combined option, a value that starts
with `-`, a number that is not plain digits, a missing or extra argument, shell
completion) returns None, and `rk.cli.root` runs the command, so every help text
and usage error is typer's own. tests/test_startup_fastpath.py checks that the
grammar is the typer declarations' and that both paths print the same.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from rk.cli.environment import CliError, Environment, failed, for_args, group_options
from rk.core.errors import RkError


@dataclass(frozen=True, eq=False)
class Grammar:
    """The options and arguments of one level of the command line, by parameter name."""

    flags: Mapping[str, str] = field(default_factory=dict)  #: option → parameter set True
    values: Mapping[str, str] = field(default_factory=dict)  #: option → parameter taking the next word
    numbers: Mapping[str, str] = field(default_factory=dict)  #: option → parameter taking a whole number
    arguments: tuple[str, ...] = ()  #: positional parameters, in order
    required: int = 0  #: how many of them must be given

    def option(self, name: str) -> str | None:
        """The parameter of option `name`, None when this level has no such option."""
        for table in (self.flags, self.values, self.numbers):
            if name in table:
                return table[name]
        return None


#: -L/--server and --json, which the root, `cron` and each view take.
SERVER = {"-L": "server", "--server": "server"}
JSON = {"--json": "as_json"}
FULL = {"--full": "full", "-l": "full"}
#: The root and the `cron` group (`rk -L x --json cron -L y list`); `agent` takes none.
GROUP = Grammar(flags=JSON, values=SERVER)
GROUPS: Mapping[str, Grammar] = {"cron": GROUP, "agent": Grammar()}


@dataclass(frozen=True, eq=False)
class View:
    """A view's command: its function (`rk.cli.<module>.<function>`) and its grammar."""

    module: str
    function: str
    grammar: Grammar


LIST = View("listing", "cmd_list", Grammar(flags={"--all": "every", "--tree": "tree", **FULL, **JSON}, values=SERVER))
#: (group, command) → the view; the typer tree's own names (`rk.cli.root`).
VIEWS: Mapping[tuple[str, str], View] = {
    ("cron", "list"): LIST,
    ("cron", "ls"): LIST,
    ("cron", "show"): View(
        "views", "cmd_show", Grammar(flags=JSON, values=SERVER, arguments=("entry_id",), required=1)
    ),
    ("cron", "next"): View(
        "views",
        "cmd_next",
        Grammar(flags={**FULL, **JSON}, values=SERVER, numbers={"-n": "n"}, arguments=("entry_id",), required=1),
    ),
    ("cron", "log"): View(
        "views",
        "cmd_log",
        Grammar(
            flags={"--follow": "follow", "-f": "follow", "--gaps": "gaps", **FULL, **JSON},
            values={"--since": "since", "--outcome": "outcome", **SERVER},
            numbers={"-n": "n"},
            arguments=("entry_id",),
        ),
    ),
    ("", "status"): View(
        "status",
        "cmd_status",
        Grammar(flags={"--watch": "watch", **FULL, **JSON}, values={"--format": "fmt", **SERVER}),
    ),
    ("agent", "list"): View("panes", "cmd_list", Grammar(flags={"--all": "every", **FULL, **JSON}, values=SERVER)),
}


@dataclass(frozen=True, eq=False)
class Call:
    """A parsed command line: each group level's -L and --json, the view and its parameters."""

    groups: list[tuple[str | None, bool]]
    view: View
    path: str  #: `rk cron list`, as click names the command
    params: dict[str, Any]


class NotPlain(RkError):
    """The arguments are not ones this module answers for: typer runs them (never shown)."""


def parse(args: list[str]) -> Call | None:
    """The call `args` make, as click would parse them; None when they are not plain."""
    try:
        root, rest = _group(GROUP, args)
        name = rest[0] if rest else ""
        group = name if name in GROUPS else ""
        levels = [root]
        if group:
            level, rest = _group(GROUPS[group], rest[1:])
            if group == "cron":
                levels.append(level)
        view = VIEWS.get((group, rest[0] if rest else ""))
        if view is None:
            return None
        params = _command(view.grammar, rest[1:])
    except NotPlain:
        return None
    groups = [(level.get("server"), bool(level.get("as_json"))) for level in levels]
    path = " ".join(["rk", *([group] if group else []), rest[0]])
    return Call(groups, view, path, params)


def _group(grammar: Grammar, args: list[str]) -> tuple[dict[str, Any], list[str]]:
    """A group's options (they come before its command's name) and the words after them."""
    given: dict[str, Any] = {}
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index = _option(grammar, args, index, given)
    return given, args[index:]


def _command(grammar: Grammar, args: list[str]) -> dict[str, Any]:
    """A command's parameters: its options anywhere among its arguments."""
    given: dict[str, Any] = {}
    positional: list[str] = []
    index = 0
    while index < len(args):
        if args[index].startswith("-"):
            index = _option(grammar, args, index, given)
        else:
            positional.append(args[index])
            index += 1
    if not grammar.required <= len(positional) <= len(grammar.arguments):
        raise NotPlain
    given.update(zip(grammar.arguments, positional, strict=False))
    return given


def _option(grammar: Grammar, args: list[str], index: int, given: dict[str, Any]) -> int:
    """Read the option at `args[index]` into `given`; the index after it. `--name=value`,
    `--name value`, `-x value` and `-xvalue` are read; `--`, `-` and combined flags are not."""
    word = args[index]
    name, attached = word, None
    if word.startswith("--"):
        name, eq, value = word.partition("=")
        attached = value if eq else None
    elif len(word) > 2:
        name, attached = word[:2], word[2:]
    param = grammar.option(name)
    if param is None or param in given:
        raise NotPlain  # not this level's (click's error), or given twice
    if name in grammar.flags:
        if attached is not None:
            raise NotPlain
        given[param] = True
        return index + 1
    if attached is None:
        if index + 1 >= len(args):
            raise NotPlain
        attached, index = args[index + 1], index + 1
    given[param] = _value(attached, name in grammar.numbers)
    return index + 1


def _value(text: str, number: bool) -> str | int:
    """An option's value: a word that does not start with `-`; a number only as plain digits."""
    if not text or text.startswith("-"):
        raise NotPlain
    if not number:
        return text
    if not (text.isascii() and text.isdigit()) or (len(text) > 1 and text[0] == "0") or len(text) > 9:
        raise NotPlain
    return int(text)


@dataclass(frozen=True, eq=False)
class Invocation:
    """What a command reads of its context (`rk.cli.environment.Invocation`): the Environment."""

    obj: Environment
    command_path: str
    command: None = None  #: a command, never a group (it is the group that is a `TyperGroup`)


def run(
    args: list[str],
    environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int | None:
    """Run the view `args` name when they are plain, and return its exit status;
    None when typer must run them (`rk.cli.root.main`, which takes the same arguments)."""
    if os.environ.get("_RK_COMPLETE"):  # shell completion (click reads the process's own)
        return None
    call = parse(args)
    if call is None:
        return None
    env = for_args(args, os.environ if environ is None else environ, stdout or sys.stdout, stderr or sys.stderr)
    if call.params.get("follow") or call.params.get("watch"):
        import gc

        gc.enable()  # it runs until stopped: its cycles must be collected (`rk/__main__.py`)
    return _guarded(env, call)


def _guarded(env: Environment, call: Call) -> int:
    """The call's exit status, its failures reported as `rk.cli.root.main` and typer's
    own `main` report them."""
    try:
        for server, as_json in call.groups:
            group_options(env, server, as_json)
        module = importlib.import_module(f"rk.cli.{call.view.module}")
        status = getattr(module, call.view.function)(Invocation(env, call.path), **call.params)
    except CliError as exc:
        return env.fail(exc)
    except KeyboardInterrupt:
        return 130  # typer's Exit(130), without a word
    except EOFError:
        print(file=sys.stderr)  # click's newline, then its Abort
        env.err("rk: aborted")
        return 1
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            _pipe_closed()
        return failed(env, exc)
    except Exception as exc:
        return failed(env, exc)
    return status if isinstance(status, int) and not isinstance(status, bool) else 0


def _pipe_closed() -> None:
    """The reader went away (`rk cron list | head -1`): exit 1 quietly, as click does."""
    try:
        from typer._click.utils import PacifyFlushWrapper
    except ImportError:  # pragma: no cover - typer on top of click
        from click.utils import PacifyFlushWrapper  # type: ignore[no-redef]
    sys.stdout = PacifyFlushWrapper(sys.stdout)
    sys.stderr = PacifyFlushWrapper(sys.stderr)
    sys.exit(1)

"""`rk agent setup`, the command: which targets, the plans (nothing is written when
any target fails to plan), then consent: `--dry-run` shows the diffs and writes
nothing, `--yes` writes without asking, otherwise the diffs are shown and `[y/N]`
asked on a terminal, and the command refuses (exit 2) on anything else."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TextIO

from rk.agent.setup.agents import BINARIES, PROVIDERS
from rk.agent.setup.hooks import plan
from rk.agent.setup.mcp import plans_mcp
from rk.agent.setup.plan import Plan, SetupError, UsageError, apply
from rk.agent.setup.rk_script import find_rk
from rk.agent.setup.tmux import TMUX, plan_tmux

#: What `rk agent setup` can be named: the agent CLIs, and tmux for the status segment.
TARGETS = (*PROVIDERS, TMUX)


@dataclass(frozen=True)
class SetupOptions:
    """What `rk agent setup` is asked to do with its targets."""

    dry_run: bool = False  #: print the diffs, write nothing (wins over `yes`)
    yes: bool = False  #: write without asking
    uninstall: bool = False  #: remove what rk wrote, instead of writing it
    mcp: bool = False  #: register rk's MCP server instead of the hooks
    tmux_socket: str | None = None  #: the server `tmux` also sets the status line of, when it is live


def _isatty(stream: TextIO | None) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _targets(agents: Iterable[str], options: SetupOptions, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(the targets to process, the agents skipped as not installed). Named ones are
    always processed; with no name, an install covers the agent CLIs on PATH and an
    uninstall all of them (removing needs no binary). UsageError for a bad name."""
    names: list[str] = []
    for agent in agents or ():
        if agent not in TARGETS:
            raise UsageError(f"unknown agent {agent!r} (use {', '.join(TARGETS)})")
        if agent not in names:
            names.append(agent)
    if options.mcp and TMUX in names:
        raise UsageError("--mcp registers rk's MCP server with agent CLIs; tmux has none")
    skipped: list[str] = []
    if not names:
        if options.uninstall:
            names = list(PROVIDERS)
        else:
            for agent in PROVIDERS:
                if shutil.which(BINARIES[agent], path=env.get("PATH")):
                    names.append(agent)
                else:
                    skipped.append(agent)
    return names, skipped


def _plans(names: list[str], options: SetupOptions, env: Mapping[str, str], rk: str | None) -> list[Plan]:
    """One plan per file of each target, each from the file as it is now."""
    plans: list[Plan] = []
    for agent in names:
        if agent == TMUX:
            plans.append(plan_tmux(env, rk, options.uninstall, options.tmux_socket))
        elif options.mcp:
            plans += plans_mcp(agent, env, rk, options.uninstall)
        else:
            plans.append(plan(agent, env, rk, options.uninstall))
    return plans


def _consent(changes: list[Plan], stdin: TextIO, stdout: TextIO) -> bool:
    """The diffs shown, then `[y/N]` asked: whether the answer is yes."""
    for p in changes:
        stdout.write(p.diff())
    files = sum(p.old != p.new for p in changes)
    servers = " and set the running tmux server" if any(p.live for p in changes) else ""
    stdout.write(f"Write {files} file(s){servers}? [y/N] " if files else "Set the running tmux server? [y/N] ")
    stdout.flush()
    try:
        answer = stdin.readline()
    except (OSError, ValueError):
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def run_setup(
    agents: Iterable[str] = (),
    options: SetupOptions | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    argv0: str | None = None,
    executable: str | None = None,
) -> int:
    """`rk agent setup`; returns the exit code (0 ok, 1 operational, 2 usage)."""
    options = SetupOptions() if options is None else options
    env = os.environ if env is None else env
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr

    def fail(message: str, code: int) -> int:
        print(f"rk agent setup: {message}", file=stderr)
        return code

    try:
        names, skipped = _targets(agents, options, env)
    except UsageError as exc:
        return fail(str(exc), 2)
    for agent in skipped:
        print(
            f"{agent}: skipped ({BINARIES[agent]} is not on PATH; `rk agent setup {agent}` installs anyway)",
            file=stdout,
        )
    if not names:
        print(f"nothing to install: none of {', '.join(PROVIDERS)} is on PATH", file=stdout)
        return 0

    try:
        plans = _plans(names, options, env, None if options.uninstall else find_rk(argv0, executable, env))
    except UsageError as exc:
        return fail(str(exc), 2)
    except SetupError as exc:
        return fail(str(exc), 1)

    changes = [p for p in plans if p.changed]
    if not changes:
        for p in plans:
            print(p.summary, file=stdout)
        print("nothing to change", file=stdout)
        return 0

    if options.dry_run:
        for p in plans:
            if p.changed:
                stdout.write(p.diff())
            else:
                print(p.summary, file=stdout)
        print("dry run: nothing written", file=stdout)
        return 0

    if not options.yes:
        if not _isatty(stdin):
            return fail("not a terminal: pass --yes to write, or --dry-run to see the changes", 2)
        if not _consent(changes, stdin, stdout):
            return fail("aborted: nothing written", 1)

    try:
        for p in changes:
            apply(p, env)
    except SetupError as exc:
        return fail(str(exc), 1)
    for p in plans:
        print(p.summary, file=stdout)
    for p in changes:
        for note in p.notes:
            print(f"{p.agent}: {note}", file=stdout)
    return 0

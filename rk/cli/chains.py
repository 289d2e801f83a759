"""`cron add` and `cron edit` inside a turn a fire started: the entry records its parent,
and the chain rules (`rk.core.schedule.lineage`) refuse what would loop.

`rk mcp` runs these commands in its own process, below the agent's pane, so the
same rules hold there; the caller's pane is proven from the process tree
(`rk.tmux.lineage`), whatever TMUX_PANE says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rk.cli.environment import CliError, Environment
from rk.core.schedule.entry import Entry
from rk.core.schedule.lineage import ChainRefused, Record, check_child, check_edit, edit_floor, least_interval
from rk.store import lineage as records_file


def _unreadable(exc: OSError) -> CliError:
    return CliError(
        f"refused: the chain above this turn cannot be read ({exc.strerror or exc});"
        " an entry made in a turn a fire started needs it"
    )


def chained(env: Environment, entry: Entry) -> tuple[Entry, Callable[[Entry], None] | None]:
    """`entry` with its parent when the caller's turn was started by a fire, and what keeps
    its record once it has an id (None: a human's entry); refused (exit 1) past the rules."""
    from rk.tmux.lineage import caller_turn, turn_lineage

    try:
        found = turn_lineage(caller_turn(env.environ, env.state_dir()))
    except OSError as exc:
        raise _unreadable(exc) from None
    if found is None:
        return entry, None
    try:
        check_child(found, least_interval(entry.schedule, entry.wake_on), env.settings().max_chain_depth)
    except ChainRefused as exc:
        raise CliError(str(exc)) from None
    files = env.files()

    def keep(made: Entry) -> None:
        records_file.append(files.dir, files.slug, made.id, Record(found.parent, found.floor))

    return replace(entry, parent=found.parent), keep


def check_edited(env: Environment, old: Entry, new: Entry, *, over_mcp: bool) -> None:
    """Refuse an edit of an agent-made entry that makes it fire more often than its parent
    may, when an agent asks: over `rk mcp` (`over_mcp`), or inside a turn a fire started.
    A human at the command line changes what they like."""
    if not old.parent:
        return
    before, after = least_interval(old.schedule, old.wake_on), least_interval(new.schedule, new.wake_on)
    if after >= before:
        return
    from rk.tmux.lineage import caller_turn, entries_of, parent_least, records

    try:
        if not over_mcp and not caller_turn(env.environ, env.state_dir()).parent:
            return
        files = env.files()
        floor = edit_floor(old.id, old.parent, parent_least(old.parent, entries_of(files)), records(files))
    except OSError as exc:
        raise _unreadable(exc) from None
    try:
        check_edit(old.id, old.parent, before, after, floor)
    except ChainRefused as exc:
        raise CliError(str(exc)) from None

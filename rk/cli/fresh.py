"""`--fresh` on the command line: its value, and its refusal at add or edit time when the
target pane runs an agent CLI with no such command (`rk.core.schedule.fresh`).

Where the target's agent is not known now (no pane, a shell, a server not running),
the entry is kept and the fire decides (a `failed:` line where the agent has none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rk.cli.environment import usage
from rk.core.bounds import quote
from rk.core.schedule.fields import BY_KEY
from rk.core.schedule.fresh import FreshMode, refusal
from rk.tmux.server import TmuxError

if TYPE_CHECKING:
    from rk.cli.environment import Environment
    from rk.core.schedule.entry import Entry

#: What edit's `--fresh off` leaves (the entry has no fresh step any more).
FRESH_OFF = "off"


def fresh_from_flag(value: str | None, allow_off: bool) -> FreshMode | str | None:
    """The `--fresh` value: a `FreshMode`, FRESH_OFF (edit), or None when not given."""
    if value is None:
        return None
    word = value.strip().lower()
    field = BY_KEY["fresh"]
    if allow_off and word in field.off:
        return FRESH_OFF
    if word not in field.choices:
        words = ", ".join(field.choices) + (" (or off)" if allow_off else "")
        raise usage(f"--fresh must be one of {words}, not {quote(value)}")
    return FreshMode(word)


def target_agent(env: Environment, entry: Entry) -> str | None:
    """The agent CLI the entry's target pane runs now ("": a program that is no agent rk
    knows; None when that is not known: no such pane now, a shell, no server)."""
    from rk.core.pane.facts import resolve_target
    from rk.tmux.server import Server

    server = Server(name=env.server, env=env.environ)
    try:
        if not server.is_live():
            return None
        facts = server.pane_facts()
    except TmuxError:
        return None
    target = resolve_target(entry.target, facts, entry.any_program)
    for fact in facts:
        if target.resolved and fact.pane_id == target.pane:
            return fact.agent or fact.provider
    return None


def check_fresh(env: Environment, entry: Entry) -> None:
    """A usage error when the entry's `fresh` names a command its target's agent lacks."""
    if entry.fresh is None:
        return
    agent = target_agent(env, entry)
    why = refusal(entry.fresh, agent) if agent is not None else ""
    if why:
        raise usage(f"{why} (its fires would type nothing)")

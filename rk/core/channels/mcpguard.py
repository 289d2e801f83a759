"""The guardrails of `rk mcp`: what an agent calling rk's tools may do.

An agent is a less careful caller than a person at a shell: it may loop, or
act on entries that belong to someone else. So every tool call that changes
something passes these checks first, and each refusal is one line that says
which rule and what to do instead. The checks are decisions on plain values;
the server (rk.channels.mcp) gathers the values and turns a `Refusal` into an MCP
tool error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rk.core.errors import RkError

#: What `created_by.via` says for an entry the server added.
VIA = "mcp"
#: The role whose window may change any entry (the operator manages the others').
OPERATOR_ROLE = "operator"

#: The tools every placed caller may call without a person's consent: each acts only within
#: the caller's scope (a worker: its own pane; an operator: its own session; more by grant),
#: which the server checks itself, so an agent CLI's per-call dialog adds nothing.
SCOPED_TOOLS = (
    "cron_add",
    "cron_edit",
    "cron_rm",
    "cron_mute",
    "cron_pin",
    "cron_list",
    "cron_show",
    "cron_next",
    "cron_log",
    "send",
    "agent_list",
    "agent_await",
    "pane_read",
    "events",
)
#: Tools that act on a whole server: an operator's alone (a worker's call is refused).
SERVER_TOOLS = ("cron_pause", "cron_resume")
#: The tools each role may use unattended (`rk agent setup --mcp` writes them as allow rules).
UNATTENDED = {"worker": SCOPED_TOOLS, OPERATOR_ROLE: SCOPED_TOOLS + SERVER_TOOLS}


class Refusal(RkError):
    """A guardrail said no; the message is the tool error's text."""


@dataclass(frozen=True)
class Caller:
    """Who is calling: the pane the server was started in (its inherited
    TMUX_PANE, "" outside tmux) and whether that pane's window carries the
    operator role."""

    pane: str
    operator: bool = False


@dataclass(frozen=True)
class Limits:
    """The bounds per caller (`mcp_max_pending`, `mcp_any_owner` in the settings)."""

    max_pending: int = 20  #: entries one caller may have created that still exist
    min_interval: int = 60  #: seconds: no schedule repeats more often
    max_payload: int = 4000  #: characters a prompt may have
    any_owner: bool = False  #: every caller may change every entry, as an operator may


def owns(caller: Caller, created_by: Mapping[str, object]) -> bool:
    """Whether `caller` created this entry through the server."""
    return bool(caller.pane) and created_by.get("pane") == caller.pane and created_by.get("via") == VIA


def check_change(caller: Caller, entry_id: str, created_by: Mapping[str, object], limits: Limits) -> None:
    """Change or remove only your own entries, unless you are the operator (or the settings widen it)."""
    if caller.operator or limits.any_owner or owns(caller, created_by):
        return
    pane = created_by.get("pane")
    how = "through rk mcp" if created_by.get("via") == VIA else "at the command line"
    where = f" in {pane}" if pane else ""
    raise Refusal(
        f"refused: entry {entry_id} was created {how}{where}, not through rk mcp by this pane "
        f"({caller.pane or 'no pane'}); only its creator or a window with the role {OPERATOR_ROLE} "
        "may change or remove it"
    )


def check_room(caller: Caller, pending: int, limits: Limits) -> None:
    """At most `max_pending` entries per caller."""
    if pending >= limits.max_pending:
        raise Refusal(
            f"refused: this pane ({caller.pane or 'no pane'}) already has {pending} entries "
            f"(at most {limits.max_pending}); remove one with cron_rm first"
        )


def check_interval(flag: str, seconds: int, limits: Limits) -> None:
    """No schedule more often than every `min_interval` seconds."""
    if seconds < limits.min_interval:
        raise Refusal(f"refused: {flag} {seconds}s is more often than rk mcp allows (at least {limits.min_interval}s)")


def check_payload(flag: str, text: str, limits: Limits) -> None:
    if len(text) > limits.max_payload:
        raise Refusal(f"refused: {flag} has {len(text)} characters (at most {limits.max_payload})")


def check_rate(target: str, counted: int, cap: int) -> None:
    """A send counts toward the target's hourly cap, as a scheduled fire does."""
    if cap and counted >= cap:
        raise Refusal(
            f"refused: {target} had {counted} deliveries in the last hour (the cap is {cap}); try again later"
        )

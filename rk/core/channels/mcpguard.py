"""The guardrails of `rk mcp`: what an agent calling rk's tools may do.

An agent is a less careful caller than a person at a shell: it may loop, or
act on entries that belong to someone else. So every tool call that changes
something passes these checks first, and each refusal is one line that says
which rule and what to do instead. The checks are decisions on plain values;
the server (rk.channels.mcp) gathers the values and turns a `Refusal` into an MCP
tool error.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

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
    "cron_wake",
    "cron_list",
    "cron_show",
    "cron_next",
    "cron_log",
    "cron_runs",
    "send",
    "agent_list",
    "agent_await",
    "pane_read",
    "events",
)
#: Entries of a server's `max_entries` kept for people (at most a fifth of it).
PEOPLE_ROOM = 10

#: Tools that act on a whole server: an operator's alone (a worker's call is refused).
SERVER_TOOLS = ("cron_pause", "cron_resume")
#: The tools each role may use unattended (`rk agent setup --mcp` writes them as allow rules).
UNATTENDED = {"worker": SCOPED_TOOLS, OPERATOR_ROLE: SCOPED_TOOLS + SERVER_TOOLS}


class Refusal(RkError):
    """A guardrail said no; the message is the tool error's text."""


class Action(StrEnum):
    """What a tool does to a pane; a scope or a grant allows some of them."""

    SCHEDULE = "schedule"  #: add an entry that types into it (cron_add)
    SEND = "send"  #: type into it now
    READ = "read"  #: its screen, its entries, its log lines and events, its full command line
    AWAIT = "await"  #: wait on its state
    CHANGE = "change"  #: edit, remove, mute or pin an entry that types into it


ALL_ACTIONS = frozenset(Action)


@dataclass(frozen=True)
class Caller:
    """Who is calling, as the process tree proved it (`rk.tmux.caller`): the pane, its
    tmux session and its window's role. No pane: the caller could not be placed
    (`note` says why) and may do nothing."""

    pane: str = ""
    session: str = ""
    role: str = ""
    note: str = ""

    @property
    def operator(self) -> bool:
        return bool(self.pane) and self.role == OPERATOR_ROLE

    @property
    def kind(self) -> str:
        """unknown, operator or worker: the words refusals and the log use."""
        return "unknown" if not self.pane else OPERATOR_ROLE if self.operator else "worker"

    def scope(self) -> str:
        """What this caller may reach without a grant, in words."""
        if not self.pane:
            return "nothing"
        if self.operator:
            return f"the panes of its tmux session {self.session!r}"
        return f"its own pane {self.pane}"


#: The name a grant's `where: {host: …}` gives this host (a `where` without `host` means it alone).
LOCAL = "local"


@dataclass(frozen=True)
class Spot:
    """Where a pane is: its id, its tmux session, its window's role, and its host
    ("" this one; else a name of config.yaml's `hosts:`)."""

    pane: str
    session: str = ""
    role: str = ""
    host: str = ""

    def describe(self) -> str:
        """`pane %3 (session 'main', role 'worker')`, `pane %3 on host 'b' (…)`."""
        parts = ([f"session {self.session!r}"] if self.session else []) + ([f"role {self.role!r}"] if self.role else [])
        where = f" on host {self.host!r}" if self.host else ""
        return f"pane {self.pane}{where}" + (f" ({', '.join(parts)})" if parts else "")


@dataclass(frozen=True)
class Match:
    """A pattern on a pane's place (fnmatch; "" matches anything). A grant's `who`
    matches the caller's pane, `where` the target's. `host` is the one key whose ""
    is not "anything": it means this host alone, so no grant written before hosts
    existed, and no `where` that does not name a host, reaches another machine."""

    pane: str = ""
    session: str = ""
    role: str = ""
    host: str = ""

    def matches(self, spot: Spot) -> bool:
        if not fnmatch.fnmatchcase(spot.host or LOCAL, self.host or LOCAL):
            return False
        pairs = ((self.pane, spot.pane), (self.session, spot.session), (self.role, spot.role))
        return all(not pattern or fnmatch.fnmatchcase(value, pattern) for pattern, value in pairs)

    def describe(self) -> str:
        keys = (("host", self.host), ("role", self.role), ("session", self.session), ("pane", self.pane))
        parts = [f"{k}: {v!r}" for k, v in keys if v]
        return "{" + ", ".join(parts) + "}" if parts else "{}"


@dataclass(frozen=True)
class Grant:
    """`mcp: grants:` in config.yaml: callers matching `who` may do `may` in panes matching `where`."""

    who: Match
    where: Match
    may: frozenset[Action] = ALL_ACTIONS

    def describe(self) -> str:
        """`who {role: 'operator'} may read, send in {session: 'proj-*'}`: what doctor and status say."""
        may = ", ".join(a.value for a in Action if a in self.may)
        return f"who {self.who.describe()} may {may} in {self.where.describe()}"

    def allows(self, caller: Caller, target: Spot, action: Action) -> bool:
        me = Spot(caller.pane, caller.session, caller.role)
        return bool(caller.pane) and action in self.may and self.who.matches(me) and self.where.matches(target)


def in_scope(caller: Caller, target: Spot, action: Action, grants: Sequence[Grant] = ()) -> bool:
    """Whether `caller` may do `action` in `target`: its own pane; any pane to await it;
    an operator, its own tmux session; beyond that, what a grant says. A pane on another
    host is in no caller's own scope (its pane and its session are this host's notions;
    `%3` there is not `%3` here), awaiting it included: only a grant naming the host allows."""
    if not caller.pane:
        return False
    if target.host:
        return any(g.allows(caller, target, action) for g in grants)
    if target.pane == caller.pane or action == Action.AWAIT:
        return True
    if caller.operator and caller.session and target.session == caller.session:
        return True
    return any(g.allows(caller, target, action) for g in grants)


def check_placed(caller: Caller) -> None:
    """An unplaced caller gets no tool at all."""
    if not caller.pane:
        why = f" ({caller.note})" if caller.note else ""
        raise Refusal(
            f"refused: rk mcp could not place its caller in a tmux pane{why}; "
            "an agent may use rk's tools only when it runs in a tmux pane"
        )


def check_reach(caller: Caller, target: Spot, action: Action, grants: Sequence[Grant] = ()) -> None:
    """Refuse `action` in `target` beyond the caller's scope, naming the grant that would allow it."""
    check_placed(caller)
    if in_scope(caller, target, action, grants):
        return
    scope = caller.scope() + ("; another host is in no caller's scope" if target.host else "")
    raise Refusal(
        f"refused: {action} in {target.describe()} is beyond this {caller.kind}'s scope ({scope}); "
        f"a grant in config.yaml would allow it: {suggest(caller, target, action)}"
    )


def check_host(caller: Caller, host: str, grants: Sequence[Grant] = ()) -> None:
    """Refuse any call on `host` (another machine) unless a grant names it for this caller:
    checked before anything is asked of the host, so an ungranted caller costs it nothing."""
    check_placed(caller)
    me = Spot(caller.pane, caller.session, caller.role)
    if any(g.who.matches(me) and fnmatch.fnmatchcase(host, g.where.host or LOCAL) for g in grants):
        return
    raise Refusal(
        f"refused: host {host!r} is in no grant of this {caller.kind}'s (another host is in no caller's scope); "
        f"a grant in config.yaml would allow it: {suggest(caller, Spot('', host=host), Action.READ)}"
    )


def suggest(caller: Caller, target: Spot, action: Action) -> str:
    """The `mcp: grants:` item that would allow `action`: by the caller's role (or session)
    and the target's session, never by pane ids, which a restart renumbers."""
    who = Match(role=caller.role) if caller.role else Match(session=caller.session)
    if target.session:
        where = Match(session=target.session, host=target.host)
    elif target.host and target.role:  # a remote pane's id is that host's alone: its role lasts longer
        where = Match(role=target.role, host=target.host)
    else:
        where = Match(pane=target.pane, host=target.host)
    return f"mcp: {{grants: [{{who: {who.describe()}, where: {where.describe()}, may: [{action}]}}]}}"


@dataclass(frozen=True)
class Limits:
    """The bounds per caller (`mcp_max_pending`, `mcp_any_owner` in the settings)."""

    max_pending: int = 20  #: entries one caller may have created that still exist
    min_interval: int = 60  #: seconds: no schedule repeats more often
    max_payload: int = 4000  #: characters a prompt may have
    any_owner: bool = False  #: every placed caller may change every entry


def owns(caller: Caller, created_by: Mapping[str, object]) -> bool:
    """Whether `caller` created this entry through the server."""
    return bool(caller.pane) and created_by.get("pane") == caller.pane and created_by.get("via") == VIA


def check_change(
    caller: Caller,
    entry_id: str,
    created_by: Mapping[str, object],
    target: Spot | None,
    limits: Limits,
    grants: Sequence[Grant] = (),
) -> None:
    """Change or remove an entry you created through rk mcp, or one that types into a pane
    you may change (an operator: its session's; more by grant). `target` None: the entry's
    pane is not there now, so only its creator may (or the settings widen it to anyone placed)."""
    check_placed(caller)
    if owns(caller, created_by) or limits.any_owner:
        return
    if target is not None:
        check_reach(caller, target, Action.CHANGE, grants)
        return
    pane = created_by.get("pane")
    how = "through rk mcp" if created_by.get("via") == VIA else "at the command line"
    where = f" in {pane}" if pane else ""
    raise Refusal(
        f"refused: entry {entry_id} was created {how}{where}, not by this pane ({caller.pane}), "
        "and its pane is not there now; only its creator may change or remove it"
    )


def check_room(caller: Caller, pending: int, entries: int, max_entries: int, limits: Limits) -> None:
    """At most `max_pending` entries per placed caller, and never the last `PEOPLE_ROOM`
    places of the server's `max_entries`: agents cannot fill the server against its people."""
    check_placed(caller)
    if pending >= limits.max_pending:
        raise Refusal(
            f"refused: this pane ({caller.pane}) already has {pending} entries "
            f"(at most {limits.max_pending}); remove one with cron_rm first"
        )
    room = max_entries - min(PEOPLE_ROOM, max_entries // 5)
    if entries >= room:
        raise Refusal(
            f"refused: this server has {entries} entries; rk mcp adds at most {room} of its {max_entries}, "
            "the rest are kept for people at the command line"
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


#: The keys of a grant's `who:` (the caller is always on this host) and `where:`.
_MATCH_KEYS = ("role", "session", "pane")
_WHERE_KEYS = (*_MATCH_KEYS, "host")


def parse_grants(raw: object, source: str) -> tuple[list[Grant], list[str]]:
    """`mcp: grants:` → the grants, and one line per item that cannot be used (left out:
    a bad grant grants nothing). Each item: `who:` and `where:` (patterns on role, session,
    pane, and for `where` host; both required, `{}` for anyone on this host), `may:`
    (actions; default all of them)."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{source}: mcp.grants is not a list; no grant is used"]
    grants: list[Grant] = []
    problems: list[str] = []
    for n, item in enumerate(raw, 1):
        try:
            grants.append(_grant(item))
        except ValueError as exc:
            problems.append(f"{source}: mcp.grants item {n}: {exc}; left out")
    return grants, problems


def _grant(item: object) -> Grant:
    if not isinstance(item, dict):
        raise ValueError("not a mapping")
    unknown = sorted(str(k) for k in item if k not in ("who", "where", "may"))
    if unknown:
        raise ValueError(f"unknown key {unknown[0][:40]!r} (use who, where, may)")
    may = item.get("may", sorted(ALL_ACTIONS))
    if isinstance(may, str):
        may = [may]
    if not isinstance(may, list) or not may:
        raise ValueError("may is not a list of actions")
    words = {str(a) for a in may}
    bad = sorted(words - {str(a) for a in ALL_ACTIONS})
    if bad:
        raise ValueError(f"unknown action {bad[0][:40]!r} (use {', '.join(a.value for a in Action)})")
    return Grant(
        _match(item, "who", _MATCH_KEYS), _match(item, "where", _WHERE_KEYS), frozenset(Action(a) for a in words)
    )


def _match(item: dict[object, object], key: str, keys: tuple[str, ...]) -> Match:
    raw = item.get(key)
    if not isinstance(raw, dict):
        raise ValueError(f"{key} is missing or not a mapping (use {{}} for any)")
    unknown = sorted(str(k) for k in raw if k not in keys)
    if unknown:
        raise ValueError(f"{key}: unknown key {unknown[0][:40]!r} (use {', '.join(keys)})")
    values = {k: raw.get(k, "") for k in keys}
    for k, v in values.items():
        if not isinstance(v, str) or len(v) > 200:
            raise ValueError(f"{key}.{k} is not a pattern of at most 200 characters")
    return Match(
        pane=str(values["pane"]),
        session=str(values["session"]),
        role=str(values["role"]),
        host=str(values.get("host", "")),
    )


def check_one_shot(when: int, now: int, others: Sequence[int], limits: Limits) -> None:
    """The interval floor for one-shots (`at`, `in`): not sooner than `min_interval` from now,
    and not within `min_interval` of another one-shot of the caller into the same pane, so a
    burst of one-shots is no way around the floor. A time in the past is the command line's
    to refuse, in its words."""
    if 0 <= when - now < limits.min_interval:
        raise Refusal(
            f"refused: a one-shot {when - now}s from now is sooner than rk mcp allows (at least {limits.min_interval}s)"
        )
    for other in others:
        if abs(other - when) < limits.min_interval:
            raise Refusal(
                f"refused: this pane already has a one-shot into that pane {abs(other - when)}s from this one "
                f"(at least {limits.min_interval}s apart)"
            )

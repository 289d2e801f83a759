"""Entries: the small YAML intents a person or an operator agent writes.

An entry says what to type (payload), where (target), when (schedule, and
optionally wake_on) and what to do when the agent is busy (deliver) or gone
(if_absent). Runtime facts (last fire, next fire, rung) are never stored here:
they are derived from the delivery log and the panes' state options.

This module is pure: one entry and its encoding. Decoding and validation live in
`rk.core.schedule.decoding`; reading and writing the file in `rk.store.entries`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from rk.core.cost.budget import Budget
from rk.core.durations import format_duration
from rk.core.errors import RkError
from rk.core.pane.identity import UNKNOWN_SERVER, ServerIdentity
from rk.core.schedule.hours import ActiveHours


class ScheduleKind(StrEnum):
    """How an entry comes due."""

    EVERY = "every"  #: fixed interval since the entry's newest log line
    BACKOFF = "backoff"  #: doubling ladder since the target's last genuine activity
    CRON = "cron"  #: wall-clock occurrences of a 5-field expression
    AT = "at"  #: once, at an instant; then the entry retires
    NONE = "none"  #: no schedule of its own: the entry fires on its wake_on event only (no `schedule:` key)


class WakeEvent(StrEnum):
    """What a wake_on entry reacts to."""

    AGENT_STATE_CHANGE = "agent-state-change"  #: another pane of the server became idle or waiting, or vanished
    LIMIT_RESET = "limit-reset"  #: the entry's own target left a usage limit and is at rest


class WakeFrom(StrEnum):
    """Whose turns an agent-state-change wake reacts to when they end at rest (`rk.core.log.cause`)."""

    HUMAN = "human"  #: not those rk's own fires started (their answers are no news); the default
    ANY = "any"  #: every turn's


class Deliver(StrEnum):
    """What a due fire does when the target agent is busy (active or waiting)."""

    IMMEDIATE = "immediate"  #: send anyway; the state is not read
    WHEN_IDLE = "when-idle"  #: hold (unlogged) until idle; expire after 2 h as held-expired
    SKIP_IF_BUSY = "skip-if-busy"  #: drop the fire and log skipped-busy
    #: interrupt this entry's own running turn, then send; else hold as when-idle (rk.core.schedule.replace)
    REPLACE = "replace"


def waits_when_busy(policy: Deliver) -> bool:
    """Whether the policy holds a fire for a busy pane (its cron grace is the 2-hour hold):
    `when-idle`, and `replace` (for a turn that is not its own)."""
    return policy in (Deliver.WHEN_IDLE, Deliver.REPLACE)


class IfAbsent(StrEnum):
    """What a due fire does when its target does not resolve to a live pane."""

    SKIP = "skip"  #: log skipped-absent
    NOTIFY = "notify"  #: tell the server's clients, log notified-absent
    RESPAWN = "respawn"  #: run the respawn argv, log respawned or respawn-failed


class OnTimeout(StrEnum):
    """What a turn past its turn_timeout does beyond the log line (`rk.core.cost.turn_timeout`)."""

    NOTIFY = "notify"  #: log `turn-timeout` and tell a human
    INTERRUPT = "interrupt"  #: and press the agent's interrupt key once


class TargetKind(StrEnum):
    """How an entry names its pane."""

    ROLE = "role"  #: the window whose @rk_win_role equals the role, then its agent pane
    SESSION = "session"  #: the pane whose @rk_pane_agent_session carries the ref
    PANE = "pane"  #: a tmux pane id, %N


WAKE_EVENT = WakeEvent.AGENT_STATE_CHANGE
WAKE_SCOPE = "server"
CATCH_UP_ONCE = "once"
#: What `add` writes when a flag leaves them out.
BACKOFF_MIN = 60  #: `--backoff` without `--min`
BACKOFF_MAX = 30 * 60  #: `--backoff` without `--max`
WAKE_DEBOUNCE = 60  #: `--wake-on` without `--wake-debounce`
#: Unanswered deliveries in a row after which an entry goes dormant (`rk.core.schedule.dormant`);
#: `--dormant-after off` (0) never; written to the file only when it is not this.
DORMANT_AFTER = 3
#: The word that turns dormancy off (`dormant_after: off`).
DORMANT_OFF = "off"


class EntryError(RkError, ValueError):
    """An entry that does not pass validation; the message is the user-facing gist."""


def catch_up_summary(catch_up: str, within: int) -> str:
    """` (catch-up once[ within 12h])`, or "" without a catch-up: the listing form."""
    if not catch_up:
        return ""
    return f" (catch-up {catch_up}{f' within {format_duration(within)}' if within else ''})"


def catch_up_fields(catch_up: str, within: int, duration: Callable[[int], str]) -> dict[str, object]:
    """The catch-up keys of a cron or at schedule (durations written by `duration`)."""
    out: dict[str, object] = {}
    if catch_up:
        out["catch_up"] = catch_up
    if within:
        out["catch_up_within"] = duration(within)
    return out


@dataclass(frozen=True)
class Every:
    """A fixed interval since the entry's newest log line (else its creation)."""

    interval: int  #: seconds
    kind: ClassVar[ScheduleKind] = ScheduleKind.EVERY

    @property
    def summary(self) -> str:
        return f"every {format_duration(self.interval)}"

    def to_yaml(self) -> dict[str, object]:
        return {"kind": str(self.kind), "interval": format_duration(self.interval)}


@dataclass(frozen=True)
class Backoff:
    """Gaps doubling from `min` to `max` since the target's last genuine activity."""

    min: int  #: seconds
    max: int  #: seconds
    kind: ClassVar[ScheduleKind] = ScheduleKind.BACKOFF

    @property
    def summary(self) -> str:
        return f"backoff {format_duration(self.min)}→{format_duration(self.max)}"

    def to_yaml(self) -> dict[str, object]:
        return {"kind": str(self.kind), "min": format_duration(self.min), "max": format_duration(self.max)}


@dataclass(frozen=True)
class Cron:
    """Wall-clock occurrences of a five-field expression in `tz` (else local time)."""

    expr: str
    tz: str = ""
    catch_up: str = ""  #: "" or `once`
    #: with `catch_up: once`: a missed occurrence fires only when at most this late (0: however late)
    catch_up_within: int = 0
    kind: ClassVar[ScheduleKind] = ScheduleKind.CRON

    @property
    def summary(self) -> str:
        text = f"cron {self.expr}"
        if self.tz:
            text += f" {self.tz}"
        return text + catch_up_summary(self.catch_up, self.catch_up_within)

    def to_yaml(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": str(self.kind), "expr": self.expr}
        if self.tz:
            out["tz"] = self.tz
        return out | catch_up_fields(self.catch_up, self.catch_up_within, format_duration)


@dataclass(frozen=True)
class At:
    """Once, at an instant (`--at 14:00`, `--in 30m`); the entry retires after its line."""

    at: int  #: unix seconds
    catch_up: str = ""  #: "" or `once`: fire late after downtime instead of `missed`
    catch_up_within: int = 0
    kind: ClassVar[ScheduleKind] = ScheduleKind.AT

    @property
    def summary(self) -> str:
        from datetime import UTC, datetime

        text = "at " + datetime.fromtimestamp(self.at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return text + catch_up_summary(self.catch_up, self.catch_up_within)

    def to_yaml(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": str(self.kind), "at": self.at}
        return out | catch_up_fields(self.catch_up, self.catch_up_within, format_duration)


class FreshMode(StrEnum):
    """What an entry's `fresh:` says: which command, and whether a human's turn withholds it."""

    CLEAR = "clear"
    COMPACT = "compact"
    CLEAR_ALWAYS = "clear-always"  #: even after a human's turn
    COMPACT_ALWAYS = "compact-always"

    @property
    def command(self) -> str:
        """The kind of command: `clear` or `compact`."""
        return self.value.removesuffix(ALWAYS)

    @property
    def always(self) -> bool:
        """Whether it is sent even when a human typed since the last fire."""
        return self.value.endswith(ALWAYS)


#: The suffix of a fresh mode that is sent even after a human's turn.
ALWAYS = "-always"


@dataclass(frozen=True)
class WakeOnly:
    """No schedule of its own (no `schedule:` key): the entry fires on its wake_on event."""

    kind: ClassVar[ScheduleKind] = ScheduleKind.NONE

    @property
    def summary(self) -> str:
        return "wake only"

    def to_yaml(self) -> dict[str, object]:
        return {}


#: One schedule, tagged by its class (and its `kind`).
Schedule = Every | Backoff | Cron | At | WakeOnly


@dataclass(frozen=True)
class WakeOn:
    """Fire when another pane on the server becomes idle or waiting, or vanishes.

    An event rk does not know keeps its text (`unknown-wake-event` at run time,
    never a fire), so a file written by a newer rk still loads."""

    event: WakeEvent | str = WAKE_EVENT
    scope: str = WAKE_SCOPE
    debounce: int = 0
    #: agent-state-change: whose ended turns wake it (`from:` in the file; written when not the default)
    from_: WakeFrom = WakeFrom.HUMAN

    def __post_init__(self) -> None:
        if self.event in WakeEvent.__members__.values():
            object.__setattr__(self, "event", WakeEvent(self.event))
        object.__setattr__(self, "from_", WakeFrom(self.from_))

    @property
    def from_human(self) -> bool:
        """Whether it lets pass the ends of turns rk started (`wake_from: human`)."""
        return self.event == WakeEvent.AGENT_STATE_CHANGE and self.from_ == WakeFrom.HUMAN

    def to_yaml(self) -> dict[str, object]:
        out: dict[str, object] = {"event": str(self.event), "scope": self.scope or WAKE_SCOPE}
        out["debounce"] = format_duration(self.debounce)
        if self.from_ != WakeFrom.HUMAN:
            out["from"] = str(self.from_)
        return out


@dataclass(frozen=True)
class Target:
    """Where the payload goes: a role, an agent session ref, or a pane id.

    A pane target also names the tmux server the pane id belongs to (`server`,
    see `rk.core.pane.identity`): after a restart the same id is another pane. It is
    written as `server_started`/`server_pid` beside `pane:`, keys the Go
    original's reader ignores; unknown (an older file) until a tick first sees
    the pane."""

    kind: TargetKind
    value: str
    server: ServerIdentity = UNKNOWN_SERVER

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TargetKind(self.kind))
        if self.kind != TargetKind.PANE:
            object.__setattr__(self, "server", UNKNOWN_SERVER)  # a role or session re-resolves on any server

    @property
    def summary(self) -> str:
        """`role:operator`, `session:<ref>`, `pane:%3`."""
        return f"{self.kind}:{self.value}"

    def to_yaml(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": str(self.kind), str(self.kind): self.value}
        if self.server.started:
            out["server_started"] = self.server.started
        if self.server.pid:
            out["server_pid"] = self.server.pid
        return out


@dataclass(frozen=True)
class CreatedBy:
    """Who created the entry and when; `at` anchors every/cron before the first log line."""

    at: int = 0
    session: str = ""
    pane: str = ""
    via: str = ""  #: "" (the command line) or `mcp` (`rk mcp`, whose owner checks read it)

    def to_yaml(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.session:
            out["session"] = self.session
        if self.pane:
            out["pane"] = self.pane
        if self.via:
            out["via"] = self.via
        out["at"] = self.at
        return out


@dataclass(frozen=True)
class Entry:
    """One scheduled intent. `deliver` and `if_absent` are None when the file
    does not say (then immediate and skip)."""

    id: str
    schedule: Schedule
    target: Target
    payload: str = ""
    name: str = ""
    deliver: Deliver | None = None
    if_absent: IfAbsent | None = None
    respawn: tuple[str, ...] = ()
    wake_on: WakeOn | None = None
    pinned: bool = False
    #: type into a program rk does not know as an agent (a REPL, a TUI); never a shell
    any_program: bool = False
    muted: bool = False
    muted_until: int = 0
    #: the times of day it may fire, in its zone (None: any time)
    active_hours: ActiveHours | None = None
    #: skip a fire when nothing changed since the last answer (`rk.core.cost.unchanged`): "", pane, scope
    only_if_changed: str = ""
    # caps (rk.core.cost.caps): deliveries a local day in its zone, and in all; 0: none
    max_per_day: int = 0
    max_total: int = 0
    #: seconds a turn this entry's delivery started may stay busy (0: not watched), and then what
    turn_timeout: int = 0
    on_timeout: OnTimeout | None = None
    #: tokens per local day its deliveries may spend (the agent's own records say how many they did)
    budget: Budget | None = None
    #: a failed delivery is tried again this many times (0: never), `retry_after` seconds apart
    #: (0: `rk.core.schedule.retry.DEFAULT_AFTER`)
    retry: int = 0
    retry_after: int = 0
    #: the CLI's /clear or /compact before each fire's payload (`rk.core.schedule.fresh`); None: none
    fresh: FreshMode | None = None
    #: unanswered deliveries in a row before it goes dormant (`rk.core.schedule.dormant`; 0: never)
    dormant_after: int = DORMANT_AFTER
    created_by: CreatedBy = field(default_factory=CreatedBy)
    #: the entry whose fire started the turn that made this one; rk writes it (`rk.core.schedule.lineage`)
    parent: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "deliver", Deliver(self.deliver) if self.deliver else None)
        object.__setattr__(self, "if_absent", IfAbsent(self.if_absent) if self.if_absent else None)
        object.__setattr__(self, "respawn", tuple(str(a) for a in self.respawn))
        object.__setattr__(self, "on_timeout", OnTimeout(self.on_timeout) if self.on_timeout else None)
        object.__setattr__(self, "fresh", FreshMode(self.fresh) if self.fresh else None)

    @property
    def policy(self) -> Deliver:
        """The deliver policy; unset means immediate."""
        return self.deliver or Deliver.IMMEDIATE

    @property
    def absent_policy(self) -> IfAbsent:
        """The if_absent policy; unset means skip."""
        return self.if_absent or IfAbsent.SKIP

    @property
    def timeout_policy(self) -> OnTimeout:
        """The on_timeout policy; unset means notify."""
        return self.on_timeout or OnTimeout.NOTIFY

    @property
    def turn_timeout_text(self) -> str:
        return format_duration(self.turn_timeout) if self.turn_timeout else ""

    @property
    def timeout_summary(self) -> str:
        """`20m, then notify`, `1m, then interrupt`, or "" when the entry watches no turn."""
        return f"{self.turn_timeout_text}, then {self.timeout_policy}" if self.turn_timeout else ""

    @property
    def label(self) -> str:
        """The name if there is one, else the id."""
        return self.name or self.id

    def is_muted(self, now: int) -> bool:
        """Effective mute: the flag, or a lease that has not lapsed (`now < muted_until`)."""
        return self.muted or (self.muted_until > 0 and now < self.muted_until)

    def to_yaml(self) -> dict[str, object]:
        """The on-disk mapping in the canonical key order (only intent fields)."""
        out: dict[str, object] = {"id": self.id}
        if self.name:
            out["name"] = self.name
        if not isinstance(self.schedule, WakeOnly):
            out["schedule"] = self.schedule.to_yaml()
        if self.wake_on is not None:
            out["wake_on"] = self.wake_on.to_yaml()
        out["target"] = self.target.to_yaml()
        out["payload"] = self.payload
        if self.deliver:
            out["deliver"] = str(self.deliver)
        if self.if_absent:
            out["if_absent"] = str(self.if_absent)
        if self.respawn:
            out["respawn"] = list(self.respawn)
        if self.pinned:
            out["pinned"] = True
        if self.any_program:
            out["any_program"] = True
        if self.muted:
            out["muted"] = True
        if self.muted_until:
            out["muted_until"] = self.muted_until
        if self.active_hours is not None:
            out["active_hours"] = self.active_hours.text
        if self.only_if_changed:
            out["only_if_changed"] = self.only_if_changed
        out |= {key: n for key, n in (("max_per_day", self.max_per_day), ("max_total", self.max_total)) if n}
        if self.turn_timeout:
            out["turn_timeout"] = format_duration(self.turn_timeout)
            if self.on_timeout:
                out["on_timeout"] = str(self.on_timeout)
        if self.budget is not None:
            out["budget"] = self.budget.text
        if self.retry:
            out["retry"] = self.retry
            if self.retry_after:
                out["retry_after"] = format_duration(self.retry_after)
        if self.fresh is not None:
            out["fresh"] = str(self.fresh)
        if self.dormant_after != DORMANT_AFTER:
            out["dormant_after"] = self.dormant_after or DORMANT_OFF
        out["created_by"] = self.created_by.to_yaml()
        if self.parent:
            out["parent"] = self.parent
        return out

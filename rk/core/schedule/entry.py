"""Entries: the small YAML intents a person or an operator agent writes.

An entry says what to type (payload), where (target), when (schedule, and
optionally wake_on) and what to do when the agent is busy (deliver) or gone
(if_absent). Runtime facts (last fire, next fire, rung) are never stored here:
they are derived from the delivery log and the panes' state options.

This module is pure: decoding, validation and encoding of one entry. Reading
and writing the file lives in `rk.store.entries`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import ClassVar

from rk.core import bounds
from rk.core.cost.unchanged import MODES, PANE, SCOPE
from rk.core.cost.usage import Budget, BudgetError
from rk.core.durations import DurationError, format_duration, parse_duration
from rk.core.environ import ClockError, is_pane_id, parse_instant
from rk.core.errors import RkError
from rk.core.pane.identity import UNKNOWN_SERVER, ServerIdentity
from rk.core.schedule.cronexpr import CronError, CronExpr, zone_for
from rk.core.schedule.grace import late_window, late_window_words
from rk.core.schedule.hours import ActiveHours, HoursError


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


class Deliver(StrEnum):
    """What a due fire does when the target agent is busy (active or waiting)."""

    IMMEDIATE = "immediate"  #: send anyway; the state is not read
    WHEN_IDLE = "when-idle"  #: hold (unlogged) until idle; expire after 2 h as held-expired
    SKIP_IF_BUSY = "skip-if-busy"  #: drop the fire and log skipped-busy


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

_ENTRY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


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

    def __post_init__(self) -> None:
        if self.event in WakeEvent.__members__.values():
            object.__setattr__(self, "event", WakeEvent(self.event))

    def to_yaml(self) -> dict[str, object]:
        return {"event": str(self.event), "scope": self.scope or WAKE_SCOPE, "debounce": format_duration(self.debounce)}


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
    created_by: CreatedBy = field(default_factory=CreatedBy)

    def __post_init__(self) -> None:
        object.__setattr__(self, "deliver", Deliver(self.deliver) if self.deliver else None)
        object.__setattr__(self, "if_absent", IfAbsent(self.if_absent) if self.if_absent else None)
        object.__setattr__(self, "respawn", tuple(str(a) for a in self.respawn))
        object.__setattr__(self, "on_timeout", OnTimeout(self.on_timeout) if self.on_timeout else None)

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
        out["created_by"] = self.created_by.to_yaml()
        return out


# --------------------------------------------------------------------------- decoding


def _duration(value: object, what: str) -> int:
    try:
        return parse_duration(value)
    except DurationError as exc:
        raise EntryError(f"{what}: {exc}") from None


def _text(value: object, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise EntryError(f"{what} must be text")
    return str(value)


def _int(value: object, what: str) -> int:
    """Unix seconds, 0 when absent; EntryError outside 0…year 9999."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise EntryError(f"{what} must be an integer (unix seconds)")
    try:
        return bounds.epoch(int(value), what)
    except bounds.OutOfRange as exc:
        raise EntryError(str(exc)) from None


def _bool(value: object, what: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise EntryError(f"{what} must be true or false")
    return value


def _mapping(value: object, what: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise EntryError(f"{what} must be a mapping")
    return value


def decode_schedule(raw: object) -> Schedule:
    """Decode and validate a `schedule:` mapping."""
    if raw is None:
        raise EntryError("missing schedule kind")
    m = _mapping(raw, "schedule")
    kind = _text(m.get("kind"), "schedule kind")
    if not kind:
        raise EntryError("missing schedule kind")
    if kind == ScheduleKind.EVERY:
        interval = _duration(m.get("interval"), "every interval") if m.get("interval") is not None else 0
        if interval <= 0:
            raise EntryError("every schedule needs a positive interval")
        sched: Schedule = Every(interval)
    elif kind == ScheduleKind.BACKOFF:
        lo = _duration(m.get("min"), "backoff min") if m.get("min") is not None else 0
        if lo <= 0:
            raise EntryError("backoff schedule needs a positive min")
        hi = _duration(m.get("max"), "backoff max") if m.get("max") is not None else 0
        if hi < lo:
            raise EntryError("backoff max must be ≥ min")
        sched = Backoff(lo, hi)
    elif kind == ScheduleKind.CRON:
        expr = _text(m.get("expr"), "cron expr").strip()
        try:
            CronExpr.parse(expr)
        except CronError as exc:
            raise EntryError(f"cron expression {expr!r} does not parse: {exc}") from None
        tz = _text(m.get("tz"), "cron tz").strip()
        if tz:
            try:
                zone_for(tz)
            except CronError as exc:
                raise EntryError(str(exc)) from None
        sched = Cron(expr, tz)
    elif kind == ScheduleKind.AT:
        raw_at = m.get("at")
        if isinstance(raw_at, str):  # a hand-written ISO-8601 instant reads too
            try:
                at = parse_instant(raw_at)
            except ClockError as exc:
                raise EntryError(f"at: {exc}") from None
        else:
            at = _int(raw_at, "at")
        if at <= 0:
            raise EntryError("at schedule needs an instant (unix seconds or ISO-8601 with an offset)")
        sched = At(at)
    else:
        raise EntryError(f"unknown schedule kind {kind!r}")
    catch_up = _text(m.get("catch_up"), "catch_up")
    if catch_up:
        if not isinstance(sched, Cron | At):
            raise EntryError("catch_up only applies to cron and at schedules")
        if catch_up != CATCH_UP_ONCE:
            raise EntryError(f"catch_up must be 'once', not {catch_up!r}")
        sched = replace(sched, catch_up=catch_up)
    if m.get("catch_up_within") is not None:
        if not isinstance(sched, Cron | At) or not sched.catch_up:
            raise EntryError("catch_up_within only applies with catch_up: once")
        within = _duration(m.get("catch_up_within"), "catch_up_within")
        if within <= 0:
            raise EntryError("catch_up_within must be a positive duration")
        sched = replace(sched, catch_up_within=within)
    return sched


def decode_target(raw: object) -> Target:
    """Decode and validate a `target:` mapping."""
    if raw is None:
        raise EntryError("missing target")
    m = _mapping(raw, "target")
    kind = _text(m.get("kind"), "target kind")
    if kind == TargetKind.ROLE:
        value = _text(m.get("role"), "role").strip()
        if not value:
            raise EntryError("role target needs a role")
    elif kind == TargetKind.SESSION:
        value = _text(m.get("session"), "session").strip()
        if not value:
            raise EntryError("session target needs a session id")
    elif kind == TargetKind.PANE:
        value = _text(m.get("pane"), "pane").strip()
        if not is_pane_id(value):
            raise EntryError("pane target needs a %N pane id")
        return Target(TargetKind.PANE, value, decode_server(m))
    elif not kind:
        raise EntryError("missing target kind")
    else:
        raise EntryError(f"unknown target kind {kind!r}")
    return Target(kind=TargetKind(kind), value=value)


def decode_server(m: Mapping[str, object]) -> ServerIdentity:
    """A pane target's `server_started`/`server_pid` (absent: not known yet)."""
    started = _int(m.get("server_started"), "target server_started")
    pid = m.get("server_pid")
    if pid is None:
        return ServerIdentity(started, 0)
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise EntryError("target server_pid must be an integer (a process id)")
    try:
        return ServerIdentity(started, bounds.pid(pid, "target server_pid"))
    except bounds.OutOfRange as exc:
        raise EntryError(str(exc)) from None


def decode_wake_on(raw: object) -> WakeOn | None:
    """Decode `wake_on:`. The event is not validated here: an unknown event is a
    runtime diagnostic (`unknown-wake-event`), never a fire, so old files still load."""
    if raw is None:
        return None
    m = _mapping(raw, "wake_on")
    debounce_raw = m.get("debounce")
    debounce = _duration(debounce_raw, "wake_on debounce") if debounce_raw is not None else 0
    return WakeOn(
        event=_text(m.get("event"), "wake_on event"),
        scope=_text(m.get("scope"), "wake_on scope") or WAKE_SCOPE,
        debounce=debounce,
    )


def decode_respawn(raw: object) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)):
        raise EntryError("respawn must be a list of strings (argv)")
    argv = tuple(_text(x, "respawn element") for x in raw)
    if not argv:
        raise EntryError("respawn needs at least one element")
    if not argv[0]:
        raise EntryError("respawn argv[0] must not be empty")
    return argv


def decode_entry(raw: object) -> Entry:
    """Decode one element of the `entries:` list, validating in the Go original's order.

    Unknown keys are ignored (the file keeps them; see `rk.store.entries`).
    """
    if not isinstance(raw, Mapping):
        raise EntryError("entry must be a mapping")
    entry_id = _text(raw.get("id"), "id").strip()
    if not entry_id:
        raise EntryError("missing id")
    if not _ENTRY_ID.match(entry_id):
        raise EntryError(f"id {entry_id!r} must be letters, digits, '.', '_' or '-'")
    if raw.get("schedule") is None and raw.get("wake_on") is not None:
        schedule: Schedule = WakeOnly()  # fires on its wake event only
    else:
        schedule = decode_schedule(raw.get("schedule"))
    deliver = _text(raw.get("deliver"), "deliver")
    if deliver and deliver not in Deliver.__members__.values():
        raise EntryError(f"unknown deliver value {deliver!r}")
    if_absent = _text(raw.get("if_absent"), "if_absent")
    if if_absent not in IfAbsent.__members__.values():
        if_absent = ""  # the original never checked it: an unknown value skips (the file keeps its text)
    target = decode_target(raw.get("target"))
    respawn = decode_respawn(raw.get("respawn"))
    created = raw.get("created_by")
    if created is None:
        created_by = CreatedBy()
    else:
        cm = _mapping(created, "created_by")
        created_by = CreatedBy(
            at=_int(cm.get("at"), "created_by.at"),
            session=_text(cm.get("session"), "created_by.session"),
            pane=_text(cm.get("pane"), "created_by.pane"),
            via=_text(cm.get("via"), "created_by.via"),
        )
    timeout, on_timeout = decode_turn_timeout(raw)
    problem = catch_up_window_problem(schedule, Deliver(deliver) if deliver else Deliver.IMMEDIATE)
    if problem:
        raise EntryError(f"catch_up_within {problem}")
    return Entry(
        id=entry_id,
        name=_text(raw.get("name"), "name"),
        schedule=schedule,
        target=target,
        payload=_text(raw.get("payload"), "payload"),
        deliver=Deliver(deliver) if deliver else None,
        if_absent=IfAbsent(if_absent) if if_absent else None,
        respawn=respawn,
        wake_on=decode_wake_on(raw.get("wake_on")),
        pinned=_bool(raw.get("pinned"), "pinned"),
        any_program=_bool(raw.get("any_program"), "any_program"),
        muted=_bool(raw.get("muted"), "muted"),
        muted_until=_int(raw.get("muted_until"), "muted_until"),
        active_hours=decode_active_hours(raw.get("active_hours")),
        only_if_changed=decode_only_if_changed(raw.get("only_if_changed"), raw.get("wake_on") is not None),
        max_per_day=decode_cap(raw.get("max_per_day"), "max_per_day"),
        max_total=decode_cap(raw.get("max_total"), "max_total"),
        turn_timeout=timeout,
        on_timeout=on_timeout,
        budget=decode_budget(raw.get("budget")),
        created_by=created_by,
    )


def decode_cap(value: object, what: str) -> int:
    """A cap (`max_per_day`, `max_total`): a positive whole number, 0 when absent."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise EntryError(f"{what} must be a whole number")
    try:
        return bounds.cap(value, what)
    except bounds.OutOfRange as exc:
        raise EntryError(str(exc)) from None


def decode_turn_timeout(raw: Mapping[str, object]) -> tuple[int, OnTimeout | None]:
    """`turn_timeout` (a positive duration) and `on_timeout` (notify|interrupt, only with it)."""
    timeout = 0
    if raw.get("turn_timeout") is not None:
        timeout = _duration(raw.get("turn_timeout"), "turn_timeout")
        if timeout <= 0:
            raise EntryError("turn_timeout must be a positive duration")
    policy = _text(raw.get("on_timeout"), "on_timeout")
    if not policy:
        return timeout, None
    if policy not in OnTimeout.__members__.values():
        raise EntryError(f"on_timeout must be notify or interrupt, not {policy!r}")
    if not timeout:
        raise EntryError("on_timeout needs turn_timeout")
    return timeout, OnTimeout(policy)


def catch_up_window_problem(schedule: Schedule, policy: Deliver) -> str:
    """Why a catch-up window does nothing ("" when it does something): one no longer
    than the grace (when-idle's hold) lets through only fires that fire anyway."""
    within = getattr(schedule, "catch_up_within", 0)
    when_idle = policy == Deliver.WHEN_IDLE
    if not within or within > late_window(when_idle):
        return ""
    return f"{format_duration(within)} is within {late_window_words(when_idle)}, so it would do nothing"


def decode_budget(raw: object) -> Budget | None:
    """`budget: 2M/day`; absent or empty: none."""
    if raw is None or raw == "":
        return None
    try:
        return Budget.parse(raw)
    except BudgetError as exc:
        raise EntryError(str(exc)) from None


def decode_active_hours(raw: object) -> ActiveHours | None:
    text = _text(raw, "active_hours").strip()
    if not text:
        return None
    try:
        return ActiveHours.parse(text)
    except HoursError as exc:
        raise EntryError(str(exc)) from None


def decode_only_if_changed(raw: object, wakes: bool) -> str:
    """`only_if_changed`: `pane` (also `true`), `scope` (a wake_on entry only), or off
    (absent, `false`); anything else refuses the entry."""
    if raw is None or raw is False:
        return ""
    value = PANE if raw is True else _text(raw, "only_if_changed").strip()
    if value not in MODES:
        raise EntryError(f"only_if_changed must be pane or scope, not {value!r}")
    if value == SCOPE and not wakes:
        raise EntryError("only_if_changed scope needs wake_on (the panes it watches)")
    return value


def check_respawn_intent(entry: Entry) -> None:
    """Add/edit-time rule: respawn on a role or pane target needs a command.

    Not part of `decode_entry`, so hand-edited legacy files still load.
    """
    if entry.if_absent == IfAbsent.RESPAWN and not entry.respawn and entry.target.kind != TargetKind.SESSION:
        raise EntryError("if_absent respawn requires a respawn command — only session targets have a default (resume)")

"""Entries read from their YAML mapping, validated as they are read.

`decode_entry` refuses an entry with the message a person fixes it by; the
words a field takes come from the field table (`rk.core.schedule.fields`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from rk.core import bounds
from rk.core.cost.budget import Budget, BudgetError
from rk.core.cost.only_if_changed import PANE, SCOPE
from rk.core.durations import DurationError, format_duration, parse_duration
from rk.core.environ import ClockError, is_pane_id, parse_instant
from rk.core.pane.identity import ServerIdentity
from rk.core.pane.payload import hidden
from rk.core.schedule import sources
from rk.core.schedule.cronexpr import CronError, CronExpr, zone_for
from rk.core.schedule.entry import (
    DORMANT_AFTER,
    DORMANT_OFF,
    WAKE_SCOPE,
    At,
    Backoff,
    CreatedBy,
    Cron,
    Deliver,
    Entry,
    EntryError,
    Every,
    FreshMode,
    IfAbsent,
    OnTimeout,
    Schedule,
    ScheduleKind,
    Target,
    TargetKind,
    WakeEvent,
    WakeFrom,
    WakeOn,
    WakeOnly,
    waits_when_busy,
)
from rk.core.schedule.fields import BY_KEY
from rk.core.schedule.grace import late_window, late_window_words
from rk.core.schedule.hours import ActiveHours, HoursError
from rk.core.schedule.retry import MAX_RETRIES

_ENTRY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _either(key: str) -> str:
    """`pane or scope`: the words a choice field takes, as a refusal names them."""
    return " or ".join(BY_KEY[key].choices)


def _duration(value: object, what: str) -> int:
    if isinstance(value, str):
        _text(value, what)  # bounded before it is parsed (and perhaps quoted)
    try:
        return parse_duration(value)
    except DurationError as exc:
        raise EntryError(f"{what}: {exc}") from None


def _text(value: object, what: str, most: int = bounds.MAX_WORD) -> str:
    """The text of a scalar, at most `most` characters (a longer one refuses the entry,
    quoting a short prefix), "" when absent."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise EntryError(f"{what} must be text")
    try:
        return bounds.text(str(value), what, most)
    except bounds.OutOfRange as exc:
        raise EntryError(str(exc)) from None


def _field(raw: Mapping[str, object], key: str, field: str, what: str = "") -> str:
    """`raw[key]` as text, within the bound the field table gives `field`."""
    return _text(raw.get(key), what or key, BY_KEY[field].most)


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
        expr = _field(m, "expr", "cron", "cron expr").strip()
        try:
            CronExpr.parse(expr)
        except CronError as exc:
            raise EntryError(f"cron expression {bounds.quote(expr)} does not parse: {exc}") from None
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
        raise EntryError(f"unknown schedule kind {bounds.quote(kind)}")
    catch_up = _text(m.get("catch_up"), "catch_up")
    if catch_up:
        if not isinstance(sched, Cron | At):
            raise EntryError("catch_up only applies to cron and at schedules")
        if catch_up not in BY_KEY["catch_up"].choices:
            raise EntryError(f"catch_up must be 'once', not {bounds.quote(catch_up)}")
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
        value = _field(m, "role", "role").strip()
        if not value:
            raise EntryError("role target needs a role")
    elif kind == TargetKind.SESSION:
        value = _field(m, "session", "session").strip()
        if not value:
            raise EntryError("session target needs a session id")
    elif kind == TargetKind.PANE:
        value = _field(m, "pane", "pane").strip()
        if not is_pane_id(value):
            raise EntryError("pane target needs a %N pane id")
        return Target(TargetKind.PANE, value, decode_server(m))
    elif not kind:
        raise EntryError("missing target kind")
    else:
        raise EntryError(f"unknown target kind {bounds.quote(kind)}")
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
    event = _field(m, "event", "wake_on", "wake_on event")
    sources.check_event(event)  # signal:NAME, file:PATH (rk.core.schedule.world)
    return WakeOn(
        event=event,
        scope=_text(m.get("scope"), "wake_on scope") or WAKE_SCOPE,
        debounce=debounce,
        from_=decode_wake_from(m.get("from"), event),
    )


def decode_wake_from(raw: object, event: str) -> WakeFrom:
    """`wake_on.from`: `human` (also when absent) or `any`, for agent-state-change only."""
    if raw is None:
        return WakeFrom.HUMAN
    value = _text(raw, "wake_on from").strip()
    if value not in BY_KEY["wake_from"].choices:
        raise EntryError(f"wake_on from must be {_either('wake_from')}, not {bounds.quote(value)}")
    if event == WakeEvent.LIMIT_RESET:
        raise EntryError("wake_on from applies to agent-state-change (limit-reset watches the target only)")
    return WakeFrom(value)


def decode_respawn(raw: object) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)):
        raise EntryError("respawn must be a list of strings (argv)")
    if len(raw) > bounds.MAX_ARGS:
        raise EntryError(f"respawn has {len(raw):,} elements: at most {bounds.MAX_ARGS}")
    argv = tuple(_text(x, "respawn element", BY_KEY["respawn"].most) for x in raw)
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
        raise EntryError(f"id {bounds.quote(entry_id)} must be 1 to 64 letters, digits, '.', '_' or '-'")
    if raw.get("schedule") is None and raw.get("wake_on") is not None:
        schedule: Schedule = WakeOnly()  # fires on its wake event only
    else:
        schedule = decode_schedule(raw.get("schedule"))
    deliver = _text(raw.get("deliver"), "deliver")
    if deliver and deliver not in BY_KEY["deliver"].choices:
        raise EntryError(f"unknown deliver value {bounds.quote(deliver)}")
    if_absent = _text(raw.get("if_absent"), "if_absent")
    if if_absent not in BY_KEY["if_absent"].choices:
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
            session=_field(cm, "session", "session", "created_by.session"),
            pane=_field(cm, "pane", "pane", "created_by.pane"),
            via=_text(cm.get("via"), "created_by.via"),
        )
    timeout, on_timeout = decode_turn_timeout(raw)
    problem = catch_up_window_problem(schedule, Deliver(deliver) if deliver else Deliver.IMMEDIATE)
    if problem:
        raise EntryError(f"catch_up_within {problem}")
    if why := hidden(str(raw.get("payload") or "")):
        raise EntryError(why)
    return Entry(
        id=entry_id,
        name=_field(raw, "name", "name"),
        schedule=schedule,
        target=target,
        payload=_field(raw, "payload", "prompt"),
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
        **decode_retry(raw),
        fresh=decode_fresh(raw.get("fresh")),
        dormant_after=DORMANT_AFTER if raw.get("dormant_after") is None else parse_dormant_after(raw["dormant_after"]),
        created_by=created_by,
        parent=_text(raw.get("parent"), "parent", bounds.MAX_WORD).strip(),
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


def decode_retry(raw: Mapping[str, object]) -> dict[str, int]:
    """`retry` (1…MAX_RETRIES, `rk.core.schedule.retry`) and `retry_after` (a positive
    duration, only with it): the Entry's keyword arguments."""
    count, wait = raw.get("retry"), raw.get("retry_after")
    if count is None:
        if wait is not None:
            raise EntryError("retry_after needs retry")
        return {}
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RETRIES:
        raise EntryError(f"retry must be a whole number from 1 to {MAX_RETRIES}")
    seconds = 0 if wait is None else _duration(wait, "retry_after")
    if wait is not None and seconds <= 0:
        raise EntryError("retry_after must be a positive duration")
    return {"retry": count, "retry_after": seconds}


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
    if policy not in BY_KEY["on_timeout"].choices:
        raise EntryError(f"on_timeout must be {_either('on_timeout')}, not {bounds.quote(policy)}")
    if not timeout:
        raise EntryError("on_timeout needs turn_timeout")
    return timeout, OnTimeout(policy)


def decode_fresh(value: object) -> FreshMode | None:
    """`fresh` (`rk.core.schedule.fresh`): clear, compact, clear-always or compact-always."""
    word = _text(value, "fresh")
    if not word:
        return None
    if word not in BY_KEY["fresh"].choices:
        raise EntryError(f"fresh must be {_either('fresh')}, not {bounds.quote(word)}")
    return FreshMode(word)


def catch_up_window_problem(schedule: Schedule, policy: Deliver) -> str:
    """Why a catch-up window does nothing ("" when it does something): one no longer
    than the grace (when-idle's hold) lets through only fires that fire anyway."""
    within = getattr(schedule, "catch_up_within", 0)
    when_idle = waits_when_busy(policy)  # when-idle, and replace for a turn not its own
    if not within or within > late_window(when_idle):
        return ""
    return f"{format_duration(within)} is within {late_window_words(when_idle)}, so it would do nothing"


def decode_budget(raw: object) -> Budget | None:
    """`budget: 2M/day`; absent or empty: none."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        _text(raw, "budget")
    try:
        return Budget.parse(raw)
    except BudgetError as exc:
        raise EntryError(str(exc)) from None


def decode_active_hours(raw: object) -> ActiveHours | None:
    text = _text(raw, "active_hours", BY_KEY["active_hours"].most).strip()
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
    if value not in BY_KEY["only_if_changed"].choices:
        raise EntryError(f"only_if_changed must be {_either('only_if_changed')}, not {bounds.quote(value)}")
    if value == SCOPE and not wakes:
        raise EntryError("only_if_changed scope needs wake_on (the panes it watches)")
    return value


def check_respawn_intent(entry: Entry) -> None:
    """Add/edit-time rule: respawn on a role or pane target needs a command.

    Not part of `decode_entry`, so hand-edited legacy files still load.
    """
    if entry.if_absent == IfAbsent.RESPAWN and not entry.respawn and entry.target.kind != TargetKind.SESSION:
        raise EntryError("if_absent respawn requires a respawn command — only session targets have a default (resume)")


#: The most unanswered deliveries `dormant_after` may name (`rk.core.schedule.dormant`).
DORMANT_MOST = 1000


def parse_dormant_after(value: object, what: str = "dormant_after") -> int:
    """`3`, `"3"`, `off` (also `0`, false) → the count (0: never); EntryError otherwise."""
    if value is False or (isinstance(value, str) and value.strip().lower() == DORMANT_OFF):
        return 0
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise EntryError(f"{what} must be a whole number or {DORMANT_OFF}")
    if not 0 <= value <= DORMANT_MOST:
        raise EntryError(f"{what} must be a whole number between 1 and {DORMANT_MOST}, or {DORMANT_OFF}")
    return value

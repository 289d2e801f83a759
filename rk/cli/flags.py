"""Flags → values: schedules, targets, wake_on, durations and choices.

Every refusal is a usage error naming the flag, raised before any file is
touched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, tzinfo
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from rk.cli.environment import usage
from rk.core.bounds import quote
from rk.core.cost.budget import Budget, BudgetError
from rk.core.cost.only_if_changed import SCOPE
from rk.core.durations import DurationError, missing_unit, parse_duration
from rk.core.environ import is_pane_id
from rk.core.schedule.cronexpr import CronError, CronExpr, wall_instants, zone_for
from rk.core.schedule.entry import (
    BACKOFF_MAX,
    BACKOFF_MIN,
    CATCH_UP_ONCE,
    WAKE_DEBOUNCE,
    WAKE_SCOPE,
    At,
    Backoff,
    Cron,
    Entry,
    EntryError,
    Every,
    OnTimeout,
    Schedule,
    Target,
    TargetKind,
    WakeEvent,
    WakeFrom,
    WakeOn,
)
from rk.core.schedule.fields import BY_KEY
from rk.core.schedule.grace import CRON_GRACE
from rk.core.schedule.hours import ActiveHours, HoursError
from rk.core.schedule.ladder import POLL
from rk.core.schedule.sources import event_flag, source_of
from rk.core.suggest import did_you_mean, known_list

if TYPE_CHECKING:
    from rk.cli.entry_flags import EntryFlags

E = TypeVar("E", bound=StrEnum)

#: `wake_from_flags` for `--wake-on none|off` (edit: remove the wake_on).
WAKE_OFF = "off"
_WAKE_OFF_WORDS = BY_KEY["wake_on"].off

_SCHEDULE_FLAGS = "--every, --idle-every, --backoff, --cron, --at or --in"


def duration(flag: str, value: str, allow_zero: bool = False) -> int:
    try:
        seconds = parse_duration(value)
    except DurationError as exc:
        raise usage(f"{flag}: {exc}") from None
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise usage(f"{flag} must be positive")
    return seconds


def schedule_from_flags(
    flags: EntryFlags,
    *,
    required: bool,
    note: Callable[[str], None],
    poll: int = POLL,
    now: int = 0,
    zone: tzinfo = UTC,
) -> Schedule | None:
    """The schedule the flags name (None: none given and none `required`); `note` gets
    the remarks for humans (a backoff step shorter than the ticker's `poll`). `--at`
    and `--in` read against `now`, an `--at 14:00` on `zone`'s wall clock."""
    every, idle_every, backoff, lo, hi = flags.every, flags.idle_every, flags.backoff, flags.lo, flags.hi
    cron, catch_up, tz, catch_up_within = flags.cron, flags.catch_up, flags.tz, flags.catch_up_within
    at, in_ = flags.at, flags.in_
    named = (
        ("--every", every),
        ("--idle-every", idle_every),
        ("--backoff", backoff),
        ("--cron", cron),
        ("--at", at),
        ("--in", in_),
    )
    chosen = [name for name, on in named if on]
    if (lo or hi) and not backoff:
        raise usage("--min/--max only apply with --backoff")
    if catch_up is not None and cron is None and at is None and in_ is None:
        raise usage("--catch-up only applies with --cron, --at or --in")
    if catch_up_within is not None and catch_up != CATCH_UP_ONCE:
        raise usage("--catch-up-within only applies with --catch-up once")
    if tz is not None and cron is None:
        raise usage("--tz only applies with --cron")
    if tz is not None:
        plain("--tz", tz)
    if cron is not None:
        plain("--cron", cron, spaces=True)
    if at is not None:
        plain("--at", at)
    if len(chosen) > 1:
        raise usage(
            f"{chosen[0]} and {chosen[1]} cannot go together: exactly one schedule flag is required"
            f" ({_SCHEDULE_FLAGS}); keep one of them"
        )
    if not chosen:
        if required:
            raise usage(f"exactly one schedule flag is required: {_SCHEDULE_FLAGS} (or --wake-on alone)")
        return None
    if at is not None or in_ is not None:
        if catch_up is not None and catch_up != CATCH_UP_ONCE:
            raise usage(f"--catch-up only accepts '{CATCH_UP_ONCE}'")
        when = now + duration("--in", in_) if in_ is not None else at_instant(at or "", now, zone)
        within = _catch_up_within(catch_up_within)
        return At(when, catch_up or "", within)
    if every:
        return Every(interval=duration("--every", every))
    if idle_every:
        d = duration("--idle-every", idle_every)
        _note_short_rung(d, poll, note)
        return Backoff(min=d, max=d)
    if backoff:
        mn = duration("--min", lo) if lo else BACKOFF_MIN
        mx = duration("--max", hi) if hi else BACKOFF_MAX
        if mx < mn:
            raise usage("--max must be ≥ --min")
        _note_short_rung(mn, poll, note)
        return Backoff(min=mn, max=mx)
    expr = (cron or "").strip()
    if len(expr.split()) != 5:
        raise usage(
            f"--cron needs exactly 5 fields (minute hour day-of-month month day-of-week), got {len(expr.split())}"
        )
    try:
        CronExpr.parse(expr)
    except CronError as exc:
        raise usage(f"--cron: {exc}") from None
    if catch_up is not None and catch_up != CATCH_UP_ONCE:
        raise usage(f"--catch-up only accepts '{CATCH_UP_ONCE}'")
    if tz:
        try:
            zone_for(tz)
        except CronError as exc:
            raise usage(str(exc)) from None
    within = _catch_up_within(catch_up_within)
    return Cron(expr=" ".join(expr.split()), catch_up=catch_up or "", tz=tz or "", catch_up_within=within)


#: `active_hours_from_flag` for `--active-hours none|off` (edit: remove them).
HOURS_OFF = "off"


def active_hours_from_flag(value: str | None, allow_off: bool) -> ActiveHours | str | None:
    """The `--active-hours` value: the hours, HOURS_OFF (edit), or None when not given."""
    if value is None:
        return None
    if any(not c.isprintable() and c != " " for c in value):  # spaces are read, a newline or NUL is odd
        raise usage(f"--active-hours {quote(value)}: no control characters allowed")
    if allow_off and value.strip().lower() in BY_KEY["active_hours"].off:
        return HOURS_OFF
    try:
        return ActiveHours.parse(value)
    except HoursError as exc:
        raise usage(f"--active-hours: {exc}") from None


#: `budget_from_flag` for `--budget off` (edit: remove it).
BUDGET_OFF = "off"


def budget_from_flag(value: str | None, allow_off: bool) -> Budget | str | None:
    """The `--budget` value: the budget, BUDGET_OFF (edit), or None when not given."""
    if value is None:
        return None
    if allow_off and value.strip().lower() in BY_KEY["budget"].off:
        return BUDGET_OFF
    try:
        return Budget.parse(value)
    except BudgetError as exc:
        raise usage(f"--budget: {exc}") from None


def at_instant(text: str, now: int, zone: tzinfo) -> int:
    """`--at`: `HH:MM` (the next time the wall clock shows it: today, else tomorrow;
    in a spring-forward gap, the first instant after it; a repeated time's first pass
    still ahead), or an instant (ISO-8601 with an offset, or unix seconds), which must lie ahead."""
    from datetime import datetime, timedelta

    from rk.host import clock

    m = re.fullmatch(r"([0-9]{1,2}):([0-9]{2})", text.strip())
    if m:
        hour, minute = int(m.group(1)), int(m.group(2))
        if hour > 23 or minute > 59:
            raise usage(f"--at {quote(text)}: not a time of day")
        today = datetime.fromtimestamp(now, zone).replace(
            tzinfo=None, hour=hour, minute=minute, second=0, microsecond=0
        )
        for day in (today, today + timedelta(days=1)):
            for instant in wall_instants(day, zone):  # cron's DST rule: a gap's end; each pass of a repeat
                if instant > now:
                    return instant
    if _bare_small_number(text):
        raise usage(f"--at {quote(text)}: not a time; {AT_FORMS}, or --in {text}m for a delay")
    try:
        instant = clock.parse_instant(text)
    except clock.ClockError as exc:
        raise usage(f"--at: {exc}; {AT_FORMS}") from None
    if instant <= now:
        raise usage(f"--at {quote(text)} is in the past")
    return instant


def since_instant(text: str, now: int) -> int:
    """`--since` (log, events, usage): a duration back from now, or an instant. A bare
    number is unix seconds only when it is one (from 2001 on): `--since 7` is a
    duration that lost its unit, not a second of 1970."""
    from rk.host import clock

    try:
        return now - parse_duration(text)
    except DurationError:
        pass
    if _bare_small_number(text):
        raise usage(f"--since {text}: {missing_unit(text)} (or a time: ISO-8601 with an offset, or unix seconds)")
    try:
        return clock.parse_instant(text)
    except clock.ClockError:
        raise usage(f"--since {quote(text)}: want a duration (7d, 12h) or a time (ISO-8601 or unix seconds)") from None


#: The forms `--at` reads, said when it reads none of them.
AT_FORMS = (
    "--at takes HH:MM (the next time the clock shows it), ISO-8601 with an offset (2027-01-15T17:30+01:00)"
    " or unix seconds"
)
#: A bare number below this is no unix time anyone means (2001-09-09): a duration without its unit.
INSTANT_FLOOR = 1_000_000_000


def _bare_small_number(text: str) -> bool:
    """`7`, `30`, `1.5`: what `missing_unit` speaks of, and no plausible unix time."""
    word = text.strip()
    if not missing_unit(word):
        return False
    return not word.isdigit() or int(word) < INSTANT_FLOOR


def outcome_prefix(value: str | None) -> str | None:
    """`log --outcome`: a prefix of a known outcome (`skipped`, `failed`), or one that goes on
    past the status word (`failed: paste`). One that matches none would print nothing and
    exit 0, like a log with nothing to say: it is refused, naming the known ones."""
    from rk.core.log.delivery import Status

    if value is None:
        return None
    notify_log = (Status.NOTIFY_QUEUED, Status.NOTIFIED, Status.NOTIFY_FAILED, Status.NOTIFY_HELD)
    known = [str(s) for s in Status if s not in notify_log]  # a server's log never holds those
    if any(word.startswith(value) or value.startswith(word) for word in known):
        return value
    hint = did_you_mean(value.split(":")[0].strip(), known)
    raise usage(f"--outcome {quote(value)} matches no outcome{hint}; outcomes: {known_list(known, most=len(known))}")


def _catch_up_within(value: str | None) -> int:
    """A catch-up window no longer than the grace (every late fire within it fires anyway) would do nothing."""
    if value is None:
        return 0
    within = duration("--catch-up-within", value)
    if within <= CRON_GRACE:
        grace = CRON_GRACE // 60
        raise usage(f"--catch-up-within {value} is within the {grace}-minute grace, so it would do nothing")
    return within


def _note_short_rung(seconds: int, poll: int, note: Callable[[str], None]) -> None:
    if seconds < poll:
        note(f"note: a backoff step under {poll}s cannot be observed by the poll; it counts as {poll}s")


def plain(flag: str, value: str, spaces: bool = False) -> str:
    """`value` unless it is empty, holds a control character (a newline, a NUL) or,
    unless `spaces`, whitespace: an odd value is refused, never trimmed into a valid one."""
    if not value.strip():
        raise usage(f"{flag} must not be empty")
    if any(not c.isprintable() and not (spaces and c == " ") for c in value) or (
        not spaces and any(c.isspace() for c in value)
    ):
        raise usage(f"{flag} {quote(value)}: no {'' if spaces else 'spaces or '}control characters allowed")
    return value


def choice(flag: str, value: str | None, allowed: type[E]) -> E | None:
    """The member of enum `allowed` that `value` names (None when not given)."""
    if value is None:
        return None
    try:
        return allowed(value)
    except ValueError:
        raise usage(f"{flag} must be one of {', '.join(str(v) for v in allowed)}") from None


def no_space(flag: str, value: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise usage(f"{flag} must be non-empty without whitespace")
    return value


def target_from_flags(
    role: str | None, session: str | None, pane: str | None, follow_session: bool = False
) -> Target | None:
    """The target the flags name; None when they name none (the caller's window role,
    else its pane: `rk.cli.receipt.default_target`) or only `--follow-session` (the
    session running in the caller's pane: `rk.cli.receipt.live_session`)."""
    given = [(n, v) for n, v in (("--role", role), ("--session", session), ("--pane", pane)) if v is not None]
    if follow_session and given:
        raise usage(f"{given[0][0]} and --follow-session are mutually exclusive")
    if len(given) > 1:
        raise usage(f"{given[0][0]} and {given[1][0]} are mutually exclusive")
    if not given:
        return None
    name, value = given[0]
    if name == "--role":
        return Target(TargetKind.ROLE, no_space("--role", value))
    if name == "--session":
        return Target(TargetKind.SESSION, no_space("--session", value))
    if not is_pane_id(value):
        raise usage("--pane must be a tmux pane id like %3")
    return Target(TargetKind.PANE, value)


def wake_from_flags(
    wake_on: str | None, scope: str | None, debounce: str | None, allow_off: bool, source: str | None = None
) -> WakeOn | str | None:
    """WakeOn, None (not given), or WAKE_OFF (remove; edit only). `source` is --wake-from
    (edit takes it alone: `wake_source_flag`)."""
    if wake_on is None:
        if scope is not None or debounce is not None:
            raise usage("--wake-scope/--wake-debounce only apply with --wake-on")
        if source is not None and not allow_off:
            raise usage(f"--wake-from only applies with --wake-on {WakeEvent.AGENT_STATE_CHANGE}")
        return None
    if wake_on in _WAKE_OFF_WORDS:
        if not allow_off:
            raise usage("--wake-on none/off only applies to edit")
        if scope is not None or debounce is not None or source is not None:
            raise usage("--wake-on none cannot take --wake-scope/--wake-debounce/--wake-from")
        return WAKE_OFF
    wake_on = world_event(wake_on)  # signal:NAME, file:PATH (rk.core.schedule.world)
    if wake_on not in WakeEvent.__members__.values() and source_of(wake_on) is None:
        raise usage(f"--wake-on must be one of {', '.join(WakeEvent)}, signal:NAME or file:PATH")
    if scope is not None and scope != WAKE_SCOPE:
        _remote_scope(scope, wake_on)
    secs = duration("--wake-debounce", debounce, allow_zero=True) if debounce is not None else WAKE_DEBOUNCE
    origin = wake_source_flag(source, wake_on) or WakeFrom.HUMAN
    return WakeOn(event=wake_on, scope=scope or WAKE_SCOPE, debounce=secs, from_=origin)


def _remote_scope(scope: str, wake_on: str) -> None:
    """`--wake-scope %N@HOST`: another host's panes, for agent-state-change only."""
    from rk.core.fleet.watch import ScopeError, parse_scope

    try:
        parse_scope(scope)
    except ScopeError as exc:
        raise usage(f"--wake-scope: {exc}") from None
    if wake_on != WakeEvent.AGENT_STATE_CHANGE:
        raise usage(f"--wake-scope {scope} applies to --wake-on {WakeEvent.AGENT_STATE_CHANGE}")


def world_event(value: str) -> str:
    """`--wake-on signal:NAME | file:PATH` as the file stores it (a path made absolute here);
    any other value as given."""
    try:
        return event_flag(value, os.getcwd(), os.path.expanduser("~")) or value
    except (EntryError, OSError) as exc:
        raise usage(f"--wake-on: {exc}") from None


def with_wake_source(entry: Entry, value: str | None) -> Entry:
    """edit's (and simulate's) --wake-from without --wake-on: the entry's wake, from then on."""
    if value is None:
        return entry
    wake = entry.wake_on
    origin = wake_source_flag(value, str(wake.event) if wake is not None else "")
    return replace(entry, wake_on=replace(wake, from_=origin)) if wake is not None and origin else entry


def wake_source_flag(value: str | None, event: str) -> WakeFrom | None:
    """--wake-from (None: not given); it applies to --wake-on agent-state-change only."""
    if value is None:
        return None
    origin = choice("--wake-from", value, WakeFrom)
    if event != WakeEvent.AGENT_STATE_CHANGE:
        raise usage(f"--wake-from applies to --wake-on {WakeEvent.AGENT_STATE_CHANGE}, not {event or 'no wake'}")
    return origin


# -- only_if_changed -----------------------------------------------------------------

ONLY_IF_CHANGED = "--only-if-changed"
#: The words `--only-if-changed` takes; anything else after it is the next argument
#: (a bare `--only-if-changed` means `pane`).
_CHANGED_WORDS = BY_KEY["only_if_changed"].choices + BY_KEY["only_if_changed"].off


#: Commands whose positional argument may follow the flag (`add --only-if-changed "status?"`).
_POSITIONAL = ("add", "simulate")


def bare_only_if_changed(args: list[str]) -> list[str]:
    """`--only-if-changed` with no value reads as `--only-if-changed=pane` (click has no
    option with an optional value): at the end, before another option, or, for a
    command that takes a positional argument, before anything but one of its words
    (elsewhere a wrong word stays its value, and is refused by name). Arguments
    after `--` are left alone."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        following = args[i + 1] if i + 1 < len(args) else ""
        positional = any(a in _POSITIONAL for a in args[:i])
        bare = not following or following.startswith("-") or (positional and following not in _CHANGED_WORDS)
        out.append(f"{ONLY_IF_CHANGED}=pane" if arg == ONLY_IF_CHANGED and bare else arg)
    return out


#: `only_if_changed_from_flag` for `--only-if-changed off|none` (edit: clear it).
CHANGED_OFF = "off"


def only_if_changed_from_flag(value: str | None, allow_off: bool) -> str | None:
    """The `--only-if-changed` value: `pane`, `scope`, CHANGED_OFF (edit), or None when not given."""
    if value is None:
        return None
    word = value.strip().lower()
    if allow_off and word in BY_KEY["only_if_changed"].off:
        return CHANGED_OFF
    if word not in BY_KEY["only_if_changed"].choices:
        raise usage(f"{ONLY_IF_CHANGED} must be pane or scope{' (or off)' if allow_off else ''}, not {quote(value)}")
    return word


def check_only_if_changed(mode: str, wakes: bool) -> None:
    """`scope` compares the panes a wake watches: an entry without wake_on has none."""
    if mode == SCOPE and not wakes:
        raise usage(f"{ONLY_IF_CHANGED} scope needs --wake-on (the panes it watches); use pane for the target alone")


def cap_from_flag(flag: str, value: int | None, allow_off: bool) -> int | None:
    """`--max-per-day` / `--max-total`: None when not given, 0 to remove it (edit), else N."""
    from rk.core import bounds

    if value is None or (value == 0 and allow_off):
        return value
    try:
        return bounds.cap(value, flag)
    except bounds.OutOfRange as exc:
        raise usage(f"{exc}{' (0 removes it)' if allow_off else ''}") from None


#: `turn_timeout_from_flags` for `--turn-timeout 0|off|none` (edit: stop watching turns).
TIMEOUT_OFF = "off"


def turn_timeout_from_flags(
    timeout: str | None, on_timeout: str | None, allow_off: bool
) -> tuple[int | str | None, OnTimeout | None]:
    """`--turn-timeout` (seconds, TIMEOUT_OFF on edit, None when not given) and `--on-timeout`."""
    policy = choice("--on-timeout", on_timeout, OnTimeout)
    if timeout is None:
        return None, policy
    if allow_off and timeout.strip().lower() in BY_KEY["turn_timeout"].off:
        if policy is not None:
            raise usage("--on-timeout needs a turn timeout, not --turn-timeout off")
        return TIMEOUT_OFF, None
    return duration("--turn-timeout", timeout), policy

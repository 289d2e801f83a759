"""Placeholders in payloads: `{now}`, `{last_delivered}`, `{missed}`, … filled in
when the payload is typed.

The stored payload keeps its placeholders; what is typed is
`render(payload, values_for(entry, fire, view, now, zone))` (`typed` does both).
`{{` and `}}` are literal braces. `check` is the add-time rule: a name rk does
not know, an empty `{}`, or a brace that is neither part of a placeholder nor
doubled is a usage error. A payload that does not pass (a hand-edited file)
still loads and fires: `render` is tolerant and types whatever is not a known
placeholder or a doubled brace exactly as written.

Times are local ISO-8601 with seconds and offset (`2027-01-15T09:00:00+01:00`):
local is the entry's cron `tz` if it has one, else the ticker's zone.

Pure: the values come from the entry, the fire (`rk.core.schedule.due.Fire` carries the
cron occurrence and the wake pane), the log and now.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, tzinfo

from rk.core.errors import ExitStatus, RkError
from rk.core.log.delivery import MISSED_CAP, LogView, Reason, Status, status_of
from rk.core.schedule.cronexpr import CronError, CronExpr
from rk.core.schedule.due import Fire, entry_zone
from rk.core.schedule.entry import Cron, Entry
from rk.core.schedule.gaps import is_capped

NOW = "now"  #: the delivery time
LAST_DELIVERED = "last_delivered"  #: the entry's newest `delivered` line, or `never`
WINDOW_START = "window_start"  #: cron: the watermark (the newest delivered occurrence); else the last delivery
WINDOW_END = "window_end"  #: cron: the occurrence this fire is for; else now
MISSED = (
    "missed"  #: cron: the occurrences since the watermark not delivered; else `missed` lines since the last delivery
)
OCCURRENCES = "occurrences"  #: cron: the owed occurrences, oldest first, this one last; else the window end
WAKE_PANE = "wake_pane"  #: a wake fire: the pane whose change fired it (`%N`); else ""
WAKE_STATE = "wake_state"  #: a wake fire: that pane's new state (`idle`, `waiting`, … or `gone`); else ""
WAKE_WINDOW = "wake_window"  #: a wake fire: that pane's window name ("" when it is gone); else ""
#: a wake fire: who started the turn whose change fired it: `rk` (a fire of an entry) or `human`
#: (anyone else, or unknown; `rk.core.log.cause`); "" for limit-reset and any other fire
WAKE_BY = "wake_by"
SIGNAL = "signal"  #: a wake on a signal: its name (a watched file: its path); else ""
SIGNAL_DATA = "signal_data"  #: that signal's --data (a watched file: `appeared` or `changed`); else ""

#: Every name, in the order the help lists them.
NAMES = (
    *(NOW, LAST_DELIVERED, WINDOW_START, WINDOW_END, MISSED, OCCURRENCES),
    *(WAKE_PANE, WAKE_STATE, WAKE_WINDOW, WAKE_BY),
    *(SIGNAL, SIGNAL_DATA),
)
#: `{last_delivered}` (and a window start) when the entry was never delivered.
NEVER = "never"

#: A doubled brace, a `{name}` (any run without braces or whitespace), or a lone brace.
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}\s]*)\}|[{}]")
_HELP = "known: " + ", ".join("{" + n + "}" for n in NAMES) + "; write {{ and }} for literal braces"


class PlaceholderError(RkError, ValueError, status=ExitStatus.USAGE):
    """A payload whose braces do not read as placeholders; the message is one line."""


def has_placeholders(payload: str) -> bool:
    """Whether rendering may change the payload (it has a brace at all)."""
    return "{" in payload or "}" in payload


def check(payload: str) -> None:
    """PlaceholderError for the first name rk does not know, empty `{}`, or lone brace."""
    if not has_placeholders(payload):
        return
    for m in _TOKEN.finditer(payload):
        token, name = m.group(0), m.group(1)
        if token in ("{{", "}}"):
            continue
        if name is None:
            raise PlaceholderError(f"a lone {token} at character {m.start() + 1} is not a placeholder ({_HELP})")
        if not name:
            raise PlaceholderError(f"empty placeholder {{}} at character {m.start() + 1} ({_HELP})")
        if name not in NAMES:
            shown = name if len(name) <= 40 else name[:40] + "…"
            raise PlaceholderError(f"unknown placeholder {{{shown}}} ({_HELP})")


def render(payload: str, values: Mapping[str, str]) -> str:
    """The payload with each `{name}` of `values` replaced and `{{`/`}}` made single.
    Anything else (an unknown name, a lone brace) stays as written: the tolerant
    reading of a payload `check` would refuse."""
    if not has_placeholders(payload):
        return payload

    def one(m: re.Match[str]) -> str:
        token, name = m.group(0), m.group(1)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        if name is not None and name in values:
            return values[name]
        return token

    return _TOKEN.sub(one, payload)


def local_zone(entry: Entry, zone: tzinfo) -> tzinfo:
    """The zone an entry's times are shown in: its cron `tz`, else `zone` (the ticker's)."""
    return entry_zone(entry, zone)


def stamp(ts: int, zone: tzinfo) -> str:
    """`2027-01-15T09:00:00+01:00`: ISO-8601 in `zone`, seconds, with the offset."""
    return datetime.fromtimestamp(ts, zone).isoformat(timespec="seconds")


def previous_occurrence(sched: Cron, occurrence: int, zone: tzinfo) -> int | None:
    """The cron occurrence before `occurrence` (None if there is none, or the expression fails)."""
    try:
        return CronExpr.parse(sched.expr).latest_in(0, occurrence - 1, zone)
    except CronError:
        return None


def watermark(entry: Entry, sched: Cron, view: LogView, before: int, zone: tzinfo) -> int | None:
    """The newest occurrence (at or before `before`) a fire of the schedule delivered:
    the latest occurrence at or before the entry's newest `delivered` line of reason
    `schedule` (an on-time fire, a catch-up, or a held one that went out later).
    Skipped, missed, quiet, paused and failed occurrences never move it; nor do wake
    or manual deliveries, which answer no occurrence. Never delivered: the
    occurrence before `before`, so a first run owes one window (as a job keyed by
    window does its first run). None when there is no such occurrence."""
    delivered = view.last_delivered(entry.id, Reason.SCHEDULE)
    try:
        expr = CronExpr.parse(sched.expr)
        if delivered is not None:
            return expr.latest_in(0, min(delivered.ts, before), zone)
        return expr.latest_in(0, before - 1, zone)
    except CronError:
        return None


def owed(sched: Cron, after: int | None, upto: int, zone: tzinfo) -> list[int]:
    """The occurrences in `(after, upto]`, oldest first, at most MISSED_CAP + 1 of them
    (the oldest: a prompt works through its owed windows oldest first)."""
    out: list[int] = []
    try:
        expr = CronExpr.parse(sched.expr)
        t = expr.next_after(after, zone) if after is not None else expr.latest_in(0, upto, zone)
        while t is not None and t <= upto and len(out) <= MISSED_CAP:
            out.append(t)
            t = expr.next_after(t, zone)
    except CronError:
        return []
    return out


def _uncapped(entry: Entry, due: list[int], view: LogView, zone: tzinfo, firing: int) -> list[int]:
    """`due` without the occurrences a day cap silenced: they are not owed (`gaps.is_capped`);
    `firing`, the occurrence this fire is for, is kept (a cap raised mid-day lets it go)."""
    skips = [line.ts for line in view.own(entry.id) if status_of(line.outcome) == Status.SKIPPED_CAP]
    if not skips or not due or not isinstance(entry.schedule, Cron):
        return due
    try:
        after = CronExpr.parse(entry.schedule.expr).next_after(due[-1], zone)
    except CronError:
        return due
    following = [*due[1:], after if after is not None else due[-1] + 1]
    return [t for t, nxt in zip(due, following, strict=True) if t == firing or not is_capped(t, nxt, skips, zone)]


def _count(n: int) -> str:
    return f"{MISSED_CAP}+" if n >= MISSED_CAP else str(n)


def values_for(entry: Entry, fire: Fire, view: LogView, now: int, zone: tzinfo) -> dict[str, str]:
    """Every placeholder's value for `fire` of `entry` typed at `now`.

    `view` is the log before this fire's own line (so `{last_delivered}` is the
    delivery before this one); `zone` the ticker's local zone. A cron fire for an
    occurrence (on time, or a catch-up, whose `due_at` is now) spans the watermark
    (`watermark`: the newest occurrence delivered) to that occurrence, and owes
    every occurrence in between but those a day cap silenced (`{occurrences}`;
    `{missed}` counts those before this one); any other fire (every, backoff, wake-only, a wake or manual fire of
    a cron entry) spans the last delivery (or `never`) to now."""
    local = local_zone(entry, zone)
    delivered = view.last_delivered(entry.id)
    last = stamp(delivered.ts, local) if delivered is not None else NEVER
    start, end = last, stamp(now, local)
    occurrences, missed = end, _count(view.missed_since_delivered(entry.id))
    if isinstance(entry.schedule, Cron):
        upto = fire.occurrence or now
        mark = watermark(entry, entry.schedule, view, upto, local)
        due = [t for t in owed(entry.schedule, mark, upto, local) if t != mark]
        due = _uncapped(entry, due, view, local, fire.occurrence)
        listed = ", ".join(stamp(t, local) for t in due[:MISSED_CAP]) + (" …" if len(due) > MISSED_CAP else "")
        if fire.occurrence:
            start = stamp(mark, local) if mark is not None else NEVER
            end = stamp(fire.occurrence, local)
            occurrences = listed or end
            missed = _count(len([t for t in due if t < fire.occurrence]))
        else:
            occurrences, missed = listed, _count(len(due))
    return {
        NOW: stamp(now, local),
        LAST_DELIVERED: last,
        WINDOW_START: start,
        WINDOW_END: end,
        MISSED: missed,
        OCCURRENCES: occurrences,
        WAKE_PANE: fire.wake_pane,
        WAKE_STATE: fire.wake_state,
        WAKE_WINDOW: fire.wake_window,
        WAKE_BY: fire.wake_by,
        SIGNAL: fire.signal,
        SIGNAL_DATA: fire.signal_data,
    }


def typed(entry: Entry, fire: Fire, view: LogView, now: int, zone: tzinfo) -> str:
    """What is typed for `fire`: the payload rendered (the payload itself when it has no brace)."""
    if not has_placeholders(entry.payload):
        return entry.payload
    return render(entry.payload, values_for(entry, fire, view, now, zone))

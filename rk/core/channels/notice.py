"""Telling a human: which events happened, and which channel hears of which.

rk otherwise speaks only by typing into panes, and nobody watches a pane when it
matters most. A channel (`notify:` in config.yaml, one Apprise URL each) names
the events it wants; this module decides, purely, from one tick's log lines (the
decisions it wrote), the panes as the tick saw them, what `notify.log` says was
already told, and now, what to send, what to hold for quiet hours and when to
send the summary of what was held. The shell (`rk.channels.notify`) only sends.

`notify.log` is the memory: a key per event occurrence (a pane's waiting of one
epoch, one failed fire) is told once per channel, across ticker restarts, and
an (event, pane) pair at most once per `debounce`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from rk.core.durations import DurationError, format_duration, parse_duration
from rk.core.log.delivery import Reason, Status, status_of
from rk.core.pane.facts import PaneFact
from rk.core.schedule.hours import ActiveHours, HoursError

FAILED, ABSENT, WAITING, LIMITED, LIMIT_RESET, EXPIRED, BUDGET = (
    "failed",
    "absent",
    "waiting",
    "limited",
    "limit-reset",
    "expired",
    "budget",
)
TURN_TIMEOUT = "turn-timeout"  #: a turn an entry's delivery started ran past its turn_timeout
UNREADABLE = "entries-unreadable"  #: a server's entries file cannot be read: none of its entries fires
EVENTS = (FAILED, ABSENT, WAITING, LIMITED, LIMIT_RESET, EXPIRED, TURN_TIMEOUT, BUDGET, UNREADABLE)
#: The outcome statuses a delivery log line turns into an event.
_FROM_STATUS = {
    Status.FAILED: FAILED,
    Status.RESPAWN_FAILED: FAILED,
    Status.NOTIFIED_ABSENT: ABSENT,
    Status.EXPIRED_ORPHAN: EXPIRED,
    Status.TURN_TIMEOUT: TURN_TIMEOUT,
    Status.SKIPPED_BUDGET: BUDGET,  #: written once per entry and local day: told once
}
DEFAULT_WAITING_AFTER = 300
DEFAULT_DEBOUNCE = 600
DEFAULT_TIMEOUT = 10
MAX_TIMEOUT = 120
MAX_CHANNELS = 16
KEYS = ("url", "on", "waiting_after", "quiet", "debounce", "timeout", "name")


@dataclass(frozen=True)
class Channel:
    """One `notify:` item: where to send (an Apprise URL) and what."""

    name: str
    url: str
    on: frozenset[str] = frozenset(EVENTS)
    waiting_after: int = DEFAULT_WAITING_AFTER
    quiet: ActiveHours | None = None
    debounce: int = DEFAULT_DEBOUNCE
    timeout: int = DEFAULT_TIMEOUT  #: seconds one send may take

    @property
    def label(self) -> str:
        """The name and the URL's scheme only: a URL may hold a token, and logs are read by many."""
        return f"{self.name} ({self.url.partition('://')[0] or '?'})"


def parse_channels(raw: object, source: str) -> tuple[list[Channel], list[str]]:
    """The `notify:` list → channels, and one diagnostic per item that cannot be used.
    A bad value drops only its own channel (the others still send)."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{source}: notify must be a list of channels (- url: …)"]
    channels: list[Channel] = []
    problems: list[str] = []
    for i, item in enumerate(raw[:MAX_CHANNELS], start=1):
        try:
            channels.append(_channel(item, i))
        except ValueError as exc:
            problems.append(f"{source}: notify item {i}: {exc}; that channel is off")
    if len(raw) > MAX_CHANNELS:
        problems.append(f"{source}: notify: only the first {MAX_CHANNELS} channels are used")
    return channels, problems


def _channel(item: object, index: int) -> Channel:
    if not isinstance(item, dict):
        raise ValueError("want a mapping with url:")
    unknown = sorted(
        str(k) for k in item if k not in ("url", "on", "waiting_after", "quiet", "debounce", "timeout", "name")
    )
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (url, on, waiting_after, quiet, debounce, timeout, name)")
    url = item.get("url")
    if not isinstance(url, str) or "://" not in url or any(c.isspace() or ord(c) < 32 for c in url):
        raise ValueError("url must be an Apprise URL like ntfy://host/topic or json://host:port/")
    name = item.get("name", str(index))
    if not isinstance(name, str) or not name.strip() or len(name) > 40 or not name.isprintable():
        raise ValueError("name must be short printable text")
    on = item.get("on", list(EVENTS))
    if not isinstance(on, list) or not on or not all(isinstance(e, str) for e in on):
        raise ValueError(f"on must be a list of events: {', '.join(EVENTS)}")
    bad = [e for e in on if e not in EVENTS]
    if bad:
        raise ValueError(f"on: unknown event {bad[0][:30]!r} (known: {', '.join(EVENTS)})")
    quiet = None
    if item.get("quiet") is not None:
        if not isinstance(item["quiet"], str):
            raise ValueError('quiet must be a time range like "22:00-07:00"')
        try:
            quiet = ActiveHours.parse(item["quiet"])
        except HoursError as exc:
            raise ValueError(f"quiet: {exc}") from None
    return Channel(
        name=name.strip(),
        url=url,
        on=frozenset(on),
        waiting_after=_seconds(item, "waiting_after", DEFAULT_WAITING_AFTER, 0, 86400),
        quiet=quiet,
        debounce=_seconds(item, "debounce", DEFAULT_DEBOUNCE, 0, 86400),
        timeout=_seconds(item, "timeout", DEFAULT_TIMEOUT, 1, MAX_TIMEOUT),
    )


def _seconds(item: dict[str, object], key: str, default: int, low: int, high: int) -> int:
    if key not in item:
        return default
    try:
        value = parse_duration(item[key])
    except DurationError as exc:
        raise ValueError(f"{key}: {exc}") from None
    if not low <= value <= high:
        raise ValueError(f"{key} must be between {format_duration(low)} and {format_duration(high)}")
    return value


@dataclass(frozen=True)
class Event:
    """Something a human should hear of: which, where, since when (`at` names the occurrence)."""

    kind: str
    server: str
    pane: str = ""
    entry: str = ""
    at: int = 0
    detail: str = ""
    until: int = 0  #: `limited`: when it resets (0: not known)

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.server}/{self.pane or '-'}/{self.entry or '-'}/{self.at}"

    @property
    def subject(self) -> str:
        """What the debounce is per: the event and its pane (or entry, for an absent target)."""
        return f"{self.kind}/{self.server}/{self.pane or self.entry or '-'}"


@dataclass(frozen=True)
class NoticeLine:
    """One `notify.log` line: what a channel was told (or not) of one event."""

    ts: int
    channel: str
    key: str
    outcome: str  #: `notified: <channel>`, `notify-failed: <why>` or `notify-held: quiet`
    event: str = ""
    server: str = ""
    pane: str = ""
    entry: str = ""
    keys: tuple[str, ...] = ()  #: a summary: the held keys it told of
    reason: str = Reason.NOTIFY

    def to_json(self) -> str:
        out: dict[str, object] = {
            "ts": self.ts,
            "channel": self.channel,
            "key": self.key,
            "reason": self.reason,
            "outcome": self.outcome,
        }
        out.update((k, v) for k, v in (("event", self.event), ("server", self.server), ("pane", self.pane)) if v)
        if self.entry:
            out["entry"] = self.entry
        if self.keys:
            out["keys"] = list(self.keys)
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))

    @staticmethod
    def parse(text: str) -> NoticeLine | None:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict) or not isinstance(obj.get("ts"), int):
            return None
        strings = {k: obj.get(k, "") for k in ("channel", "key", "outcome", "event", "server", "pane", "entry")}
        keys = obj.get("keys", [])
        if not all(isinstance(v, str) for v in strings.values()) or not isinstance(keys, list):
            return None
        return NoticeLine(obj["ts"], keys=tuple(k for k in keys if isinstance(k, str)), **strings)

    @classmethod
    def of(cls, ts: int, channel: Channel, event: Event, outcome: str) -> NoticeLine:
        return cls(ts, channel.name, event.key, outcome, event.kind, event.server, event.pane, event.entry)


@dataclass
class Memory:
    """What `notify.log` says was told: per channel, the keys done, when each
    subject was last told, the keys held for quiet hours not yet summarised, and
    the limited occurrences told (their `limit-reset` is owed)."""

    done: set[tuple[str, str]] = field(default_factory=set)
    last: dict[tuple[str, str], int] = field(default_factory=dict)
    held: dict[str, list[NoticeLine]] = field(default_factory=dict)
    limited: set[tuple[str, str, int]] = field(default_factory=set)  #: (server, pane, epoch)

    @classmethod
    def of(cls, lines: Iterable[NoticeLine]) -> Memory:
        memory = cls()
        for line in lines:
            memory.add(line)
        return memory

    def add(self, line: NoticeLine) -> None:
        if line.keys:  # a summary: what it told of is no longer held
            told = set(line.keys)
            self.held[line.channel] = [h for h in self.held.get(line.channel, []) if h.key not in told]
            return
        self.done.add((line.channel, line.key))
        if line.event:
            self.last[(line.channel, _subject(line))] = max(line.ts, self.last.get((line.channel, _subject(line)), 0))
        if status_of(line.outcome) == Status.NOTIFY_HELD:
            self.held.setdefault(line.channel, []).append(line)
        if line.event == LIMITED:
            epoch = line.key.rsplit("/", 1)[-1]
            if epoch.isdigit():
                self.limited.add((line.server, line.pane, int(epoch)))


def _subject(line: NoticeLine) -> str:
    return f"{line.event}/{line.server}/{line.pane or line.entry or '-'}"


def events_of(
    server: str,
    decisions: Iterable[tuple[str, str, str]],
    panes: Iterable[tuple[str, str, int, int]],
    now: int,
    memory: Memory,
    unreadable: str = "",
) -> list[Event]:
    """One server's events this tick: from its log lines (entry, pane, outcome), its
    panes (id, state, epoch, reset_at), the limited occurrences already told, and why
    its entries file could not be read (told again each hour it stays so)."""
    out: list[Event] = []
    if unreadable:
        out.append(Event(UNREADABLE, server, at=now - now % 3600, detail=unreadable[:300]))
    for entry, pane, outcome in decisions:
        kind = _FROM_STATUS.get(status_of(outcome))  # type: ignore[call-overload]
        if kind is not None:
            detail = outcome.partition(":")[2].strip() if ":" in outcome else ""
            out.append(Event(kind, server, pane, entry, now, detail[:300]))
    states = {}
    for pane, state, epoch, reset_at in panes:
        states[pane] = (state, epoch)
        if state == WAITING:
            out.append(Event(WAITING, server, pane, at=epoch))
        elif state == LIMITED:
            out.append(Event(LIMITED, server, pane, at=epoch, until=reset_at))
    for srv, pane, epoch in sorted(memory.limited):
        if srv == server and pane in states and states[pane] != (LIMITED, epoch):
            out.append(Event(LIMIT_RESET, server, pane, at=epoch))
    return out


@dataclass
class Plan:
    """One channel's share of a tick: events to send now, to hold, and the held lines to summarise."""

    send: list[Event] = field(default_factory=list)
    hold: list[Event] = field(default_factory=list)
    summary: list[NoticeLine] = field(default_factory=list)


def plan(channel: Channel, events: Sequence[Event], memory: Memory, now: int, zone: tzinfo) -> Plan:
    """What `channel` is told of `events` now. Updates nothing: the shell records what it did."""
    out = Plan()
    quiet = channel.quiet is not None and channel.quiet.active_at(now, zone)
    seen: set[str] = set()
    for event in events:
        if event.kind not in channel.on or event.key in seen or (channel.name, event.key) in memory.done:
            continue
        if event.kind == WAITING and now - event.at < channel.waiting_after:
            continue
        last = memory.last.get((channel.name, event.subject))
        if last is not None and now - last < channel.debounce:
            continue
        seen.add(event.key)
        (out.hold if quiet else out.send).append(event)
    if not quiet:
        out.summary = list(memory.held.get(channel.name, []))
    return out


# -- the words


def _clock(ts: int, zone: tzinfo) -> str:
    return datetime.fromtimestamp(ts, zone).strftime("%H:%M")


def message(event: Event, now: int, zone: tzinfo) -> tuple[str, str]:
    """(title, body): which server, pane and entry, what happened, and what to do."""
    where = f"pane {event.pane} on tmux server {event.server!r}" if event.pane else f"tmux server {event.server!r}"
    entry = f"entry {event.entry}" if event.entry else ""
    if event.kind == FAILED:
        title = f"rk: delivery failed ({event.server} {event.entry})"
        what = f"The delivery of {entry} to {where} failed: {event.detail or 'no detail'}."
        todo = f"Look at the pane, then: rk -L {event.server} status"
    elif event.kind == ABSENT:
        title = f"rk: target absent ({event.server} {event.entry})"
        what = f"The target of {entry} on tmux server {event.server!r} is gone ({event.detail or 'absent'})."
        todo = f"Start the agent again, or retarget or remove the entry: rk -L {event.server} status"
    elif event.kind == WAITING:
        title = f"rk: {event.pane} waits for you ({event.server})"
        waited = format_duration(max(0, now - event.at))
        what = f"The agent in {where} has waited {waited} on a dialog (since {_clock(event.at, zone)})."
        todo = f"Answer it: tmux -L {event.server} switch-client -t {event.pane}"
    elif event.kind == LIMITED:
        until = f" until {_clock(event.until, zone)}" if event.until else " (reset time not known)"
        title = f"rk: {event.pane} limited{until} ({event.server})"
        what = f"The agent in {where} hit its usage limit{until}."
        todo = "Nothing to type there until it resets; rk holds its entries and resumes by itself."
    elif event.kind == LIMIT_RESET:
        title = f"rk: {event.pane} limit reset ({event.server})"
        what = f"The agent in {where} is no longer at its usage limit."
        todo = f"rk resumes its entries; check they caught up: rk -L {event.server} status"
    elif event.kind == TURN_TIMEOUT:
        title = f"rk: turn timeout ({event.server} {event.entry})"
        what = f"The turn {entry} started in {where} is {event.detail or 'still running'}."
        todo = f"Look at the pane: tmux -L {event.server} switch-client -t {event.pane}"
    elif event.kind == UNREADABLE:
        title = f"rk: entries file unreadable ({event.server})"
        what = f"rk cannot read the entries file of {where} ({event.detail}): none of its entries fires."
        todo = f"rk -L {event.server} doctor says how to repair it"
    elif event.kind == BUDGET:
        title = f"rk: budget reached ({event.server} {event.entry})"
        what = f"{entry.capitalize()} (typing into {where}) spent its token budget for today: its fires are skipped."
        todo = f"It resumes after local midnight; see the spend: rk -L {event.server} cron usage {event.entry}"
    else:
        title = f"rk: entry expired ({event.server} {event.entry})"
        what = f"{entry.capitalize()} on tmux server {event.server!r} was removed: its target stayed missing."
        todo = "Add it again if it is still wanted (rk add …)."
    return title, f"{what}\nWhat to do: {todo}"


def summary(channel: Channel, held: Sequence[NoticeLine], zone: tzinfo) -> tuple[str, str]:
    """The one message for what quiet hours held."""
    lines = [
        f"- {h.event} on {h.server}"
        + (f" {h.pane}" if h.pane else "")
        + (f" (entry {h.entry})" if h.entry else "")
        + f" at {_clock(h.ts, zone)}"
        for h in held
    ]
    quiet = channel.quiet.text if channel.quiet is not None else ""
    return (
        f"rk: {len(held)} event(s) during quiet hours {quiet}",
        "\n".join(lines) + "\nWhat to do: rk status shows what still needs you.",
    )


def trial_message(channel: Channel) -> tuple[str, str]:
    return (
        "rk: test notification",
        f"This is channel {channel.label} of rk. It tells you of: {', '.join(e for e in EVENTS if e in channel.on)}.",
    )


def panes_of(facts: Iterable[PaneFact]) -> list[tuple[str, str, int, int]]:
    """(pane, state, epoch, reset_at) of each pane fact (a dead pane has no state to tell)."""
    return [(f.pane_id, f.state, f.epoch, f.reset_at) for f in facts if not f.dead]

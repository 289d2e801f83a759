"""Telling a human: which events happened, and which channel hears of which.

rk otherwise speaks only by typing into panes, and nobody watches a pane when it
matters most. A channel (`notify:` in config.yaml, one Apprise URL each) names
the events it wants; this module decides, purely, from one tick's log lines (the
decisions it wrote), the panes as the tick saw them, what `notify.log` says was
already told, and now, what to send, what to hold for quiet hours and when to
send the summary of what was held; and what the events waiting for a channel
become (`batches`): one message each, or one summary for a burst. The shell
(`rk.channels.notify`) only sends.

`notify.log` is the memory: a key per event occurrence (a pane's waiting of one
epoch, one failed fire) is told once per channel, across ticker restarts, and
an (event, pane) pair at most once per `debounce`; a key queued and not yet
told is told at the next start.
"""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
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
DORMANT = "dormant"  #: an entry's last N deliveries started no turn: it types no more (rk.core.schedule.dormant)
EVENTS = (FAILED, ABSENT, WAITING, LIMITED, LIMIT_RESET, EXPIRED, TURN_TIMEOUT, BUDGET, UNREADABLE, DORMANT)
#: The outcome statuses a delivery log line turns into an event.
_FROM_STATUS = {
    Status.FAILED: FAILED,
    Status.RESPAWN_FAILED: FAILED,
    Status.NOTIFIED_ABSENT: ABSENT,
    Status.EXPIRED_ORPHAN: EXPIRED,
    Status.TURN_TIMEOUT: TURN_TIMEOUT,
    Status.SKIPPED_BUDGET: BUDGET,  #: written once per entry and local day: told once
    Status.DORMANT: DORMANT,  #: written once when it goes dormant: told once
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
    """One `notify.log` line: what a channel was told (or not) of one event.

    A `notify-queued` or `notify-held` line carries what its message needs
    (`detail`, `until`), so work a stopped ticker left is told at the next start;
    an outcome line names the summary that told its event, if one did."""

    ts: int
    channel: str
    key: str
    outcome: str  #: `notify-queued`, `notified: <channel>`, `notify-failed: <why>` or `notify-held: quiet`
    event: str = ""
    server: str = ""
    pane: str = ""
    entry: str = ""
    keys: tuple[str, ...] = ()  #: an older rk's summary line: the held keys it told of
    reason: str = Reason.NOTIFY
    detail: str = ""
    until: int = 0
    summary: str = ""  #: the key of the summary message that told (or failed to tell) this event

    def to_json(self) -> str:
        out: dict[str, object] = {
            "ts": self.ts,
            "channel": self.channel,
            "key": self.key,
            "reason": self.reason,
            "outcome": self.outcome,
        }
        for name in ("event", "server", "pane", "entry", "detail", "until", "summary"):
            if getattr(self, name):
                out[name] = getattr(self, name)
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
        names = ("channel", "key", "outcome", "event", "server", "pane", "entry", "detail", "summary")
        strings = {k: obj.get(k, "") for k in names}
        keys, until = obj.get("keys", []), obj.get("until", 0)
        if not all(isinstance(v, str) for v in strings.values()) or not isinstance(keys, list):
            return None
        until = until if isinstance(until, int) and not isinstance(until, bool) else 0
        return NoticeLine(obj["ts"], keys=tuple(k for k in keys if isinstance(k, str)), until=until, **strings)

    @classmethod
    def of(cls, ts: int, channel: Channel, event: Event, outcome: str) -> NoticeLine:
        return cls(
            ts,
            channel.name,
            event.key,
            outcome,
            event.kind,
            event.server,
            event.pane,
            event.entry,
            detail=event.detail,
            until=event.until,
        )

    def told(self, ts: int, outcome: str, summary: str = "") -> NoticeLine:
        """This event's outcome line (what it needed to be told is no longer carried)."""
        return replace(self, ts=ts, outcome=outcome, detail="", until=0, summary=summary, keys=())

    def as_event(self) -> Event:
        """The event this line is about (its occurrence is the key's last part)."""
        at = self.key.rpartition("/")[2]
        return Event(
            self.event, self.server, self.pane, self.entry, int(at) if at.isdigit() else 0, self.detail, self.until
        )


@dataclass
class Memory:
    """What `notify.log` says, per channel: the keys done, when each subject was
    last told, the keys held for quiet hours not yet told, the keys queued not yet
    told (a ticker stopped first: told at the next start), and the limited
    occurrences told (their `limit-reset` is owed)."""

    done: set[tuple[str, str]] = field(default_factory=set)
    last: dict[tuple[str, str], int] = field(default_factory=dict)
    held: dict[str, dict[str, NoticeLine]] = field(default_factory=dict)
    pending: dict[str, dict[str, NoticeLine]] = field(default_factory=dict)
    limited: set[tuple[str, str, int]] = field(default_factory=set)  #: (server, pane, epoch)

    @classmethod
    def of(cls, lines: Iterable[NoticeLine]) -> Memory:
        memory = cls()
        for line in lines:
            memory.add(line)
        return memory

    def add(self, line: NoticeLine) -> None:
        if line.keys:  # an older rk's summary line: what it told of is no longer held
            held = self.held.get(line.channel, {})
            for key in line.keys:
                held.pop(key, None)
            return
        self.done.add((line.channel, line.key))
        if line.event:
            self.last[(line.channel, _subject(line))] = max(line.ts, self.last.get((line.channel, _subject(line)), 0))
        status = status_of(line.outcome)
        if status == Status.NOTIFY_HELD:  # also what a stopped ticker queued, met at a start within quiet hours
            self.held.setdefault(line.channel, {})[line.key] = line
            self.pending.get(line.channel, {}).pop(line.key, None)
        elif status == Status.NOTIFY_QUEUED:
            self.pending.setdefault(line.channel, {})[line.key] = line
        else:  # told or failed: concluded
            self.held.get(line.channel, {}).pop(line.key, None)
            self.pending.get(line.channel, {}).pop(line.key, None)
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


def is_quiet(channel: Channel, now: int, zone: tzinfo) -> bool:
    """Whether `channel` is within its quiet hours now (what it would be told is held)."""
    return channel.quiet is not None and channel.quiet.active_at(now, zone)


def plan(channel: Channel, events: Sequence[Event], memory: Memory, now: int, zone: tzinfo) -> Plan:
    """What `channel` is told of `events` now. Updates nothing: the shell records what it did."""
    out = Plan()
    quiet = is_quiet(channel, now, zone)
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
        out.summary = list(memory.held.get(channel.name, {}).values())
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
    elif event.kind == DORMANT:
        title = f"rk: entry dormant ({event.server} {event.entry})"
        what = f"{entry.capitalize()} got {event.detail or 'no answer'} from {where}: it types no more."
        todo = f"It wakes when the pane shows life; look at the agent, or: rk -L {event.server} cron wake {event.entry}"
    else:
        title = f"rk: entry expired ({event.server} {event.entry})"
        what = f"{entry.capitalize()} on tmux server {event.server!r} was removed: its target stayed missing."
        todo = "Add it again if it is still wanted (rk add …)."
    return title, f"{what}\nWhat to do: {todo}"


#: Up to this many events waiting for a channel at once are told one message each
#: (one tick's failure, absence, expiry, wait and limit); more are a burst, told in one summary.
BURST = 5
#: A summary names this many of its events (the first of each kind first); it counts them all.
NAMED = 5
#: Why a summary is sent: quiet hours ended, a stopped ticker left them, or a burst.
QUIET, RESTART, BURST_OF = "quiet", "restart", "burst"


@dataclass(frozen=True)
class Batch:
    """One message and the events it tells of; `key` names a summary ("" for one event's message)."""

    title: str
    body: str
    lines: tuple[NoticeLine, ...]
    key: str = ""


def batches(
    channel: Channel, lines: Sequence[NoticeLine], now: int, zone: tzinfo, left: Collection[str] = ()
) -> list[Batch]:
    """The messages for a channel's waiting events (their `notify-queued` or `notify-held`
    lines, oldest first): the held ones in one quiet-hours summary, those whose keys are
    in `left` (a stopped ticker queued them) in one summary, the rest one message each, or
    one summary when more than BURST wait at once. Every line is in exactly one batch."""
    held = [line for line in lines if status_of(line.outcome) == Status.NOTIFY_HELD]
    rest = [line for line in lines if status_of(line.outcome) != Status.NOTIFY_HELD]
    fresh = [line for line in rest if line.key not in left]
    before = [line for line in rest if line.key in left]
    out = [summary(channel, group, why, zone) for group, why in ((held, QUIET), (before, RESTART)) if group]
    if len(fresh) > BURST:
        out.append(summary(channel, fresh, BURST_OF, zone))
    else:
        out += [Batch(*message(line.as_event(), now, zone), (line,)) for line in fresh]
    return out


def summary(channel: Channel, lines: Sequence[NoticeLine], why: str, zone: tzinfo) -> Batch:
    """One message for many events: how many of each kind, the first NAMED named; its key
    (from the events it tells of) is written beside each of them in notify.log."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.event] = counts.get(line.event, 0) + 1
    tally = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    n = len(lines)
    events = "event" if n == 1 else "events"
    if why == QUIET:
        heading = f"{n} {events} during quiet hours {channel.quiet.text if channel.quiet else ''}".rstrip()
    elif why == RESTART:
        heading = f"{n} {events} not told before the ticker stopped"
    else:
        heading = f"{n} {events} at once"
    key = f"summary/{lines[-1].ts}/{zlib.crc32(chr(10).join(line.key for line in lines).encode()):08x}"
    named = [_named(lines[i], zone) for i in _firsts(lines)]
    if n > len(named):
        named.append(f"… and {n - len(named)} more")
    body = [
        f"{tally}.",
        *named,
        f"notify.log lists each (summary {key}).",
        "What to do: rk status shows what still needs you.",
    ]
    return Batch(f"rk: {heading}: {tally}", "\n".join(body), tuple(lines), key)


def _firsts(lines: Sequence[NoticeLine]) -> list[int]:
    """Which lines a summary names: the first of each kind (a rare event is not hidden
    behind a common one), then the next ones, NAMED in all, in their order."""
    picked: dict[str, int] = {}
    for i, line in enumerate(lines):
        if len(picked) < NAMED:
            picked.setdefault(line.event, i)
    rest = (i for i in range(len(lines)) if i not in picked.values())
    return sorted([*picked.values(), *itertools.islice(rest, NAMED - len(picked))])


def _named(line: NoticeLine, zone: tzinfo) -> str:
    where = f" {line.pane}" if line.pane else ""
    entry = f" (entry {line.entry})" if line.entry else ""
    detail = f": {line.detail[:80]}" if line.detail else ""
    return f"- {line.event} on {line.server}{where}{entry} at {_clock(line.ts, zone)}{detail}"


def trial_message(channel: Channel) -> tuple[str, str]:
    return (
        "rk: test notification",
        f"This is channel {channel.label} of rk. It tells you of: {', '.join(e for e in EVENTS if e in channel.on)}.",
    )


def panes_of(facts: Iterable[PaneFact]) -> list[tuple[str, str, int, int]]:
    """(pane, state, epoch, reset_at) of each pane fact (a dead pane has no state to tell)."""
    return [(f.pane_id, f.state, f.epoch, f.reset_at) for f in facts if not f.dead]

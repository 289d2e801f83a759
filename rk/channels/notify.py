"""Sending notifications (the decisions are `rk.core.channels.notice`'s), off the tick's path.

The ticker hands each tick's result to a `Notifier`, which plans (pure, quick),
writes a `notify-queued` (or `notify-held`) line per event to `notify.log`, and
puts the lines in the channel's outbox; one worker thread per channel takes the
whole outbox at once and sends what `batches` makes of it (one message per
event, or one summary for a burst) through Apprise with the channel's timeout,
so a channel that hangs or refuses delays neither the tick nor another channel,
and whatever piles up meanwhile is summarised, never dropped. Every event gets
one outcome line in `notify.log` (told, told in which summary, or failed and
why); a line queued without one is told at the next start. `notify.log` is also
the memory that keeps an event from being told twice across restarts, and
between processes: each plan first reads what others appended.

Every tick notifies: the ticker's follows config.yaml's channels (`follow`, an
edit takes effect at its next tick); `rk cron tick`'s (`tell_once`) waits
TICK_WAIT seconds at most for its sends and leaves the rest queued.

Apprise is imported only here, and only when a message is sent: never on the
hook path, the status line or the CLI's start.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from rk.core.channels.notice import (
    Batch,
    Channel,
    Event,
    Memory,
    NoticeLine,
    batches,
    events_of,
    is_quiet,
    panes_of,
    plan,
)
from rk.core.log.delivery import Status, status_of
from rk.core.log.diagnostics import first_line

if TYPE_CHECKING:
    from rk.channels.notify_config import ChannelsFile

NOTIFY_LOG = "notify.log"
#: Why an event queued or held for a channel config.yaml no longer has is failed at the start.
LOST = "the channel is no longer in config.yaml"
#: Read at most this much of `notify.log` at start (its newest lines); past twice
#: this, the ticker's start trims the file to them (a month of busy days).
MEMORY_BYTES = 1 << 20
#: How long `rk cron tick` waits for its sends before it exits: what is not told by then
#: stays queued in notify.log, and the next tick (or the ticker) tells it.
TICK_WAIT = 10.0
#: A line another process queued and left untold this long ago is taken on by the ticker
#: (that process waited TICK_WAIT at most, then ended).
ADOPT_AFTER = 60
#: How much longer than its channel's timeout one send is waited for (Apprise's connect and
#: read timeouts bound an HTTP send; this bounds every other kind too).
SEND_SLACK = 5
#: Schemes that speak HTTP through Apprise: they take the `cto`/`rto` timeouts.
_HTTP_SCHEMES = ("json", "jsons", "form", "forms", "xml", "xmls", "ntfy", "ntfys", "gotify", "gotifys")

log = logging.getLogger("rk.channels.notify")

#: `send(channel, title, body) -> ""` when sent, else why not (the shell's one Apprise call).
Sender = Callable[[Channel, str, str], str]


def with_timeouts(url: str, timeout: int) -> str:
    """`url` with Apprise's connect and read timeouts (`cto`, `rto`) when it has none."""
    if "://" not in url or "cto=" in url or "rto=" in url:
        return url
    scheme = url.partition("://")[0].lower()
    if scheme not in _HTTP_SCHEMES and not scheme.startswith(("http", "slack", "discord", "tgram", "matrix")):
        return url
    return f"{url}{'&' if '?' in url else '?'}cto={timeout}&rto={timeout}"


def apprise_send(channel: Channel, title: str, body: str) -> str:
    """One message through Apprise: "" when sent, else why not (Apprise's own words).

    The send runs on a daemon thread of its own, given the channel's timeout (and a little):
    a channel that never answers is a failure said, and holds up neither the worker past it
    nor the exit of `rk cron tick`. Apprise's own pool of threads (which an exit waits for)
    is turned off where Apprise has one."""
    try:
        import apprise
    except ImportError:
        return "apprise is not installed (pip install apprise)"
    try:
        sender = apprise.Apprise(asset=apprise.AppriseAsset(service_timeout=0))
    except (TypeError, AttributeError):  # an Apprise without a service limit sends on the caller's thread
        sender = apprise.Apprise()
    if not sender.add(with_timeouts(channel.url, channel.timeout)):
        return "Apprise does not understand this URL"
    answer: list[str] = []

    def send() -> None:
        try:
            with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:  # type: ignore[no-untyped-call, unused-ignore]
                ok = sender.notify(title=title, body=body)
        except Exception as exc:  # reported as this channel's failure
            answer.append(f"{type(exc).__name__}: {first_line(exc)}")
            return
        text = captured.getvalue().strip() if hasattr(captured, "getvalue") else ""
        answer.append("" if ok else text.splitlines()[-1][:300] if text else "the channel refused the message")

    thread = threading.Thread(target=send, name=f"rk-send-{channel.name}", daemon=True)
    thread.start()
    thread.join(channel.timeout + SEND_SLACK)
    return answer[0] if answer else f"no answer within {channel.timeout + SEND_SLACK:g}s"


def read_memory(path: Path) -> Memory:
    """`notify.log` as the memory; an unreadable or torn line is skipped."""
    return Memory.of(read_since(path, None)[0])


#: Where a reader of `notify.log` stopped: the file's (device, inode) and the offset after its last whole line.
Mark = tuple[tuple[int, int], int]


def read_since(path: Path, mark: Mark | None) -> tuple[list[NoticeLine], Mark | None]:
    """The whole lines appended to `notify.log` since `mark` (from its newest MEMORY_BYTES when
    there is none, or the file was replaced or cut), and where this read stopped. A line still
    being written is read once it is whole; an unreadable or torn line is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return [], None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        ident, size = (st.st_dev, st.st_ino), st.st_size
        if mark is not None and mark[0] == ident and mark[1] <= size:
            f.seek(mark[1])
        elif size > MEMORY_BYTES:
            f.seek(size - MEMORY_BYTES)
            f.readline()
        start = f.tell()
        data = f.read(max(0, size - start))
    whole = data[: data.rfind(b"\n") + 1]
    lines = (NoticeLine.parse(raw.decode("utf-8", "replace")) for raw in whole.splitlines())
    return [line for line in lines if line is not None], (ident, start + len(whole))


def trim(path: Path, keep: int = MEMORY_BYTES) -> None:
    """Cut `notify.log` to its newest `keep` bytes of whole lines when it is past twice that
    (atomically: a crash leaves the old file or the new one)."""
    try:
        if os.lstat(path).st_size <= 2 * keep:
            return
        with open(path, "rb") as f:
            f.seek(-keep, os.SEEK_END)
            f.readline()
            tail = f.read()
    except OSError:
        return
    from rk.host.files import atomic_write

    try:
        atomic_write(path, tail)
    except OSError as exc:
        log.error("notify.log not trimmed: %s", exc.strerror or exc)


def append(path: Path, lines: Sequence[NoticeLine]) -> None:
    """Append whole lines in one write, 0600, never through a symlink; after a torn
    last line (a write cut short) on a line of their own, so it swallows none of them."""
    if not lines:
        return
    data = "".join(line.to_json() + "\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        os.write(fd, data)
    finally:
        os.close(fd)


class Notifier:
    """Plans each tick's notifications and tells them from one worker per channel.

    Each channel has an outbox: the `notify-queued` (and, after quiet hours, the
    `notify-held`) lines of what it has not been told yet, written to notify.log
    before they wait there. A worker takes the whole outbox at once and sends what
    `batches` makes of it, so a burst, or whatever piled up while a send hung,
    becomes one summary; nothing waits in a bounded queue to be dropped.

    The channels may change under it (`reconfigure`: config.yaml was edited). Before
    each tick's plan it reads what others (an `rk cron tick`) appended to notify.log,
    so what they told is not told again, and an owner (`restore`: the ticker, or a
    tick with no ticker running) takes on what they left queued once it is ADOPT_AFTER
    old. A guest (a tick beside a running ticker) tells only what its own tick found."""

    def __init__(
        self,
        state_dir: Path,
        channels: Iterable[Channel],
        zone: tzinfo,
        sender: Sender = apprise_send,
        clock: Callable[[], float] = time.time,
        restore: bool = True,
    ) -> None:
        self.path = Path(state_dir) / NOTIFY_LOG
        self.channels: list[Channel] = []
        self.zone, self.sender, self.clock, self.restore = zone, sender, clock, restore
        if restore:
            trim(self.path)
        lines, self._mark = read_since(self.path, None)
        self.memory = Memory.of(lines)
        self._wake = threading.Condition(threading.Lock())
        self._stopping = False
        self._outbox: dict[str, list[NoticeLine]] = {}
        #: per channel, the keys of a summary of what an earlier run queued and never told
        self._left: dict[str, set[str]] = {}
        #: per channel, the keys this notifier queued and has not concluded (in its outbox or being sent)
        self._mine: dict[str, set[str]] = {}
        #: the worker each channel has now (a reconfigured channel's old worker sees it is not its own)
        self._generation: dict[str, int] = {}
        #: the keys each worker is sending now (its own to account for, even when its channel is gone)
        self._sending: dict[tuple[str, int], set[str]] = {}
        self._workers: list[threading.Thread] = []
        #: events told and failed by this notifier (`rk cron tick` says so)
        self.told = {Status.NOTIFIED: 0, Status.NOTIFY_FAILED: 0}
        with self._wake:
            workers = self._open(channels)
        for worker in workers:
            worker.start()

    @property
    def heard(self) -> frozenset[str]:
        """The events some channel hears (those need no tmux message: `rk.act.interrupt`)."""
        return frozenset(event for channel in self.channels for event in channel.on)

    def _open(self, channels: Iterable[Channel]) -> list[threading.Thread]:
        """Serve `channels` from now on (under the lock): the new ones get their outbox
        (restored, for an owner) and a worker (to be started); the gone ones' end."""
        old = {channel.name for channel in self.channels}
        self.channels = list(channels)
        names = {channel.name for channel in self.channels}
        for name in old - names:
            self._generation.pop(name, None)  # its worker ends after the send in flight
            self._outbox.pop(name, None)
            self._mine.pop(name, None)
        fresh = [channel for channel in self.channels if channel.name not in old]
        workers = []
        for channel in fresh:
            self._outbox[channel.name], self._mine[channel.name] = [], set()
            self._left[channel.name] = set()
            generation = self._generation[channel.name] = max(self._generation.values(), default=0) + 1
            workers.append(
                threading.Thread(
                    target=self._work, args=(channel.name, generation), name=f"rk-notify-{channel.name}", daemon=True
                )
            )
        if self.restore:
            self._restore(fresh)
            self._account_for_lost_channels()
        self._workers += workers
        self._wake.notify_all()
        return workers

    def reconfigure(self, channels: Iterable[Channel]) -> None:
        """Follow a changed `notify:`: a new channel starts (with what an earlier run left it),
        a changed one sends its next message with its new settings, a gone one stops after
        its send in flight, what it was never told failed and said."""
        with self._wake:
            workers = self._open(channels)
        for worker in workers:
            worker.start()
        log.info("notify: channels now %s", ", ".join(c.label for c in self.channels) or "none")

    def _restore(self, channels: Iterable[Channel]) -> None:
        """Each channel's outbox: what notify.log says an earlier run queued and never
        told; held instead when the channel is within its quiet hours now."""
        now = int(self.clock())
        for channel in channels:
            left = list(self.memory.pending.get(channel.name, {}).values())
            if left and is_quiet(channel, now, self.zone):
                self._record([replace(line, ts=now, outcome=f"{Status.NOTIFY_HELD}: quiet") for line in left])
                left = []
            self._take_on(channel.name, left)

    def _take_on(self, name: str, lines: list[NoticeLine]) -> None:
        """Queue lines an earlier run (or another process) left untold: told in one summary."""
        self._outbox[name] += lines
        self._left[name] |= {line.key for line in lines}
        self._mine[name] |= {line.key for line in lines}

    def _account_for_lost_channels(self) -> None:
        """What notify.log says is queued or held for a channel config.yaml no longer has: failed, and said
        (but for what a gone channel's worker is sending: it says how that ended)."""
        names = {channel.name for channel in self.channels}
        sending = {(name, key) for (name, _), keys in self._sending.items() for key in keys}
        waiting = [*self.memory.pending.items(), *self.memory.held.items()]
        lost = [line for name, lines in waiting if name not in names for line in lines.values()]
        lost = [line for line in lost if (line.channel, line.key) not in sending]
        now = int(self.clock())
        self._record([line.told(now, f"{Status.NOTIFY_FAILED}: {LOST}") for line in lost])
        for name in sorted({line.channel for line in lost}):
            log.warning("notify: channel %r is no longer in config.yaml: its untold events are failed", name)

    def after_tick(self, servers: Iterable[object], now: int) -> None:
        """Plan and queue what this tick's servers (`rk.engine.result.ServerTick`s) call for. Never blocks on a send."""
        events: list[Event] = []
        with self._wake:  # the memory is the workers' too
            self._catch_up(now)
            for srv in servers:
                if not getattr(srv, "swept", False):
                    continue
                decisions = [(d.entry, d.pane, d.outcome) for d in getattr(srv, "decisions", ())]
                slug, panes = str(getattr(srv, "slug", "")), getattr(srv, "panes", ())
                unreadable = getattr(srv, "unreadable", "")  # its entries file could not be read
                events += events_of(slug, decisions, panes_of(panes), now, self.memory, str(unreadable or ""))
            for channel in self.channels:
                self._plan_one(channel, events, now)
            self._wake.notify_all()

    def _catch_up(self, now: int) -> None:
        """The lines appended to notify.log since it was last read (ours again, and others'):
        what another process told is not told twice; what it left queued ADOPT_AFTER ago, an
        owner takes on (that process has ended: `rk cron tick` waits TICK_WAIT at most)."""
        lines, self._mark = read_since(self.path, self._mark)
        for line in lines:
            self.memory.add(line)
        if not self.restore:
            return
        for channel in self.channels:
            mine = self._mine[channel.name]
            pending = self.memory.pending.get(channel.name, {})
            left = [line for key, line in pending.items() if key not in mine and line.ts <= now - ADOPT_AFTER]
            self._take_on(channel.name, left)

    def _plan_one(self, channel: Channel, events: Sequence[Event], now: int) -> None:
        todo = plan(channel, events, self.memory, now, self.zone)
        held = [NoticeLine.of(now, channel, e, f"{Status.NOTIFY_HELD}: quiet") for e in todo.hold]
        queued = [NoticeLine.of(now, channel, e, str(Status.NOTIFY_QUEUED)) for e in todo.send]
        # written before they are sent: what a stopped ticker had not told is told at the next start
        self._record(held + queued)
        if todo.summary:  # quiet hours are over: the held lines go to the worker (notify.log says held until told)
            self.memory.held.pop(channel.name, None)
        self._outbox[channel.name] += todo.summary + queued
        self._mine[channel.name] |= {line.key for line in todo.summary + queued}

    def _serves(self, name: str, generation: int) -> bool:
        return not self._stopping and self._generation.get(name) == generation

    def _work(self, name: str, generation: int) -> None:
        while True:
            with self._wake:
                while not self._outbox.get(name) and self._serves(name, generation):
                    self._wake.wait()
                if not self._serves(name, generation):
                    return
                lines, self._outbox[name] = self._outbox[name], []
                channel, left = next(c for c in self.channels if c.name == name), set(self._left[name])
                self._sending[(name, generation)] = {line.key for line in lines}
            try:
                self._send(channel, generation, batches(channel, lines, int(self.clock()), self.zone, left))
            finally:
                with self._wake:
                    self._sending.pop((name, generation), None)
                    self._wake.notify_all()

    def _send(self, channel: Channel, generation: int, todo: Iterable[Batch]) -> None:
        for batch in todo:
            if self._stopping:
                return
            if not self._serves(channel.name, generation):  # gone from config.yaml meanwhile
                self._done(channel, batch, f"{Status.NOTIFY_FAILED}: {LOST}")
                continue
            try:
                why = self.sender(channel, batch.title, batch.body)
            except Exception as exc:  # a sender's bug is one channel's failure, never the ticker's
                why = f"{type(exc).__name__}: {first_line(exc)}"
            self._done(
                channel,
                batch,
                f"{Status.NOTIFIED}: {channel.name}" if not why else f"{Status.NOTIFY_FAILED}: {why}",
            )

    def _done(self, channel: Channel, batch: Batch, outcome: str) -> None:
        """One outcome line per event the batch told of (a stopped notifier writes none:
        the next start tells them again)."""
        now = int(self.clock())
        with self._wake:
            if self._stopping:
                return
            self._record([line.told(now, outcome, batch.key) for line in batch.lines])
            self._mine.get(channel.name, set()).difference_update(line.key for line in batch.lines)
            told = status_of(outcome) == Status.NOTIFIED
            self.told[Status.NOTIFIED if told else Status.NOTIFY_FAILED] += len(batch.lines)
        if batch.key:
            log.info("notify %s summary %s %s (%d events)", channel.label, batch.key, outcome, len(batch.lines))
        else:
            for line in batch.lines:
                log.info("notify %s %s %s %s", channel.label, line.event, line.key, outcome)

    def _record(self, lines: list[NoticeLine]) -> None:
        for line in lines:
            self.memory.add(line)
        try:
            append(self.path, lines)
        except OSError as exc:
            log.error("notify.log not written: %s", exc.strerror or exc)

    def settle(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for every outbox to be told (sent or failed); whether it was."""
        deadline = time.monotonic() + timeout
        with self._wake:
            while any(self._outbox.values()) or self._sending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._wake.wait(left)
        return True

    def untold(self) -> int:
        """How many events this notifier queued and did not conclude (notify.log keeps them queued)."""
        with self._wake:
            return sum(len(keys) for keys in self._mine.values())

    def stop(self, wait: float = 0.0) -> None:
        """Let the workers end. What they have not told stays queued in notify.log and is
        told at the next start; a send in flight finishes on its own timeout (they are
        daemons) and is recorded by nobody, so it may be told twice, never lost."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        for worker in self._workers:
            worker.join(wait)


def reachable(channel: Channel, environ: dict[str, str], timeout: float = 1.0) -> tuple[bool, str]:
    """Whether `channel` looks reachable without sending: a desktop needs a session bus
    (a notification daemon answers there), a network channel its host's port."""
    scheme = channel.url.partition("://")[0].lower()
    if scheme in ("dbus", "kde", "qt", "glib", "gnome", "macosx", "windows"):
        bus = environ.get("DBUS_SESSION_BUS_ADDRESS", "")
        if not bus:
            return False, "no DBus session (DBUS_SESSION_BUS_ADDRESS unset): no notification daemon to show it"
        path = bus.partition("unix:path=")[2].split(",")[0]
        if path and not os.path.exists(path):
            return False, f"the DBus session socket {path} is gone"
        return notification_daemon(environ, timeout)
    if scheme in ("mailto", "mailtos"):
        return True, "email (not probed: rk notify test sends one)"
    try:
        parts = urlsplit(channel.url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return False, "the URL does not parse"
    if not host:
        return True, "no host to probe (rk notify test sends one)"
    if port is None:
        port = 443 if scheme.endswith("s") or scheme in ("ntfy", "slack", "discord", "tgram", "matrix") else 80
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True, f"{host}:{port} accepts connections"
    except OSError as exc:
        return False, f"{host}:{port}: {exc.strerror or exc}"


#: The bus name every desktop notification daemon owns (freedesktop's spec).
NOTIFICATIONS_NAME = "org.freedesktop.Notifications"


def notification_daemon(environ: dict[str, str], timeout: float = 1.0) -> tuple[bool, str]:
    """Whether the session bus has a notification daemon: one that owns the name now,
    or one the bus starts on demand (an activatable name). Asked with `dbus-send`
    (argv, no shell); without it, the bus alone is taken as a yes, and said so."""
    import shutil
    import subprocess

    tool = shutil.which("dbus-send", path=environ.get("PATH"))
    if tool is None:
        return True, "a DBus session (the daemon not asked: no dbus-send)"

    def ask(method: str, *args: str) -> str | None:
        argv = [tool, "--session", "--print-reply=literal", "--dest=org.freedesktop.DBus"]
        argv += ["/org/freedesktop/DBus", f"org.freedesktop.DBus.{method}", *args]
        try:
            done = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    owned = ask("NameHasOwner", f"string:{NOTIFICATIONS_NAME}")
    if owned is None:
        return False, "the DBus session does not answer"
    if owned.split()[-1:] == ["true"]:
        return True, f"a notification daemon owns {NOTIFICATIONS_NAME}"
    activatable = ask("ListActivatableNames") or ""
    if NOTIFICATIONS_NAME in activatable.split():
        return True, f"a notification daemon starts on demand ({NOTIFICATIONS_NAME} is activatable)"
    return False, f"no notification daemon on the DBus session ({NOTIFICATIONS_NAME} has no owner)"


def follow(current: Notifier | None, source: ChannelsFile, state_dir: Path, zone: tzinfo) -> Notifier | None:
    """The ticker's notifier for config.yaml's channels now: `current` while they are as they
    were, reconfigured when they changed, started when the first appear (None: none yet)."""
    channels = source.changed()
    for problem in source.problems:
        log.warning("%s", problem)
    source.problems = []
    if channels is None:
        return current
    if current is None:
        return Notifier(state_dir, channels, zone) if channels else None
    current.reconfigure(channels)
    return current


def start(state_dir: Path, environ: dict[str, str], zone: tzinfo) -> Notifier | None:
    """The ticker's notifier for the config file's `notify:` channels (None: none set);
    each channel that cannot be used is logged once and left out."""
    from rk.channels.notify_config import ChannelsFile

    return follow(None, ChannelsFile(environ), state_dir, zone)


@dataclass(frozen=True)
class Told:
    """What one `rk cron tick` told: events sent, failed, and left queued for the next tick."""

    notified: int
    failed: int
    queued: int

    def to_dict(self) -> dict[str, int]:
        return {"notified": self.notified, "failed": self.failed, "queued": self.queued}

    @property
    def human(self) -> str:
        later = f", {self.queued} left queued (the next tick tells them)" if self.queued else ""
        return f"notify: {self.notified} told, {self.failed} failed{later}"


def tell_once(
    state_dir: Path,
    channels: Sequence[Channel],
    zone: tzinfo,
    tick: tuple[Iterable[object], int],
    owner: bool,
    wait: float = TICK_WAIT,
) -> Told:
    """`rk cron tick`'s notifications: what its tick (`(servers, now)`) calls for, and, as the
    `owner` (no ticker runs), what earlier ticks left queued; told within `wait` seconds, the
    rest left queued in notify.log. Called after the tick's deliveries: none waits on a send."""
    notifier = Notifier(state_dir, channels, zone, restore=owner)
    try:
        notifier.after_tick(*tick)
        notifier.settle(wait)
    finally:
        notifier.stop()
    return Told(notifier.told[Status.NOTIFIED], notifier.told[Status.NOTIFY_FAILED], notifier.untold())

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
the memory that keeps an event from being told twice across restarts.

Apprise is imported only here, and only when a message is sent: never on the
hook path, the status line or the CLI's start.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import tzinfo
from pathlib import Path
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
from rk.core.log.delivery import Status
from rk.core.log.diagnostics import first_line

NOTIFY_LOG = "notify.log"
#: Why an event queued or held for a channel config.yaml no longer has is failed at the start.
LOST = "the channel is no longer in config.yaml"
#: Read at most this much of `notify.log` at start (its newest lines); past twice
#: this, the ticker's start trims the file to them (a month of busy days).
MEMORY_BYTES = 1 << 20
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
    """One message through Apprise: "" when sent, else why not (Apprise's own words)."""
    try:
        import apprise
    except ImportError:
        return "apprise is not installed (pip install apprise)"
    sender = apprise.Apprise()
    if not sender.add(with_timeouts(channel.url, channel.timeout)):
        return "Apprise does not understand this URL"
    with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:  # type: ignore[no-untyped-call, unused-ignore]
        ok = sender.notify(title=title, body=body)
    if ok:
        return ""
    text = captured.getvalue().strip() if hasattr(captured, "getvalue") else ""
    return text.splitlines()[-1][:300] if text else "the channel refused the message"


def read_memory(path: Path) -> Memory:
    """`notify.log` as the memory; an unreadable or torn line is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return Memory()
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MEMORY_BYTES:
            f.seek(size - MEMORY_BYTES)
            f.readline()
        data = f.read()
    lines = (NoticeLine.parse(raw.decode("utf-8", "replace")) for raw in data.splitlines())
    return Memory.of(line for line in lines if line is not None)


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
    becomes one summary; nothing waits in a bounded queue to be dropped."""

    def __init__(
        self,
        state_dir: Path,
        channels: Iterable[Channel],
        zone: tzinfo,
        sender: Sender = apprise_send,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(state_dir) / NOTIFY_LOG
        self.channels = list(channels)
        self.zone, self.sender, self.clock = zone, sender, clock
        trim(self.path)
        self.memory = read_memory(self.path)
        self._wake = threading.Condition(threading.Lock())
        self._stopping = False
        self._outbox: dict[str, list[NoticeLine]] = {}
        self._restore()
        #: the keys a stopped ticker queued and never told (told in one summary)
        self._left = {name: {line.key for line in lines} for name, lines in self._outbox.items()}
        self._account_for_lost_channels()
        self._workers = [
            threading.Thread(target=self._work, args=(channel,), name=f"rk-notify-{channel.name}", daemon=True)
            for channel in self.channels
        ]
        for worker in self._workers:
            worker.start()

    def _restore(self) -> None:
        """Each channel's outbox: what notify.log says a stopped ticker queued and never
        told; held instead when the channel is within its quiet hours now."""
        now = int(self.clock())
        for channel in self.channels:
            left = list(self.memory.pending.get(channel.name, {}).values())
            if left and is_quiet(channel, now, self.zone):
                self._record([replace(line, ts=now, outcome=f"{Status.NOTIFY_HELD}: quiet") for line in left])
                left = []
            self._outbox[channel.name] = left

    def _account_for_lost_channels(self) -> None:
        """What notify.log says is queued or held for a channel config.yaml no longer has: failed, and said."""
        names = {channel.name for channel in self.channels}
        waiting = [*self.memory.pending.items(), *self.memory.held.items()]
        lost = [line for name, lines in waiting if name not in names for line in lines.values()]
        now = int(self.clock())
        self._record([line.told(now, f"{Status.NOTIFY_FAILED}: {LOST}") for line in lost])
        for name in sorted({line.channel for line in lost}):
            log.warning("notify: channel %r is no longer in config.yaml: its untold events are failed", name)

    def after_tick(self, servers: Iterable[object], now: int) -> None:
        """Plan and queue what this tick's servers (`rk.engine.result.ServerTick`s) call for. Never blocks on a send."""
        events: list[Event] = []
        with self._wake:  # the memory is the workers' too
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

    def _plan_one(self, channel: Channel, events: Sequence[Event], now: int) -> None:
        todo = plan(channel, events, self.memory, now, self.zone)
        held = [NoticeLine.of(now, channel, e, f"{Status.NOTIFY_HELD}: quiet") for e in todo.hold]
        queued = [NoticeLine.of(now, channel, e, str(Status.NOTIFY_QUEUED)) for e in todo.send]
        # written before they are sent: what a stopped ticker had not told is told at the next start
        self._record(held + queued)
        if todo.summary:  # quiet hours are over: the held lines go to the worker (notify.log says held until told)
            self.memory.held.pop(channel.name, None)
        self._outbox[channel.name] += todo.summary + queued

    def _work(self, channel: Channel) -> None:
        while True:
            with self._wake:
                while not self._outbox[channel.name] and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                lines, self._outbox[channel.name] = self._outbox[channel.name], []
            for batch in batches(channel, lines, int(self.clock()), self.zone, self._left[channel.name]):
                if self._stopping:
                    return
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


def start(state_dir: Path, environ: dict[str, str], zone: tzinfo) -> Notifier | None:
    """The ticker's notifier for the config file's `notify:` channels (None: none set);
    each channel that cannot be used is logged once and left out."""
    from rk.store.config import load_channels

    channels, problems = load_channels(environ)
    for problem in problems:
        log.warning("%s", problem)
    return Notifier(state_dir, channels, zone) if channels else None

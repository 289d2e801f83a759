"""The ticker: tick every server once at start, then every 30 s, and at once
for a server whose pane state just changed (a nudge on `ticker.sock`).

One ticker per state directory (a lock file says so). It sleeps on a
monotonic clock, but never longer than until the next due instant, so an
`every 45s` entry fires at 45 s, not 60. Because `due()` derives everything
from the log and the panes, a clock jump (laptop sleep, SIGSTOP, an NTP step
either way) yields at most one fire per entry. An exception in one tick is
logged on one line and the loop goes on; SIGTERM and SIGINT stop it after the
tick in flight. Between its polls it glimpses the agent panes that are `active`
(`rk.engine.watch`), so a turn end no hook reports is written within a second.

Two clocks, both injected: the monotonic one paces the sleeps, the wall one
gives every tick its `now` and says when a due instant has come. With
`RK_NOW` set, the wall clock starts there and advances with the monotonic
one, so a ticker replaying another day keeps the same pace as a real one.

`start` runs the same loop detached, with a pid file that records the
process start time too, so `stop` and `status` never mistake a reused pid for
ours.
"""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from rk.channels import notify
from rk.channels.notify import Notifier
from rk.channels.notify_config import ChannelsFile
from rk.core.environ import NUDGE_SOCKET
from rk.core.errors import ExitStatus, RkError
from rk.core.log.diagnostics import Diag, first_line
from rk.core.pane.recheck import RECHECK_AFTER
from rk.engine.fleet import Fleet
from rk.engine.fleet_line import FleetLine
from rk.engine.result import ServerTick
from rk.engine.runtime import Runtime
from rk.engine.tick import sweep
from rk.engine.watch import Watcher
from rk.host import clock, nudge
from rk.host.files import atomic_write
from rk.host.lock import release, try_lock
from rk.store.config import ensure_private_dir
from rk.store.ticker_record import PID_NAME as PID_NAME  # what the ticker records, read without this module
from rk.store.ticker_record import STATUS_NAME as STATUS_NAME
from rk.store.ticker_record import PidRecord as PidRecord
from rk.store.ticker_record import process_start_time as process_start_time
from rk.store.ticker_record import read_pid as read_pid
from rk.store.ticker_record import read_status as read_status

LOCK_NAME = "ticker.lock"
LOG_NAME = "ticker.log"
#: Land this long after a due second so the tick's integer `now` has reached it.
DUE_SLACK = 0.05
MIN_SLEEP = 0.2
#: The longest sleep between two checks that the state directory is still the one we locked.
WATCH_EVERY = 2.0

log = logging.getLogger("rk.engine.ticker")


class TickerRunning(RkError, status=ExitStatus.OK):
    """Another ticker already serves this state directory."""


class TickerError(RkError):
    """The ticker cannot start or be controlled; the message is for the user."""


class StateDirLost(TickerError):
    """The state directory (or the ticker's lock in it) was removed or replaced under the ticker."""


def lock_holder(path: Path) -> int:
    """The pid holding a flock on `path` per /proc/locks (0: none, or not known)."""
    try:
        st = os.stat(path)
        table = Path("/proc/locks").read_text()
    except OSError:
        return 0
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for row in table.splitlines():
        fields = row.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == want and fields[4].isdigit():
            return int(fields[4])
    return 0


def find_running(state_dir: Path) -> PidRecord | None:
    """The ticker serving `state_dir`: by its pid file, else by who holds
    `ticker.lock` (a pid file removed or overwritten does not hide a live ticker)."""
    record = read_pid(state_dir)
    if record is not None and record.alive():
        return record
    pid = lock_holder(state_dir / LOCK_NAME)
    if pid <= 0:
        return None
    return PidRecord(pid, process_start_time(pid), record.started_at if record and record.pid == pid else 0)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _write_pid(state_dir: Path) -> None:
    from rk.host.files import atomic_write

    record = {"pid": os.getpid(), "start_time": process_start_time(os.getpid()), "started_at": int(time.time())}
    atomic_write(state_dir / PID_NAME, (json.dumps(record) + "\n").encode())


@dataclass(frozen=True)
class Clocks:
    """The ticker's two clocks: `wall` (unix seconds, fractional) and `mono` (seconds)."""

    wall: Callable[[], float]
    mono: Callable[[], float]

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], mono: Callable[[], float] = time.monotonic) -> Clocks:
        """The system clocks; with RK_NOW, a wall clock that starts there and runs on `mono`."""
        if not environ.get("RK_NOW"):
            return cls(wall=time.time, mono=mono)
        start, origin = float(clock.now(environ)), mono()
        return cls(wall=lambda: start + (mono() - origin), mono=mono)


class Ticker:
    """The loop. `stop()` (or SIGTERM/SIGINT when installed) ends it after the tick in flight."""

    def __init__(self, runtime: Runtime, interval: float | None = None, clocks: Clocks | None = None) -> None:
        self.clocks = clocks or Clocks.from_environ(runtime.environ)
        wall = self.clocks.wall
        runtime.clock = lambda: int(wall())  # every tick's `now` is the wall clock
        self.runtime = runtime
        self.interval = float(interval if interval is not None else runtime.settings.tick_interval)
        self._stop = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self.ticks = 0
        self.errors = 0
        self.served: set[str] = set()
        self.last_error: dict[str, object] | None = None
        #: server → monotonic instant of a recheck tick a hold asked for (`rk.core.pane.recheck`)
        self.rechecks: dict[str, float] = {}
        #: server → what the status line shows of it (`rk.core.channels.glance`): next due, paused, muted
        self.glances: dict[str, dict[str, object]] = {}
        self.notifier: Notifier | None = None  #: set by `run` when config.yaml has `notify:` channels
        #: config.yaml's channels, followed at each tick (when `run` made the notifier: not one given to it)
        self.channels_file: ChannelsFile | None = None
        self.watcher = Watcher(runtime)  #: the active agent panes, glimpsed between the polls
        self.fleet = Fleet(runtime.state_dir, runtime.environ)  #: other hosts' journals its wakes watch
        self.fleet_line = FleetLine(runtime.state_dir, runtime.environ)  #: other hosts' agents, for the status line

    def stop(self, *_args: object) -> None:
        self._stop = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def tick(self, only: str | None = None) -> float | None:
        """One sweep, exceptions contained. Returns the next due instant (unix s) or None."""
        started = self.runtime.clock()
        self._follow_channels()
        try:
            result = sweep(self.runtime, only=only)
        except Exception as exc:
            self.errors += 1
            if self.runtime.environ.get("RK_DEBUG"):
                log.exception("tick failed%s", f" for {only}" if only else "")
            else:
                log.error("tick failed%s: %s: %s", f" for {only}" if only else "", type(exc).__name__, first_line(exc))
            self._status(started, [], f"tick failed: {type(exc).__name__}: {first_line(exc)}", full=only is None)
            return None
        self.ticks += 1
        self.watcher.wake(only)
        if self.notifier is not None:
            try:  # planning is pure and quick; sending happens on the notifier's own threads
                self.notifier.after_tick(result.servers, started)
            except Exception as exc:
                log.error("notify failed: %s: %s", type(exc).__name__, first_line(exc))
        if only is None:
            self.rechecks.clear()
            self._follow_fleet([s.slug for s in result.servers])
        else:
            self.rechecks.pop(only, None)
        soon = self.clocks.mono() + RECHECK_AFTER
        self.rechecks.update((slug, soon) for slug in result.rechecks)
        failed = [f"{server}: {d.detail}" for server, d in result.diagnostics if d.reason == Diag.TICK_FAILED]
        if only is None:
            self.glances.clear()
        self.glances.update((s.slug, _glance(s)) for s in result.servers if s.swept)
        self._status(started, [s.slug for s in result.servers if s.swept], failed[0] if failed else "", only is None)
        for decision in result.decisions:
            log.info(
                "%s %s %s %s %s",
                decision.server,
                decision.entry,
                decision.reason,
                decision.pane or "-",
                decision.outcome,
            )
        for server, diag in result.diagnostics:
            self.errors += diag.reason == Diag.TICK_FAILED
            level = logging.ERROR if diag.reason == Diag.TICK_FAILED else logging.DEBUG
            log.log(level, "%s %s %s %s", server, diag.entry or "-", diag.reason, diag.detail)
        due = result.next_due
        return due if due is not None and due > started else None  # a due instant already past is no reason to spin

    def _follow_fleet(self, slugs: list[str]) -> None:
        try:
            self.fleet.reconcile(slugs)
        except Exception as exc:  # the followers stay as they were; the tick goes on
            log.error("fleet not followed: %s: %s", type(exc).__name__, first_line(exc))

    def _follow_channels(self) -> None:
        """Follow an edit of config.yaml's `notify:` before the tick, so this tick's events reach
        the channels it names now (and what they hear needs no tmux message: `rk.act.interrupt`)."""
        if self.channels_file is not None:
            try:
                self.notifier = notify.follow(
                    self.notifier, self.channels_file, self.runtime.state_dir, self.runtime.zone
                )
            except Exception as exc:  # the channels stay as they were; the tick goes on
                log.error("notify channels not followed: %s: %s", type(exc).__name__, first_line(exc))
        if self.notifier is not None:
            self.runtime.heard = self.notifier.heard

    def _status(self, at: int, servers: list[str], error: str, full: bool = True) -> None:
        """Record the tick in `ticker.status` (best effort: a status file never stops the loop).
        A full sweep says which servers are served; a nudged one adds its own."""
        if error:
            self.last_error = {"ts": at, "message": error}
        self.served = set(servers) if full else self.served | set(servers)
        record = {
            "pid": os.getpid(),
            "last_tick": at,
            "servers": sorted(self.served),
            "ticks": self.ticks,
            "errors": self.errors,
            "last_error": self.last_error,
            **glance_of(self.glances),
        }
        try:
            atomic_write(self.runtime.state_dir / STATUS_NAME, (json.dumps(record) + "\n").encode("utf-8"))
        except OSError:
            pass

    def run(self) -> None:
        """Tick at once, then every interval (sooner for a due instant or a nudge)."""
        ensure_private_dir(self.runtime.state_dir)
        lock_fd = try_lock(self.runtime.state_dir / LOCK_NAME)
        if lock_fd is None:
            record = read_pid(self.runtime.state_dir)
            raise TickerRunning(f"a ticker is already running{f' (pid {record.pid})' if record else ''}")
        listener = None
        state_dir = self.runtime.state_dir
        held = (_identity(state_dir), _identity(state_dir / LOCK_NAME))
        lost = ""
        try:
            _write_pid(self.runtime.state_dir)
            if self.notifier is None:
                self.channels_file = ChannelsFile(self.runtime.environ)
            self._follow_channels()  # at the start: what an earlier run left is told now
            self.fleet_line.start()
            try:
                listener = nudge.Listener(str(self.runtime.state_dir / NUDGE_SOCKET))
            except OSError as exc:
                log.warning("nudge socket unavailable (%s); polling only", exc)
            log.info("ticker started (pid %d, interval %gs)", os.getpid(), self.interval)
            wall, mono = self.clocks.wall, self.clocks.mono
            next_poll = mono()
            due_wall: float | None = None
            while not self._stop:
                if (_identity(state_dir), _identity(state_dir / LOCK_NAME)) != held:
                    # Ticking on would recreate the directory and its files beside a second
                    # ticker that could then lock them: this one stops instead.
                    lost = f"state directory {state_dir} was removed or replaced; the ticker stops"
                    break
                now_mono = mono()
                if now_mono >= next_poll or (due_wall is not None and wall() >= due_wall):
                    next_due = self.tick()
                    next_poll = mono() + self.interval
                    due_wall = next_due + DUE_SLACK if next_due is not None else None
                    continue
                recheck = sorted(slug for slug, at in self.rechecks.items() if at <= now_mono)
                if recheck:
                    for slug in recheck:
                        due_wall = _sooner(due_wall, self.tick(only=slug))
                    continue
                if (look := self.watcher.wait(self.served, now_mono)) <= 0:
                    self.watcher.step(self.served, now_mono)
                    continue
                timeout = min(next_poll - now_mono, look)
                if due_wall is not None:
                    timeout = min(timeout, due_wall - wall())
                timeout = min(max(MIN_SLEEP, timeout), WATCH_EVERY)
                if self.rechecks:  # a recheck is the one wait shorter than MIN_SLEEP's floor allows
                    timeout = max(0.0, min(timeout, min(self.rechecks.values()) - now_mono))
                waitables = [self._wake_r] + ([listener] if listener else [])
                try:
                    ready, _, _ = select.select(waitables, [], [], timeout)
                except InterruptedError:
                    continue
                if self._wake_r in ready:
                    os.read(self._wake_r, 64)
                if listener is not None and listener in ready:
                    for slug in sorted(listener.drain()):
                        if self._stop:
                            break
                        due_wall = _sooner(due_wall, self.tick(only=slug))
            if not lost:
                log.info("ticker stopped after %d ticks", self.ticks)
        finally:
            if listener is not None:
                listener.close()
            if self.notifier is not None:
                self.notifier.stop()
            self.fleet.stop()
            self.fleet_line.stop()
            record = read_pid(self.runtime.state_dir)
            if record is not None and record.pid == os.getpid():
                try:
                    (self.runtime.state_dir / PID_NAME).unlink()
                except OSError:
                    pass
            release(lock_fd)
        if lost:
            raise StateDirLost(lost)


def _glance(s: ServerTick) -> dict[str, object]:
    """What the status line shows of one server's tick (`rk.core.channels.glance`)."""
    out: dict[str, object] = {"next_due": s.next_due, "paused": s.paused, "muted": s.muted, "dormant": s.dormant}
    return out | {"unreadable": bool(s.unreadable)}


def glance_of(glances: Mapping[str, Mapping[str, object]]) -> dict[str, object]:
    """The status line's share of `ticker.status`: the earliest next due instant,
    servers paused, entries muted (`rk status --format tmux` reads only this file)."""
    dues = [due for g in glances.values() if isinstance(due := g.get("next_due"), int)]
    return {
        "next_due": min(dues) if dues else None,
        "paused": sum(bool(g.get("paused")) for g in glances.values()),
        "muted": sum(muted for g in glances.values() if isinstance(muted := g.get("muted"), int)),
        "dormant": sum(n for g in glances.values() if isinstance(n := g.get("dormant"), int)),  #: entries dormant
        "unreadable": sum(bool(g.get("unreadable")) for g in glances.values()),  #: servers whose entries it cannot read
    }


def _sooner(due_wall: float | None, next_due: float | None) -> float | None:
    """The wall instant to wake for: the earlier of the one planned and a nudged
    or rechecked tick's own next due instant."""
    if next_due is None:
        return due_wall
    return next_due + DUE_SLACK if due_wall is None else min(due_wall, next_due + DUE_SLACK)


def _private_append_fd(path: Path) -> int:
    """`path` opened for appending, created 0600, never through a symlink (ELOOP instead)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return fd


class _PrivateRotatingHandler(logging.handlers.RotatingFileHandler):
    """RotatingFileHandler whose file is opened without following a symlink, mode 0600."""

    def _open(self) -> io.TextIOWrapper:
        return os.fdopen(_private_append_fd(Path(self.baseFilename)), "a", encoding="utf-8")


def setup_logging(state_dir: Path, foreground: bool, verbose: bool = False) -> None:
    """Foreground: to stderr. Background: to `ticker.log` (rotated at 1 MB)."""
    root = logging.getLogger("rk")
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.handlers.clear()
    if foreground:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
    else:
        ensure_private_dir(state_dir)
        handler = _PrivateRotatingHandler(state_dir / LOG_NAME, maxBytes=1_000_000, backupCount=1)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root.addHandler(handler)


def start_background(runtime: Runtime, argv: list[str], timeout: float = 10.0) -> PidRecord:
    """Launch `argv` (the foreground ticker command) detached and wait for its pid file."""
    state_dir = runtime.state_dir
    existing = find_running(state_dir)
    if existing is not None:
        raise TickerError(f"ticker already running (pid {existing.pid})")
    ensure_private_dir(state_dir)
    log_path = state_dir / LOG_NAME
    try:
        out = os.fdopen(_private_append_fd(log_path), "ab")
    except OSError as exc:
        raise TickerError(f"cannot open {log_path}: {exc.strerror or exc} (a symlink there is refused)") from None
    with out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            env=dict(runtime.environ),
            cwd="/",
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = read_pid(state_dir)
        if record is not None and record.pid == proc.pid and record.alive():
            return record
        if proc.poll() is not None:
            raise TickerError(f"ticker exited at start (status {proc.returncode}); see {log_path}")
        time.sleep(0.05)
    raise TickerError(f"ticker did not start within {timeout:g}s; see {log_path}")


def stop_background(state_dir: Path, timeout: float = 10.0) -> PidRecord | None:
    """SIGTERM the recorded ticker and wait for it to exit; None if none was running."""
    record = find_running(state_dir)
    if record is None:
        return None
    os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not record.alive():
            return record
        time.sleep(0.05)
    raise TickerError(f"ticker (pid {record.pid}) did not stop within {timeout:g}s")


UNIT_NAME = "rk-ticker.service"
#: The settings a ticker must share with the shell that installs it (the unit and the tmux line carry them).
SHARED_SETTINGS = ("TMUX_TMPDIR", "RK_STATE_DIR", "XDG_STATE_HOME", "RK_CONFIG", "XDG_CONFIG_HOME")
#: `ticker-start.log`: what the tmux config's line (`rk.core.tickerconf`) said on stderr at its last run.
START_LOG_NAME = "ticker-start.log"
#: How much of a log's end is read for its last error.
TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class LoggedError:
    """An error line a log holds, with when the log was last written (unix s)."""

    path: Path
    at: float
    text: str


def _tail(path: Path) -> tuple[float, list[str]] | None:
    """(mtime, the last lines) of `path`, never through a symlink; None when unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        os.lseek(fd, max(0, st.st_size - TAIL_BYTES), os.SEEK_SET)
        data = os.read(fd, TAIL_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return st.st_mtime, [each for each in data.decode("utf-8", "replace").splitlines() if each.strip()]


def start_error(state_dir: Path) -> LoggedError | None:
    """The last line the tmux config's line wrote on stderr at its last run (it writes
    over the file each time): None when that run was clean, or there was none."""
    tail = _tail(state_dir / START_LOG_NAME)
    if tail is None or not tail[1]:
        return None
    return LoggedError(state_dir / START_LOG_NAME, tail[0], tail[1][-1].strip())


def _record_level(text: str) -> str:
    """A `ticker.log` record's level ("" for a line that is not a record: a message or a traceback)."""
    parts = text.split(" ", 3)
    return parts[2] if len(parts) > 2 and text[:4].isdigit() and text[4:5] == "-" else ""


def ending_error(state_dir: Path) -> LoggedError | None:
    """What ended the last ticker, from the end of `ticker.log`: its last error (a
    record, an `rk:` message, a traceback's last line) after its last start; None
    when it stopped cleanly or said nothing."""
    tail = _tail(state_dir / LOG_NAME)
    if tail is None:
        return None
    for text in reversed(tail[1]):
        level = _record_level(text)
        if level == "INFO" and ("ticker stopped after" in text or "ticker started" in text):
            return None
        if "this one exits" in text:  # a second start beside a running ticker: no error
            continue
        if level in ("ERROR", "CRITICAL") or (not level and not text[0].isspace() and not text.startswith("Traceback")):
            return LoggedError(state_dir / LOG_NAME, tail[0], text.strip())
    return None


def unit_path(environ: Mapping[str, str]) -> Path:
    """Where the systemd user unit lives: `$XDG_CONFIG_HOME/systemd/user/rk-ticker.service`."""
    from rk.core import environ as rules

    base = Path(environ.get("XDG_CONFIG_HOME") or Path(rules.home(environ)) / ".config")
    return base / "systemd" / "user" / UNIT_NAME


def unit_text(argv: list[str], environ: dict[str, str]) -> str:
    """The systemd user unit that runs `argv` (this rk's ticker) with the settings a
    ticker must share with the shell: the tmux socket directory and rk's state."""
    import shlex

    keep = [k for k in SHARED_SETTINGS if environ.get(k)]
    lines = [
        "# Written by `rk cron ticker install`; rerun it after moving rk.",
        "[Unit]",
        "Description=rk cron ticker (types scheduled prompts into tmux agent panes)",
        "",
        "[Service]",
        f"ExecStart={shlex.join(argv)}",
        *(f"Environment={k}={environ[k]}" for k in keep),
        "# A second ticker (the tmux.conf line's) makes this one exit 0: no restart loop",
        "Restart=on-failure",
        "RestartSec=5",
        "KillSignal=SIGTERM",
        "TimeoutStopSec=30",
        "",
        "[Install]",
        "WantedBy=default.target",
    ]
    return "\n".join(lines) + "\n"

"""One tick: for each live server with an entry file, evaluate and act.

The pipeline per server (its order matters): take the server's lock (held →
quiet no-op) → load entries → read every pane in one enumeration → read the
cursor and the live log → `due()` → append `missed` lines → for each resolved
fire: rate cap, deliver policy with a fresh state read, delivery, log → for
each absent fire: rate cap, if_absent disposition, log → orphan GC on the
pre-disposition log → retire one-shots and entries that made their `max_total`
deliveries (`retired: max-total`) → write the cursor → rotate the log if it is
too big (keeping what the caps count).
The lock is let go while each fire is carried out (`Gate`), its entries
claimed meanwhile (`Claims`): a change of the entries file never waits on
typing (specs/cron.md, "The lock is not held while typing").

Every line is appended (and mirrored into the in-memory view) as soon as its
outcome is known, so a crash loses at most the fire in flight, which the
next tick re-fires once. A dead server is never sent a tmux command.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from rk.act import absent
from rk.core.cost import caps
from rk.core.environ import IDLE_LINE_OPTION
from rk.core.log.delivery import LogLine, LogView, Reason, Status, proves_resolution
from rk.core.log.diagnostics import Diag, Diagnostic, first_line
from rk.core.pane.facts import PaneFact, TargetFact, panes_concerned, resolve_all
from rk.core.pane.identity import JOURNAL_DROPPED, REPLACED, journal_identity, journal_moved
from rk.core.pane.look import draft_without_layout, seen_before_typing
from rk.core.pane.recheck import wants_recheck, watching_dialog
from rk.core.schedule.dispose import Act, Disposition, Seen, dispose, edge_kept, held_mode
from rk.core.schedule.due import Fire, at_done, due, next_due
from rk.core.schedule.entry import At, Backoff, Entry, EntryError, TargetKind
from rk.core.schedule.orphan import orphaned_since, should_expire
from rk.core.schedule.placeholders import typed
from rk.host import clock
from rk.host.files import read_nofollow
from rk.host.lock import acquire, claim, claimed, release, release_claim, try_lock
from rk.store import cursor
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles, Settings, check_private_dir, ensure_private_dir, known_servers
from rk.store.entries import EntryDocument, EntryFileError, EntryNotFound, load_entries
from rk.store.pause import paused_until
from rk.tmux.observe import LookReport, learn_idle_lines, look_around, pane_of_frame, read_screen, watched
from rk.tmux.server import Server, TmuxError, format_number

if TYPE_CHECKING:
    from rk.store.transcripts import Transcripts


@dataclass(frozen=True)
class Decision:
    """What the sweep did (or, dry-run, would do) with one fire."""

    server: str
    entry: str
    reason: str
    pane: str
    outcome: str

    def to_dict(self) -> dict:
        return {
            "server": self.server,
            "entry": self.entry,
            "reason": self.reason,
            "pane": self.pane,
            "outcome": self.outcome,
        }


@dataclass
class ServerTick:
    slug: str
    held: bool = False
    swept: bool = False
    lines: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    next_due: int | None = None  #: earliest future instant a schedule comes due
    journal: ServerFiles | None = None  #: where deliveries record their intent (None: dry run)
    looks: LookReport = field(default_factory=LookReport)  #: captures taken and corrections made
    kept_edges: set[str] = field(default_factory=set)  #: entries whose wake edge a fire left pending
    recheck: bool = False  #: a hold the screen may lift within a second (`rk.core.pane.recheck`): tick again soon
    paused: bool = False  #: the server is paused (the status line counts it)
    muted: int = 0  #: entries muted now (the status line counts them)
    panes: list[PaneFact] = field(
        default_factory=list
    )  #: the panes as this tick saw them (`rk.channels.notify` reads them)


#: Diagnostics that mean a tick could not do its work.
FAILURES = frozenset(
    {
        Diag.TICK_FAILED,
        Diag.ENUMERATION_FAILED,
        Diag.ENTRY_FILE_UNREADABLE,
        Diag.LOG_APPEND_FAILED,
        Diag.CURSOR_WRITE_FAILED,
        Diag.RETIRE_FAILED,
        Diag.ORPHAN_EXPIRE_FAILED,
        Diag.IDENTITY_UNRECORDED,
    }
)


@dataclass
class SweepResult:
    servers: list[ServerTick] = field(default_factory=list)

    @property
    def servers_swept(self) -> int:
        return sum(1 for s in self.servers if s.swept)

    @property
    def fires(self) -> int:
        return sum(s.lines for s in self.servers)

    @property
    def diagnostics(self) -> list[tuple[str, Diagnostic]]:
        return [(s.slug, d) for s in self.servers for d in s.diagnostics]

    @property
    def decisions(self) -> list[Decision]:
        return [d for s in self.servers for d in s.decisions]

    @property
    def next_due(self) -> int | None:
        times = [s.next_due for s in self.servers if s.next_due is not None]
        return min(times) if times else None

    def failures(self, asked: str | None = None) -> list[tuple[str, Diagnostic]]:
        """What kept the sweep from doing its work (`rk cron tick` exits 1 for it):
        a write or read that failed, a server that failed, and a dead server when
        it was `asked` for by name (-L) or no server at all was live. A dead
        server's leftover entry file beside live servers is none."""
        none_live = not self.servers_swept
        return [
            (srv, d)
            for srv, d in self.diagnostics
            if d.reason in FAILURES or (d.reason == Diag.SERVER_NOT_LIVE and (srv == asked or none_live))
        ]

    @property
    def rechecks(self) -> list[str]:
        """The servers to tick again within a second (`ServerTick.recheck`)."""
        return [s.slug for s in self.servers if s.recheck]

    def to_json(self) -> dict:
        return {
            "servers_swept": self.servers_swept,
            "fires": self.fires,
            "diagnostics": [
                {"server": srv, "entry": d.entry, "reason": d.reason, "detail": d.detail} for srv, d in self.diagnostics
            ],
            "decisions": [d.to_dict() for d in self.decisions],
        }


def _default_deliver(server: Server, pane: str, payload: str, guard=None, intent=None):
    from rk.act.deliver import deliver

    return deliver(server, pane, payload, guard=guard, intent=intent)


@dataclass
class Runtime:
    """Everything a tick touches outside the pure core. Tests replace parts of it."""

    state_dir: Path
    settings: Settings
    environ: Mapping[str, str]
    zone: tzinfo
    clock: Callable[[], int]
    deliver: Callable = _default_deliver
    respawn: Callable = absent.run_respawn
    notify: Callable = absent.notify
    #: keep parsed files between ticks (the long-running ticker)
    cache_entries: bool = False
    log_cache: logfile.LiveLogCache | None = None
    #: per server, panes whose screen no layout read, and the state they had (the ticker)
    unreadable: dict[str, dict[str, tuple]] | None = None
    #: the notice events the ticker's channels hear (`rk.channels.notify`): those need no tmux message
    heard: frozenset[str] = frozenset()
    #: the agents' session records read so far, by offset (the ticker; `rk.store.transcripts`)
    transcripts: Transcripts | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, **overrides) -> Runtime:
        from rk.store.config import load_settings, state_dir

        env = dict(os.environ if environ is None else environ)
        runtime = cls(
            state_dir=state_dir(env),
            settings=load_settings(env),
            environ=env,
            zone=clock.local_zone(env),
            clock=lambda: clock.now(env),
        )
        for key, value in overrides.items():
            setattr(runtime, key, value)
        return runtime

    def server(self, slug: str) -> Server:
        return Server(name=slug, env=self.environ)


def sweep(runtime: Runtime, only: str | None = None, dry_run: bool = False) -> SweepResult:
    """Tick every server that has an entry file (or just `only`). ConfigError when the
    state directory is not private: entries planted there are never delivered."""
    result = SweepResult()
    if dry_run:
        if runtime.state_dir.exists():
            check_private_dir(runtime.state_dir)
    else:
        ensure_private_dir(runtime.state_dir)
    slugs = known_servers(runtime.state_dir)
    if only is not None:
        slugs = [s for s in slugs if s == only]
    for slug in slugs:
        try:
            result.servers.append(tick_server(runtime, slug, dry_run=dry_run))
        except Exception as exc:
            if runtime.environ.get("RK_DEBUG"):
                raise
            failed = ServerTick(slug)
            failed.diagnostics.append(Diagnostic("", Diag.TICK_FAILED, f"{type(exc).__name__}: {first_line(exc)}"))
            result.servers.append(failed)
    return result


def tick_server(runtime: Runtime, slug: str, dry_run: bool = False) -> ServerTick:
    """Run the pipeline for one server. Never raises for per-server trouble."""
    files = ServerFiles(runtime.state_dir, slug)
    out = ServerTick(slug)
    server = runtime.server(slug)
    if not server.is_live():
        out.diagnostics.append(Diagnostic("", Diag.SERVER_NOT_LIVE, f"no live tmux server on socket {slug}"))
        return out
    lock_fd = None
    if not dry_run:  # `sweep` made sure the state directory is private
        lock_fd = try_lock(files.lock)
        if lock_fd is None:
            out.held = True
            return out
    gate = Gate(files.lock, lock_fd, runtime.settings.lock_wait)
    try:
        _pipeline(runtime, server, files, out, dry_run, gate)
    finally:
        gate.close()
    return out


class Gate:
    """The server's lock as a tick holds it: every decision and every commit is
    made under it, and it is let go while a fire is carried out (typed,
    respawned), so a change of the entries file never waits behind typing.
    The entries being fired stay claimed (`ServerFiles.claim`) meanwhile: another
    tick leaves them, and their journals, alone (specs/cron.md, "The tick")."""

    def __init__(self, path: Path, fd: int | None, wait: float) -> None:
        self.path, self.fd, self.wait = path, fd, wait
        self.opened = 0  #: how often the lock was let go (then the entries file may have changed)
        self.waited = 0.0  #: seconds spent taking it back

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        """Let the lock go for the block and take it back after (LockHeld if it
        stays held for `wait` s: the tick stops, leaving its journals to recovery)."""
        if self.fd is None:  # a dry run, or `rk cron run` (which holds its lock throughout)
            yield
            return
        release(self.fd)
        self.fd = None
        self.opened += 1
        try:
            yield
        finally:
            started = time.monotonic()
            self.fd = acquire(self.path, 0.01, self.wait)
            self.waited += time.monotonic() - started

    def close(self) -> None:
        if self.fd is not None:
            release(self.fd)
            self.fd = None


class _Writer:
    """Appends lines (or, dry-run, only mirrors them) and counts them."""

    def __init__(self, files: ServerFiles, view: LogView, out: ServerTick, dry_run: bool) -> None:
        self.files, self.view, self.out, self.dry_run = files, view, out, dry_run

    def line(self, line: LogLine) -> bool:
        """Whether the line is on disk (a dry run: mirrored only)."""
        self.view.add(line)
        self.out.lines += 1
        if self.dry_run:
            return True
        try:
            logfile.append_lines(self.files.log, [line])
        except OSError as exc:
            self.out.diagnostics.append(
                Diagnostic(line.entry, Diag.LOG_APPEND_FAILED, f"{self.files.log}: {exc.strerror or exc}")
            )
            return False
        return True


def _pipeline(
    runtime: Runtime, server: Server, files: ServerFiles, out: ServerTick, dry_run: bool, gate: Gate | None = None
) -> None:
    gate = gate or Gate(files.lock, None, 0)
    loaded = load_entries(files.entries, cache=runtime.cache_entries)
    out.diagnostics.extend(loaded.diagnostics)
    entries = loaded.entries
    try:
        panes = server.pane_facts(lambda listed: panes_concerned(entries, listed))
    except TmuxError as exc:
        # Nothing was gathered: every target would look absent and trigger its
        # if_absent (respawn storms on a transient error). Skip the server.
        out.diagnostics.append(Diagnostic("", Diag.ENUMERATION_FAILED, str(exc)))
        return
    out.swept = True
    now = runtime.clock()
    memo = runtime.unreadable.setdefault(server.name, {}) if runtime.unreadable is not None else None
    panes = look_around(server, entries, panes, now, runtime.zone, report=out.looks, write=not dry_run, unreadable=memo)
    out.panes = list(panes)
    ids = watched(entries, panes)
    if not dry_run:
        out.looks.captures += learn_idle_lines(server, panes, ids, out.looks)
    out.recheck = any(watching_dialog(p, now) for p in panes if p.pane_id in ids)  # see the dialog's answer soon
    by_pane = {p.pane_id: p for p in panes}
    targets = resolve_all(entries, panes)
    learn_identities(files, entries, panes, out, dry_run)
    previous = cursor.read_cursor(files.cursor)
    unlogged: set[str] = set()
    if not dry_run:
        out.journal = files
        unlogged = recover_intents(server, files, out, panes)
    bad = [0]
    if runtime.log_cache is not None:
        live = runtime.log_cache.read(files.log)
        bad[0] = runtime.log_cache.malformed.get(str(files.log), 0)
    else:
        live = logfile.read_live(files.log, bad)
    if bad[0]:
        out.diagnostics.append(Diagnostic("", Diag.LOG_MALFORMED, f"{files.log}: {bad[0]} malformed line(s) skipped"))
    view = LogView(live)
    paused = paused_until(files.pause, now)
    spent = _spent(runtime, server, entries, view, now)
    ev = due(
        entries,
        view,
        panes,
        targets,
        previous,
        now,
        zone=runtime.zone,
        max_entries=runtime.settings.max_entries,
        poll=runtime.settings.tick_interval,
        paused_until=paused,
        spent=spent,
    )
    out.diagnostics.extend(ev.diagnostics)
    claims = Claims(files, dry_run)
    busy = claims.busy() | unlogged  # being fired by another tick, or their last outcome not yet logged
    if busy:
        out.kept_edges |= busy  # their cursor is that tick's to write
    mine = [e for e in entries if e.id not in busy]
    by_id = {e.id: e for e in mine}
    orphan_since = {e.id: orphaned_since(e, view) for e in mine}
    writer = _Writer(files, view, out, dry_run)
    try:
        for line, _ in ev.ledger(now):  # clock-back, missed, quiet and paused lines, as the simulator writes them
            if line.entry not in by_id:
                continue  # another tick is firing it: its lines are that tick's to write
            writer.line(line)
            if line.reason != Reason.CLOCK:
                out.decisions.append(Decision(server.name, line.entry, line.reason, line.target, line.outcome))
            if line.outcome == Status.SKIPPED_BUDGET and not dry_run:  # once a day: told once
                _tell_budget(runtime, server, by_id[line.entry], ev.diagnostics)

        marks = _marks(runtime, server, files, entries, view, panes, targets, now, out, dry_run)
        resolved_now: set[str] = set()
        decided = _Snapshot.of(files, now, paused)
        fires = [f for f in (*ev.fires, *ev.absent) if f.entry in by_id]
        fires = [f for f in fires if claims.take(f.entry)]  # all claimed before the first is typed
        for fire in fires:
            entry = by_id[fire.entry]
            why = decided.changed(entry, gate)  # the lock was let go for an earlier fire: the file may differ
            if why:
                out.diagnostics.append(Diagnostic(fire.entry, Diag.FIRE_DROPPED, f"{why}; nothing typed"))
                continue
            quiet = (
                marks is not None and fire.pane != "" and _unchanged(runtime, server, entry, fire, view, panes, marks)
            )
            outcome = fire_outcome(
                runtime,
                server,
                entry,
                fire,
                view,
                now,
                out,
                dry_run,
                by_pane.get(fire.pane),
                gate=gate,
                still=decided,
                unchanged=quiet,
            )
            if outcome is None:
                continue
            if writer.line(LogLine(now, fire.entry, fire.pane, fire.reason, outcome)):
                forget_intent(files, fire.entry, dry_run)  # else its journal stays, and recovery logs it
            if proves_resolution(outcome):
                resolved_now.add(fire.entry)

        watching = [e for e in mine if e.turn_timeout]
        if watching:  # after the fires: the turns their deliveries started (`rk.act.interrupt`)
            from rk.act import interrupt as turntimeout

            def decide(line: LogLine) -> None:
                out.decisions.append(Decision(server.name, line.entry, line.reason, line.target, line.outcome))

            stage = turntimeout.Stage(runtime, server, view, writer.line, out, decide, gate.open, dry_run)
            turntimeout.watch(stage, watching, panes, now)

        if gate.opened:  # only entries as the file holds them now are retired or expired
            current = {e.id: e for e in load_entries(files.entries, cache=runtime.cache_entries).entries}
            mine = [e for e in mine if _same(current.get(e.id), e)]
        _orphan_gc(runtime, files, mine, targets, orphan_since, resolved_now, writer, now, out, dry_run)
        _retire_one_shots(files, mine, writer.view, out, dry_run)
        _retire_spent(files, mine, writer, now, out, dry_run)
        out.paused, out.muted = paused is not None, sum(e.is_muted(now) for e in entries)
        out.next_due = next_due(
            entries,
            view,
            targets,
            now,
            zone=runtime.zone,
            max_entries=runtime.settings.max_entries,
            debounced=ev.debounced,
            poll=runtime.settings.tick_interval,
            paused_until=paused,
        )

        if dry_run:
            return
        kept = {entry_id: previous[entry_id] for entry_id in out.kept_edges & previous.keys()}  # edges left pending
        observed = {**ev.next_cursor, **kept}
        if gate.opened:  # another tick may have written the cursor meanwhile: it owns all but our claims
            now_there = cursor.read_cursor(files.cursor)
            if now_there != previous:
                observed = {**now_there, **{k: v for k, v in observed.items() if k in claims.mine}}
        try:
            cursor.write_cursor(files.cursor, observed)
        except OSError as exc:
            out.diagnostics.append(Diagnostic("", Diag.CURSOR_WRITE_FAILED, f"{files.cursor}: {exc.strerror or exc}"))
    finally:
        claims.release()
    if any(d.reason in (Diag.ENTRY_FILE_CORRUPT, Diag.ENTRY_FILE_UNREADABLE) for d in loaded.diagnostics):
        return  # without the entry list, a rotation could not tell which anchors still matter
    try:
        backoff = {e.id for e in entries if isinstance(e.schedule, Backoff)}
        known = {e.id for e in entries} | {d.entry for d in loaded.diagnostics if d.entry}  # invalid ones too
        counted = {e.id: caps.kept_deliveries(e) for e in entries if caps.kept_deliveries(e)}  # what the caps count
        budgeted = {e.id for e in entries if e.budget is not None}
        logfile.rotate_if_needed(
            files.log,
            now,
            backoff,
            runtime.settings.log_max_bytes,
            runtime.settings.log_keep,
            known,
            counted,
            budgeted,
        )
    except OSError as exc:
        out.diagnostics.append(Diagnostic("", Diag.LOG_APPEND_FAILED, f"rotating {files.log}: {exc.strerror or exc}"))


def _spent(runtime: Runtime, server: Server, entries: list[Entry], view: LogView, now: int) -> dict:
    """Today's tokens of the entries with a budget (none read for the others)."""
    if not any(e.budget is not None for e in entries):
        return {}
    from rk.store.transcripts import spent_today

    return spent_today(server, entries, view.lines, now, runtime.zone, runtime.environ, runtime.transcripts)


def _tell_budget(runtime: Runtime, server: Server, entry: Entry, diagnostics: Sequence[Diagnostic]) -> None:
    """The tmux message of a budget stop (the notify channels hear of it from its line)."""
    why = next((d.detail for d in diagnostics if d.entry == entry.id and d.reason == Diag.BUDGET_SPENT), "")
    with contextlib.suppress(Exception):
        runtime.notify(server, f"cron: {entry.label}", f"budget reached ({why}) on {server.name}", runtime.environ)


class Claims:
    """The entries this tick is firing, each claimed with a lock file
    (`<slug>.claims/<id>.lock`) that the kernel drops if the tick dies. Taken
    and tested only under the server's lock; held until the tick has logged
    their outcomes and written the cursor."""

    def __init__(self, files: ServerFiles, dry_run: bool) -> None:
        self.files, self.dry_run = files, dry_run
        self.mine: dict[str, int] = {}

    def busy(self) -> set[str]:
        """Entries another live tick holds; stale claim files are removed."""
        try:
            names = os.listdir(self.files.claims)
        except OSError:
            return set()
        out = set()
        for name in names:
            path = self.files.claims / name
            if name.endswith(".lock") and claimed(path):
                out.add(name[: -len(".lock")])
            elif not self.dry_run:
                with contextlib.suppress(OSError):
                    path.unlink()
        return out

    def take(self, entry_id: str) -> bool:
        if self.dry_run or entry_id in self.mine:
            return True
        ensure_private_dir(self.files.claims)
        fd = claim(self.files.claim(entry_id))
        if fd is None:
            return False
        self.mine[entry_id] = fd
        return True

    def release(self) -> None:
        for fd in self.mine.values():
            with contextlib.suppress(OSError):
                release_claim(fd)
        self.mine.clear()


def _same(now: Entry | None, then: Entry) -> bool:
    """The entry unchanged (the server identity a tick learns aside)."""
    if now is None:
        return False
    return replace(now, target=replace(now.target, server=then.target.server)) == then


@dataclass
class _Snapshot:
    """The entries file and the pause as the decisions saw them, to tell whether
    a change landed while the server's lock was let go."""

    files: ServerFiles
    now: int
    paused: int | None
    stamp: tuple = ()

    @classmethod
    def of(cls, files: ServerFiles, now: int, paused: int | None) -> _Snapshot:
        return cls(files, now, paused, _stamp(files.entries))

    def changed(self, entry: Entry, gate: Gate | None = None) -> str:
        """Why the fire of `entry` no longer stands ("" when it does): the entry
        removed, edited or muted, or the server paused, since the decision."""
        if gate is not None and not gate.opened:
            return ""  # the lock has been held since the decision: nothing changed
        if paused_until(self.files.pause, self.now) and not self.paused:
            return "server paused since the decision"
        if _stamp(self.files.entries) == self.stamp:
            return ""
        current = next((e for e in load_entries(self.files.entries).entries if e.id == entry.id), None)
        if current is None:
            return "entry removed since the decision"
        if current.is_muted(self.now) and not entry.is_muted(self.now):
            return "entry muted since the decision"
        return "" if _same(current, entry) else "entry edited since the decision"


def _stamp(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def learn_identities(
    files: ServerFiles, entries: list[Entry], panes: list[PaneFact], out: ServerTick, dry_run: bool
) -> None:
    """First sight: a pane target written before identity (or by the Go original)
    learns the server its pane id belongs to from this enumeration, so a later
    restart that reuses the id is `pane replaced`. Written under the tick's lock;
    a dry run writes nothing."""
    live = {p.pane_id: p.server for p in panes if not p.dead and p.server.known}
    learn = {
        e.id: live[e.target.value]
        for e in entries
        if e.target.kind == TargetKind.PANE and not e.target.server.known and e.target.value in live
    }
    if not learn or dry_run:
        return
    try:
        with EntryDocument.edit(files, wait=0) as doc:  # this tick holds the lock
            for entry_id, identity in learn.items():
                with contextlib.suppress(EntryNotFound, EntryError):
                    doc.learn_server(entry_id, identity)
    except (EntryFileError, OSError) as exc:
        out.diagnostics.extend(Diagnostic(e, Diag.IDENTITY_UNRECORDED, str(exc)) for e in learn)


def recover_intents(
    server: Server, files: ServerFiles, out: ServerTick, panes: list[PaneFact] | None = None
) -> set[str]:
    """Resolve the deliveries a crash interrupted (a journal whose entry no live
    tick claims: its writer is gone): log what the pane shows they did, then
    forget them. Returns the entries whose journal stays (its outcome could not
    be logged): they are not fired until it is.
    A prompt that may have gone in is never typed again (rk.act.intents.recover).
    A journal whose pane is not the one it typed into (`panes`: this tick's
    enumeration; the tmux server restarted, the pane is gone or runs another
    process) is dropped with a line: nothing is typed into the pane there now."""
    from rk.act.intents import forget_pending, recover

    kept: set[str] = set()
    try:
        names = sorted(os.listdir(files.intents))
    except FileNotFoundError:
        return kept
    except OSError as exc:
        out.diagnostics.append(Diagnostic("", Diag.INTENT_UNRESOLVED, f"{files.intents}: {exc.strerror or exc}"))
        return kept
    if not names:
        return kept  # the usual case: no delivery was interrupted, so the log is not read here
    logged: dict[str, int] = {}
    for line in logfile.read_live(files.log):
        logged[line.entry] = max(logged.get(line.entry, line.ts), line.ts)
    for name in names:
        path = files.intents / name
        if name.startswith(".") or not name.endswith(".json"):  # a journal write a kill cut short
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        try:
            record = json.loads(read_nofollow(path).decode("utf-8"))
            if not isinstance(record, dict):
                raise ValueError("not a mapping")
            entry, ts = str(record["entry"]), int(record["ts"])
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            out.diagnostics.append(Diagnostic("", Diag.INTENT_UNRESOLVED, f"{path}: unreadable ({exc}); removed"))
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if claimed(files.claim(entry)):  # its writer is alive, typing with the lock let go: its own to log
            continue
        if logged.get(entry, -1) >= ts:  # killed after its line was written, before forgetting the intent
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        moved = _journal_moved(record, panes)
        if moved:  # its marker must not make the next delivery clear the pane there now
            forget_pending(server, str(record.get("pane") or record.get("target") or ""))
        outcome: str | None
        if moved and record.get("phase") != "done":
            outcome, detail = JOURNAL_DROPPED, f"{moved}; nothing typed"
        else:
            outcome, detail = recover(server, record)
        out.diagnostics.append(Diagnostic(entry, Diag.INTENT_RECOVERED, f"{outcome or 'nothing logged'}: {detail}"))
        if outcome is not None:
            line = LogLine(
                ts, entry, str(record.get("target", "")), str(record.get("reason", Reason.SCHEDULE)), outcome
            )
            try:
                logfile.append_lines(files.log, [line])
            except OSError as exc:
                out.diagnostics.append(Diagnostic(entry, Diag.LOG_APPEND_FAILED, f"{files.log}: {exc.strerror or exc}"))
                kept.add(entry)
                continue  # kept: the next tick tries again
            logged[entry] = max(logged.get(entry, ts), ts)
            out.decisions.append(Decision(files.slug, entry, line.reason, line.target, outcome))
        with contextlib.suppress(OSError):
            path.unlink()
    return kept


def _journal_moved(record: dict, panes: list[PaneFact] | None) -> str:
    """Why the journal's pane is not in this enumeration as it was ("" when it is, or unknown)."""
    if panes is None:
        return ""  # the recovery's own frame decides
    pane_id = str(record.get("pane") or record.get("target") or "")
    now = next((p for p in panes if p.pane_id == pane_id and not p.dead), None)
    return journal_moved(record, now.server if now is not None else None, now.pane_pid if now is not None else 0)


def forget_intent(files: ServerFiles, entry_id: str, dry_run: bool = False) -> None:
    """The outcome is in the log: the intent journal of that delivery has done its work."""
    if not dry_run:
        with contextlib.suppress(OSError):
            files.intent(entry_id).unlink()


def fire_outcome(
    runtime: Runtime,
    server: Server,
    entry: Entry,
    fire: Fire,
    view: LogView,
    now: int,
    out: ServerTick,
    dry_run: bool,
    pane: PaneFact | None = None,
    *,
    gate: Gate | None = None,
    still: _Snapshot | None = None,
    unchanged: bool = False,
) -> str | None:
    """Dispose of one fire and execute the disposition; the outcome to log, or
    None for an (unlogged) hold. `pane` is the target as this tick's
    enumeration and looks saw it; right before typing, the delivery's guard
    looks again and may still refuse. With `gate`, the server's lock is let go
    while the fire is carried out; `still` then tells the guard whether the
    entry changed meanwhile. `unchanged`: only_if_changed found nothing new (`rk.engine.marks`)."""
    seen = Seen()
    if pane is not None:  # a pane mode (copy-mode, …) is the human's: held like a draft, never cancelled
        seen = replace(seen_before_typing(pane, None, now, entry.any_program), mode=held_mode(pane.in_mode, pane.mode))
    seen = replace(seen, unchanged=unchanged)
    disposition = dispose(fire, entry, view, now, runtime.settings.rate_per_hour, seen if fire.pane else None)
    return execute(Firing(runtime, server, entry, fire, out, dry_run, view, now, pane, gate, still), disposition)


def _guard(runtime: Runtime, entry: Entry, fire: Fire, view: LogView, now: int, expected=None, intent=None, still=None):
    """The last look before typing: the entry as the file holds it now (`still`),
    and the pane's facts and screen in the baseline frame decide again; anything
    but a send is returned instead of typing.
    `expected` is the server the enumeration saw: a frame from another (the
    server restarted in between, the id reused) is `pane replaced`. The
    journal (`intent`) takes the identity of the pane as this frame saw it."""
    from rk.tmux.frame import frame_server

    def guard(frame):
        why = still.changed(entry) if still is not None else ""
        if why:  # a change that landed before the paste wins
            return Disposition(Act.HOLD, held_by=why)
        pane = pane_of_frame(frame)
        server_now = frame_server(frame)
        if expected is not None and expected.differs(server_now):
            seen = Seen(refused=REPLACED)
        else:
            screen = read_screen(pane, frame.styled, frame.field("pane_title"), now, runtime.zone)
            seen = seen_before_typing(pane, screen, now, entry.any_program)
            seen = replace(seen, mode=held_mode(frame.in_mode, frame.field("pane_mode")))
            idle = frame.field(IDLE_LINE_OPTION)
            if not seen.draft and draft_without_layout(pane, screen, idle, frame.cursor_line()):
                seen = replace(seen, draft=True)  # no layout reads it: the cursor's line is not the idle one
        if intent is not None:
            pane_pid = frame.field("pane_pid")
            intent.record.update(journal_identity(server_now.started, server_now.pid, format_number(pane_pid)))
        disposition = dispose(fire, entry, view, now, runtime.settings.rate_per_hour, seen)
        return None if disposition.act == Act.SEND else disposition

    return guard


@dataclass(frozen=True)
class Firing:
    """One fire being carried out, with what carrying it out needs."""

    runtime: Runtime
    server: Server
    entry: Entry
    fire: Fire
    out: ServerTick
    dry_run: bool
    view: LogView
    now: int
    pane: PaneFact | None = None  #: the target as this tick's enumeration and looks saw it
    gate: Gate | None = None  #: the server's lock, let go while the fire is carried out
    still: _Snapshot | None = None  #: the entries file as the decision saw it


def execute(firing: Firing, disposition: Disposition) -> str | None:
    """Carry out one disposition: the outcome to log, or None for a hold."""
    outcome, final = _carry_out(firing, disposition)
    fire = firing.fire
    if edge_kept(firing.entry, fire, final):
        firing.out.kept_edges.add(fire.entry)
    if wants_recheck(firing.pane, final, firing.now):
        firing.out.recheck = True
    firing.out.decisions.append(Decision(firing.server.name, fire.entry, fire.reason, fire.pane, outcome or final.text))
    return outcome


def _carry_out(firing: Firing, disposition: Disposition) -> tuple[str | None, Disposition]:
    """(the outcome to log or None for a hold, the disposition carried out: the
    guard's, when the last look before typing refused)."""
    outcome = _act(firing, disposition)
    if isinstance(outcome, Disposition):
        return _carry_out(firing, outcome)
    return outcome, disposition


def _act(firing: Firing, disposition: Disposition) -> str | Disposition | None:
    runtime, server, entry, fire, out = firing.runtime, firing.server, firing.entry, firing.fire, firing.out
    dry_run, view, now = firing.dry_run, firing.view, firing.now
    act = disposition.act
    if disposition.note is not None:
        out.diagnostics.append(disposition.note)
    if act == Act.HOLD and disposition.held_by.endswith(" since the decision"):
        out.diagnostics.append(Diagnostic(fire.entry, Diag.FIRE_DROPPED, f"{disposition.held_by}; nothing typed"))
        return None
    if act == Act.HOLD:
        out.diagnostics.append(
            Diagnostic(fire.entry, Diag.DELIVERY_HELD, f"{fire.pane}: {disposition.text}; held until idle")
        )
        return None
    if act == Act.LOG:
        return disposition.text
    if act == Act.SEND:
        if dry_run:
            return "would-deliver"
        intent = None
        if out.journal is not None:
            from rk.act.intents import Intent

            ensure_private_dir(out.journal.intents)
            record: dict = {"entry": entry.id, "reason": str(fire.reason), "ts": now, "target": fire.pane}
            if firing.pane is not None:  # which pane it types into (the guard refreshes it from its frame)
                known = firing.pane
                record.update(journal_identity(known.server_started, known.server_pid, known.pane_pid))
            intent = Intent(str(out.journal.intent(entry.id)), record)
        text = typed(entry, fire, view, now, runtime.zone)  # placeholders filled; the journal's needle is of it
        expected = firing.pane.server if firing.pane is not None else None
        guard = _guard(runtime, entry, fire, view, now, expected, intent, firing.still)
        with _unlocked(firing):
            result = runtime.deliver(server, fire.pane, text, guard=guard, intent=intent)
        if result.refused is not None:  # the last look said no: nothing was typed
            return result.refused
        return str(result.outcome)
    if act == Act.RESPAWN:
        if dry_run:
            return "would-respawn"
        with _unlocked(firing):
            respawned = runtime.respawn(entry.respawn, server.name, runtime.settings.respawn_timeout, runtime.environ)
        return str(respawned.outcome)
    if dry_run:
        return "would-notify"
    why = (disposition.outcome.detail if disposition.outcome else "") or "target absent"
    error = runtime.notify(server, f"cron: {entry.label}", f"{why} on {server.name}", runtime.environ)
    if error:
        out.diagnostics.append(Diagnostic(entry.id, Diag.NOTIFY_FAILED, error))
    return disposition.text


def _unlocked(firing: Firing) -> contextlib.AbstractContextManager[None]:
    return firing.gate.open() if firing.gate is not None else contextlib.nullcontext()


def _marks(runtime, server, files, entries, view, panes, targets, now, out, dry_run):
    """only_if_changed: the marks this tick compares with (`rk.engine.marks.take_marks`),
    or None when no entry asks for it. A failed write is reported; the fires go on."""
    from rk.engine import marks as unchanged

    if not any(e.only_if_changed for e in entries):
        return None
    try:
        return unchanged.take_marks(server, files.unchanged, entries, view, panes, targets, now, write=not dry_run)
    except OSError as exc:
        out.diagnostics.append(Diagnostic("", Diag.CURSOR_WRITE_FAILED, f"{files.unchanged}: {exc.strerror or exc}"))
        return {}


def _unchanged(runtime, server, entry, fire, view, panes, marks) -> bool:
    """Whether this fire finds nothing new since the last answer (only_if_changed)."""
    from rk.core.cost.unchanged import Verdict
    from rk.engine import marks as unchanged

    if not entry.only_if_changed or fire.reason == Reason.MANUAL:
        return False
    poll = runtime.settings.tick_interval
    found = unchanged.unchanged_now(server, entry, fire.pane, view, panes, marks, poll, fire.at)
    return found == Verdict.UNCHANGED


def _retire_one_shots(files: ServerFiles, entries: list[Entry], view: LogView, out: ServerTick, dry_run: bool) -> None:
    """A one-shot (`at`) entry whose line is logged leaves the file (`list` shows it until then)."""
    done = [e for e in entries if isinstance(e.schedule, At) and at_done(e, view)]
    if not done or dry_run:
        return
    try:
        with EntryDocument.edit(files, wait=0) as doc:  # this tick holds the lock
            for entry in done:
                doc.remove(entry.id)
    except (EntryFileError, OSError) as exc:
        out.diagnostics.extend(Diagnostic(e.id, Diag.RETIRE_FAILED, str(exc)) for e in done)


def _removed(files: ServerFiles, entry_id: str, failure: Diag, out: ServerTick) -> bool:
    """Take one entry out of the file (this tick holds the lock); on failure report
    `failure` for it and say False, so its line waits for the tick that can remove it."""
    try:
        with EntryDocument.edit(files, wait=0) as doc:
            doc.remove(entry_id)
    except (EntryFileError, OSError) as exc:
        out.diagnostics.append(Diagnostic(entry_id, failure, str(exc)))
        return False
    return True


def _retire_spent(
    files: ServerFiles, entries: list[Entry], writer: _Writer, now: int, out: ServerTick, dry_run: bool
) -> None:
    """An entry that made its `max_total` deliveries leaves the file, then logs
    `retired: max-total` (`rk.core.cost.caps`); if it cannot leave, the next tick tries again."""
    for entry in caps.retiring(entries, writer.view):
        if not dry_run and not _removed(files, entry.id, Diag.RETIRE_FAILED, out):
            continue
        line = caps.retired_line(entry, now)
        writer.line(line)
        out.decisions.append(Decision(files.slug, entry.id, line.reason, "", line.outcome))


def _orphan_gc(
    runtime,
    files,
    entries,
    targets: dict[str, TargetFact],
    orphan_since,
    resolved_now,
    writer: _Writer,
    now,
    out,
    dry_run,
) -> None:
    expired = [
        e for e in entries if should_expire(e, targets.get(e.id), orphan_since.get(e.id, 0), now, e.id in resolved_now)
    ]
    for entry in expired:
        if not dry_run and not _removed(files, entry.id, Diag.ORPHAN_EXPIRE_FAILED, out):
            continue
        writer.line(LogLine(now, entry.id, "", Reason.GC, Status.EXPIRED_ORPHAN))
        out.decisions.append(Decision(files.slug, entry.id, Reason.GC, "", Status.EXPIRED_ORPHAN))

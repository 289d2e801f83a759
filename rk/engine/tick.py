"""One tick: for each live server with an entry file, evaluate and act.

The pipeline per server (its order matters): take the server's lock (held →
quiet no-op) → load entries → read every pane in one enumeration → read the
cursor and the live log → `due()` → append `missed` lines → for each resolved
fire: rate cap, deliver policy with a fresh state read, delivery, log → for
each absent fire: rate cap, if_absent disposition, log → orphan GC on the
pre-disposition log → retire one-shots and entries that made their `max_total`
deliveries (`retired: max-total`) → write the cursor → rotate the log if it is
too big (keeping what the caps count).
The lock is let go while each fire is carried out (`rk.engine.gate.Gate`), its
entries claimed meanwhile (`Claims`): a change of the entries file never waits
on typing (specs/cron.md, "The lock is not held while typing").

Every line is appended (and mirrored into the in-memory view) as soon as its
outcome is known, so a crash loses at most the fire in flight, which the
next tick re-fires once. A dead server is never sent a tmux command.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rk.core.cost.budget import Spent
from rk.core.cost.unchanged import Mark
from rk.core.log.delivery import LogLine, LogView, Reason, Status, proves_resolution
from rk.core.log.diagnostics import Diag, Diagnostic, first_line
from rk.core.log.wake_mark import marked
from rk.core.pane.facts import PaneFact, PaneKind, TargetFact, panes_concerned, resolve_all
from rk.core.pane.recheck import watching_dialog
from rk.core.schedule.due import Evaluation, Fire, due, next_due
from rk.core.schedule.entry import Entry
from rk.core.schedule.orphan import orphaned_since
from rk.core.schedule.retry import may_have_typed
from rk.core.schedule.wake import Observation
from rk.engine.fire import WOULD_DELIVER, WOULD_REPLACE, Firing, fire_outcome
from rk.engine.gate import Claims, Gate, Snapshot
from rk.engine.recovery import forget_intent, recover_intents
from rk.engine.replace import fire_lines
from rk.engine.result import Decision, ServerTick, SweepResult
from rk.engine.runtime import Runtime
from rk.engine.upkeep import (
    expire_orphans,
    learn_identities,
    retire_one_shots,
    retire_spent,
    rotate_log,
    still_as_decided,
)
from rk.engine.writer import LogWriter
from rk.host.lock import try_lock
from rk.store import cursor
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles, check_private_dir, ensure_private_dir, known_servers
from rk.store.entries import load_entries
from rk.store.mirror import remote_lines
from rk.store.pane_history import PaneHistory
from rk.store.pause import pause_span, paused_until
from rk.store.signals import read_world
from rk.tmux.observe import learn_idle_lines, look_around, watched
from rk.tmux.server import Server, TmuxError


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
        _pipeline(_Pass(runtime, server, files, out, dry_run, gate))
    finally:
        gate.close()
    return out


@dataclass(frozen=True)
class _Pass:
    """One tick's pass over one server: who runs it, where it reports, whether
    it writes (not in a dry run), and the server's lock it holds."""

    runtime: Runtime
    server: Server
    files: ServerFiles
    out: ServerTick
    dry_run: bool
    gate: Gate

    def firing(
        self, entry: Entry, fire: Fire, scene: _Scene, pane: PaneFact | None, still: Snapshot, typed: bool
    ) -> Firing:
        """One of its fires, to be carried out with the lock let go (`still`: the file as decided on;
        `typed`: an earlier fire of this tick typed into its pane)."""
        view, now = scene.view, scene.now
        return Firing(
            self.runtime, self.server, entry, fire, self.out, self.dry_run, view, now, pane, self.gate, still, typed
        )


@dataclass(frozen=True)
class _Scene:
    """The server as the pass found it before any fire: what its decisions are made on."""

    entries: list[Entry]
    panes: list[PaneFact]  #: after the looks
    targets: dict[str, TargetFact]
    previous: dict[str, Observation]  #: the cursor as this tick read it
    unlogged: set[str]  #: entries whose interrupted delivery could not be logged: not fired
    view: LogView  #: the live log; every line this tick writes is mirrored into it
    paused: int | None
    now: int
    ev: Evaluation


def _pipeline(tick: _Pass) -> None:
    """Survey the server, decide and act with the entries claimed, then rotate the log."""
    loaded = load_entries(tick.files.entries, cache=tick.runtime.cache_entries, write_cache=not tick.dry_run)
    tick.out.diagnostics.extend(loaded.diagnostics)
    tick.out.unreadable = loaded.unreadable
    scene = _survey(tick, loaded.entries)
    if scene is None or tick.out.unreadable:  # no entry is known: none fires, nothing (cursor, log) is rewritten
        return
    claims = Claims(tick.files, tick.dry_run)
    try:
        _decide_and_act(tick, scene, claims)
    finally:
        claims.release()
    if not tick.dry_run:
        rotate_log(tick.runtime, tick.files, loaded, scene.now, tick.out)


def _survey(tick: _Pass, entries: list[Entry]) -> _Scene | None:
    """Read the server once: its panes (one enumeration, then the looks), the
    cursor, the interrupted deliveries, the live log, the pause; then `due()`.
    None when the enumeration failed: nothing was gathered, so every target would
    look absent and trigger its if_absent (respawn storms on a transient error)."""
    runtime, server, files, out, dry_run = tick.runtime, tick.server, tick.files, tick.out, tick.dry_run
    try:
        panes = server.pane_facts(lambda listed: panes_concerned(entries, listed))
    except TmuxError as exc:  # skip the server
        out.diagnostics.append(Diagnostic("", Diag.ENUMERATION_FAILED, str(exc)))
        return None
    out.swept = True
    now = runtime.clock()
    panes = _look(tick, entries, panes, now)
    targets = resolve_all(entries, panes)
    learn_identities(files, entries, panes, out, dry_run)
    previous = cursor.read_cursor(files.cursor)
    unlogged: set[str] = set()
    if not dry_run:
        out.journal = files
        unlogged = recover_intents(server, files, out, panes)
    view = LogView(_read_log(tick))
    paused = paused_until(files.pause, now)
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
        paused_span=pause_span(files.pause),
        spent=_spent(runtime, server, entries, view, now),
        journal=PaneHistory(str(files.dir), files.slug),
        world=read_world(files, entries, now),  # rk signal, --wake-on file:PATH
        remote=remote_lines(str(files.dir), (e.wake_on.scope for e in entries if e.wake_on is not None)),
    )
    out.diagnostics.extend(ev.diagnostics)
    return _Scene(entries, panes, targets, previous, unlogged, view, paused, now, ev)


def _look(tick: _Pass, entries: list[Entry], panes: list[PaneFact], now: int) -> list[PaneFact]:
    """The enumerated panes corrected by their screens (`rk.tmux.observe.look_around`);
    the idle lines learnt, and whether a dialog being watched asks for a recheck."""
    runtime, server, out = tick.runtime, tick.server, tick.out
    memo = runtime.unreadable.setdefault(server.name, {}) if runtime.unreadable is not None else None
    panes = look_around(
        server, entries, panes, now, runtime.zone, report=out.looks, write=not tick.dry_run, unreadable=memo
    )
    out.panes = list(panes)
    ids = watched(entries, panes)
    if not tick.dry_run:
        # every pane's, not only the targets': a send or a later entry then has the prompt from before any draft
        out.looks.captures += learn_idle_lines(server, panes, {p.pane_id for p in panes}, out.looks)
    out.recheck = any(watching_dialog(p, now) for p in panes if p.pane_id in ids)  # see the dialog's answer soon
    return panes


def _read_log(tick: _Pass) -> list[LogLine]:
    """The live log (the ticker's cache keeps it parsed), malformed lines skipped and counted."""
    runtime, files = tick.runtime, tick.files
    bad = [0]
    if runtime.log_cache is not None:
        live = runtime.log_cache.read(files.log)
        bad[0] = runtime.log_cache.malformed.get(str(files.log), 0)
    else:
        live = logfile.read_live(files.log, bad)
    if bad[0]:
        tick.out.diagnostics.append(
            Diagnostic("", Diag.LOG_MALFORMED, f"{files.log}: {bad[0]} malformed line(s) skipped")
        )
    return live


def _decide_and_act(tick: _Pass, scene: _Scene, claims: Claims) -> None:
    """Everything decided under the lock and carried out with it let go: the ledger's
    lines, the fires, the turn timeouts, the upkeep of the file, the next due instant
    and the cursor. Entries another tick is firing are left to it."""
    out = tick.out
    busy = claims.busy() | scene.unlogged  # being fired by another tick, or their last outcome not yet logged
    if busy:
        out.kept_edges |= busy  # their cursor is that tick's to write
    mine = [e for e in scene.entries if e.id not in busy]
    orphan_since = {e.id: orphaned_since(e, scene.view) for e in mine}
    writer = LogWriter(tick.files, scene.view, out, tick.dry_run)
    by_id = {e.id: e for e in mine}
    _write_ledger(tick, scene, writer, by_id)
    resolved_now = _fire_all(tick, scene, claims, writer, by_id)
    _watch_turns(tick, scene, writer, mine)
    if tick.gate.opened:  # only entries as the file holds them now are retired or expired
        mine = still_as_decided(tick.files, mine, tick.runtime.cache_entries)
    expire_orphans(writer, mine, scene.targets, orphan_since, resolved_now, scene.now)
    retire_one_shots(writer, mine)
    retire_spent(writer, mine, scene.now)
    _plan_next(tick, scene)
    if not tick.dry_run:
        _write_cursor(tick, scene, claims)


def _write_ledger(tick: _Pass, scene: _Scene, writer: LogWriter, by_id: Mapping[str, Entry]) -> None:
    """Clock-back, missed, quiet and paused lines, as the simulator writes them."""
    out, server = tick.out, tick.server
    for line, _ in scene.ev.ledger(scene.now):
        if line.entry not in by_id:
            continue  # another tick is firing it: its lines are that tick's to write
        writer.line(line)
        if line.reason != Reason.CLOCK:
            out.decisions.append(Decision(server.name, line.entry, line.reason, line.target, line.outcome))
        if line.outcome == Status.SKIPPED_BUDGET and not tick.dry_run:  # once a day: told once
            _tell_budget(tick.runtime, server, by_id[line.entry], scene.ev.diagnostics)


def _fire_all(tick: _Pass, scene: _Scene, claims: Claims, writer: LogWriter, by_id: Mapping[str, Entry]) -> set[str]:
    """Carry out the resolved fires, then the absent ones, each logged as soon as its
    outcome is known; the entries whose target this tick proved resolved."""
    files, out, now = tick.files, tick.out, scene.now
    marks = _marks(tick, scene)
    resolved_now: set[str] = set()
    decided = Snapshot.of(files, now, scene.paused)
    by_pane = {p.pane_id: p for p in scene.panes}
    typed_into: set[str] = set()  # agent panes a fire of this tick typed a prompt into
    fires = [f for f in scene.ev.in_typing_order if f.entry in by_id]
    fires = [f for f in fires if claims.take(f.entry)]  # all claimed before the first is typed
    for fire in fires:
        entry = by_id[fire.entry]
        why = decided.changed(entry, tick.gate)  # the lock was let go for an earlier fire: the file may differ
        if why:
            out.diagnostics.append(Diagnostic(fire.entry, Diag.FIRE_DROPPED, f"{why}; nothing typed"))
            continue
        quiet = marks is not None and fire.pane != "" and _unchanged(tick, scene, entry, fire, marks)
        pane = by_pane.get(fire.pane)
        firing = tick.firing(entry, fire, scene, pane, decided, typed=fire.pane in typed_into)
        outcome = fire_outcome(firing, unchanged=quiet)
        if pane is not None and pane.kind == PaneKind.AGENT and outcome is not None and typed_into_pane(outcome):
            typed_into.add(fire.pane)  # the agent takes it as a turn: no second prompt this tick
        said = None if outcome is None else marked(outcome, fire.mark)  # a wake on the world names its signal
        aside, line = fire_lines(out, fire, now, said)  # a replace's `interrupted` line first, even before a hold
        for before in aside:
            writer.line(before)
        if line is None or outcome is None:
            continue
        if writer.line(line):
            forget_intent(files, fire.entry, tick.dry_run)  # else its journal stays, and recovery logs it
        if proves_resolution(outcome):
            resolved_now.add(fire.entry)
    return resolved_now


def typed_into_pane(outcome: str) -> bool:
    """Whether a fire's outcome means its prompt went into the composer (or would have, in a dry run)."""
    return outcome in (WOULD_DELIVER, WOULD_REPLACE) or may_have_typed(outcome)


def _marks(tick: _Pass, scene: _Scene) -> dict[str, Mark] | None:
    """only_if_changed: the marks this tick compares with (`rk.engine.marks.take_marks`),
    or None when no entry asks for it. A failed write is reported; the fires go on."""
    from rk.engine import marks as unchanged

    if not any(e.only_if_changed for e in scene.entries):
        return None
    path = tick.files.unchanged
    try:
        taken = unchanged.take_marks(
            tick.server, path, scene.entries, scene.view, scene.panes, scene.targets, scene.now, write=not tick.dry_run
        )
        tick.out.recheck = tick.out.recheck or taken.recheck  # a mark put off until the pane settles
        return taken.marks
    except OSError as exc:
        tick.out.diagnostics.append(Diagnostic("", Diag.CURSOR_WRITE_FAILED, f"{path}: {exc.strerror or exc}"))
        return {}


def _unchanged(tick: _Pass, scene: _Scene, entry: Entry, fire: Fire, marks: Mapping[str, Mark]) -> bool:
    """Whether this fire finds nothing new since the last answer (only_if_changed)."""
    from rk.core.cost.unchanged import Verdict
    from rk.engine import marks as unchanged

    if not entry.only_if_changed or fire.reason == Reason.MANUAL:
        return False
    poll = tick.runtime.settings.tick_interval
    found = unchanged.unchanged_now(tick.server, entry, fire.pane, scene.view, scene.panes, marks, poll, fire.at)
    return found == Verdict.UNCHANGED


def _watch_turns(tick: _Pass, scene: _Scene, writer: LogWriter, mine: list[Entry]) -> None:
    """After the fires: the turns their deliveries started (`rk.act.interrupt`)."""
    watching = [e for e in mine if e.turn_timeout]
    if not watching:
        return
    from rk.act import interrupt as turntimeout

    server, out = tick.server, tick.out

    def decide(line: LogLine) -> None:
        out.decisions.append(Decision(server.name, line.entry, line.reason, line.target, line.outcome))

    stage = turntimeout.Stage(tick.runtime, server, scene.view, writer.line, out, decide, tick.gate.open, tick.dry_run)
    turntimeout.watch(stage, watching, scene.panes, scene.now)


def _plan_next(tick: _Pass, scene: _Scene) -> None:
    """What the status line and the ticker's sleep read: paused, muted, the next due instant."""
    runtime, out, entries, now = tick.runtime, tick.out, scene.entries, scene.now
    out.paused, out.muted = scene.paused is not None, sum(e.is_muted(now) for e in entries)
    out.dormant = len({d.entry for d in scene.ev.diagnostics if d.reason == Diag.DORMANT})
    out.next_due = next_due(
        entries,
        scene.view,
        scene.targets,
        now,
        zone=runtime.zone,
        max_entries=runtime.settings.max_entries,
        debounced=scene.ev.debounced,
        poll=runtime.settings.tick_interval,
        paused_until=scene.paused,
    )


def _write_cursor(tick: _Pass, scene: _Scene, claims: Claims) -> None:
    """The wake edges observed, except those a fire left pending; when the lock was
    let go, another tick may have written the cursor meanwhile: it owns all but our claims."""
    files, out, previous = tick.files, tick.out, scene.previous
    kept = {entry_id: previous[entry_id] for entry_id in out.kept_edges & previous.keys()}  # edges left pending
    observed = {**scene.ev.next_cursor, **kept}
    if tick.gate.opened:
        now_there = cursor.read_cursor(files.cursor)
        if now_there != previous:
            observed = {**now_there, **{k: v for k, v in observed.items() if k in claims.mine}}
    try:
        cursor.write_cursor(files.cursor, observed)
    except OSError as exc:
        out.diagnostics.append(Diagnostic("", Diag.CURSOR_WRITE_FAILED, f"{files.cursor}: {exc.strerror or exc}"))


def _spent(runtime: Runtime, server: Server, entries: list[Entry], view: LogView, now: int) -> dict[str, Spent]:
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

"""Turn timeouts on a tmux server: read what the decision needs, log, tell, press.

The decision (whose turn, how long, handled yet) is `rk.core.cost.turn_timeout`'s. Per
tick, for each entry with a `turn_timeout` whose delivery may have started a
turn that is now too long (cheap: log and pane facts only), this reads the
panes' turn ends (one tmux call) and the state journal, and for a turn that
timed out: logs `turn-timeout` (before anything else: a crash never presses
twice), tells a human (the notification channels when the ticker has some
that hear `turn-timeout`, else the tmux message of `--if-absent notify`), and
with `on_timeout: interrupt` presses the agent's interrupt key once. The press
holds the pane's delivery lock, looks at the screen first as a delivery does
(a draft, a dialog, a pane mode: nothing is pressed, and the line says why),
sends the key only if no mode is up at that instant (inside the server), and
then watches the hooks and the screen for the turn's end: `interrupted`, or
`interrupt-failed: <why>`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import Any

from rk.core.channels.notice import TURN_TIMEOUT
from rk.core.cost.turn_timeout import (
    INTERRUPT_KEYS,
    KEY_GAP,
    Timeout,
    candidates,
    key_gap,
    timed_out,
    why_not_press,
)
from rk.core.environ import TURN_END_OPTION
from rk.core.log.delivery import LogLine, LogView, Outcome, Status
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import BUSY_STATES, PaneFact
from rk.core.pane.look import seen_before_typing
from rk.core.pane.turn import parse_turn_end
from rk.core.schedule.entry import Entry, OnTimeout
from rk.store.pane_history import journal_of
from rk.tmux.server import Command, Server, TmuxError, in_mode_of

#: Seconds the turn's end is watched for after the key (a hook comes within a
#: second; Claude Code writes none, so the screen must settle at rest).
VERIFY_FOR = 15.0
VERIFY_STEP = 0.5


@dataclass(frozen=True)
class Pressed:
    """What pressing the interrupt key did: the outcome to log."""

    outcome: Outcome


def turn_ends(server: Server) -> dict[str, int]:
    """Each pane's last turn end epoch (`@rk_pane_turn_end`; 0 when none)."""
    rows = server.listing("list-panes", ("pane_id", TURN_END_OPTION))
    return {row["pane_id"]: parse_turn_end(row[TURN_END_OPTION])[1] for row in rows}


def due_timeouts(
    entries: Sequence[Entry], view: LogView, panes: Sequence[PaneFact], now: int, server: Server, state_dir: str
) -> list[tuple[Entry, PaneFact, Timeout]]:
    """The turns past their entry's timeout this tick (reads only when some may be)."""
    maybe = [(e, c) for e in entries if (c := candidates(e.id, e.turn_timeout, view, panes, now))]
    if not maybe:
        return []
    ends = turn_ends(server)
    # a turn that ended after a delivery means the run now is a later one: no journal needed for it
    maybe = [(e, kept) for e, found in maybe if (kept := [d for d in found if d.ts >= ends.get(d.target, 0)])]
    if not maybe:
        return []
    journal = journal_of(state_dir, server.name)
    by_id = {p.pane_id: p for p in panes}
    out = []
    for entry, found in maybe:
        for pane_id in dict.fromkeys(line.target for line in found):
            pane = by_id[pane_id]
            hit = timed_out(
                entry.id, entry.turn_timeout, view, pane, ends.get(pane_id, 0), journal.get(pane_id, []), now
            )
            if hit is not None:
                out.append((entry, pane, hit))
    return out


@dataclass
class Stage:
    """What the stage needs of the tick (`rk.engine.tick`): its runtime and server, the log
    view and its writer, the result it reports into, and its lock's opener."""

    runtime: Any
    server: Server
    view: LogView
    write: Callable[[LogLine], bool]  #: append (and mirror) one line; whether it is on disk
    out: Any  #: the ServerTick: its diagnostics
    decide: Callable[[LogLine], None]  #: report a written line as the tick's decision (the notifier reads them)
    unlocked: Callable[[], AbstractContextManager[None]]
    dry_run: bool = False


def watch(stage: Stage, entries: Sequence[Entry], panes: Sequence[PaneFact], now: int) -> None:
    """The tick's turn-timeout stage, after its fires."""
    try:
        found = due_timeouts(entries, stage.view, panes, now, stage.server, str(stage.runtime.state_dir))
    except (TmuxError, OSError) as exc:
        stage.out.diagnostics.append(Diagnostic("", Diag.TURN_UNWATCHED, str(exc)))
        return
    for entry, pane, hit in found:
        detail = hit.detail(entry.turn_timeout)
        line = LogLine(now, entry.id, pane.pane_id, hit.delivery.reason, str(Outcome(Status.TURN_TIMEOUT, detail)))
        if not stage.write(line):
            continue  # not on disk: pressing now could press again next tick
        stage.decide(line)
        if TURN_TIMEOUT not in stage.runtime.heard and not stage.dry_run:  # no channel hears it: the tmux message
            body = f"the turn in {pane.pane_id} is {detail} on {stage.server.name}"
            error = stage.runtime.notify(stage.server, f"cron: {entry.label}", body, stage.runtime.environ)
            if error:
                stage.out.diagnostics.append(Diagnostic(entry.id, Diag.NOTIFY_FAILED, error))
        if entry.timeout_policy != OnTimeout.INTERRUPT or stage.dry_run:
            continue
        with stage.unlocked():
            pressed = interrupt(stage.server, pane, stage.runtime.clock, stage.runtime.zone)
        after = LogLine(now, entry.id, pane.pane_id, hit.delivery.reason, str(pressed.outcome))
        if stage.write(after):
            stage.decide(after)


def interrupt(
    server: Server,
    pane: PaneFact,
    clock: Callable[[], int],
    zone: tzinfo,
    verify_for: float = VERIFY_FOR,
) -> Pressed:
    """Press `pane`'s interrupt key once, if its screen allows, and watch the turn end."""
    from rk.act.keys import look_at, pane_lock
    from rk.tmux.frame import frame_server
    from rk.tmux.observe import pane_of_frame, read_screen

    try:
        with pane_lock(server, pane.pane_id):
            frame = look_at(server, pane.pane_id)
            now = clock()
            fact = pane_of_frame(frame)
            if pane.server.known and pane.server.differs(frame_server(frame)):
                return _failed("not pressed: the pane was replaced (the tmux server restarted)")
            screen = read_screen(fact, frame.styled, frame.field("pane_title"), now, zone)
            seen = seen_before_typing(fact, screen, now)
            agent = fact.provider or pane.provider
            why = why_not_press(seen.state, seen.dialog, seen.draft, frame.mode, seen.unreadable, agent)
            if why:
                return _failed(f"not pressed: {why}")
            keys = INTERRUPT_KEYS[agent]
            presses = press_commands(pane.pane_id, keys, key_gap(agent))
            out = server.run(*Command.unless_mode(pane.pane_id, *presses))
            mode = in_mode_of(out)
            if mode is not None:
                return _failed(f"not pressed: the pane is in {mode}")
            pressed = clock()
            return _verify(server, replace(fact, agent=fact.agent or agent), pressed, keys, clock, zone, verify_for)
    except TimeoutError:
        return _failed("not pressed: a delivery into the pane did not finish")
    except TmuxError as exc:
        return _failed(f"tmux: {exc}")


def press_commands(pane_id: str, keys: Sequence[str], gap: float = KEY_GAP) -> list[list[str]]:
    """One `send-keys` per key, `gap` seconds apart inside the server (`run-shell -d`
    with no command waits and runs nothing): one tmux call, so the mode check before
    the first key covers them all and nothing of ours runs between them."""
    out: list[list[str]] = []
    for key in keys:
        if out:
            out.append(["run-shell", "-d", f"{gap:g}", ""])
        out.append(Command.send_keys(pane_id, key))
    return out


def _verify(
    server: Server,
    pane: PaneFact,
    pressed: int,
    keys: Sequence[str],
    clock: Callable[[], int],
    zone: tzinfo,
    verify_for: float,
) -> Pressed:
    """Wait for the turn's end after the key: a hook's write (a turn end or a state
    at rest since the press), else the screen at rest (written as the tick's looks
    write it: Claude Code ends an Esc'd turn with no hook at all)."""
    from rk.act.keys import look_at
    from rk.tmux.observe import look_now, pane_of_frame

    key = "+".join(keys)
    started = time.monotonic()
    deadline = started + verify_for
    while True:
        time.sleep(VERIFY_STEP)
        frame = look_at(server, pane.pane_id)
        fact = pane_of_frame(frame)
        end, end_at = parse_turn_end(server.display(pane.pane_id, f"#{{{TURN_END_OPTION}}}"))
        if end and end_at >= pressed:
            return _ended(f"the turn ended ({end})", started, key)
        if fact.state not in BUSY_STATES:
            return _ended(f"the agent is {fact.state or 'at rest'}", started, key)
        looked = look_now(server, replace(fact, agent=fact.agent or pane.agent), clock(), zone)
        if looked.state not in BUSY_STATES:
            return _ended("the screen shows the turn ended", started, key)
        if time.monotonic() >= deadline:
            return _failed(f"still {fact.state} {verify_for:g}s after {key}")


def _ended(how: str, started: float, key: str) -> Pressed:
    return Pressed(Outcome(Status.INTERRUPTED, f"{how} {time.monotonic() - started:.1f}s after {key}"))


def _failed(why: str) -> Pressed:
    return Pressed(Outcome(Status.INTERRUPT_FAILED, why))

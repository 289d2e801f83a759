"""Looking at panes: the captures behind the screen as a second source of truth.

The rules (when to look, what a look changes) are pure and live in
`rk.core.pane.look`; the reading of a screen in `rk.core.pane.screen`. This module runs them
against a tmux server: it picks the panes that matter this tick (entry
targets, and every agent pane when a wake_on entry watches the server),
captures those `needs_look` names, takes a second capture before calling a
busy pane at rest (a settled screen), writes each correction back to the
pane's options (state and source note), and returns the facts as corrected.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo

from rk.core.environ import (
    IDLE_LINE_OPTION,
    LEGACY_STATE_OPTION,
    SESSION_OPTION,
    SOURCE_OPTION,
    STATE_OPTION,
    UNREAD_OPTION,
)
from rk.core.pane.facts import PaneFact, PaneKind, parse_state_option, reconcile, resolve_target
from rk.core.pane.idle_line import cursor_line, learned, parse
from rk.core.pane.look import Correction, asks_registry, corrected, correction, learns_idle_line, needs_look
from rk.core.pane.program import judge
from rk.core.pane.registry import Verdict
from rk.core.pane.screen import LAYOUTS, REDRAW_PAUSE, REDRAW_TRIES, Screen, classify
from rk.core.pane.state import AgentState
from rk.core.pane.turn import screen_turn_end, turn_end_value
from rk.core.schedule.entry import Entry
from rk.host.process import own_pids, process_info, read_table, tty_device
from rk.store import claude_sessions
from rk.store import state_journal as statejournal
from rk.tmux.frame import Frame
from rk.tmux.server import Server, TmuxError, format_number

#: Seconds between the two captures that show a screen has settled.
SETTLE_DELAY = 0.3
#: Captures after the first, at most, while a screen that would end a turn is still
#: changing (under load a CLI draws an Esc's aftermath over a second or more): a tick
#: that missed it waited for the next poll, though Claude's registry had said idle.
SETTLE_TRIES = 3
#: Seconds between a tick's looks at a screen no layout reads, and how many more it gets
#: before it is taken as unreadable (`REDRAW_PAUSE`): a memo of one frame caught
#: mid-redraw would blind the ticks to the pane.
LOOK_AGAIN_DELAY = REDRAW_PAUSE
LOOK_AGAIN_TRIES = REDRAW_TRIES
#: Seconds an unreadable screen's memo holds while the pane's state stays the same: a
#: pane whose state no hook moves (a Vibe before its first turn end) is looked at again after it.
UNREAD_HOLDS = 120
_ESC = re.compile(r"\x1b\[[0-9;:?]*[@-~]")


def read_screen(pane: PaneFact, styled: str, title: str, now: int, zone: tzinfo) -> Screen:
    """Classify one capture of `pane` with its provider's layout tried first.
    A printed reset time is dated from when the pane's limit began, if it is
    limited; otherwise it is read as the nearest such time (an old banner's
    reset has passed)."""
    return classify(
        styled,
        LAYOUTS,
        now=now,
        zone=zone,
        since=pane.epoch if pane.state == AgentState.LIMITED else 0,
        hint=pane.provider,
        title=title,
    )


def watched(entries: Sequence[Entry], panes: Sequence[PaneFact]) -> set[str]:
    """Pane ids whose state matters this tick: every entry's target (a program
    included, which `needs_look` then leaves alone) and, when an entry wakes on
    the server's states, every pane that is not a shell."""
    ids: set[str] = set()
    for entry in entries:
        fact = resolve_target(entry.target, panes, any_program=True)
        if fact.resolved:
            ids.add(fact.pane)
    if any(e.wake_on is not None for e in entries):
        ids |= {p.pane_id for p in panes if p.kind != PaneKind.SHELL and not p.dead}
    return ids


@dataclass
class LookReport:
    """What the look stage did: captures taken, corrections written, and errors."""

    captures: int = 0
    corrections: list[tuple[str, Correction]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def look_around(
    server: Server,
    entries: Sequence[Entry],
    panes: Sequence[PaneFact],
    now: int,
    zone: tzinfo,
    *,
    sleep: Callable[[float], None] = time.sleep,
    report: LookReport | None = None,
    write: bool = True,
    unreadable: dict[str, str] | None = None,
) -> list[PaneFact]:
    """The panes with every looked-at one corrected by its screen (written back
    to the pane's options unless `write` is off, as in a dry run).

    A screen no layout reads is looked at again, all such panes together
    (`LOOK_AGAIN_TRIES` rounds: under a second for any number of panes), before it
    is taken as unreadable; then it is remembered, in `unreadable` (the
    long-running ticker keeps one per server) and on the pane (`UNREAD_OPTION`),
    with the state it had: such a pane is not looked at again until its state
    changes or `UNREAD_HOLDS` seconds pass (then one frame renews the memo), so a
    program with a hand-written busy state costs a capture every few ticks."""
    report = report if report is not None else LookReport()
    ids = watched(entries, panes)
    out = list(panes)
    looked_at: list[int] = []
    unread: list[int] = []  # of those, the ones whose screen read as no layout
    again: list[int] = []  # of those, the ones a new frame may yet read
    for i, pane in enumerate(panes):
        if pane.pane_id not in ids or not needs_look(pane, now, _registry(server, pane, now)):
            continue
        memos = (unreadable.get(pane.pane_id, "") if unreadable is not None else "", pane.unread)
        if any(unread_holds(memo, pane, now) for memo in memos):
            continue
        looked_at.append(i)
        out[i], screen = _look(server, pane, now, zone, sleep, report, write)
        if _no_layout(screen) and out[i] == pane:
            unread.append(i)
            if not any(_of(memo, pane) for memo in memos):  # a lapsed memo is renewed on one frame
                again.append(i)
    for _ in range(LOOK_AGAIN_TRIES):
        if not again:
            break
        sleep(LOOK_AGAIN_DELAY)
        for i in list(again):
            out[i], screen = _look(server, panes[i], now, zone, sleep, report, write)
            if not (_no_layout(screen) and out[i] == panes[i]):
                again.remove(i)
                unread.remove(i)
    for i in looked_at:
        pane = panes[i]
        if unreadable is not None:
            if i in unread:
                unreadable[pane.pane_id] = unread_memo(pane, now)
            else:
                unreadable.pop(pane.pane_id, None)
        if i in unread and write:
            _mark_unread(server, pane, now, report)
    if unreadable is not None:
        for gone in set(unreadable) - {p.pane_id for p in panes}:
            del unreadable[gone]
    return out


def _no_layout(screen: Screen | None) -> bool:
    """Whether a capture was taken and no layout read it."""
    return screen is not None and not screen.agent


def _registry(server: Server, pane: PaneFact, now: int) -> Verdict | None:
    """What Claude's session registry implies for a busy Claude pane (None for any other)."""
    if not asks_registry(pane, now):
        return None
    return claude_sessions.verdict_for(pane, os.environ if server.env is None else server.env)


def unread_memo(pane: PaneFact, now: int) -> str:
    """The pane as `UNREAD_OPTION` records it, with when: what must change, or how long
    must pass, before it is looked at again."""
    return f"{_unread_key(pane)}@{now}"


def unread_holds(memo: str, pane: PaneFact, now: int) -> bool:
    """Whether `memo` (`unread_memo`'s) still spares `pane` a look at `now`."""
    since = memo.rpartition("@")[2]
    return _of(memo, pane) and since.isdigit() and 0 <= now - int(since) < UNREAD_HOLDS


def _of(memo: str, pane: PaneFact) -> bool:
    """Whether `memo` was made of `pane` as it is now (whenever)."""
    return memo.rpartition("@")[0] == _unread_key(pane)


def _unread_key(pane: PaneFact) -> str:
    return f"{pane.state}:{pane.epoch}:{pane.pid}:{pane.command}"


def _mark_unread(server: Server, pane: PaneFact, now: int, report: LookReport) -> None:
    """Remember on the pane itself that its screen read as no agent's, so that the next
    tick (a one-shot `rk cron tick` too, which keeps no memory) spends no capture on it."""
    try:
        server.set_pane_option(pane.pane_id, UNREAD_OPTION, unread_memo(pane, now))
    except TmuxError as exc:
        report.errors.append(f"{pane.pane_id}: {exc}")


def learn_idle_lines(server: Server, panes: Sequence[PaneFact], ids: set[str], report: LookReport) -> int:
    """Remember the cursor's line of each pane in `ids` that is newly idle (its
    state's epoch is not the one its idle line was seen at) and whose screen no
    layout is made for (`rk.core.pane.idle_line`): one capture per idle, in a pane
    option, so a ticker restart keeps it. The hooks nudge the ticker, so the look
    comes right after the idle. The number of captures taken."""
    taken = 0
    for pane in panes:
        old = parse(pane.idle_line)
        if pane.pane_id not in ids or pane.in_mode or not learns_idle_line(pane) or (old and old.epoch == pane.epoch):
            continue
        try:
            state, cursor, rows = server.cursor_rows(pane.pane_id)
            taken += 1
            now = parse_state_option(state)
            line = cursor_line(rows, cursor)
            if now.state != AgentState.IDLE or now.epoch != pane.epoch or line is None:
                continue  # it moved on since the enumeration: the next idle is learnt then
            server.set_pane_option(pane.pane_id, IDLE_LINE_OPTION, learned(old, pane.epoch, line).render())
        except TmuxError as exc:
            report.errors.append(f"{pane.pane_id}: {exc}")
    return taken


def pane_of_frame(frame: Frame) -> PaneFact:
    """The pane's facts as a delivery frame read them (state reconciled, kind
    judged from the pane's process tree, read now for this pane's tty alone)."""
    pane = PaneFact(
        frame.pane_id,
        command=frame.field("pane_current_command"),
        tty=tty_device(frame.field("pane_tty")),
        title=frame.field("pane_title"),
        window_name=frame.field("window_name"),
        pane_pid=format_number(frame.field("pane_pid")),
    )
    program = None
    if pane.pane_pid and pane.tty:
        table = read_table({pane.tty})
        program = judge(table, pane.pane_pid, own_pids()) if table is not None else None
    return reconcile(
        pane,
        frame.field(STATE_OPTION),
        frame.field(LEGACY_STATE_OPTION),
        frame.field(SESSION_OPTION),
        process_info,
        frame.field(SOURCE_OPTION),
        program,
    )


def look_now(server: Server, pane: PaneFact, now: int, zone: tzinfo) -> PaneFact:
    """One look at `pane` now, its correction written (state, turn end, journal) as the
    tick's looks write theirs: the pane as rk believes it after (`rk.act.interrupt`)."""
    looked, _ = _look(server, pane, now, zone, time.sleep, LookReport(), True)
    return looked


def _look(
    server: Server,
    pane: PaneFact,
    now: int,
    zone: tzinfo,
    sleep: Callable[[float], None],
    report: LookReport,
    write: bool,
) -> tuple[PaneFact, Screen | None]:
    try:
        title, styled = server.look(pane.pane_id)
        report.captures += 1
        screen = read_screen(pane, styled, title, now, zone)
        fix = correction(pane, screen, now, settled=False)
        tries = 0
        while fix is None and tries < SETTLE_TRIES and _would_rest(pane, screen, now):
            tries += 1
            sleep(SETTLE_DELAY)
            title2, styled2 = server.look(pane.pane_id)
            report.captures += 1
            again = read_screen(pane, styled2, title2, now, zone)
            if again == screen and _plain(styled2) == _plain(styled):
                fix = correction(pane, screen, now, settled=True)
            else:  # still drawing (an Esc's aftermath: the prompt put back a moment later): compare the next one
                styled, screen = styled2, again
        if fix is not None:
            if write:
                _record_turn(server, pane, fix, styled, screen.failed)
            report.corrections.append((pane.pane_id, fix))
        return corrected(pane, fix), screen
    except TmuxError as exc:
        report.errors.append(f"{pane.pane_id}: {exc}")
        return pane, None


def _record_turn(server: Server, pane: PaneFact, fix: Correction, styled: str, failed: bool = False) -> None:
    """Write a correction with how the turn ended, if it did (`@rk_pane_turn_end`), and
    journal the change (which wakes any waiting `rk agent await`). When a hook wrote the
    pane's state since the look read it, the hook's state and end stand (`Server.write_state`):
    the look's frame may be older than the hook's event. A limit is written all the same:
    no hook tells one."""
    end = screen_turn_end(pane.state, fix.state, _ESC.sub("", styled), failed)
    read = f"{pane.state}:{pane.epoch}" if pane.state else ""
    ended = turn_end_value(end, fix.epoch) if end else ""
    limit = fix.state == AgentState.LIMITED
    wrote, wrote_end = server.write_state(pane.pane_id, fix.value, fix.note, ended, read, screen_only=limit)
    if not wrote:
        return  # the hook's own line is in the journal
    if not wrote_end:
        end = ""  # the hook's line in the journal said how the turn ended
    if fix.state != pane.state:
        statejournal.record(
            os.environ if server.env is None else server.env,
            server.path.name,
            fix.epoch,
            pane.pane_id,
            fix.state,
            end,
            "screen",
        )


def _would_rest(pane: PaneFact, screen: Screen, now: int) -> bool:
    """Whether the screen would end a busy or limited state, given a settled screen."""
    return correction(pane, screen, now, settled=True) is not None


def _plain(styled: str) -> str:
    return "".join(_ESC.sub("", styled).split())

"""A screen no layout reads is looked at again before it is taken as unreadable, and the
memo of an unreadable screen (which spares the pane later looks) lapses.

Seen in CI with the real Mistral Vibe 3.0.2: a tick's look caught the TUI mid-redraw (the
upper half of a busy frame, blank rows below); the pane was remembered as unreadable with
the state it had, and since no Vibe hook reports a turn's start, that state never changed:
no later tick looked, and the running turn was never seen (`active` only ever comes from
the screen). Here Vibe's own screens, captured from the real CLI, are replayed by a server
that only answers looks.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from pathlib import Path

from rk.core.pane.facts import PaneFact, PaneKind
from rk.core.schedule.entry import CreatedBy, Entry, Every, Target
from rk.tmux.observe import (
    LOOK_AGAIN_DELAY,
    LOOK_AGAIN_TRIES,
    UNREAD_HOLDS,
    LookReport,
    look_around,
    unread_memo,
)

SCREENS = Path(__file__).resolve().parent / "fixtures" / "screens" / "vibe"
NOW = 1_796_600_000


def frame(name: str) -> str:
    return (SCREENS / f"{name}.ansi").read_text()


def half_drawn(name: str) -> str:
    """The upper half of a frame, blank rows below: a redraw caught halfway."""
    rows = frame(name).split("\n")
    return "\n".join(rows[: len(rows) // 2] + [""] * (len(rows) - len(rows) // 2))


BUSY, HALF = frame("busy"), half_drawn("busy")


class Replay:
    """A server whose panes each show the frames given, one per look (the last one again after)."""

    def __init__(self, *frames: str) -> None:
        self.frames = list(frames)
        self.seen: dict[str, int] = {}

    @property
    def looks(self) -> int:
        return sum(self.seen.values())

    def look(self, pane_id: str) -> tuple[str, str]:
        n = self.seen.get(pane_id, 0)
        self.seen[pane_id] = n + 1
        return "", self.frames[min(n, len(self.frames) - 1)]


#: A Vibe pane before its first turn end: no hook has written a state yet.
VIBE = PaneFact("%1", pid=4242, command="vibe-rs", kind=PaneKind.AGENT, agent="vibe")
ENTRY = Entry(id="e1", target=Target("pane", "%1"), created_by=CreatedBy(at=NOW - 3600), schedule=Every(600))


def look_all(
    panes: list[PaneFact], *frames: str, now: int = NOW, memo: dict[str, str] | None = None
) -> tuple[list[PaneFact], int, list[float]]:
    """One tick's look at `panes`, each over `frames`: the panes as the tick then sees
    them, the captures taken, and the pauses between them."""
    server, pauses, report = Replay(*frames), [], LookReport()
    entries = [replace(ENTRY, id=f"e{p.pane_id[1:]}", target=Target("pane", p.pane_id)) for p in panes]
    looked = look_around(
        server,  # type: ignore[arg-type]
        entries,
        panes,
        now,
        UTC,
        sleep=pauses.append,
        report=report,
        write=False,
        unreadable=memo,
    )
    assert report.captures == server.looks
    return looked, server.looks, pauses


def look(
    pane: PaneFact, *frames: str, now: int = NOW, memo: dict[str, str] | None = None
) -> tuple[PaneFact, int, list[float]]:
    looked, captures, pauses = look_all([pane], *frames, now=now, memo=memo)
    return looked[0], captures, pauses


def test_a_frame_caught_mid_redraw_is_looked_at_again_and_the_turn_is_seen():
    memo: dict[str, str] = {}
    pane, captures, pauses = look(VIBE, HALF, HALF, BUSY, memo=memo)
    assert (pane.state, pane.epoch, captures, pauses) == ("active", NOW, 3, [LOOK_AGAIN_DELAY] * 2)
    assert memo == {}


def test_a_screen_that_never_reads_is_looked_at_a_bounded_number_of_times_and_remembered():
    memo: dict[str, str] = {}
    pane, captures, pauses = look(VIBE, HALF, memo=memo)
    assert (pane, captures, pauses) == (VIBE, 1 + LOOK_AGAIN_TRIES, [LOOK_AGAIN_DELAY] * LOOK_AGAIN_TRIES)
    assert memo == {"%1": unread_memo(VIBE, NOW)}


def test_a_readable_first_frame_costs_one_capture():
    pane, captures, pauses = look(VIBE, BUSY, HALF)
    assert (pane.state, captures, pauses) == ("active", 1, [])


def test_the_tickers_memo_spares_later_looks_until_the_state_changes_or_it_lapses():
    memo = {"%1": unread_memo(VIBE, NOW)}
    assert look(VIBE, BUSY, now=NOW + UNREAD_HOLDS - 1, memo=memo)[:2] == (VIBE, 0)
    moved = replace(VIBE, state="idle", epoch=NOW + 5)
    assert look(moved, BUSY, now=NOW + 10, memo=dict(memo))[1] == 1
    pane, captures, _ = look(VIBE, BUSY, now=NOW + UNREAD_HOLDS, memo=memo)
    assert (pane.state, captures, memo) == ("active", 1, {})


def test_the_panes_own_memo_spares_later_looks_until_the_state_changes_or_it_lapses():
    """The memo a one-shot `rk cron tick` reads from the pane (`@rk_pane_unread`)."""
    marked = replace(VIBE, unread=unread_memo(VIBE, NOW))
    assert look(marked, BUSY, now=NOW + UNREAD_HOLDS - 1)[:2] == (marked, 0)
    assert look(replace(marked, pid=4343), BUSY, now=NOW + 10)[1] == 1
    assert look(marked, BUSY, now=NOW + UNREAD_HOLDS)[0].state == "active"
    assert look(marked, BUSY, now=NOW - 1)[1] == 1  # a clock set back does not hold a memo for longer
    assert look(replace(VIBE, unread="active:0:4242:vibe-rs"), BUSY)[1] == 1  # a memo without its time


def test_panes_no_layout_reads_are_looked_at_again_together():
    """Ten such panes cost one tick the same pauses as one: a round of new frames each time."""
    panes = [replace(VIBE, pane_id=f"%{n}") for n in range(1, 11)]
    memo: dict[str, str] = {}
    looked, captures, pauses = look_all(panes, HALF, now=NOW, memo=memo)
    assert (looked, captures) == (panes, (1 + LOOK_AGAIN_TRIES) * len(panes))
    assert pauses == [LOOK_AGAIN_DELAY] * LOOK_AGAIN_TRIES
    assert set(memo) == {p.pane_id for p in panes}


def test_a_lapsed_memo_is_renewed_on_one_frame():
    memo = {"%1": unread_memo(VIBE, NOW)}
    pane, captures, pauses = look(VIBE, HALF, BUSY, now=NOW + UNREAD_HOLDS, memo=memo)
    assert (pane, captures, pauses, memo) == (VIBE, 1, [], {"%1": unread_memo(VIBE, NOW + UNREAD_HOLDS)})
    marked = replace(VIBE, unread=unread_memo(VIBE, NOW))
    assert look(marked, HALF, BUSY, now=NOW + UNREAD_HOLDS)[1:] == (1, [])

"""A busy pane is called at rest only on a screen that stays the same between two
captures, and a screen still drawing is captured again, a bounded number of times.

Seen in CI with the real Claude Code 2.1.332 under load: its registry said idle after an
Esc, the tick looked, and the screen changed between the two captures (the aftermath of
an Esc is drawn in steps: the footer, then the prompt put back in the composer); the
tick wrote nothing and the pane stayed `active` until the next poll. Here the screens are
Claude's own, captured from the real CLI, replayed by a server that only answers looks.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from rk.core.pane.facts import PaneFact, PaneKind
from rk.core.schedule.entry import CreatedBy, Entry, Every, Target
from rk.tmux.observe import SETTLE_DELAY, SETTLE_TRIES, LookReport, look_around

SCREENS = Path(__file__).resolve().parent / "fixtures" / "screens" / "claude-2.1.332"
NOW = 1_796_600_000
#: Two screens at rest that differ, and one of a running turn.
REST, PUT_BACK, WORKING = "idle_after_turn", "interrupted_before_output", "working_1"


class Replay:
    """A server whose panes show the screens named, one per look (the last one again after)."""

    def __init__(self, *names: str) -> None:
        self.screens = [(SCREENS / f"{name}.ansi").read_text() for name in names]
        self.looks = 0

    def look(self, pane_id: str) -> tuple[str, str]:
        screen = self.screens[min(self.looks, len(self.screens) - 1)]
        self.looks += 1
        return "", screen


def look(*names: str) -> tuple[PaneFact, int, list[float]]:
    """A stale `active` Claude pane looked at once over `names`: the pane as corrected, the
    captures taken, and the pauses between them."""
    pane = PaneFact("%1", state="active", epoch=NOW - 600, pid=4242, kind=PaneKind.AGENT, agent="claude")
    entry = Entry(id="e1", target=Target("pane", "%1"), created_by=CreatedBy(at=NOW - 3600), schedule=Every(60))
    server, pauses, report = Replay(*names), [], LookReport()
    looked = look_around(server, [entry], [pane], NOW, UTC, sleep=pauses.append, report=report, write=False)  # type: ignore[arg-type]
    assert report.captures == server.looks
    return looked[0], server.looks, pauses


def test_a_screen_at_rest_twice_ends_the_turn():
    pane, captures, pauses = look(REST, REST)
    assert (pane.state, pane.epoch, captures, pauses) == ("idle", NOW, 2, [SETTLE_DELAY])


def test_a_screen_still_drawing_is_captured_again_until_it_holds():
    pane, captures, pauses = look(REST, PUT_BACK, PUT_BACK)
    assert (pane.state, captures, pauses) == ("idle", 3, [SETTLE_DELAY] * 2)


@pytest.mark.parametrize("changes", [SETTLE_TRIES, SETTLE_TRIES + 3])
def test_a_screen_that_never_holds_still_is_left_as_it_was_after_the_last_try(changes):
    names = [(REST, PUT_BACK)[i % 2] for i in range(changes + 1)]
    pane, captures, pauses = look(*names)
    assert (pane.state, pane.epoch, captures) == ("active", NOW - 600, 1 + SETTLE_TRIES)
    assert pauses == [SETTLE_DELAY] * SETTLE_TRIES


def test_a_screen_that_starts_a_turn_again_stops_the_tries():
    pane, captures, _ = look(REST, WORKING, REST, REST)
    assert (pane.state, captures) == ("active", 2)


def test_a_working_screen_costs_one_capture():
    pane, captures, pauses = look(WORKING, REST)
    assert (pane.state, captures, pauses) == ("active", 1, [])

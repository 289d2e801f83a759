"""`rk.core.log.about.cut` is the view a forecast of one entry steps from: built from the
whole log's indexes, it must answer every query as a view of the filtered lines would
(`rk cron list` forecasts each entry from it, once an entry)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.log.about import cut
from rk.core.log.delivery import LogLine, LogView

SLOTS = ("_by_entry", "_aftermath", "_counted_by_target", "_counted_by_entry", "_delivered_by_entry")
OUTCOMES = (
    "delivered",
    "failed: paste: no such pane",
    "skipped-busy: working",
    "rescheduled",
    "turn-timeout",
    "interrupted",
    "respawned (kickoff undelivered: x)",
    "held-quiet",
    "missed",
)

lines = st.lists(
    st.builds(
        LogLine,
        ts=st.integers(0, 10_000),
        entry=st.sampled_from(("a", "b", "c")),
        target=st.sampled_from(("%0", "%1", "")),
        reason=st.sampled_from(("schedule", "wake")),
        outcome=st.sampled_from(OUTCOMES),
    ),
    max_size=40,
)


def filtered(view: LogView, entry: str, pane: str | None) -> LogView:
    """What the forecast built before: a view of the filtered lines."""
    return LogView(line for line in view.lines if line.entry == entry or (pane and line.target == pane))


def state(view: LogView) -> dict[str, object]:
    """Its indexes, and its lines (a cut view reads those only when asked)."""
    return {"lines": view.lines} | {slot: getattr(view, slot) for slot in SLOTS}


@settings(max_examples=150, deadline=None)
@given(lines, lines)
def test_about_is_the_view_of_the_filtered_lines(before, after):
    view = LogView(before)
    for stage in (before, after):
        if stage is after:  # lines added after the first `about`: indexed too
            for line in after:
                view.add(line)
        for entry in ("a", "b", "z"):
            for pane in (None, "", "%0", "%1", "%9"):
                assert state(cut(view, entry, pane)) == state(filtered(view, entry, pane)), (entry, pane)


def test_about_is_a_view_of_its_own():
    view = LogView([LogLine(1, "a", "%0", "schedule", "delivered"), LogLine(2, "b", "%0", "schedule", "delivered")])
    sub = cut(view, "a", "%0")
    sub.add(LogLine(3, "a", "%0", "schedule", "delivered"))
    assert len(view) == 2 and view.rate_count(3, target="%0") == 2
    assert len(sub) == 3 and sub.rate_count(3, target="%0") == 3

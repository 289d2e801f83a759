"""Loop-safe agent-made schedules, pure (`rk.core.schedule.lineage`): the depth bound,
the rate rule, the edit re-check, the turn's maker and the tree of `list --tree`.

The properties run a model of a server where humans add entries, turns started by
the fires of entries (live or gone) add more, and entries leave: whatever happens,
no accepted entry is deeper than the bound, and none fires more often than its parent.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.cost.turn_timeout import StateLine
from rk.core.log.delivery import LogLine
from rk.core.schedule.entry import At, Backoff, Cron, Every, WakeOn, WakeOnly
from rk.core.schedule.lineage import (
    ONCE,
    ChainRefused,
    Lineage,
    Node,
    Record,
    check_child,
    check_edit,
    cron_least_gap,
    edit_floor,
    least_interval,
    lineage,
    tree,
    turn_parent,
)

# -- how often each kind fires --------------------------------------------------------------


def test_each_kinds_least_interval():
    assert least_interval(Every(300), None) == 300
    assert least_interval(Backoff(120, 3600), None) == 120  # its fastest rung: where a reset puts it
    assert least_interval(Cron("*/15 * * * *"), None) == 900
    assert least_interval(Cron("0 9 * * 1-5"), None) == 86400  # the weekdays' gap, not the weekend's
    assert least_interval(Cron("0 9,17 * * *"), None) == 8 * 3600
    assert least_interval(Cron("*/7 * * * *"), None) == 240  # :56 to :00
    assert least_interval(At(1_800_000_000), None) == ONCE
    assert least_interval(WakeOnly(), WakeOn(debounce=90)) == 90
    assert least_interval(Every(3600), WakeOn(debounce=60)) == 60  # the shorter of the two
    assert least_interval(At(1_800_000_000), WakeOn(debounce=600)) == 600


def test_a_cron_expression_that_fires_rarely_still_fires_more_than_once():
    """A leap day's cron fires once in four years, but again after: more often than a one-shot."""
    assert cron_least_gap("0 9 29 2 *") < ONCE
    assert cron_least_gap("0 0 1 1 *") == 365 * 86400  # the shortest year of the four


# -- depth -------------------------------------------------------------------------------------


def test_a_grandchild_is_refused_at_the_default_bound_with_its_chain():
    found = lineage("e2", 600, {"e1": "", "e2": "e1"}, {})
    assert found == Lineage("e2", ("e1", "e2"), 3, 600, False)
    with pytest.raises(ChainRefused) as caught:
        check_child(found, 600, 2)
    assert str(caught.value) == "refused: chain depth 3 > 2: e1 → e2 → (new) (setting max_chain_depth)"
    check_child(found, 600, 3)  # a bound of 3 lets it be


def test_a_child_of_a_humans_entry_is_depth_two():
    found = lineage("e1", 600, {"e1": ""}, {})
    assert found.depth == 2
    check_child(found, 600, 2)


def test_a_gone_link_keeps_its_place_in_the_chain_by_its_record():
    """A child that removed itself (or a one-shot that retired) still counts: its record says its parent."""
    found = lineage("e2", None, {"e1": ""}, {"e2": Record("e1", 600)})
    assert found.depth == 3 and found.chain == ("e1", "e2 (gone)") and found.gone
    with pytest.raises(ChainRefused, match=r"chain depth 3 > 2: e1 → e2 \(gone\) → \(new\)"):
        check_child(found, ONCE, 2)


def test_a_gone_parent_without_a_record_was_a_humans():
    found = lineage("e1", None, {}, {})
    assert found.depth == 2 and found.floor == ONCE


def test_a_hand_made_cycle_is_too_deep_to_follow():
    found = lineage("a", 60, {"a": "b", "b": "a"}, {})
    with pytest.raises(ChainRefused, match="chain depth"):
        check_child(found, ONCE, 16)


# -- rate --------------------------------------------------------------------------------------


def test_a_child_fires_no_more_often_than_its_parent():
    found = lineage("e1", 600, {"e1": ""}, {})
    check_child(found, 600, 2)
    check_child(found, ONCE, 2)
    with pytest.raises(ChainRefused) as caught:
        check_child(found, 300, 2)
    assert "every 5m, more often than the entry e1" in str(caught.value) and "(10m)" in str(caught.value)


def test_a_gone_parents_turn_may_make_one_shots_only():
    found = lineage("e1", None, {}, {})
    check_child(found, ONCE, 2)
    with pytest.raises(ChainRefused, match="is gone"):
        check_child(found, 86400, 2)


def test_an_edit_may_not_speed_a_child_past_its_floor():
    check_edit("c", "p", 600, 900, 600)  # slower: fine
    check_edit("c", "p", 600, 600, 600)
    with pytest.raises(ChainRefused, match="more often than 10m"):
        check_edit("c", "p", 600, 300, 600)
    check_edit("c", "p", 60, 120, 600)  # already faster (a human made it so): not made faster, passes


def test_the_edit_floor_is_the_parents_now_else_the_record():
    assert edit_floor("c", "p", 300, {"c": Record("p", 600)}) == 300
    assert edit_floor("c", "p", None, {"c": Record("p", 600)}) == 600
    assert edit_floor("c", "p", None, {}) == ONCE


# -- the properties ------------------------------------------------------------------------------


SCHEDULES = st.one_of(
    st.builds(Every, st.integers(60, 7200)),
    st.builds(lambda lo, extra: Backoff(lo, lo + extra), st.integers(60, 3600), st.integers(0, 3600)),
    st.builds(Cron, st.sampled_from(["* * * * *", "*/5 * * * *", "0 * * * *", "0 9 * * *", "*/7 * * * *"])),
    st.just(At(1_800_000_000)),
)
WAKES = st.one_of(st.none(), st.builds(lambda d: WakeOn(debounce=d), st.integers(0, 3600)))
#: A step: (who makes it: None a human, else an index into every entry made so far), schedule, wake, leaves?
STEPS = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 40)), SCHEDULES, WAKES, st.booleans()), max_size=40)


@settings(max_examples=150, deadline=None)
@given(STEPS, st.integers(1, 4))
def test_no_accepted_chain_is_deeper_than_the_bound_nor_faster_than_its_parent(steps, bound):
    live: dict[str, tuple[str, int]] = {}  # id -> (parent, least) of those in the file
    records: dict[str, Record] = {}
    truth: dict[str, int] = {}  # every entry ever made -> its true depth
    made: list[str] = []
    for n, (maker, schedule, wake, leaves) in enumerate(steps):
        new, least = f"e{n}", least_interval(schedule, wake)
        if maker is None or not made:
            live[new], truth[new] = ("", least), 1
        else:
            parent = made[maker % len(made)]
            found = lineage(
                parent, live[parent][1] if parent in live else None, {k: v[0] for k, v in live.items()}, records
            )
            try:
                check_child(found, least, bound)
            except ChainRefused:
                continue
            assert truth[parent] + 1 <= bound  # no accepted chain is deeper than the bound
            assert least >= (live[parent][1] if parent in live else ONCE)  # nor faster than its parent
            live[new], truth[new] = (parent, least), truth[parent] + 1
            records[new] = Record(parent, found.floor)
        made.append(new)
        if leaves:  # it leaves the file at once (a one-shot retiring, an agent removing its own)
            del live[new]


# -- the turn's maker ------------------------------------------------------------------------------


def _line(ts, entry, pane="%1", reason="schedule", outcome="delivered"):
    return LogLine(ts, entry, pane, reason, outcome)


REST_THEN_BUSY = [StateLine(100, "idle"), StateLine(205, "active")]


def test_the_turn_a_fire_started_names_its_entry():
    assert turn_parent([_line(200, "e1")], "%1", REST_THEN_BUSY, 0) == "e1"
    assert turn_parent([_line(150, "e0"), _line(200, "e1")], "%1", REST_THEN_BUSY, 0) == "e1"


@pytest.mark.parametrize(
    "lines, journal, turn_end_at",
    [
        ([_line(200, "e1", reason="manual")], REST_THEN_BUSY, 0),  # rk send / cron run: someone's choice
        ([_line(200, "e1", outcome="skipped: busy")], REST_THEN_BUSY, 0),
        ([_line(200, "e1", pane="%2")], REST_THEN_BUSY, 0),  # into another pane
        ([_line(100, "e1")], [StateLine(100, "idle"), StateLine(400, "active")], 0),  # too long before the turn
        ([_line(200, "e1")], [StateLine(205, "active")], 0),  # never seen at rest: cannot tell
        ([_line(200, "e1")], REST_THEN_BUSY + [StateLine(300, "idle")], 0),  # no turn goes on
        ([_line(200, "e1")], REST_THEN_BUSY, 250),  # a turn ended since this one began: a later one
        ([], REST_THEN_BUSY, 0),  # a human's prompt
    ],
)
def test_a_turn_no_fire_started_has_no_parent(lines, journal, turn_end_at):
    assert turn_parent(lines, "%1", journal, turn_end_at) == ""


# -- the tree ---------------------------------------------------------------------------------------


def test_the_tree_puts_children_under_parents_and_keeps_a_gone_parents_line():
    nodes = tree([("a", ""), ("c", "b"), ("b", "a"), ("d", "x"), ("e", "x"), ("f", "")])
    assert nodes == [
        Node("a", 0),
        Node("b", 1),
        Node("c", 2),
        Node("x", 0, gone=True),
        Node("d", 1),
        Node("e", 1),
        Node("f", 0),
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.sampled_from(["", *"abcdefghxy"])), max_size=12))
def test_the_tree_shows_each_entry_once_under_its_parent(pairs):
    entries = list({k: p for k, p in pairs}.items())
    nodes = tree(entries)
    shown = [n.id for n in nodes if not n.gone]
    assert sorted(shown) == sorted(k for k, _ in entries)  # each once, cycles included
    parents = dict(entries)
    for i, node in enumerate(nodes):
        if node.depth:  # the nearest line above at one level less is its parent
            above = next(n for n in reversed(nodes[:i]) if n.depth == node.depth - 1)
            assert parents.get(node.id) == above.id


def test_the_tree_of_list_all_is_made_server_by_server():
    """Ids are a server's own: a parent on another server is not this one's."""
    from dataclasses import dataclass

    from rk.cli.tree import GoneParent, indented, tree_order
    from rk.core.schedule.entry import Entry, Target, TargetKind

    @dataclass(frozen=True)
    class Row:
        server: str
        entry: Entry

    def row(server, entry_id, parent=""):
        return Row(server, Entry(entry_id, Every(600), Target(TargetKind.PANE, "%1"), parent=parent))

    rows = [row("a", "p1"), row("b", "c1", "p1"), row("a", "c2", "p1")]
    order = [(r.entry.id if isinstance(r, Row) else f"{r.id}?", depth) for r, depth in tree_order(rows)]
    assert order == [("p1", 0), ("c2", 1), ("p1?", 0), ("c1", 1)]
    assert GoneParent("b", "p1").cells(5, True) == ["b", "p1", "(gone)", "-", "-"]
    assert [indented("x", d) for d in (0, 1, 2)] == ["x", "└ x", "  └ x"]

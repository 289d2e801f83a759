"""`--fresh`'s rules, pure: which command each CLI takes, when a human's turn withholds it,
when the agent has finished it, and the field as the file and the command line take it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rk.core.cost.turn_timeout import START_WINDOW, StateLine
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.entry import CreatedBy, Entry, EntryError, Every, Target
from rk.core.schedule.fresh import (
    COMMANDS,
    SETTLE,
    WITHHELD_WHY,
    FreshMode,
    Mark,
    Plan,
    Step,
    command_for,
    finished,
    human_turn_since,
    notices,
    plan,
    refusal,
)


def test_each_mode_names_its_command_and_whether_it_is_always():
    assert [(m.command, m.always) for m in FreshMode] == [
        ("clear", False),
        ("compact", False),
        ("clear", True),
        ("compact", True),
    ]


@pytest.mark.parametrize(
    ("agent", "clear", "compact"),
    [
        ("claude", "/clear", "/compact"),
        ("codex", "/new", "/compact"),
        ("gemini", "/clear", "/compress"),
        ("qwen", "/clear", "/compress"),
        ("opencode", "/new", "/compact"),
        ("kilo", "/new", "/compact"),
        ("copilot", "/clear", "/compact"),
        ("vibe", "/clear", "/compact"),
    ],
)
def test_every_known_cli_has_its_own_words(agent, clear, compact):
    assert command_for(FreshMode.CLEAR, agent) == clear
    assert command_for(FreshMode.COMPACT_ALWAYS, agent) == compact
    assert refusal(FreshMode.CLEAR, agent) == ""


def test_every_agent_rk_sets_up_is_in_the_table():
    from rk.agent.setup.agents import PROVIDERS

    assert set(PROVIDERS) <= set(COMMANDS)


def test_an_unknown_program_or_a_missing_command_is_refused_with_one_line():
    assert refusal(FreshMode.CLEAR, "") == "--fresh clear: the pane runs no agent rk knows"
    assert refusal(FreshMode.COMPACT, "bash-repl") == "--fresh compact: bash-repl has no compact command"
    assert plan(FreshMode.COMPACT, "", human_typed="") == Plan(Step.REFUSED, why=refusal(FreshMode.COMPACT, ""))


def test_the_plan():
    assert plan(None, "claude", human_typed=WITHHELD_WHY) == Plan(Step.NONE)
    assert plan(FreshMode.CLEAR, "claude", human_typed="") == Plan(Step.SEND, "/clear")
    assert plan(FreshMode.CLEAR, "claude", human_typed=WITHHELD_WHY) == Plan(Step.WITHHELD, why=WITHHELD_WHY)
    assert plan(FreshMode.CLEAR_ALWAYS, "claude", human_typed=WITHHELD_WHY) == Plan(Step.SEND, "/clear")
    assert plan(FreshMode.COMPACT, "codex", human_typed="").note == "after /compact"
    assert plan(FreshMode.COMPACT, "codex", human_typed=WITHHELD_WHY).note == f"fresh withheld: {WITHHELD_WHY}"


# -- a human's turn since the last fire ----------------------------------------------------------

T = 1_000_000


def journal(*lines: tuple[int, str]) -> list[StateLine]:
    return [StateLine(ts, to) for ts, to in lines]


def test_a_turn_no_rk_delivery_started_after_the_last_fire_is_a_humans():
    lines = journal((T, "idle"), (T + 100, "active"), (T + 130, "idle"))
    assert human_turn_since(lines, [T], since=T)  # rk's delivery at T; the turn began 100 s later


def test_the_turn_rks_own_delivery_started_is_not_a_humans():
    lines = journal((T, "idle"), (T + 3, "active"), (T + 30, "idle"))
    assert not human_turn_since(lines, [T], since=T)
    # its edge: START_WINDOW after the delivery is still rk's, a second later is not
    edge = journal((T, "idle"), (T + START_WINDOW, "active"), (T + START_WINDOW + 9, "idle"))
    assert not human_turn_since(edge, [T], since=T)
    late = journal((T, "idle"), (T + START_WINDOW + 1, "active"), (T + START_WINDOW + 9, "idle"))
    assert human_turn_since(late, [T], since=T)


def test_turns_before_the_last_fire_are_not_counted():
    lines = journal((T - 50, "active"), (T - 40, "idle"), (T, "idle"))
    assert not human_turn_since(lines, [], since=T)
    assert human_turn_since(lines, [], since=T - 60)  # since the entry's creation, before that turn


def test_a_turn_still_running_counts_and_a_waiting_dialog_is_busy_too():
    assert human_turn_since(journal((T, "idle"), (T + 200, "active")), [T], since=T)
    assert human_turn_since(journal((T, "idle"), (T + 200, "waiting"), (T + 210, "idle")), [T], since=T)


def test_another_entrys_delivery_starts_rks_turn_too():
    lines = journal((T, "idle"), (T + 500, "active"), (T + 530, "idle"))
    assert not human_turn_since(lines, [T, T + 499], since=T)


@given(st.lists(st.tuples(st.integers(1, 10_000), st.sampled_from(["idle", "active", "waiting"])), max_size=12))
def test_with_no_busy_line_after_the_last_fire_no_human_typed(raw):
    lines = journal(*sorted(raw))
    since = max((ts for ts, _ in raw), default=0)
    assert not human_turn_since(lines, [], since=since)


# -- finished ------------------------------------------------------------------------------------


def test_finished_needs_rest_and_evidence():
    before = Mark(epoch=100, session="claude:a", notices=0, at_rest=True)
    assert not finished(before, Mark(100, "claude:a", 0, at_rest=True), still_for=0.5)
    assert finished(before, Mark(101, "claude:a", 0, at_rest=True), still_for=0)  # a hook wrote it
    assert finished(before, Mark(100, "claude:b", 0, at_rest=True), still_for=0)  # /clear: a new session
    assert finished(before, Mark(100, "claude:a", 1, at_rest=True), still_for=0)  # a new `Compacted`
    assert finished(before, Mark(100, "claude:a", 0, at_rest=True), still_for=SETTLE)  # a still screen
    assert not finished(before, Mark(105, "claude:b", 3, at_rest=False), still_for=60)  # still compacting


def test_notices_count_each_clis_done_words():
    assert notices("compact", "✻ Conversation compacted (ctrl+o for history)\n  ⎿  Compacted") == 2
    assert notices("compact", "• Context compacted · 0s") == 1
    assert notices("compact", "Chat history compressed from 1200 to 300 tokens.") == 1
    assert notices("clear", "Compacted") == 0


# -- the field -----------------------------------------------------------------------------------


def entry(**kw) -> Entry:
    return Entry(
        id="e1", schedule=Every(300), target=Target("pane", "%1"), payload="go", created_by=CreatedBy(at=1), **kw
    )


@pytest.mark.parametrize("mode", list(FreshMode))
def test_the_file_keeps_fresh(mode):
    written = entry(fresh=mode).to_yaml()
    assert written["fresh"] == str(mode)
    assert decode_entry(written).fresh == mode


def test_without_fresh_the_file_says_nothing():
    assert "fresh" not in entry().to_yaml()
    assert decode_entry(entry().to_yaml()).fresh is None


def test_an_unknown_fresh_word_is_refused_in_the_file():
    raw = entry().to_yaml() | {"fresh": "wipe"}
    with pytest.raises(EntryError, match="fresh must be clear or compact or clear-always or compact-always"):
        decode_entry(raw)


# -- the engine's facts: the entry's last delivery, the pane's journal --------------------------


def firing_for(tmp_path, lines):
    """What `rk.engine.fresh` reads of a fire: the entry, its target pane, the log, the journal's files."""
    from types import SimpleNamespace

    from rk.core.log.delivery import LogView
    from rk.store.config import ServerFiles

    files = ServerFiles(tmp_path, "srv")
    return SimpleNamespace(
        entry=entry(fresh=FreshMode.CLEAR),
        fire=SimpleNamespace(pane="%1"),
        view=LogView(lines),
        out=SimpleNamespace(journal=files),
    )


def write_journal(tmp_path, *lines: tuple[int, str]) -> None:
    from rk.core.log.states import render
    from rk.store import state_journal

    env = {"RK_STATE_DIR": str(tmp_path)}
    for ts, to in lines:
        state_journal.append(env, "srv", render(ts, "%1", to, "", "hook", "claude"))


def test_a_human_turn_is_counted_from_the_entrys_last_delivery(tmp_path):
    from rk.core.log.delivery import LogLine
    from rk.engine.fresh import human_typed, last_delivery

    tmp_path.chmod(0o700)
    delivered = LogLine(T, "e1", "%1", "schedule", "delivered (after /clear)")
    other = LogLine(T + 5, "e2", "%9", "schedule", "delivered")
    failed = LogLine(T + 6, "e1", "%1", "schedule", "failed: echo not seen")
    firing = firing_for(tmp_path, [delivered, other, failed])
    assert last_delivery(firing) == T  # its own last delivered line, not another entry's, not a failure
    assert last_delivery(firing_for(tmp_path, [other])) == 1  # never delivered: its creation
    write_journal(tmp_path, (T - 100, "active"), (T - 90, "idle"), (T + 2, "active"), (T + 20, "idle"))
    assert human_typed(firing) == ""  # the human's turn was before the last delivery; then rk's own
    assert human_typed(firing_for(tmp_path, [other])) == WITHHELD_WHY  # since its creation, the human's turn counts


def test_a_pane_the_journal_knows_nothing_of_withholds_the_command(tmp_path):
    from rk.engine.fresh import UNTOLD, human_typed

    tmp_path.chmod(0o700)
    assert human_typed(firing_for(tmp_path, [])) == UNTOLD  # no journal at all
    write_journal(tmp_path, (T, "idle"))
    assert human_typed(firing_for(tmp_path, [])) == ""  # its stamp: a pane the hooks write

"""`deliver: replace`, pure: whose turn runs (only this entry's newest delivery's is
interrupted), what a replace fire does with the pane as seen, and a property: replace
never interrupts a turn whose cause is not this entry's delivery."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from rk.core.cost.turn_timeout import StateLine
from rk.core.log.delivery import LogLine, LogView
from rk.core.schedule.dispose import Act, Seen, deliver_policy, dispose
from rk.core.schedule.due import Fire
from rk.core.schedule.entry import CreatedBy, Deliver, Entry, Every, Target
from rk.core.schedule.grace import HOLD_WINDOW, late_window
from rk.core.schedule.replace import (
    NOT_OURS,
    Replace,
    action,
    replace_action,
    restored_prompt,
    turn_is_ours,
    waits_when_busy,
)

P = "%1"
T = 10_000


def view(*lines: tuple[int, str, str, str]) -> LogView:
    """Log lines (ts, entry, target, outcome), reason schedule."""
    return LogView([LogLine(ts, entry, target, "schedule", outcome) for ts, entry, target, outcome in lines])


def journal(*changes: tuple[int, str]) -> list[StateLine]:
    return [StateLine(ts, to) for ts, to in changes]


OURS = journal((T - 100, "idle"), (T + 1, "active"))


def test_the_turn_its_newest_delivery_started_is_ours():
    assert turn_is_ours("e1", view((T, "e1", P, "delivered")), P, OURS, 0)
    assert replace_action("e1", view((T, "e1", P, "delivered")), P, "active", OURS, 0) == Replace.INTERRUPT


def test_a_humans_turn_is_not_ours():
    human = journal((T - 100, "idle"), (T + 1, "active"), (T + 5, "idle"), (T + 9, "active"))
    assert not turn_is_ours("e1", view((T, "e1", P, "delivered")), P, human, 0)
    assert replace_action("e1", view((T, "e1", P, "delivered")), P, "active", human, 0) == Replace.WAIT
    nobody = journal((T - 100, "idle"), (T + 200, "active"))  # long after the delivery: someone's prompt
    assert not turn_is_ours("e1", view((T, "e1", P, "delivered")), P, nobody, 0)


def test_another_entrys_turn_is_not_ours():
    assert not turn_is_ours("e1", view((T, "e2", P, "delivered")), P, OURS, 0)
    # ours into the pane long ago, then the other entry's started the turn now
    lines = view((T - 500, "e1", P, "delivered"), (T, "e2", P, "delivered"))
    older = journal((T - 600, "idle"), (T - 499, "active"), (T - 400, "idle"), (T + 1, "active"))
    assert not turn_is_ours("e1", lines, P, older, 0)


def test_only_the_newest_delivery_counts_and_only_into_this_pane():
    # the newest went to another pane: nothing of ours runs in this one
    assert not turn_is_ours("e1", view((T, "e1", P, "delivered"), (T + 2, "e1", "%2", "delivered")), P, OURS, 0)
    # retargeted: its newest went to %2, though it would fit the run of %1 (a human's there)
    assert not turn_is_ours("e1", view((T, "e1", "%2", "delivered")), P, OURS, 0)
    # a failure after the delivery does not hide it (only `delivered` lines count)
    assert turn_is_ours("e1", view((T, "e1", P, "delivered"), (T + 2, "e1", P, "failed: echo not seen")), P, OURS, 0)
    # a delivery typed into the running turn started nothing: the newest is not the turn's cause
    typed_in = view((T, "e1", P, "delivered"), (T + 30, "e1", P, "delivered"))
    assert not turn_is_ours("e1", typed_in, P, OURS, 0)


def test_a_journal_that_cannot_tell_is_not_ours():
    assert not turn_is_ours("e1", view((T, "e1", P, "delivered")), P, journal((T + 1, "active")), 0)
    assert not turn_is_ours("e1", view((T, "e1", P, "delivered")), P, [], 0)
    # a turn end after the run began, which the journal missed
    assert not turn_is_ours("e1", view((T, "e1", P, "delivered")), P, OURS, T + 3)


def test_only_a_working_turn_of_ours_is_interrupted():
    assert action("", ours=False) == Replace.DELIVER
    assert action("active", ours=True) == Replace.INTERRUPT
    for blocker in ("waiting", "limited", "draft", "copy-mode", "unreadable"):
        assert action(blocker, ours=True) == Replace.WAIT, blocker
    assert action("active", ours=False) == Replace.WAIT
    # a dialog: never asked whose turn it is
    assert replace_action("e1", view((T, "e1", P, "delivered")), P, "waiting", OURS, 0) == Replace.WAIT


def test_the_policy_sends_at_rest_interrupts_its_own_and_holds_the_rest():
    assert deliver_policy(Deliver.REPLACE, Seen(state="idle"), T, T).act == Act.SEND
    assert deliver_policy(Deliver.REPLACE, Seen(state=""), T, T).act == Act.SEND
    assert deliver_policy(Deliver.REPLACE, Seen(state="active", ours=True), T, T).act == Act.REPLACE
    held = deliver_policy(Deliver.REPLACE, Seen(state="active"), T, T)
    assert (held.act, held.held_by, held.text) == (Act.HOLD, "active", f"held-busy: active; {NOT_OURS}")
    dialog = deliver_policy(Deliver.REPLACE, Seen(state="active", dialog=True, ours=True), T, T)
    assert (dialog.act, dialog.held_by) == (Act.HOLD, "waiting")
    for seen, blocker in (
        (Seen(state="active", draft=True, ours=True), "draft"),
        (Seen(state="active", mode="copy-mode", ours=True), "copy-mode"),
        (Seen(state="active", unreadable=True, ours=True), "unreadable"),
        (Seen(state="limited", reset_at=T + 600, ours=True), "limited"),
    ):
        got = deliver_policy(Deliver.REPLACE, seen, T, T)
        assert (got.act, got.held_by, got.said) == (Act.HOLD, blocker, ""), seen


def test_a_hold_expires_as_when_idles_does_and_a_failed_read_fails():
    expired = deliver_policy(Deliver.REPLACE, Seen(state="active"), T, T + HOLD_WINDOW + 1)
    assert str(expired.outcome) == "held-expired: active"
    assert deliver_policy(Deliver.REPLACE, Seen(state="active"), T, T + HOLD_WINDOW).act == Act.HOLD
    limited = deliver_policy(Deliver.REPLACE, Seen(state="limited", reset_at=T + 600), T, T + HOLD_WINDOW + 300)
    assert limited.act == Act.HOLD  # from the reset, as when-idle
    failed = deliver_policy(Deliver.REPLACE, Seen(state="active", error="tmux: gone"), T, T)
    assert str(failed.outcome) == "failed: agent-state read: tmux: gone"


def test_dispose_passes_the_fire_to_the_policy_and_a_cron_replace_has_the_holds_grace():
    entry = Entry("e1", Every(300), Target("pane", P), "go", deliver=Deliver.REPLACE, created_by=CreatedBy(at=T - 300))
    fire = Fire("e1", "schedule", P, 0, T, T)
    assert dispose(fire, entry, LogView([]), T, 30, Seen(state="active", ours=True)).act == Act.REPLACE
    assert dispose(fire, entry, LogView([]), T, 30, Seen(state="active")).act == Act.HOLD
    assert waits_when_busy(Deliver.REPLACE) and waits_when_busy(Deliver.WHEN_IDLE)
    assert not waits_when_busy(Deliver.IMMEDIATE) and not waits_when_busy(Deliver.SKIP_IF_BUSY)
    assert late_window(waits_when_busy(Deliver.REPLACE)) == HOLD_WINDOW


# --- the property: a generated history of a pane, with the truth of who started each turn ---

ME, OTHER = "e1", "e2"


@dataclass
class History:
    lines: list[LogLine]
    journal: list[StateLine]
    cause: str  #: who started the pane's running turn: "me", "other", "human" ("" at rest)
    turn_end: int
    started_by: int = 0  #: the ts of the delivery that started the running turn (0: none)


@st.composite
def histories(draw) -> History:
    """A pane's life: deliveries of this entry and another, typed into it at rest (the
    agent starts a turn 0–3 s later) or while busy (a queued prompt, no new turn),
    a human's prompts, turn ends; the journal as the hooks write it, and the truth."""
    t = draw(st.integers(1_000, 2_000))
    lines: list[LogLine] = []
    changes = [StateLine(t, draw(st.sampled_from(["idle", "active"])))]
    busy = changes[0].to == "active"
    cause = "human" if busy else ""
    turn_end = started_by = 0
    for step in draw(st.lists(st.sampled_from(["me", "other", "human", "end", "fail"]), max_size=12)):
        t += draw(st.integers(1, 120))
        if step == "end":
            if busy:
                changes.append(StateLine(t, "idle", "ok"))
                busy, cause, turn_end = False, "", t if draw(st.booleans()) else turn_end
            continue
        if step == "fail":  # a fire of ours that typed nothing
            lines.append(LogLine(t, ME, P, "schedule", "failed: echo not seen (payload cleared)"))
            continue
        if step in ("me", "other"):
            lines.append(
                LogLine(t, ME if step == "me" else OTHER, P, draw(st.sampled_from(["schedule", "manual"])), "delivered")
            )
        if busy:
            continue  # typed into a running turn: queued, no new turn
        t += draw(st.integers(0, 3))
        started_by = lines[-1].ts if step != "human" else 0
        changes.append(StateLine(t, "active"))
        busy, cause = True, step
        if draw(st.booleans()):
            t += draw(st.integers(1, 30))
            changes.append(StateLine(t, "waiting"))  # a tool's dialog, within the same turn
            changes.append(StateLine(t + draw(st.integers(0, 9)), "active"))
            t = changes[-1].ts
    return History(lines, changes, cause if busy else "", turn_end, started_by if busy else 0)


@settings(max_examples=400, deadline=None)
@given(histories())
def test_replace_never_interrupts_a_turn_whose_cause_is_not_this_entrys_delivery(h: History):
    lines = LogView(h.lines)
    got = replace_action(ME, lines, P, "active" if h.cause else "", h.journal, h.turn_end)
    if got == Replace.INTERRUPT:
        assert h.cause == "me", (h.cause, h.lines, h.journal)
        newest = lines.last_delivered(ME)
        assert newest is not None and newest.target == P
    if not h.cause:
        assert got == Replace.DELIVER


@settings(max_examples=200, deadline=None)
@given(histories())
def test_a_turn_its_newest_delivery_started_at_rest_is_interrupted(h: History):
    """The other way round: the turn this entry's newest delivery started (no end missed)
    is found and interrupted."""
    newest = LogView(h.lines).last_delivered(ME)
    if h.cause != "me" or newest is None or newest.ts != h.started_by or h.turn_end > newest.ts:
        return
    assert replace_action(ME, LogView(h.lines), P, "active", h.journal, h.turn_end) == Replace.INTERRUPT


def test_the_fire_after_an_interrupt_is_logged_when_the_turn_ended_after_its_interrupted_line():
    """The tick's `now` is from before the interrupt; the lines are stamped when the
    interrupted turn was seen to end, so the turn the new prompt starts is this delivery's."""
    from rk.engine.replace import fire_lines
    from rk.engine.result import ServerTick

    out = ServerTick("s")
    fire = Fire("e1", "schedule", P, 0, T, T)
    assert fire_lines(out, fire, T, "delivered") == ([], LogLine(T, "e1", P, "schedule", "delivered"))
    out.replaced["e1"] = (T + 7, "interrupted: replace: the screen shows the turn ended 1.0s after Escape")
    aside, line = fire_lines(out, fire, T, "delivered")
    assert [(x.ts, x.outcome.split(":")[0]) for x in aside] == [(T + 7, "interrupted")]
    assert line == LogLine(T + 7, "e1", P, "schedule", "delivered")
    assert not out.replaced  # used once
    out.replaced["e1"] = (T + 3, "")  # the turn had ended by itself: no interrupted line
    assert fire_lines(out, fire, T, "failed: x") == ([], LogLine(T + 3, "e1", P, "schedule", "failed: x"))
    # interrupted, then the guard held the fire (a draft came back): the interrupt is still on record
    out.replaced["e1"] = (T + 2, "interrupted: replace: the agent is idle 0.5s after Escape")
    aside, line = fire_lines(out, fire, T, None)
    assert line is None and [x.outcome.split(":")[0] for x in aside] == ["interrupted"]


def test_only_its_own_prompt_put_back_in_the_composer_is_cleared():
    assert restored_prompt("check the build", "check the build")
    assert restored_prompt("check the\nbuild", "check the build")  # wrapped by the composer
    assert not restored_prompt("", "check the build")
    assert not restored_prompt("check the build, and also", "check the build")  # a human added to it
    assert not restored_prompt("my own words", "check the build")  # a human's draft: held, never cleared
    assert not restored_prompt("   ", "   ")

"""A fire's fresh step, between its last look and its payload (`--fresh`): the facts
`rk.core.schedule.fresh.plan` decides on, gathered, and the command typed by
`rk.act.fresh.freshen`.

A human typed since the last fire when the pane's state journal shows a turn that
none of rk's deliveries started after this entry's last delivery (else its
creation); a journal with no line of the pane cannot tell, and that withholds the
command too (the human's context is theirs: when unsure, it is never sent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rk.core.log.cause import rk_deliveries
from rk.core.log.delivery import Status, status_of
from rk.core.schedule.fresh import WITHHELD_WHY, Plan, Step, human_turn_since, plan

if TYPE_CHECKING:
    from rk.act.deliver import DeliveryResult, Guard
    from rk.engine.firing import Firing

#: Why the command is withheld where the pane's state journal cannot tell who typed.
UNTOLD = "the state journal cannot tell whether a human typed"


def last_delivery(firing: Firing) -> int:
    """When this entry last delivered (its creation when it never did)."""
    entry = firing.entry
    for line in reversed(firing.view.lines):
        if line.entry == entry.id and status_of(line.outcome) == Status.DELIVERED:
            return line.ts
    return entry.created_by.at


def human_typed(firing: Firing) -> str:
    """Why the command is withheld ("" when it is not): a turn rk did not start ran in the
    target pane since the entry's last delivery, or the state journal has no line of the
    pane at all (no hooks wrote it: nothing tells whether a human typed)."""
    files, pane = firing.out.journal, firing.fire.pane
    if files is None:
        return UNTOLD  # a dry run reads no journal (and types nothing anyway)
    from rk.store.pane_history import journal_of

    journal = journal_of(str(files.dir), files.slug).get(pane, [])
    if not journal:
        return UNTOLD
    stamps = rk_deliveries(firing.view.lines).get(pane, [])
    return WITHHELD_WHY if human_turn_since(journal, stamps, last_delivery(firing)) else ""


def fresh_plan(firing: Firing) -> Plan:
    """What this fire does about its entry's `fresh` (`Step.NONE` without one)."""
    mode = firing.entry.fresh
    if mode is None:
        return Plan(Step.NONE)
    pane = firing.pane
    agent = (pane.agent or pane.provider) if pane is not None else ""
    return plan(mode, agent, human_typed(firing))


def fresh_first(firing: Firing, guard: Guard) -> tuple[DeliveryResult | None, str]:
    """Before the payload: (what the fire does instead of typing it, or None to type it;
    the note its delivered line carries, or "")."""
    step = fresh_plan(firing)
    if step.step == Step.NONE:
        return None, ""
    from rk.act.deliver import DeliveryResult
    from rk.core.log.delivery import Outcome

    if step.step == Step.REFUSED:
        return DeliveryResult(False, Outcome(Status.FAILED, f"{step.why}; nothing typed")), ""
    if step.step == Step.WITHHELD:
        return None, step.note
    from rk.act.fresh import BUSY, freshen

    mode, runtime = firing.entry.fresh, firing.runtime
    assert mode is not None
    instead = freshen(
        firing.server,
        firing.fire.pane,
        step.command,
        mode.command,
        guard=guard,
        zone=runtime.zone,
        clock=runtime.clock,
        any_program=firing.entry.any_program,
        type_in=runtime.deliver,
    )
    if instead is BUSY:
        return None, f"fresh withheld: {BUSY.detail}"
    return instead, step.note


def noted(outcome: str, note: str) -> str:
    """A delivered line with the fresh step's note: `delivered (after /clear)`."""
    if not note or outcome != str(Status.DELIVERED):
        return outcome
    return f"{outcome} ({note})"

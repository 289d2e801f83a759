"""Pure decisions the tick takes after `due()`: the deliver policy at delivery
time, the per-target rate cap, what to do with an absent target, and whether
an orphaned entry expires.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rk.entry import Deliver, Entry, IfAbsent, TargetKind
from rk.facts import BUSY_STATES, TargetFact
from rk.log import ORPHAN_TTL, LogView, Outcome

#: A when-idle fire held longer than this past its due time is dropped.
HOLD_WINDOW = 2 * 3600
#: Default per-target deliveries per hour before `rate-capped`.
DEFAULT_RATE_PER_HOUR = 30


class Action(StrEnum):
    """What the deliverer does with one resolved fire."""

    SEND = "send"  #: type the payload
    HOLD = "hold"  #: when-idle and busy: not logged, recomputed next tick
    LOG = "log"  #: write `outcome` without sending (skipped-busy, held-expired, failed read)


@dataclass(frozen=True)
class DeliveryDecision:
    action: Action
    outcome: str = ""


def delivery_decision(policy: Deliver, state: str | None, due_at: int, now: int, read_error: str = "") -> DeliveryDecision:
    """Apply the deliver policy to the pane state read at delivery time.

    `state` is the fresh agent state (`""` = unknown, delivers like idle);
    `None` with `read_error` means the read failed. `immediate` never reads.
    """
    if policy == Deliver.IMMEDIATE:
        return DeliveryDecision(Action.SEND)
    if state is None:
        return DeliveryDecision(Action.LOG, f"{Outcome.FAILED}: agent-state read: {read_error or 'unknown error'}")
    if state not in BUSY_STATES:
        return DeliveryDecision(Action.SEND)
    if policy == Deliver.WHEN_IDLE:
        if now - due_at > HOLD_WINDOW:
            return DeliveryDecision(Action.LOG, f"{Outcome.HELD_EXPIRED}: {state}")
        return DeliveryDecision(Action.HOLD)
    return DeliveryDecision(Action.LOG, f"{Outcome.SKIPPED_BUSY}: {state}")


def over_rate_cap(view: LogView, now: int, limit: int, *, target: str | None = None, entry: str | None = None) -> bool:
    """True when the counted lines of the last hour for this key reach `limit`.

    Resolved fires are keyed on the pane (lines of every entry count); absent
    fires on the entry id. A limit of 0 or less disables the cap.
    """
    if limit <= 0:
        return False
    return view.rate_count(now, target=target, entry=entry) >= limit


class AbsentAction(StrEnum):
    """What an absent fire does, from if_absent, the target kind and the respawn argv."""

    SKIP = "skip"  #: log skipped-absent
    NOTIFY = "notify"  #: notify, log notified-absent
    RESPAWN = "respawn"  #: run the argv, log respawned / respawn-failed
    NOTIFY_UNCOMMANDED = "notify-uncommanded"  #: respawn without a usable command: notify + diagnostic


def absent_action(entry: Entry) -> AbsentAction:
    policy = entry.absent_policy
    if policy == IfAbsent.SKIP:
        return AbsentAction.SKIP
    if policy == IfAbsent.NOTIFY:
        return AbsentAction.NOTIFY
    if entry.target.kind == TargetKind.PANE or not entry.respawn:
        return AbsentAction.NOTIFY_UNCOMMANDED  # a dead pane id never comes back
    return AbsentAction.RESPAWN


def should_expire(entry: Entry, target: TargetFact | None, since: int, now: int, resolved_this_tick: bool) -> bool:
    """Orphan GC: remove a session/pane entry whose target has been missing for 7 days.

    `since` comes from the pre-disposition log; a pinned entry never expires
    (muted does not protect); an entry that was delivered or respawned this tick
    does not expire on facts that predate it.
    """
    if entry.target.kind not in (TargetKind.SESSION, TargetKind.PANE):
        return False
    if target is None or target.resolved or entry.pinned or resolved_this_tick:
        return False
    return since > 0 and now - since >= ORPHAN_TTL


def expires_at(entry: Entry, since: int) -> int:
    """When an orphan would be collected (0: never — pinned, role target, or not orphaned)."""
    if entry.pinned or since <= 0 or entry.target.kind == TargetKind.ROLE:
        return 0
    return since + ORPHAN_TTL

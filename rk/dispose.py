"""The step after `due()`: what to do with one fire, as a typed disposition.

`due()` says *that* an entry fires; `dispose()` says *what happens*: send the
payload, hold it (not logged, recomputed next poll), log an outcome without
sending, run the respawn command, or notify. The tick, `rk cron run` and the
simulator only execute dispositions, so the simulator (the spec's executable
mirror) cannot drift from the tick. Pure: the pane facts at delivery time are
passed in.

Order for a resolved fire: the rate cap (keyed on the pane), then the deliver
policy against the pane as seen right before typing. For an absent fire: the
rate cap (keyed on the entry), then `if_absent`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rk.diagnostics import Diag, Diagnostic
from rk.due import HOLD_WINDOW, Fire
from rk.entry import Deliver, Entry, IfAbsent, TargetKind
from rk.facts import BUSY_STATES
from rk.log import LogView, Outcome

class Act(StrEnum):
    """What the executor does with one fire."""

    SEND = "send"  #: type the payload; the delivery result is the outcome
    HOLD = "hold"  #: not logged; the fire is recomputed next poll
    LOG = "log"  #: write `outcome` without sending
    RESPAWN = "respawn"  #: run the entry's respawn argv; its result is the outcome
    NOTIFY = "notify"  #: tell the server's clients; log notified-absent


@dataclass(frozen=True)
class Disposition:
    act: Act
    #: LOG: the outcome to write. HOLD: what holds it (`held-busy: active`), for decisions.
    outcome: str = ""
    #: A diagnostic the executor reports with it (respawn-uncommanded).
    note: Diagnostic | None = None


@dataclass(frozen=True)
class Seen:
    """The target pane as read right before typing."""

    state: str = ""  #: reconciled agent state; "" = unknown (delivers like idle)
    error: str = ""  #: the read failed, and why
    refused: str = ""  #: the pane is no longer typed into (`shell in pane`): it counts as absent


def over_rate_cap(view: LogView, now: int, limit: int, *, target: str | None = None, entry: str | None = None) -> bool:
    """True when the counted lines of the last hour for this key reach `limit`.

    Resolved fires are keyed on the pane (lines of every entry count); absent
    fires on the entry id. A limit of 0 or less disables the cap.
    """
    if limit <= 0:
        return False
    return view.rate_count(now, target=target, entry=entry) >= limit


def _log(outcome: str) -> Disposition:
    return Disposition(Act.LOG, outcome)


def deliver_policy(policy: Deliver, seen: Seen, due_at: int, now: int) -> Disposition:
    """The deliver policy against the pane as seen at delivery time.

    `immediate` sends whatever the state; `when-idle` holds a busy pane and
    drops the fire once it is more than HOLD_WINDOW past due; `skip-if-busy`
    logs a busy pane. Idle and unknown states deliver under every policy.
    """
    if policy == Deliver.IMMEDIATE:
        return Disposition(Act.SEND)
    if seen.error:
        return _log(f"{Outcome.FAILED}: agent-state read: {seen.error}")
    if seen.state not in BUSY_STATES:
        return Disposition(Act.SEND)
    if policy == Deliver.WHEN_IDLE:
        if now - due_at > HOLD_WINDOW:
            return _log(f"{Outcome.HELD_EXPIRED}: {seen.state}")
        return Disposition(Act.HOLD, f"held-busy: {seen.state}")
    return _log(f"{Outcome.SKIPPED_BUSY}: {seen.state}")


def absent_disposition(entry: Entry, refused: str = "") -> Disposition:
    """if_absent for a target that is not there. Respawn needs a command on a
    role or session target; anything else asked to respawn notifies instead.
    A pane that is there but refused (`shell in pane`) is absent too, and its
    `skipped-absent` / `notified-absent` line says why."""
    policy = entry.absent_policy
    suffix = f": {refused}" if refused else ""
    if policy == IfAbsent.SKIP:
        return _log(f"{Outcome.SKIPPED_ABSENT}{suffix}")
    if policy == IfAbsent.NOTIFY:
        return Disposition(Act.NOTIFY, f"{Outcome.NOTIFIED_ABSENT}{suffix}")
    if entry.target.kind == TargetKind.PANE or not entry.respawn:
        why = "pane targets cannot be respawned" if entry.target.kind == TargetKind.PANE else "no respawn command"
        note = Diagnostic(entry.id, Diag.RESPAWN_UNCOMMANDED, f"{why}; notified instead")
        return Disposition(Act.NOTIFY, f"{Outcome.NOTIFIED_ABSENT}{suffix}", note)
    return Disposition(Act.RESPAWN)


def dispose(fire: Fire, entry: Entry, view: LogView, now: int, rate_per_hour: int, seen: Seen | None = None) -> Disposition:
    """The disposition of one fire. `seen` is the target pane read right before
    typing (a resolved fire only): a pane that turned out to be refused is absent."""
    if not fire.pane:
        if over_rate_cap(view, now, rate_per_hour, entry=fire.entry):
            return _log(str(Outcome.RATE_CAPPED))
        return absent_disposition(entry, fire.refused)
    if over_rate_cap(view, now, rate_per_hour, target=fire.pane):
        return _log(str(Outcome.RATE_CAPPED))
    seen = seen or Seen()
    if seen.refused:
        return absent_disposition(entry, seen.refused)
    return deliver_policy(entry.policy, seen, fire.due_at, now)

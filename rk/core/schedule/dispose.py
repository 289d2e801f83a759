"""The step after `due()`: what to do with one fire, as a typed disposition.

`due()` says *that* an entry fires; `dispose()` says *what happens*: send the
payload, hold it (not logged, recomputed next poll), log an outcome without
sending, run the respawn command, or notify. The tick, `rk cron run` and the
simulator only execute dispositions, so the simulator (the spec's executable
mirror) cannot drift from the tick. Pure: the pane facts at delivery time are
passed in.

Order for a resolved fire: the rate cap (keyed on the pane), only_if_changed,
then the deliver policy against the pane as seen right before typing. For an
absent fire: the rate cap (keyed on the entry), then `if_absent`. The entry's own caps
(`max_per_day`, `max_total`: `rk.core.cost.caps`) are `due()`'s, not these: a capped
fire never comes here, so its day's one `skipped-cap` line and its silence after
it are decided where its occurrence is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from rk.core.log.delivery import LogView, Outcome, Reason, Status
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.facts import BUSY_STATES, LIMITED
from rk.core.pane.state import AgentState
from rk.core.schedule.due import Fire
from rk.core.schedule.entry import Deliver, Entry, IfAbsent, TargetKind, WakeEvent
from rk.core.schedule.grace import HOLD_WINDOW
from rk.core.schedule.replace import NOT_OURS, Replace
from rk.core.schedule.replace import action as replace_step

#: The blocker of an agent's screen that matched none of its layouts (a TUI caught
#: mid-redraw reads so for a moment: the last look takes another frame, `rk.act.deliver.LookAgain`).
UNREADABLE = "unreadable"


class Act(StrEnum):
    """What the executor does with one fire."""

    SEND = "send"  #: type the payload; the delivery result is the outcome
    HOLD = "hold"  #: not logged; the fire is recomputed next poll
    LOG = "log"  #: write `outcome` without sending
    RESPAWN = "respawn"  #: run the entry's respawn argv; its result is the outcome
    NOTIFY = "notify"  #: tell the server's clients; log notified-absent
    REPLACE = "replace"  #: interrupt this entry's running turn, wait for rest, then type (`deliver: replace`)


@dataclass(frozen=True)
class Disposition:
    act: Act
    #: LOG, NOTIFY: the outcome to write.
    outcome: Outcome | None = None
    #: HOLD: what holds it (`active`, `draft`, …), for decisions and diagnostics.
    held_by: str = ""
    #: A diagnostic the executor reports with it (respawn-uncommanded).
    note: Diagnostic | None = None
    #: HOLD: what the hold says beside its blocker (`replace: turn not ours, waiting for idle`).
    said: str = ""

    @property
    def text(self) -> str:
        """The outcome's wire form, or for a hold `held-busy: <what holds it>[; <said>]`."""
        if self.act == Act.HOLD:
            return f"held-busy: {self.held_by}" + (f"; {self.said}" if self.said else "")
        return str(self.outcome) if self.outcome is not None else ""


@dataclass(frozen=True, eq=False)
class Seen:
    """The target pane as read right before typing: its state (the hooks', as the
    screen corrected it) and what its screen shows."""

    state: str = ""  #: agent state; "" = unknown (delivers like idle)
    reset_at: int = 0  #: `limited`: when the limit resets (0: not known)
    dialog: bool = False  #: the screen shows a permission or question dialog
    draft: bool = False  #: the composer holds text that rk did not type
    unreadable: bool = False  #: the screen of an agent rk can read matched none of its layouts
    error: str = ""  #: the read failed, and why
    refused: str = ""  #: the pane is no longer typed into (`shell in pane`): it counts as absent
    #: the tmux mode a human put the pane in (`copy-mode`, `view-mode`, `clock-mode`, …):
    #: the keyboard is theirs, so it is held like a draft and never cancelled
    mode: str = ""
    #: only_if_changed: the compared panes show nothing new since the last answer (`rk.core.cost.unchanged`)
    unchanged: bool = False
    #: `deliver: replace`: the running turn was started by this entry's newest delivery
    #: (`rk.core.schedule.replace.turn_is_ours`); False when not asked or not known
    ours: bool = False
    #: this tick already typed a prompt into the pane: its agent is taking it (`active`),
    #: though neither its hooks nor its screen may show that yet
    typed: bool = False

    @property
    def blocker(self) -> str:
        """What stands between the payload and the agent, most binding first:
        `limited`, `waiting` (a dialog, or the hooks say so), a pane mode,
        `draft`, `active` (by its state, or by the prompt this tick typed); "" if nothing."""
        if self.state == LIMITED:
            return LIMITED
        if self.dialog or self.state == AgentState.WAITING:
            return AgentState.WAITING
        if self.mode:
            return self.mode
        if self.draft:
            return "draft"
        if self.unreadable:
            return UNREADABLE
        if self.typed and self.state not in BUSY_STATES:
            return AgentState.ACTIVE
        return self.state if self.state in BUSY_STATES else ""


def held_mode(in_mode: bool, mode: str) -> str:
    """The name a pane mode is held under: tmux's own (`#{pane_mode}`), or
    `pane-mode` when tmux says the pane is in one without naming it."""
    return (mode or "pane-mode") if in_mode else ""


def over_rate_cap(view: LogView, now: int, limit: int, *, target: str | None = None, entry: str | None = None) -> bool:
    """True when the counted lines of the last hour for this key reach `limit`.

    Resolved fires are keyed on the pane (lines of every entry count); absent
    fires on the entry id. A limit of 0 or less disables the cap.
    """
    if limit <= 0:
        return False
    return view.rate_count(now, target=target, entry=entry) >= limit


def _log(status: Status, detail: str = "") -> Disposition:
    return Disposition(Act.LOG, Outcome(status, detail))


def _utc(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hold(blocker: str, since: int, now: int) -> Disposition:
    """Hold (unlogged) until the blocker goes; drop the fire once it has waited
    more than HOLD_WINDOW since `since`."""
    if now - since > HOLD_WINDOW:
        return _log(Status.HELD_EXPIRED, blocker)
    return Disposition(Act.HOLD, held_by=blocker)


def deliver_policy(policy: Deliver, seen: Seen, due_at: int, now: int) -> Disposition:
    """The deliver policy against the pane as seen at delivery time.

    Nothing is ever typed into a limited agent, into a dialog, or over a
    human's draft, nor into a pane a human put in a tmux mode (copy-mode,
    view-mode, clock-mode: the mode is the human's and is never cancelled):
    `skip-if-busy` logs them (`skipped-limited`,
    `skipped-busy: waiting|draft|copy-mode`); `when-idle` holds them, a limit until its
    reset, and drops the fire once it waited HOLD_WINDOW (from the reset, for a
    limit); `immediate` logs a limit and holds a dialog, a mode or a draft like
    when-idle. A screen rk should read but cannot (`unreadable`) is treated
    as a draft: nothing is typed blind. A working agent (`active`, or `waiting` by its hooks alone) is
    sent to by `immediate`, held by `when-idle`, skipped by `skip-if-busy`; but a
    pane this tick already typed a prompt into (`seen.typed`) is held by `immediate`
    too: its agent is taking that prompt, and a second one typed now would meet a
    turn that neither its hooks nor its screen show yet, where no Enter can be
    confirmed (the agent's hook nudges the ticker when it reports that turn).
    Idle and unknown states deliver under every policy. `replace` interrupts a
    working turn of its own (`seen.ours`) and holds anything else as when-idle does.
    """
    if seen.error and policy != Deliver.IMMEDIATE:
        return _log(Status.FAILED, f"agent-state read: {seen.error}")
    blocker = seen.blocker
    if not blocker:
        return Disposition(Act.SEND)
    if policy == Deliver.REPLACE:
        return _replace(seen, due_at, now)
    if blocker == LIMITED and policy != Deliver.WHEN_IDLE:
        return _log(Status.SKIPPED_LIMITED, f"resets {_utc(seen.reset_at)}" if seen.reset_at else "")
    if policy == Deliver.SKIP_IF_BUSY:
        return _log(Status.SKIPPED_BUSY, blocker)
    if policy == Deliver.IMMEDIATE:
        if seen.dialog:
            return _hold(AgentState.WAITING, due_at, now)
        if seen.mode:
            return _hold(seen.mode, due_at, now)
        if seen.draft or seen.unreadable:
            return _hold("draft" if seen.draft else UNREADABLE, due_at, now)
        if seen.typed:
            return _hold(AgentState.ACTIVE, due_at, now)
        return Disposition(Act.SEND)  # a working agent queues it; the hooks' waiting alone shows no dialog to answer
    return _hold(blocker, max(due_at, seen.reset_at) if blocker == LIMITED else due_at, now)


def _replace(seen: Seen, due_at: int, now: int) -> Disposition:
    """`replace` with something in the way: its own working turn is interrupted;
    anything else waits as when-idle does (a turn not its own says so)."""
    blocker = seen.blocker
    # a prompt typed this tick waits behind the running turn: an interrupt now could cancel it too
    if replace_step(blocker, seen.ours and not seen.typed) == Replace.INTERRUPT:
        return Disposition(Act.REPLACE)
    held = _hold(blocker, max(due_at, seen.reset_at) if blocker == LIMITED else due_at, now)
    if held.act == Act.HOLD and blocker == AgentState.ACTIVE:
        return Disposition(Act.HOLD, held_by=blocker, said=NOT_OURS)
    return held


def absent_disposition(entry: Entry, refused: str = "") -> Disposition:
    """if_absent for a target that is not there. Respawn needs a command on a
    role or session target; anything else asked to respawn notifies instead.
    A pane that is there but refused (`shell in pane`) is absent too, and its
    `skipped-absent` / `notified-absent` line says why."""
    policy = entry.absent_policy
    if policy == IfAbsent.SKIP:
        return _log(Status.SKIPPED_ABSENT, refused)
    notified = Outcome(Status.NOTIFIED_ABSENT, refused)
    if policy == IfAbsent.NOTIFY:
        return Disposition(Act.NOTIFY, notified)
    if entry.target.kind == TargetKind.PANE or not entry.respawn:
        why = "pane targets cannot be respawned" if entry.target.kind == TargetKind.PANE else "no respawn command"
        note = Diagnostic(entry.id, Diag.RESPAWN_UNCOMMANDED, f"{why}; notified instead")
        return Disposition(Act.NOTIFY, notified, note=note)
    return Disposition(Act.RESPAWN)


def dispose(
    fire: Fire, entry: Entry, view: LogView, now: int, rate_per_hour: int, seen: Seen | None = None
) -> Disposition:
    """The disposition of one fire. `seen` is the target pane read right before
    typing (a resolved fire only): a pane that turned out to be refused is absent."""
    if not fire.pane:
        if over_rate_cap(view, now, rate_per_hour, entry=fire.entry):
            return _log(Status.RATE_CAPPED)
        return absent_disposition(entry, fire.refused)
    if over_rate_cap(view, now, rate_per_hour, target=fire.pane):
        return _log(Status.RATE_CAPPED)
    seen = seen or Seen()
    if seen.refused:
        return absent_disposition(entry, seen.refused)
    if seen.blocker == LIMITED and waits_for_reset(entry, fire):
        return Disposition(Act.HOLD, held_by=LIMITED)
    if skips_unchanged(entry, fire, seen):
        return _log(Status.SKIPPED_UNCHANGED)
    return deliver_policy(entry.policy, seen, fire.due_at, now)


def skips_unchanged(entry: Entry, fire: Fire, seen: Seen) -> bool:
    """only_if_changed: a fire into a pane at rest with nothing in the way, whose
    compared panes show nothing new since the last answer, is `skipped-unchanged`.
    Anything in the way (a limit, a dialog, a draft, a busy agent, a failed read)
    goes to the deliver policy as usual; `rk cron run` always goes (a human asked)."""
    if not (entry.only_if_changed and seen.unchanged) or fire.reason == Reason.MANUAL:
        return False
    return not seen.blocker and not seen.error


def waits_for_reset(entry: Entry, fire: Fire) -> bool:
    """A `limit-reset` wake fire: it exists to resume the agent after its limit,
    so a limit still seen right before typing holds it under every policy (no
    `skipped-limited` line, no expiry) and its edge stays pending (`edge_kept`)."""
    return fire.reason == Reason.WAKE and entry.wake_on is not None and entry.wake_on.event == WakeEvent.LIMIT_RESET


def edge_kept(entry: Entry, fire: Fire, disposition: Disposition, typed: bool = False) -> bool:
    """Whether this fire leaves its wake edge pending: a `limit-reset` fire that
    met a limit is not used up, so the agent is resumed once, after the reset; nor
    is a fire held behind a prompt this tick typed into its pane (`typed`: rk's own
    doing, not the pane's state), so it goes at the next tick as it would have now.
    (Any other wake fire consumes its edge whatever happens to it, as in the Go
    original: the cursor is computed before delivery.)"""
    if disposition.act != Act.HOLD:
        return False
    return typed or (disposition.held_by == LIMITED and waits_for_reset(entry, fire))

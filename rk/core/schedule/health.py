"""Why an entry will not fire, in a word or two, for `rk cron list` and `rk status`.

`due()` says what fires now; this says, for an entry that cannot fire at all
as things stand, what stops it: the user sees a dead entry for what it is
instead of a row that looks healthy.
"""

from __future__ import annotations

from datetime import tzinfo

from rk.core.cost import caps
from rk.core.log.delivery import LogView
from rk.core.pane.facts import TargetFact
from rk.core.schedule.dispose import over_rate_cap
from rk.core.schedule.dormant import dormancy
from rk.core.schedule.due import budget_reopens, entry_zone, is_paused
from rk.core.schedule.entry import Backoff, Entry, TargetKind, WakeEvent
from rk.core.wallclock import moment

#: Reasons a user chose (a mute, a pause): the entry is silent on purpose, nothing is wrong.
CHOSEN = ("muted", "server paused", "capped:", "retired:", "budget spent")
#: The word `why_not` starts with for a dormant entry (`rk.core.schedule.dormant`): its agent never answered.
DORMANT = "dormant"
#: A state that passes by itself (`rk.core.schedule.forecast`: a usage limit resets): nothing is wrong either.
PASSING = ("target limited",)


def why_not(
    entry: Entry,
    index: int,
    target: TargetFact | None,
    now: int,
    zone: tzinfo,
    *,
    max_entries: int,
    paused_until: int | None = None,
    view: LogView | None = None,
    rate_per_hour: int = 0,
) -> str | None:
    """What keeps the entry from firing, or None when nothing does. `target` is its
    resolution on the live server, None when the server's panes could not be read;
    with `view` and `rate_per_hour`, a target at the rate cap is named too (the tick
    would log `rate-capped` for each fire until the hour's count falls)."""
    if index >= max_entries:
        return f"past the cap of {max_entries} entries"
    if entry.muted:
        return "muted"
    if entry.is_muted(now):
        return f"muted until {moment(entry.muted_until, entry_zone(entry, zone))}"
    if is_paused(paused_until, now):
        return "server paused"
    if target is None:
        return "server not running"
    if not target.resolved:
        return (f"target missing: {target.why}" if target.why else "target missing") + retarget_hint(entry)
    if needs_state(entry) and target.epoch <= 0:
        return "no state reported (no hooks?)"
    if view is not None and rate_per_hour > 0 and over_rate_cap(view, now, rate_per_hour, target=target.pane):
        return f"rate-capped ({rate_per_hour} deliveries to {target.pane} in the last hour; setting rate_per_hour)"
    if view is not None and (rest := dormancy(entry, view, target)).held:
        since = moment(rest.since, entry_zone(entry, zone))
        wakes = "wakes when the pane shows life, or rk cron wake"
        return f"{DORMANT}: no answer to {rest.limit} prompts since {since} ({wakes})"
    if view is not None:
        cap = caps.day_cap(entry, view, now, entry_zone(entry, zone))
        if cap is not None and cap.capped:
            return cap.words  # `capped: 3/3 today`: chosen, and lifted at the zone's next midnight
        opens = budget_reopens(entry, view, now, entry_zone(entry, zone))
        if opens > now and entry.budget is not None:  # chosen too: the day reached the budget the user set
            return f"budget spent: {entry.budget.text} today, fires again from {moment(opens, entry_zone(entry, zone))}"
    return None


def retarget_hint(entry: Entry) -> str:
    """For a session target no pane runs: how to follow a pane instead. A session
    ends when its agent quits, and a restarted agent is another session; the target
    is fixed once made, so the fix is a new entry on the pane ("" for other targets).
    The pane named is the one the session ran in when the entry was added there."""
    if entry.target.kind != TargetKind.SESSION:
        return ""
    own = entry.created_by.pane and entry.created_by.session == entry.target.value
    pane = entry.created_by.pane if own else "%N"
    return f"; re-target: rk cron rm {entry.id}, then add it again with --pane {pane}"


def is_trouble(why: str | None) -> bool:
    """Whether `why` (from `why_not` or the forecast) is something wrong, for `rk status` and
    `rk doctor`'s exit status: every reason but a mute or a pause, which the user chose,
    and a limit, which resets."""
    return why is not None and not why.startswith(CHOSEN + PASSING)


def needs_state(entry: Entry) -> bool:
    """A backoff ladder and a limit-reset wake run off the target's agent state: a pane
    that never reports one (no hooks) never fires them."""
    return isinstance(entry.schedule, Backoff) or (
        entry.wake_on is not None and entry.wake_on.event == WakeEvent.LIMIT_RESET
    )

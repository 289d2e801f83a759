"""Loop-safe agent-made schedules: how deep a chain of entries may grow, and how
often an entry an agent made may fire.

A turn that a delivery of an entry started may schedule more prompts (over `rk
mcp`, or by `rk cron add` run inside the turn); each of those starts turns that
may schedule more: a loop no one asked for. Such an entry is the child of the
entry whose delivery started the turn that made it, and records it (`parent`).
Two rules bound the chains:

* depth: an entry a human made is depth 1, its child 2, its grandchild 3; a new
  entry deeper than `max_chain_depth` (default 2) is refused.
* rate: a child fires no more often than its parent: its least interval (the
  shortest time it may leave between two fires, `least_interval`) is not shorter
  than its parent's. Refused, never clamped: a clamped schedule is not the one
  the agent asked for, and it would go on believing it had the other.

A parent rk no longer holds (a one-shot retires when it delivers; a human may
remove an entry) is known from the record each child leaves when it is made
(`Record`): its parent, so the chain's depth survives its links' removal. A gone
parent's schedule is not known: a turn it started may make one-shots only.
Pure: the entries, the records and the bound come in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from functools import lru_cache

from rk.core.cost.turn_timeout import StateLine, started_by
from rk.core.durations import format_duration
from rk.core.errors import RkError
from rk.core.log.cause import is_rk_delivery
from rk.core.log.delivery import LogLine
from rk.core.schedule.cronexpr import CronError, CronExpr
from rk.core.schedule.entry import At, Backoff, Cron, Every, Schedule, WakeOn, WakeOnly

#: The least interval of an entry that fires once (an `at`/`in` one-shot): longer than any.
ONCE = 1 << 62
#: A cron expression's gaps are looked at from this instant (UTC) …
_CRON_FROM = 1_704_067_200  # 2024-01-01, a leap year's first day
#: … over this long (four years: every leap day and weekday pattern), or this many fires.
_CRON_HORIZON = 4 * 366 * 86400
_CRON_FIRES = 2000
#: The shortest gap a cron expression can have (one minute).
_CRON_GRAIN = 60
#: Links a chain is followed for before it is called too deep (a hand-made cycle ends there).
_WALK = 64
#: The arrow between the links of a chain in a refusal.
ARROW = " → "
#: The last link of a refused chain: the entry that was asked for.
NEW = "(new)"


class ChainRefused(RkError):
    """An agent-made entry the chain rules refuse (exit 1: a rule, not a malformed request)."""


def turn_parent(lines: Iterable[LogLine], pane: str, journal: Sequence[StateLine], turn_end_at: int) -> str:
    """The entry whose fire started `pane`'s ongoing turn ("" when none did: no turn goes
    on, a human or a manual send started it, or the journal cannot tell: `rk.core.log.cause`).
    `lines`: the log's newest lines, oldest first; `turn_end_at`: the pane's last turn end."""
    mine = [line for line in lines if line.target == pane and is_rk_delivery(line)]
    found = started_by(mine[::-1], journal, turn_end_at)
    return found.entry if found is not None else ""


@lru_cache(maxsize=256)
def cron_least_gap(expr: str) -> int:
    """The shortest time between two fires of a cron expression's wall clock (in UTC, so a
    daylight-saving change's shortened day does not count), over four years from 2024 (or its
    first 2,000 fires); those four years when it fires once in them (it fires again: never
    ONCE), 60 for one that does not parse (the strictest)."""
    try:
        parsed = CronExpr.parse(expr)
    except CronError:
        return _CRON_GRAIN
    least, previous, t = _CRON_HORIZON, None, _CRON_FROM
    for _ in range(_CRON_FIRES):
        nxt = parsed.next_after(t, UTC)
        if nxt is None or nxt > _CRON_FROM + _CRON_HORIZON:
            break
        if previous is not None:
            least = min(least, nxt - previous)
            if least <= _CRON_GRAIN:
                break
        previous = t = nxt
    return least


def least_interval(schedule: Schedule, wake_on: WakeOn | None) -> int:
    """The shortest time an entry may leave between two fires: `every`'s interval, a
    backoff's `min` (its fastest rung, where a reset puts it), a cron expression's
    shortest gap, a wake's debounce; the shorter of its schedule's and its wake's.
    ONCE for a one-shot without a wake."""
    if isinstance(schedule, Every):
        scheduled = schedule.interval
    elif isinstance(schedule, Backoff):
        scheduled = schedule.min
    elif isinstance(schedule, Cron):
        scheduled = cron_least_gap(schedule.expr)
    else:  # At fires once; WakeOnly only on its event
        assert isinstance(schedule, At | WakeOnly)
        scheduled = ONCE
    woken = ONCE if wake_on is None else max(wake_on.debounce, 0)
    return min(scheduled, woken)


def interval_text(seconds: int) -> str:
    """`5m`, or `once` for ONCE."""
    return "once" if seconds >= ONCE else format_duration(seconds)


@dataclass(frozen=True)
class Record:
    """What a child left when it was made: its parent, and the least interval it may have
    (its parent's then), which an edit is held to once the parent is gone."""

    parent: str
    floor: int


@dataclass(frozen=True)
class Lineage:
    """What a turn started by a delivery of `parent` may make: entries of `depth`, firing
    no more often than `floor`."""

    parent: str
    chain: tuple[str, ...]  #: the parent's chain, oldest first, ending in it (a gone link marked)
    depth: int  #: a new entry's depth
    floor: int  #: the least interval a new entry may have (ONCE: one-shots only)
    gone: bool  #: the parent is no longer in the file


def lineage(parent: str, least: int | None, live: Mapping[str, str], records: Mapping[str, Record]) -> Lineage:
    """The chain above a new entry made in a turn a delivery of `parent` (of least interval
    `least`; None: no longer in the file) started: followed through the file's `parent`
    fields (`live`: each entry's, "" a human's) and, for a link no longer in the file, its
    record (a link with neither was a human's: the chain's top). A chain longer than
    `_WALK`, or one that comes back to itself (a hand-edited file), is too deep to follow."""
    links: list[str] = []
    seen: set[str] = set()
    cur = parent
    while cur and len(links) < _WALK:
        if cur in seen:
            links.append(cur)
            break
        seen.add(cur)
        if cur in live:
            links.append(cur)
            cur = live[cur]
        else:
            links.append(f"{cur} (gone)")
            cur = records[cur].parent if cur in records else ""
    depth = len(links) + 1 if not cur else _WALK + 1
    return Lineage(parent, tuple(reversed(links)), depth, ONCE if least is None else least, least is None)


def check_child(found: Lineage, least: int, bound: int) -> None:
    """Refuse a new entry of least interval `least` made in the turn `found` describes:
    deeper than `bound`, or firing more often than its parent (ChainRefused, one line)."""
    if found.depth > bound:
        shown = found.chain if len(found.chain) <= 6 else ("…", *found.chain[-5:])
        path = ARROW.join((*shown, NEW))
        raise ChainRefused(f"refused: chain depth {found.depth} > {bound}: {path} (setting max_chain_depth)")
    if least < found.floor:
        raise ChainRefused(f"refused: {rate_reason(found.parent, least, found.floor, found.gone)}")


def rate_reason(parent: str, least: int, floor: int, gone: bool) -> str:
    """Why an agent-made entry firing every `least` s may not be (its parent's `floor`)."""
    if gone:
        return (
            f"the entry {parent} whose delivery started this turn is gone (a one-shot retires when it"
            " delivers), so how often it fired is not known: an entry made in its turn may only fire once (at/in)"
        )
    return (
        f"it would fire as often as every {interval_text(least)}, more often than the entry {parent} whose"
        f" delivery started this turn ({interval_text(floor)}): an entry an agent makes fires no more often than that"
    )


def edit_floor(entry_id: str, parent: str, least: int | None, records: Mapping[str, Record]) -> int:
    """The least interval an agent-made entry may be edited to: its parent's now (`least`;
    None: gone), else the one it was made under (its record), else ONCE (one-shots only)."""
    if least is not None:
        return least
    mine = records.get(entry_id)
    return mine.floor if mine is not None and mine.parent == parent else ONCE


def check_edit(entry_id: str, parent: str, before: int, after: int, floor: int) -> None:
    """Refuse an edit of an agent-made entry (child of `parent`) that makes it fire more often
    (least interval `before` → `after`) than `floor` allows. An edit that does not speed it up
    passes, so one that a human made faster before stays editable."""
    if after < before and after < floor:
        raise ChainRefused(
            f"refused: {entry_id} was made by an agent in a turn {parent} started: every {interval_text(after)}"
            f" would fire more often than {interval_text(floor)}, as often as its parent may"
        )


@dataclass(frozen=True)
class Node:
    """One line of `cron list --tree`: an entry (or a parent no longer in the file) and its depth."""

    id: str
    depth: int  #: 0: made by a human (or under a gone parent's line)
    gone: bool = False  #: a parent the file no longer holds: its line stands for it


def tree(entries: Sequence[tuple[str, str]]) -> list[Node]:
    """`entries` ((id, parent), in the list's order) as a tree: each under its parent, in
    that order among its siblings; the entries a human made at the top; a parent no longer
    in the file once, as gone, where its first child would be, its children under it. An
    entry of a hand-made cycle (no way up to the top) is shown at the top."""
    present = {entry_id for entry_id, _ in entries}
    children: dict[str, list[str]] = {}
    for entry_id, parent in entries:
        if parent:
            children.setdefault(parent, []).append(entry_id)
    out: list[Node] = []
    shown: set[str] = set()

    def under(top: str, depth: int) -> None:
        stack = [(top, depth)]
        while stack:
            entry_id, level = stack.pop()
            if entry_id in shown:
                continue
            shown.add(entry_id)
            out.append(Node(entry_id, level))
            stack += [(child, level + 1) for child in reversed(children.get(entry_id, []))]

    for entry_id, parent in entries:
        if parent and parent not in present and parent not in shown:
            shown.add(parent)
            out.append(Node(parent, 0, gone=True))
            for child in children[parent]:
                under(child, 1)
        elif not parent:
            under(entry_id, 0)
    for entry_id, _ in entries:
        under(entry_id, 0)
    return out

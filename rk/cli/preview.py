"""What an entry's payload would type, placeholders filled (`rk.core.schedule.placeholders`),
for `show` (as `rk cron run` would type it now) and `next` (its first listed fire).

Nothing here is shown for a payload without a brace: their output is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo

from rk.core.log.delivery import LogView, Reason
from rk.core.schedule.due import Fire
from rk.core.schedule.entry import Entry
from rk.core.schedule.forecast import Upcoming
from rk.core.schedule.placeholders import PlaceholderError, check, has_placeholders, typed


def typed_now(entry: Entry, view: LogView, now: int, zone: tzinfo) -> str:
    """The payload as a manual run at `now` would type it."""
    return typed(entry, Fire(entry.id, Reason.MANUAL, "", 0, now, now), view, now, zone)


def show(entry: Entry, view: LogView, now: int, zone: tzinfo) -> tuple[dict[str, str], list[str]]:
    """`show`'s extra JSON keys and lines: `typed` (and a note when the stored payload
    would not pass add's check, which it is typed around); nothing without a brace."""
    if not has_placeholders(entry.payload):
        return {}, []
    text = typed_now(entry, view, now, zone)
    lines = [f"typed:      {text}"]
    try:
        check(entry.payload)
    except PlaceholderError as exc:
        lines.append(f"note:       {exc}; typed as written")
    return {"typed": text}, lines


def first_fire(entry: Entry, view: LogView, fires: Sequence[Upcoming], now: int, zone: tzinfo) -> str | None:
    """The payload as the first listed fire would type it (one that is due already
    types on the next tick, at about now); None without a brace or a fire."""
    if not has_placeholders(entry.payload) or not fires:
        return None
    item = fires[0]
    at = max(item.ts, now)
    fire = Fire(entry.id, Reason.SCHEDULE, "", item.rung, item.ts, at, occurrence=item.occurrence)
    return typed(entry, fire, view, at, zone)

"""One entry's view cut from the view of a whole log (`cut`): what a forecast of one
entry steps from.

`rk cron list` forecasts each of its entries from the one view of the log, and each
forecast steps (adds lines) in a view of its own. That view answers every query as
`LogView(line for line in view.lines if line.entry == entry_id or (pane and line.target
== pane))` would, but it is copied from the whole view's indexes (which entries aimed
lines where, made once: `Places`), never made by indexing the lines again, and its
lines themselves are read only when asked for (a forecast never asks).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from rk.core.log.delivery import LogLine, LogView, Status, counts_for_rate, status_of

#: One entry's lines aimed at one target, as a `LogView` indexes them: its fire lines,
#: its `AFTERMATH` lines, and the stamps of the counted and of the delivered ones.
Pair = tuple[list[LogLine], list[LogLine], list[int], list[int]]

_TARGET = attrgetter("target")
_ENTRY = attrgetter("entry")


class Places:
    """Which entries aimed lines at each target of a `LogView` and at which targets each
    entry aimed its lines, and each (entry, target) pair's lines, made when first asked for."""

    __slots__ = ("at", "pairs", "seen", "targets")

    def __init__(self) -> None:
        self.at: dict[str, dict[str, None]] = {}  #: target → the entries with lines aimed at it
        self.targets: dict[str, dict[str, None]] = {}  #: entry → the targets its lines were aimed at
        self.pairs: dict[tuple[str, str], Pair] = {}
        self.seen = 0  #: how many lines are indexed

    def catch_up(self, lines: Sequence[LogLine]) -> Places:
        """Index the lines added since the last call; this index."""
        if self.seen == len(lines):
            return self
        new = lines[self.seen :]  # each (target, entry) once, in the order they first came
        for target, entry_id in dict.fromkeys(zip(map(_TARGET, new), map(_ENTRY, new))):
            self.at.setdefault(target, {})[entry_id] = None
            self.targets.setdefault(entry_id, {})[target] = None
        self.seen = len(lines)
        self.pairs.clear()
        return self

    def pair(self, view: LogView, entry_id: str, target: str) -> Pair:
        """`entry_id`'s lines in `view` aimed at `target`, indexed as `LogView.add` would:
        all of its lines when it aimed them all there."""
        key = (entry_id, target)
        if key in self.pairs:
            return self.pairs[key]
        found: Pair
        if list(self.targets.get(entry_id, ())) == [target]:
            found = _whole(view, entry_id)
        else:
            own = [line for line in view._by_entry.get(entry_id, ()) if line.target == target]
            aftermath = [line for line in view._aftermath.get(entry_id, ()) if line.target == target]
            counted = [line for line in own if counts_for_rate(line.outcome)]
            delivered = [line.ts for line in counted if status_of(line.outcome) == Status.DELIVERED]
            found = (own, aftermath, [line.ts for line in counted], delivered)
        self.pairs[key] = found
        return found


def cut(view: LogView, entry_id: str, pane: str | None) -> LogView:
    """The view of `entry_id` and of the lines aimed at `pane` (see the module)."""
    lines = view._all()
    if not isinstance(view._places, Places):
        view._places = Places()
    places = view._places.catch_up(lines)
    sub = LogView()
    sub._source = (view, entry_id, pane, len(lines))
    _take(sub, entry_id, _whole(view, entry_id))
    for line in view._by_entry.get(entry_id, ()):
        if (not pane or line.target != pane) and counts_for_rate(line.outcome):
            sub._counted_by_target.setdefault(line.target, []).append(line.ts)
    if pane:
        for other in places.at.get(pane, ()):
            if other != entry_id:
                _take(sub, other, places.pair(view, other, pane))
        if pane in view._counted_by_target:
            sub._counted_by_target[pane] = list(view._counted_by_target[pane])
    return sub


def _whole(view: LogView, entry_id: str) -> Pair:
    """All of `entry_id`'s lines in `view`, indexed as a pair."""
    return (
        view._by_entry.get(entry_id, []),
        view._aftermath.get(entry_id, []),
        view._counted_by_entry.get(entry_id, []),
        view._delivered_by_entry.get(entry_id, []),
    )


def _take(sub: LogView, entry_id: str, pair: Pair) -> None:
    """Copy into `sub`'s indexes the lines of `entry_id` in `pair` (those it has)."""
    own, aftermath, counted, delivered = pair
    for lines, index in ((own, sub._by_entry), (aftermath, sub._aftermath)):
        if lines:
            index[entry_id] = list(lines)
    for stamps, by_entry in ((counted, sub._counted_by_entry), (delivered, sub._delivered_by_entry)):
        if stamps:
            by_entry[entry_id] = list(stamps)

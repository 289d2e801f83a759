"""Each pane's state-journal lines, for the tick's `due()`, read only when asked.

`wake_from: human` tells the turns rk started from the state journal
(`rk.core.log.cause`); most ticks ask nothing of it, so the journal (up to a
quarter megabyte, and its archive) is read on the first question, once a tick.
An unreadable journal knows no pane: each turn is then a human's, and wakes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from rk.core.cost.turn_timeout import StateLine
from rk.store import state_journal


class PaneHistory(Mapping[str, Sequence[StateLine]]):
    """`{pane: its journal lines, oldest first}`, read from `<dir>/<slug>.events` on first use."""

    def __init__(self, directory: str, slug: str) -> None:
        self._directory, self._slug = directory, slug
        self._panes: dict[str, list[StateLine]] | None = None

    def _read(self) -> dict[str, list[StateLine]]:
        if self._panes is None:
            panes: dict[str, list[StateLine]] = {}
            try:
                lines, _ = state_journal.read_all(self._directory, self._slug)
            except OSError:
                lines = []
            for line in lines:
                panes.setdefault(str(line["pane"]), []).append(
                    StateLine(int(str(line["ts"])), str(line["to"]), str(line["end"]))
                )
            self._panes = panes
        return self._panes

    def __getitem__(self, pane: str) -> Sequence[StateLine]:
        return self._read()[pane]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

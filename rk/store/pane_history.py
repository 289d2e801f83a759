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


def journal_of(directory: str, slug: str) -> dict[str, list[StateLine]]:
    """The state journal (archive and live) as each pane's lines, oldest first."""
    lines, _ = state_journal.read_all(directory, slug)
    out: dict[str, list[StateLine]] = {}
    for line in lines:
        out.setdefault(str(line["pane"]), []).append(StateLine(int(str(line["ts"])), str(line["to"]), str(line["end"])))
    return out


class PaneHistory(Mapping[str, Sequence[StateLine]]):
    """`{pane: its journal lines, oldest first}`, read from `<dir>/<slug>.events` on first use."""

    def __init__(self, directory: str, slug: str) -> None:
        self._directory, self._slug = directory, slug
        self._panes: dict[str, list[StateLine]] | None = None

    def _read(self) -> dict[str, list[StateLine]]:
        if self._panes is None:
            try:
                self._panes = journal_of(self._directory, self._slug)
            except OSError:
                self._panes = {}
        return self._panes

    def __getitem__(self, pane: str) -> Sequence[StateLine]:
        return self._read()[pane]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

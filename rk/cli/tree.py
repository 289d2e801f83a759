"""`rk cron list --tree`: who made what. Each entry an agent made (`parent`) is
indented under the entry whose fire started the turn that made it; entries a
human made are at the top; a parent no longer in the file keeps a line, marked
gone, so its children stay under it (`rk.core.schedule.lineage.tree`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from rk.core.schedule.entry import Entry
from rk.core.schedule.lineage import tree

#: What each level of the tree indents an id by.
INDENT = "  "
#: What marks an entry made by an agent (under its parent).
BRANCH = "└ "
#: A gone parent's NAME cell.
GONE = "(gone)"


class Listed(Protocol):
    @property
    def server(self) -> str: ...
    @property
    def entry(self) -> Entry: ...


R = TypeVar("R", bound=Listed)


@dataclass(frozen=True)
class GoneParent:
    """A parent the file no longer holds: its line in the tree."""

    server: str
    id: str

    def cells(self, count: int, with_server: bool) -> list[str]:
        """Its row of `count` cells: (its server,) its id, `(gone)`, `-` in the rest."""
        head = [self.server] if with_server else []
        return [*head, self.id, GONE, *["-"] * (count - len(head) - 2)]


def indented(entry_id: str, depth: int) -> str:
    """An ID cell at `depth` in the tree."""
    return entry_id if depth == 0 else INDENT * (depth - 1) + BRANCH + entry_id


def tree_order(rows: Sequence[R]) -> list[tuple[R | GoneParent, int]]:
    """`rows` (in the list's order) as a tree, server by server in the order they come:
    each row with its depth, a gone parent's line before its children."""
    servers = list(dict.fromkeys(r.server for r in rows))
    out: list[tuple[R | GoneParent, int]] = []
    for server in servers:
        mine = {r.entry.id: r for r in rows if r.server == server}
        for node in tree([(r.entry.id, r.entry.parent) for r in mine.values()]):
            out.append((GoneParent(server, node.id) if node.gone else mine[node.id], node.depth))
    return out

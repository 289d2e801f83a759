"""Tables that fit the terminal, the way `systemctl list-timers` does.

A column has a priority (0: never dropped; the highest number goes first) and,
when it may shrink, a minimum width. To fit a width, the droppable columns
shrink first (their cells shortened after a whole word, marked `…`); when
that is not enough, the lowest-priority column is dropped and the rest get
their room back, one column at a time; the kept columns shrink last, once
nothing is left to drop. Nothing is cut mid-word unless one word is
wider than its column's minimum. With no width (output piped, or `--full`),
every column is shown whole.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

GAP = "  "
ELLIPSIS = "…"

#: C0 controls, DEL and C1 controls: what a terminal may act on instead of showing.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def escape_controls(text: str, keep: str = "") -> str:
    """`text` with each control character shown as its escape (`\\x1b`, `\\n`), so a
    name, program or outcome printed to a terminal cannot move the cursor, clear the
    screen or forge a line; the characters in `keep` pass (a line's own newline)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else m.group().encode("unicode_escape").decode(), text)


@dataclass(frozen=True)
class Column:
    """One column: its header, its priority (0 is kept whatever the width), and the
    width it may shrink to (None: it never shrinks)."""

    header: str
    priority: int = 0
    shrink_to: int | None = None


def shorten(text: str, width: int) -> str:
    """`text` in `width` characters: whole words then `…` (a lone long word is cut)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    room = text[: width - 1]
    cut = room.rstrip()
    space = max(cut.rfind(" "), cut.rfind(","), cut.rfind(";"))
    if space > 0:
        cut = cut[: space + (1 if cut[space] in ",;" else 0)].rstrip(" ")
    return cut + ELLIPSIS


def _natural(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[int]:
    return [max([len(c.header), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]


def _floor(column: Column) -> int | None:
    """The narrowest a shrinkable column goes (never under its header); None: it does not shrink."""
    return None if column.shrink_to is None else max(column.shrink_to, len(column.header), 1)


def _shrunk(columns: Sequence[Column], natural: list[int], keep: list[int], width: int) -> list[int] | None:
    """Widths of the kept columns within `width`, a character at a time from the widest
    shrinkable one, droppable columns before kept ones; None when they cannot fit.
    Kept columns shrink only once nothing else is left to drop."""
    widths = {i: natural[i] for i in keep}
    excess = sum(widths.values()) + len(GAP) * (len(keep) - 1) - width
    only_essentials = all(columns[i].priority == 0 for i in keep)
    while excess > 0:
        room = [
            i
            for i in keep
            if (floor := _floor(columns[i])) is not None
            and widths[i] > floor
            and (columns[i].priority > 0 or only_essentials)
        ]
        if not room:
            return None
        widths[max(room, key=lambda i: widths[i])] -= 1
        excess -= 1
    return [widths[i] for i in keep]


def layout(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None) -> list[str]:
    """The table's lines (header first) in `width` columns (None: unlimited); control
    characters in the cells are escaped before they are measured."""
    rows = [[escape_controls(cell) for cell in row] for row in rows]
    natural = _natural(columns, rows)
    keep = list(range(len(columns)))
    widths: list[int] | None = natural
    if width is not None:
        droppable = sorted((i for i, c in enumerate(columns) if c.priority > 0), key=lambda i: -columns[i].priority)
        widths = _shrunk(columns, natural, keep, width)
        while widths is None and droppable:
            keep.remove(droppable.pop(0))
            widths = _shrunk(columns, natural, keep, width)
        if widths is None:  # only the essential columns are left: as narrow as they go
            widths = [min(natural[i], _floor(columns[i]) or natural[i]) for i in keep]
    assert widths is not None
    return [_line([columns[i].header for i in keep], widths)] + [_line([r[i] for i in keep], widths) for r in rows]


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    parts = [shorten(cell, w).ljust(w) for cell, w in zip(cells, widths, strict=True)]
    return GAP.join(parts).rstrip()


def fixed_line(cells: Sequence[str], widths: Sequence[int]) -> str:
    """One line in set widths (0: the cell whole), for rows printed as they come."""
    cells = [escape_controls(cell) for cell in cells]
    return _line(cells, [w or len(cell) for cell, w in zip(cells, widths, strict=True)])


def terminal_width(stdout: TextIO, environ: Mapping[str, str], full: bool) -> int | None:
    """The width to fit: $COLUMNS or the terminal's when stdout is one; None (every
    column whole) when output is piped or `--full` asked for everything."""
    if full:
        return None
    isatty = getattr(stdout, "isatty", None)
    if not (isatty and isatty()):
        return None
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        size = os.get_terminal_size(stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        size = shutil.get_terminal_size().columns
    return size or None  # a terminal that reports no size (0): as if piped


def wrapped(text: str, width: int | None, indent: int = 0) -> list[str]:
    """A line of prose in `width` columns (None: whole): broken between words, the
    continuation lines indented by `indent`; a word wider than the room stays whole."""
    import textwrap

    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(
        text,
        width,
        subsequent_indent=" " * indent,
        break_long_words=False,
        break_on_hyphens=False,
        drop_whitespace=True,
    ) or [text]

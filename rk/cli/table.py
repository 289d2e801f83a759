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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
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


@dataclass(frozen=True, eq=False)
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


#: A table as `captured_tables` keeps it: its columns and its rows.
Captured = tuple[list[Column], list[list[str]]]
_CAPTURE: list[Captured] | None = None


@contextmanager
def captured_tables() -> Iterator[list[Captured]]:
    """While it lasts, `layout` keeps each table it is given and draws none (no line):
    a view run for another host's `--host all` hands over its rows, so that one table
    of every host's rows, with a HOST column, is drawn there."""
    global _CAPTURE
    kept: list[Captured] = []
    before, _CAPTURE = _CAPTURE, kept
    try:
        yield kept
    finally:
        _CAPTURE = before


def layout(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None) -> list[str]:
    """The table's lines (header first) in `width` columns (None: unlimited); control
    characters in the cells are escaped before they are measured."""
    if _CAPTURE is not None:
        _CAPTURE.append((list(columns), [list(r) for r in rows]))
        return []
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
    return None if full else _terminal_size(stdout, environ, "COLUMNS")


def terminal_height(stdout: TextIO, environ: Mapping[str, str]) -> int | None:
    """The rows of the screen: $LINES or the terminal's when stdout is one; None
    (no limit) when output is piped."""
    return _terminal_size(stdout, environ, "LINES")


def _terminal_size(stdout: TextIO, environ: Mapping[str, str], name: str) -> int | None:
    isatty = getattr(stdout, "isatty", None)
    if not (isatty and isatty()):
        return None
    told = environ.get(name, "")
    if told.isdigit() and int(told) > 0:
        return int(told)
    try:
        size = os.get_terminal_size(stdout.fileno())
    except (OSError, ValueError, AttributeError):
        import shutil  # seldom: the views start without it (and its compressors)

        size = shutil.get_terminal_size()
    return (size.columns if name == "COLUMNS" else size.lines) or None  # a terminal that reports 0: as if piped


def records(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, title: int = 1) -> list[str]:
    """The rows as records, one field a line, for a table too wide for `width` that must
    show everything (`--full` on a terminal): the first `title` cells head each record,
    the other fields follow under it, `HEADER  value`, a long value wrapped under its start."""
    import textwrap

    rows = [[escape_controls(cell) for cell in row] for row in rows]
    key = max((len(c.header) for c in columns[title:]), default=0) + len(GAP) * 2
    room = max(width - key, 1)
    out: list[str] = []
    for row in rows:
        if out:
            out.append("")
        out += textwrap.wrap(GAP.join(row[:title]), width, break_on_hyphens=False) or [""]
        for column, cell in zip(columns[title:], row[title:], strict=True):
            parts = textwrap.wrap(cell, room, break_on_hyphens=False) or [""]  # a word past the room is split
            out += [(GAP + column.header).ljust(key) + parts[0], *(" " * key + part for part in parts[1:])]
    return out


def full_view(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None, title: int = 1) -> list[str]:
    """Every column whole: the table when it fits `width` (None: no limit, a pipe), else `records`."""
    lines = layout(columns, rows, None)
    if width is None or all(len(line) <= width for line in lines):
        return lines
    return records(columns, rows, width, title)


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


@dataclass
class Block:
    """A part of a screenful that can give up rows: `lead` lines always shown, then `head`
    (a table's header) and `items` (each its lines) from the top while they fit, then
    one line for the items left out, saying how many and where the rest is (`hint`)."""

    items: list[list[str]]
    hint: str
    noun: tuple[str, str] = ("row", "rows")
    lead: list[str] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    indent: str = ""  #: before the line for the rest (a table's own indent)
    shown: int = -1  #: how many items are shown (-1: all)

    def lines(self) -> list[str]:
        shown = len(self.items) if self.shown < 0 else self.shown
        out = list(self.lead)
        if shown:
            out += self.head + [line for item in self.items[:shown] for line in item]
        left = len(self.items) - shown
        if left:
            noun = self.noun[left != 1]
            out.append(self.indent + (f"… {left} more {noun}: {self.hint}" if shown else f"{left} {noun}: {self.hint}"))
        return out


def screenful(blocks: Sequence[Block], height: int | None, rest: str) -> list[str]:
    """The blocks' lines in at most `height` rows (None: all of them): the block showing
    the most items gives one up, again and again, so every block keeps its top ones;
    when even none of each is too many, the last lines give way to one naming `rest`."""
    for block in blocks:
        block.shown = -1
    lines = [line for block in blocks for line in block.lines()]
    if height is None or len(lines) <= height:
        return lines
    for block in blocks:
        block.shown = len(block.items)
    while len(lines) > height:
        cuttable = [b for b in blocks if b.shown > 0]
        if not cuttable:
            return lines[: max(height - 1, 0)] + [f"… {len(lines) - height + 1} more lines: {rest}"][: max(height, 0)]
        biggest = max(cuttable, key=lambda b: (b.shown, blocks.index(b)))
        biggest.shown -= 1
        lines = [line for block in blocks for line in block.lines()]
    return lines

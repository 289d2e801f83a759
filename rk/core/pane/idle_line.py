"""The idle line: a draft check that needs no screen layout.

rk reads a draft from the composer of the CLIs whose screens it knows
(`rk.core.pane.screen`). An agent that reports its state by hooks but draws a screen
no layout reads (a new CLI, the demo's fake agent) would get a human's
half-typed text fused with rk's prompt. So when rk sees such a pane idle by its
hooks, it remembers the cursor's line (the row the cursor is on, and the part
of it before the cursor: the prompt marker) in a pane option, which outlives a
ticker restart. Right before typing, the cursor's line must still be that idle
line: text after the marker that was not there at idle, or a cursor on another
line with text of its own, is a draft. When unsure (nothing learnt, the cursor
unreadable) it is a draft too: held, never typed over.

Text typed while the agent works shows at its prompt when the turn ends (an agent
reads its prompt in raw mode and draws what was typed ahead): the idle stamped over
it keeps the prompt rk saw before the turn (`learned`), and the ticker learns every
pane's line at each idle, so that a first look never takes such text for the prompt.
A program that reads its prompt a line at a time through the terminal (a plain
`input()`) keeps type-ahead in the kernel's line buffer, drawn nowhere: no look
can see that draft. Pure.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass

#: Unicode categories drawn in no cell of their own: nonspacing and enclosing marks, format characters.
_NO_CELL = ("Mn", "Me", "Cf")


def cell_width(ch: str, before: str = "") -> int:
    """Terminal cells one character takes, as tmux lays them out: a wide CJK glyph or
    emoji two; none for a mark (combining, a variation selector), a format character
    (zero-width space or joiner, BOM, a bidi control; the soft hyphen excepted) or
    what a zero-width joiner `before` it joins to the glyph before (one emoji)."""
    if before == "\u200d" or unicodedata.combining(ch) or (unicodedata.category(ch) in _NO_CELL and ch != "\xad"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text: str) -> int:
    return sum(cell_width(ch, text[i - 1] if i else "") for i, ch in enumerate(text))


def leading_cells(text: str, columns: int) -> str:
    """The start of `text` that fills `columns` terminal cells."""
    used = 0
    for i, ch in enumerate(text):
        used += cell_width(ch, text[i - 1] if i else "")
        if used > columns:
            return text[:i]
    return text


@dataclass(frozen=True)
class IdleLine:
    """The cursor's line of a pane at rest."""

    epoch: int  #: the idle state's epoch it was seen at
    marker: str  #: the line up to the cursor (the prompt marker, `› `)
    after: str  #: the line after the cursor (a placeholder, a hint; usually "")

    def render(self) -> str:
        """The pane option's value (JSON: a line may hold any character)."""
        return json.dumps([self.epoch, self.marker, self.after], ensure_ascii=False)


def parse(value: str) -> IdleLine | None:
    """The option's value, or None when it is absent or unreadable (never half-trusted)."""
    try:
        epoch, marker, after = json.loads(value)
    except (ValueError, TypeError):
        return None
    if not (isinstance(epoch, int) and isinstance(marker, str) and isinstance(after, str)):
        return None
    return IdleLine(epoch, marker, after)


def cursor_line(rows: str, cursor: str) -> tuple[str, str] | None:
    """(the cursor's row up to the cursor, the rest of it) from a capture with one
    line per terminal row; None when the cursor is not on the capture."""
    x, _, y = cursor.partition(",")
    if not (x.isdigit() and y.isdigit()):
        return None
    lines = rows.split("\n")
    if int(y) >= len(lines):
        return None
    row = lines[int(y)].rstrip()
    before = leading_cells(row, int(x))
    return before, row[len(before) :]


def is_draft(idle: IdleLine | None, line: tuple[str, str] | None) -> bool:
    """Whether the cursor's `line` holds text the pane did not show at rest.

    On the idle line (it starts with the marker) the text after the marker must
    be nothing, or what followed the cursor at idle; on any other line, the line
    must be blank or the idle line itself. Unsure (nothing learnt, no cursor): a draft."""
    if idle is None or line is None:
        return True
    text = (line[0] + line[1]).rstrip()
    marker = idle.marker.rstrip()
    if text.startswith(marker):
        typed = text[len(marker) :].strip()
        return bool(typed) and typed != idle.after.strip()
    return bool(text.strip()) and text.strip() != (idle.marker + idle.after).strip()


def learned(old: IdleLine | None, epoch: int, line: tuple[str, str]) -> IdleLine:
    """The idle line to keep after seeing the pane idle at `epoch` showing `line`.

    A new idle shows the prompt as it is now (a prompt may change between turns),
    except when the line is the old marker with text after it: an idle state
    re-stamped while a human's draft sat there must not make the draft the idle line.
    An old line with no marker (the cursor at the margin) proves nothing: learnt anew."""
    marker = old.marker.rstrip() if old is not None else ""
    if old is not None and marker and line[0].rstrip().startswith(marker) and is_draft(old, line):
        return IdleLine(epoch, old.marker, old.after)
    return IdleLine(epoch, line[0], line[1].rstrip())

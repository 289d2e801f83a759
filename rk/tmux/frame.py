"""A frame: one look at a pane, its screen (plain, styled, row by row) and the facts
read with it in the same tmux command. Delivery, the observer and the interrupt
all judge a pane from frames, so the frame sits with tmux, below all of them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rk.core.environ import IDLE_LINE_OPTION, LEGACY_STATE_OPTION, SESSION_OPTION, SOURCE_OPTION, STATE_OPTION
from rk.core.pane.identity import ServerIdentity
from rk.core.pane.idle_line import cursor_line, leading_cells, text_width
from rk.core.pane.payload import NEEDLE_LENGTH, normalise
from rk.core.schedule.dispose import held_mode
from rk.tmux.server import format_number

#: What every frame reads beside the screen: mode, liveness and cursor, and
#: what the guard needs to judge the pane (its command and tty, the state
#: options, and the title, last because a program sets it freely).
FRAME_FIELDS = (
    "pane_id",
    "pane_in_mode",
    "pane_mode",
    "pane_dead",
    "pane_pid",
    "start_time",
    "pid",  # the server's (rk.core.pane.identity)
    "pane_width",
    "cursor_x",
    "cursor_y",
    "pane_current_command",
    "pane_tty",
    STATE_OPTION,
    LEGACY_STATE_OPTION,
    SESSION_OPTION,
    SOURCE_OPTION,
    IDLE_LINE_OPTION,
    "window_name",
    "pane_title",
)
SGR = re.compile(r"\x1b\[[0-9;:?]*[@-~]")


@dataclass(frozen=True)
class Frame:
    """One look at the pane: its screen (plain, and with styles when asked) and facts."""

    pane_id: str
    in_mode: bool
    dead: bool
    cursor: str
    screen: str
    styled: str = ""  #: the screen with its SGR styles (the baseline frame only)
    fields: tuple[str, ...] = ()  #: the values of FRAME_FIELDS
    rows: str = ""  #: the screen one row per terminal row (wrapped lines unjoined), when asked

    def field(self, name: str) -> str:
        i = FRAME_FIELDS.index(name)
        return self.fields[i] if i < len(self.fields) else ""

    @property
    def norm(self) -> str:
        return normalise(self.screen)

    def key(self) -> tuple[str, str]:
        """What "the frame moved" compares (the journal's fingerprint): the
        normalised text and the cursor. Not the state option: a hook that
        re-stamps `idle` moves nothing."""
        return (self.norm, self.cursor)

    @property
    def mode(self) -> str:
        """The pane mode a human put the pane in ("" none)."""
        return held_mode(self.in_mode, self.field("pane_mode"))

    def before_cursor(self) -> str:
        """The text that ends at the cursor: its row up to the cursor, and the
        rows above while they are full (one line the terminal wrapped). Read
        from the capture that keeps terminal rows (`rows`)."""
        x, _, y = self.cursor.partition(",")
        if not (x.isdigit() and y.isdigit()):
            return ""
        rows = self.rows.split("\n")
        row = int(y)
        if row >= len(rows):
            return ""
        text = leading_cells(rows[row], int(x))
        width = int(self.field("pane_width") or 0)
        while row > 0 and width and text_width(rows[row - 1]) >= width and len(normalise(text)) < NEEDLE_LENGTH:
            row -= 1
            text = rows[row] + text
        return text

    def since(self, cursor: str) -> str | None:
        """The screen from `cursor` (`x,y`, where it stood before) to the cursor now,
        over the terminal rows; None when the cursor went back or a row is missing."""
        x0, _, y0 = cursor.partition(",")
        x1, _, y1 = self.cursor.partition(",")
        if not all(v.isdigit() for v in (x0, y0, x1, y1)) or not self.rows:
            return None
        (a, b), (c, d) = (int(x0), int(y0)), (int(x1), int(y1))
        rows = self.rows.split("\n")
        if (d, c) < (b, a) or d >= len(rows):
            return None
        if b == d:
            return leading_cells(rows[d], c)[len(leading_cells(rows[b], a)) :]
        first = rows[b][len(leading_cells(rows[b], a)) :]
        return first + "".join(rows[b + 1 : d]) + leading_cells(rows[d], c)

    def cursor_line(self) -> tuple[str, str] | None:
        """The cursor's row, split at the cursor (`rk.core.pane.idle_line`); None if unreadable."""
        return cursor_line(self.rows, self.cursor) if self.rows else None

    def past_anchor(self, anchor: str, cursor: str) -> str | None:
        """The cursor's row up to the cursor, past `anchor` (what the row rk looked at
        held up to the cursor then, a prompt like `› `), when the cursor is now on
        another row than `cursor` (where it stood), that row begins with the anchor,
        and no other row from the old one to it does: the program redrew its screen
        and the line moved whole (not a second composer line under the first, as a
        newline typed into it makes). None otherwise."""
        line = self.cursor_line()
        anchor = anchor.rstrip()
        old, now = cursor.partition(",")[2], self.cursor.partition(",")[2]
        if line is None or not anchor or not old.isdigit() or old == now or not line[0].startswith(anchor):
            return None
        rows, y = self.rows.split("\n"), int(now)
        if int(old) >= len(rows) or any(
            rows[i].startswith(anchor) for i in range(min(int(old), y), max(int(old), y) + 1) if i != y
        ):
            return None
        return line[0][len(anchor) :]


def frame_server(frame: Frame) -> ServerIdentity:
    """The server a frame was read from (`rk.core.pane.identity`)."""
    return ServerIdentity(format_number(frame.field("start_time")), format_number(frame.field("pid")))

"""What one field of an entry is, as every surface offers it (`rk.core.schedule.fields`
holds the table of them): how its value is written, where it is offered, its bounds.
Pure data and the two rules every surface applies to a value (`check_text`, `accepted`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rk.core import bounds
from rk.core.bounds import MAX_WORD
from rk.core.schedule.entry import ScheduleKind


class Shape(StrEnum):
    """How a field's value is written on the command line and in MCP input."""

    TEXT = "text"  #: free text
    DURATION = "duration"  #: 30s, 5m, 2h, 1d
    CHOICE = "choice"  #: one of `choices`
    COUNT = "count"  #: a whole number within the bounds
    FLAG = "flag"  #: present or not
    LIST = "list"  #: repeated


class Surface(StrEnum):
    """Where a field is offered: a command, or an MCP tool."""

    ADD = "add"
    EDIT = "edit"
    SIMULATE = "simulate"
    CRON_ADD = "cron_add"
    CRON_EDIT = "cron_edit"


#: The surfaces that change an existing entry: there an `off` word removes a field.
EDITING = (Surface.EDIT, Surface.SIMULATE, Surface.CRON_EDIT)


@dataclass(frozen=True)
class Field:
    """One field of an entry as every surface offers it.

    `help` is the command line's text; `mcp` the MCP input's ("" where no tool
    offers it); `*_edit` override them where editing says it otherwise."""

    key: str  #: the MCP input's and the docs' name
    flag: str  #: the command line's option
    shape: Shape
    help: str
    yaml: str  #: where the entries file keeps it
    mcp: str = ""
    choices: tuple[str, ...] = ()  #: every value rk accepts (CHOICE)
    off: tuple[str, ...] = ()  #: the words that remove it when editing
    low: int | None = None  #: COUNT's bounds, inclusive
    high: int | None = None
    most: int = MAX_WORD  #: characters a value may have (a LIST's: each element); see `check_text`
    default: str = ""  #: what an entry has without it
    schedules: tuple[ScheduleKind, ...] = ()  #: the schedule kinds it applies to (empty: any)
    param: str = ""  #: the command line function's parameter (when not `key`)
    complete: tuple[str, ...] = ()  #: shell completion words
    edit_flag: str = ""
    edit_help: str = ""
    mcp_edit: str | None = None

    @property
    def name(self) -> str:
        """The command function's parameter name."""
        return self.param or self.key

    def help_on(self, surface: Surface) -> str:
        if surface in (Surface.CRON_ADD, Surface.CRON_EDIT):
            return self.mcp_edit if surface == Surface.CRON_EDIT and self.mcp_edit is not None else self.mcp
        return self.edit_help if surface == Surface.EDIT and self.edit_help else self.help

    def flag_on(self, surface: Surface) -> str:
        return self.edit_flag if surface == Surface.EDIT and self.edit_flag else self.flag

    @property
    def bounded(self) -> bool:
        """Whether the value is text, so `most` bounds it (a FLAG or COUNT is not)."""
        return self.shape not in (Shape.FLAG, Shape.COUNT)

    def bounds_on(self, surface: Surface) -> tuple[int | None, int | None]:
        """COUNT's bounds there: editing also takes the `off` number (0 removes a cap)."""
        low = self.low
        if surface in EDITING and low is not None and str(low - 1) in self.off:
            low -= 1
        return low, self.high


def check_text(field: Field, value: object, what: str = "") -> None:
    """OutOfRange (a usage error quoting a short prefix) when `value`, a text of `field`
    (or an element of a LIST), has more characters than its `most`, or a LIST more than
    `MAX_ARGS` elements. The command line and the entries file's decoding both apply it."""
    what = what or field.flag
    if not field.bounded or value is None:
        return
    if isinstance(value, list | tuple):
        if len(value) > bounds.MAX_ARGS:
            raise bounds.OutOfRange(f"{what} has {len(value):,} elements: at most {bounds.MAX_ARGS}")
        for element in value:
            check_text(field, element, what)
    elif isinstance(value, str):
        bounds.text(value, what, field.most)


def accepted(field: Field, surface: Surface) -> tuple[str, ...]:
    """Every word a CHOICE field takes there: its values, and where editing, its `off` words."""
    return field.choices + (field.off if surface in EDITING else ())

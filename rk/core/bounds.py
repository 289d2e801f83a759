"""The range of every number rk reads: flags, the entries file, pane options, log lines.

A value outside its range is refused where it is read (a usage error for a
flag, a diagnostic for one entry, pane or line), so nothing later has to
survive a year past 9999, a pid past 2^31 or a duration of 10^20 seconds.
"""

from __future__ import annotations

from rk.core.errors import ExitStatus, RkError

#: 9999-12-30T23:59:59Z: a day before the last second `datetime` can show, so the
#: instant shows in every zone (east of UTC, 9999-12-31T23:59:59Z is already the year
#: 10000, which `datetime` cannot hold). Epochs are unix seconds.
MAX_EPOCH = 253_402_214_399
#: Ten years: the longest interval, ladder step, mute lease, simulation or debounce.
MAX_DURATION = 3650 * 86400
#: Linux's PID_MAX_LIMIT (2^22); no process id is larger.
MAX_PID = 4_194_304
#: `rk cron next -n`: more fire times than anyone reads.
MAX_FIRES = 1000
#: `rk cron simulate`: polls in one replay (a month at 30 s is 86,400).
MAX_SIM_STEPS = 100_000
#: The ticker's poll: between a tenth of a second and a day.
MIN_INTERVAL, MAX_INTERVAL = 0.1, 86400.0
#: An entries file larger than this, or holding more entries, is refused unparsed.
MAX_ENTRIES_FILE_BYTES = 1 << 20
#: A change (`rk cron rm`) still reads a file this large, so one that grew past the
#: limit can be brought back under it; rk never writes one past the limit.
MAX_ENTRIES_REPAIR_BYTES = 4 << 20
MAX_ENTRIES_HARD = 1000
#: Digits a number in text may have before it is refused unread.
MAX_DIGITS = 24


class OutOfRange(RkError, ValueError, status=ExitStatus.USAGE):
    """A number outside its range; the message names the range."""


def epoch(value: int, what: str) -> int:
    if not 0 <= value <= MAX_EPOCH:
        raise OutOfRange(f"{what} must be unix seconds between 0 and {MAX_EPOCH} (9999-12-30)")
    return value


def duration(seconds: int, what: str) -> int:
    if not 0 <= seconds <= MAX_DURATION:
        raise OutOfRange(f"{what} must be at most {MAX_DURATION // 86400} days")
    return seconds


def pid(value: int, what: str = "pid") -> int:
    if not 1 <= value <= MAX_PID:
        raise OutOfRange(f"{what} must be a process id between 1 and {MAX_PID}")
    return value


def interval(value: float, what: str = "--interval") -> float:
    if not MIN_INTERVAL <= value <= MAX_INTERVAL:  # false for nan and ±inf too
        raise OutOfRange(f"{what} must be between {MIN_INTERVAL:g} and {MAX_INTERVAL:g} seconds")
    return value


#: `--max-per-day` / `--max-total` (`rk.core.cost.caps`): more deliveries than any entry makes.
MAX_CAP = 1_000_000


def cap(value: int, what: str) -> int:
    if not 1 <= value <= MAX_CAP:
        raise OutOfRange(f"{what} must be a whole number between 1 and {MAX_CAP}")
    return value


# -- text -------------------------------------------------------------------------------

#: Characters of a value an error message quotes; the rest is named by its length.
QUOTE_CHARS = 40
#: Characters an entry's text fields may hold (`rk.core.schedule.fields` names each one's).
MAX_LABEL = 200  #: a name, a role, an agent session, a cron expression, active hours
MAX_PROMPT = 10_000  #: a prompt (rk mcp allows fewer: `rk.core.channels.mcpguard`)
MAX_WORD = 64  #: a duration, a zone, an instant, a choice, a budget
MAX_PANE = 16  #: `%` and digits
MAX_ARG = 4096  #: one element of a respawn command
MAX_ARGS = 64  #: elements of a respawn command


def quote(value: str, keep: int = QUOTE_CHARS) -> str:
    """`value` as an error message shows it: whole when short, else its first `keep`
    characters, `…` and its length, so no message can echo a megabyte back."""
    if len(value) <= keep:
        return repr(value)
    return f"{value[:keep]!r}… ({len(value):,} characters)"


def text(value: str, what: str, most: int) -> str:
    """`value` when it has at most `most` characters; OutOfRange naming the bound otherwise."""
    if len(value) > most:
        raise OutOfRange(f"{what} {quote(value)} is too long: at most {most:,} characters")
    return value


# -- wakes on the world (`rk signal`, `--wake-on signal:NAME | file:PATH`) ---------------

#: Characters of a signal's name (a word of a-z, 0-9, `.`, `_`, `-`).
MAX_SIGNAL_NAME = 64
#: Characters of a signal's `--data`: it is typed into an agent's prompt (`{signal_data}`).
MAX_SIGNAL_DATA = 2000
#: Characters of a watched file's path (`--wake-on file:PATH`).
MAX_WATCH_PATH = 1024

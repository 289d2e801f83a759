"""rk's one error base: every exception rk defines is an `RkError`, and carries
how rk exits when that error ends a command.

`status` is the exit status (DECISIONS §5: 0 ok, 1 operational, 2 usage, 3 no
ticker for `ticker status`) and `code` the `--json` error envelope's `code`
(DECISIONS §4: `usage`, `not-found`, `operational`). A subclass names its status
on its class line, `class DurationError(RkError, ValueError, status=ExitStatus.USAGE)`;
its code follows (`usage` for a usage status, else `operational`) unless given
too. Without either it is operational, as `RkError` is.

The status is what the error means where rk reports it as it is. The same
parse error can be a usage mistake in one place and a broken file in another:
a cron expression typed as a flag is a usage error (the flag parser says so,
naming the flag), one read from the entries file is operational, and
`CronError`'s status is the second, the one it ends a command with.

Standard library only, and not even `enum`: the hook path (rk.core.environ,
rk.core.bounds) defines errors under this base, and imports nothing heavy.
"""

from __future__ import annotations


class ExitStatus(int):
    """An exit status, an int (a typer.Exit code, a process's status). Not an
    IntEnum, for the hook path's sake; the named ones are class attributes."""

    OK: ExitStatus
    OPERATIONAL: ExitStatus
    USAGE: ExitStatus
    NO_TICKER: ExitStatus  #: `ticker status` with no ticker (systemctl's convention)
    ERROR: ExitStatus  #: the CLI's older name of OPERATIONAL
    NOT_RUNNING: ExitStatus  #: the CLI's older name of NO_TICKER


ExitStatus.OK = ExitStatus(0)
ExitStatus.OPERATIONAL = ExitStatus.ERROR = ExitStatus(1)
ExitStatus.USAGE = ExitStatus(2)
ExitStatus.NO_TICKER = ExitStatus.NOT_RUNNING = ExitStatus(3)


class ErrorCode:
    """The `code` of a `--json` error envelope."""

    USAGE = "usage"
    NOT_FOUND = "not-found"
    OPERATIONAL = "operational"


class RkError(Exception):
    """An exception rk raises: a failure it knows, its message one line for the user
    (or, private to a module, a signal that never leaves it)."""

    status: ExitStatus = ExitStatus.OPERATIONAL
    code: str = ErrorCode.OPERATIONAL

    def __init_subclass__(cls, *, status: ExitStatus | None = None, code: str | None = None) -> None:
        super().__init_subclass__()
        if status is not None:
            cls.status = status
            cls.code = code_for(status)
        if code is not None:
            cls.code = code


def code_for(status: int) -> str:
    """The `--json` error code a failure of `status` has, unless it says `not-found`."""
    return ErrorCode.USAGE if status == ExitStatus.USAGE else ErrorCode.OPERATIONAL

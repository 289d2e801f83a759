"""`--retry N --retry-after 2m` on `rk cron add | edit` (`rk.core.schedule.retry`)."""

from __future__ import annotations

from dataclasses import replace

from rk.cli.entry_flags import EntryFlags
from rk.cli.environment import usage
from rk.core.durations import DurationError, parse_duration
from rk.core.schedule.entry import At, Entry
from rk.core.schedule.retry import MAX_RETRIES


def given(flags: EntryFlags) -> bool:
    return flags.retry is not None or flags.retry_after is not None


def with_retry(entry: Entry, flags: EntryFlags, editing: bool = False) -> Entry:
    """`entry` with the flags' retries (edit: `--retry 0` removes them); a usage error
    for a count out of bounds, a bad duration, `--retry-after` alone, or a one-shot entry
    (it retires with its one line, so nothing would be retried)."""
    if not given(flags):
        return entry
    if flags.retry == 0 and editing:
        if flags.retry_after is not None:
            raise usage("--retry 0 removes the retries: --retry-after has nothing to time")
        return replace(entry, retry=0, retry_after=0)
    count = entry.retry if flags.retry is None else flags.retry
    if flags.retry is not None and not 1 <= flags.retry <= MAX_RETRIES:
        raise usage(f"--retry: from 1 to {MAX_RETRIES}, not {flags.retry}{' (0 removes it)' if editing else ''}")
    if not count:
        raise usage("--retry-after needs --retry")
    wait = entry.retry_after
    if flags.retry_after is not None:
        try:
            wait = parse_duration(flags.retry_after)
        except DurationError as exc:
            raise usage(f"--retry-after: {exc}") from None
        if wait <= 0:
            raise usage("--retry-after must be a positive duration")
    if isinstance(entry.schedule, At):
        raise usage("--retry retries a recurring entry's fires; an --at/--in entry retires with its one line")
    return replace(entry, retry=count, retry_after=wait)

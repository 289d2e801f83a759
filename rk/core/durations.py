"""Durations: parse Go and short forms, write the short form.

Entries store durations as text (`45s`, `3m`, `1h30m`, or Go's `1m0s`). The
core works in whole seconds, because the delivery log has whole-second
timestamps and a sub-second schedule could never be observed by a 30-second
poll.
"""

from __future__ import annotations

import re

from rk.core.bounds import MAX_DURATION, quote
from rk.core.errors import ExitStatus, RkError

_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
    "d": 86400 * 1_000_000_000,
}
_TERM = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h|d)")


class DurationError(RkError, ValueError, status=ExitStatus.USAGE):
    """A duration string that cannot be read."""


_BARE_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def missing_unit(text: str) -> str:
    """What to say about a bare number (`7`) given as a duration: it has no unit, and
    guessing one (seconds? minutes?) is how a heartbeat fires 60 times too often.
    "" when `text` is not a bare number."""
    if not _BARE_NUMBER.fullmatch(text) or len(text) > 20:
        return ""
    return f"{text} what? a duration needs a unit: {text}s, {text}m, {text}h or {text}d"


def parse_duration(text: object) -> int:
    """Return whole seconds for `text` (`90s`, `1m30s`, `1h0m0s`, `2h`, `1.5m`, `0s`).

    Rejects signs, spaces (a trailing newline included), control characters, missing
    units and values that are not whole seconds.
    """
    if not isinstance(text, str):
        raise DurationError(f"duration must be a string like 30s or 5m, not {type(text).__name__}")
    s = text
    if s in ("0",):
        return 0
    if not s:
        raise DurationError("empty duration")
    if any(c.isspace() or not c.isprintable() for c in s):
        raise DurationError(f"invalid duration {quote(text)}: no spaces or control characters allowed")
    if s[0] in "+-":
        raise DurationError(f"invalid duration {quote(text)}: no sign allowed")
    if len(s) > 64:
        raise DurationError(f"invalid duration {text[:20]!r}…: too long to be one")
    if bare := missing_unit(s):
        raise DurationError(bare)
    pos = 0
    total_ns = 0
    for m in _TERM.finditer(s):
        if m.start() != pos:
            break
        number, unit = m.group(1), m.group(2)
        if "." in number:
            whole, _, frac = number.partition(".")
            scale = _UNIT_NS[unit]
            ns = int(whole or "0") * scale
            if frac:
                ns += int(frac) * scale // (10 ** len(frac))
        else:
            ns = int(number) * _UNIT_NS[unit]
        total_ns += ns
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise DurationError(f"invalid duration {quote(text)}: use forms like 45s, 3m, 1h30m")
    if total_ns % 1_000_000_000:
        raise DurationError(f"invalid duration {quote(text)}: must be a whole number of seconds")
    if total_ns > MAX_DURATION * 1_000_000_000:
        raise DurationError(f"duration {quote(text)} is too long: at most {MAX_DURATION // 86400} days")
    return total_ns // 1_000_000_000


def format_duration(seconds: int) -> str:
    """Short form: `1h30m`, `45s`, `2h`, `0s` (zero components dropped)."""
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if seconds == 0:
        return "0s"
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    out = ""
    if h:
        out += f"{h}h"
    if m:
        out += f"{m}m"
    if s:
        out += f"{s}s"
    return out


def format_go(seconds: int) -> str:
    """Go's `time.Duration.String()` form: `1m0s`, `30m0s`, `1h0m0s`, `45s`.

    Used where the Go original's JSON contract shows durations (`list --json`).
    """
    if seconds < 0:
        return "-" + format_go(-seconds)
    if seconds == 0:
        return "0s"
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m}m{s}s"
    if m:
        return f"{m}m{s}s"
    return f"{s}s"

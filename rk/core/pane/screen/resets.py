"""When a usage or rate limit resets, read from the words an agent prints.

Agents print the reset in several forms: a clock time (`resets 2:57pm (UTC)`,
`Your limit resets at 14:56 UTC`, `Access resets at 12:34 PM PST`), a delay
(`try again in 2 hours 5 minutes`, `resets in 4h 59m`), a date and a clock
time (Codex, for a reset on another day: `try again at Dec 7th, 2026 12:41 AM`),
an ISO instant, or an epoch after a bar (`usage limit reached|1751800000`). A clock time is the
first such wall time after `since` (when the limit was first seen, so a
banner read again after the reset is not pushed to the next day) in the zone
it names, else the local zone.

A reset is read with its precision (`Reset`): a clock time without seconds
names a minute, and the limit may last to that minute's last second (Claude
prints "resets 2:38am" for a reset at 2:38:50). rk calls the limit over only
at `Reset.over`: the end of what was printed plus `RESET_MARGIN`, so a
`continue` is never typed into a limit that has not reset yet (each such
prompt is refused, and used to be the only one). `reset_instant` gives that
instant, and is what every reader of a reset uses. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from rk.core.schedule.cronexpr import CronError, zone_for

#: Zone abbreviations agents print, to IANA zones.
ABBREVIATIONS = {
    "UTC": "UTC",
    "GMT": "UTC",
    "Z": "UTC",
    "PST": "America/Los_Angeles",
    "PDT": "America/Los_Angeles",
    "PT": "America/Los_Angeles",
    "MST": "America/Denver",
    "MDT": "America/Denver",
    "MT": "America/Denver",
    "CST": "America/Chicago",
    "CDT": "America/Chicago",
    "CT": "America/Chicago",
    "EST": "America/New_York",
    "EDT": "America/New_York",
    "ET": "America/New_York",
    "BST": "Europe/London",
    "CET": "Europe/Berlin",
    "CEST": "Europe/Berlin",
    "JST": "Asia/Tokyo",
    "IST": "Asia/Kolkata",
    "AEST": "Australia/Sydney",
    "AEDT": "Australia/Sydney",
}

#: Seconds past the end of a printed reset before rk calls the limit over: the
#: clocks of the agent's server and this machine differ by a second or two, a
#: reset printed in seconds drops its fraction, and the first request after
#: the reset takes a moment to reach the server. Small beside Claude's own
#: resume (30 s or more after the reset), large beside clock skew.
RESET_MARGIN = 5

MINUTE = 60


@dataclass(frozen=True)
class Reset:
    """A reset as printed: the instant it names (`at`, unix seconds) and whether
    it names only a minute (`to_minute`: a clock time, or an ISO instant or a
    delay without seconds; `at` is then the minute's first second) or a second
    (an epoch, an ISO instant with seconds, a delay in seconds)."""

    at: int
    to_minute: bool = False

    @property
    def over(self) -> int:
        """When rk calls the limit over: the end of the printed minute (or the
        printed second itself) plus RESET_MARGIN, never before the limit has reset."""
        return self.at + (MINUTE if self.to_minute else 0) + RESET_MARGIN


#: A clock time up to this long before the limit began is that one, past, not the next
#: day's: "resets 2:57" seen at 2:57:20, or repeated by a resume refused at 2:58:06 (a
#: reset that did not end the limit; `reset_instant` is then before `since`).
STALE_SLACK = 10 * MINUTE

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DELAY = re.compile(
    r"\b(?:in|after)\s+((?:\d+\s*(?:days?|d|hours?|hrs?|hr|h|minutes?|mins?|min|m|seconds?|secs?|sec|s)\b[\s,]*(?:and\s+)?)+)",
    re.IGNORECASE,
)
_DELAY_PART = re.compile(r"(\d+)\s*([a-z]+)", re.IGNORECASE)
_CLOCK = re.compile(
    r"\b(?:resets?|reset\s+at|again\s+at|available\s+(?:again\s+)?at|until)\s+(?:at\s+|on\s+)?"
    r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
    r"(?:\s*\(?\s*(?P<zone>[A-Za-z]+(?:/[A-Za-z_+-]+)+|UTC|GMT|[A-Z]{2,4})\s*\)?)?",
    re.IGNORECASE,
)
_DATED = re.compile(
    r"\b(?:resets?|reset\s+at|again\s+at|available\s+(?:again\s+)?at|until)\s+(?:at\s+|on\s+)?"
    r"(?P<month>[A-Za-z]{3,9})\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(?P<year>\d{4}),?\s+)?"
    r"(?:at\s+)?(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
    r"(?:\s*\(?\s*(?P<zone>[A-Za-z]+(?:/[A-Za-z_+-]+)+|UTC|GMT|[A-Z]{2,4})\s*\)?)?",
    re.IGNORECASE,
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_ISO = re.compile(r"\b(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}))\b")
_ISO_SECONDS = re.compile(r"\d{2}:\d{2}:\d{2}")
_EPOCH = re.compile(r"\|\s*(\d{10})\b")


def _zone(name: str | None, local: tzinfo) -> tzinfo:
    if not name:
        return local
    name = ABBREVIATIONS.get(name.upper(), name)
    try:
        return zone_for(name)
    except CronError:
        return local


def _delay_seconds(text: str) -> tuple[int, bool]:
    """(the delay in seconds, whether it names only minutes: no seconds in it)."""
    total, to_minute = 0, True
    for amount, unit in _DELAY_PART.findall(text):
        key = unit[0].lower()
        if unit.lower().startswith("mo"):  # "months" is not a delay we read
            return 0, True
        total += int(amount) * _UNITS.get(key, 0)
        to_minute = to_minute and key != "s"
    return total, to_minute


def _hour(m: re.Match[str]) -> int:
    """The match's hour on a 24-hour clock (`h`, with its `ampm`), or -1 for an hour a
    12-hour clock does not have (`13pm`)."""
    hour = int(m.group("h"))
    ampm = (m.group("ampm") or "").lower().replace(".", "")
    if not ampm:
        return hour
    if not 1 <= hour <= 12:
        return -1
    return hour % 12 + (12 if ampm == "pm" else 0)


def _dated(m: re.Match[str], ref: int, local: tzinfo) -> Reset | None:
    """A date and a clock time (what Codex prints for a reset on another day), in the zone
    it names, else the local zone; without a year, the first such date at or after `ref`'s
    day."""
    month = m.group("month")[:3].lower()
    if month not in _MONTHS or not (m.group("m") or m.group("ampm")):
        return None  # "resets Dec 7" names no time
    hour, minute = _hour(m), int(m.group("m") or 0)
    if hour < 0:
        return None
    zone = _zone(m.group("zone"), local)
    start = datetime.fromtimestamp(ref, zone)
    years = [int(m.group("year"))] if m.group("year") else [start.year, start.year + 1]
    for year in years:
        try:
            at = datetime(year, _MONTHS.index(month) + 1, int(m.group("day")), hour, minute, tzinfo=zone)
        except ValueError:
            return None  # no such day or time
        if m.group("year") or at.date() >= start.date():
            return Reset(int(at.timestamp()), to_minute=True)
    return None


def reset_instant(text: str, since: int, local: tzinfo, *, now: int = 0) -> int:
    """When rk calls over the limit a message names (`Reset.over`, unix seconds),
    or 0 when it names no reset. See `read_reset` for `since` and `now`."""
    reset = read_reset(text, since, local, now=now)
    return reset.over if reset is not None else 0


def read_reset(text: str, since: int, local: tzinfo, *, now: int = 0) -> Reset | None:
    """The reset a limit message names, with its precision, or None when it names none.

    `since` is when the limit (or the turn that hit it) began, if known: delays
    count from it, and a clock time is its first occurrence at or after it.
    With `since` 0, delays count from `now` and a clock time is the occurrence
    nearest to `now` (a banner seen long after it was printed is not pushed to
    the next day)."""
    m = _EPOCH.search(text)
    if m:
        return Reset(int(m.group(1)))
    m = _ISO.search(text)
    if m:
        iso = m.group(1)
        try:
            at = int(datetime.fromisoformat(iso.replace("Z", "+00:00").replace(" ", "T")).timestamp())
        except ValueError:
            pass
        else:
            return Reset(at, to_minute=not _ISO_SECONDS.search(iso))
    m = _DELAY.search(text)
    if m:
        seconds, to_minute = _delay_seconds(m.group(1))
        if seconds > 0:
            return Reset((since or now) + seconds, to_minute)
    m = _DATED.search(text)
    dated = _dated(m, since or now, local) if m else None
    if dated is not None:
        return dated
    m = _CLOCK.search(text)
    if m:
        hour, minute, ampm = _hour(m), int(m.group("m") or 0), m.group("ampm")
        if hour < 0:
            return None
        if hour > 23 or minute > 59 or (not ampm and not m.group("m") and not m.group("zone")):
            return None  # a bare number ("resets 5") is not a time
        zone = _zone(m.group("zone"), local)
        ref = since or now
        start = datetime.fromtimestamp(ref, zone)
        days = [start + timedelta(days=d) for d in (-1, 0, 1)]
        times = [int(d.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()) for d in days]
        if since:  # the first occurrence at or after it, with STALE_SLACK
            return Reset(min(t for t in times if t >= since - STALE_SLACK), to_minute=True)
        return Reset(min(times, key=lambda t: abs(t - now)), to_minute=True)
    return None

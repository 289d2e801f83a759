"""The one way rk prints an instant to a person, written once for the views and
for the core's messages (quiet hours, mute, pause, clock went back): local wall
time to the second; a table names the zone once in its header, a message ends
with the zone's abbreviation for that instant. JSON and the log keep unix
seconds and ISO-8601."""

from __future__ import annotations

from datetime import datetime, tzinfo


def stamp(ts: int, zone: tzinfo) -> str:
    """A table cell: local wall time to the second; the view names the zone once
    (`zone_label`), so a cell names it only where the wall time alone would not say
    which instant it is (`repeated`)."""
    when = datetime.fromtimestamp(ts, zone)
    text = when.strftime("%Y-%m-%d %H:%M:%S")
    return f"{text} {which_pass(when)}" if repeated(when) else text


def repeated(when: datetime) -> bool:
    """Whether the wall clock shows `when`'s time twice (the hour a fall-back repeats)."""
    return when.replace(fold=1 - when.fold).utcoffset() != when.utcoffset()


def which_pass(when: datetime) -> str:
    """What tells a repeated wall time's two instants apart: the zone's abbreviation
    (`EDT`, `EST`), or the UTC offset (`+10:30`) where it has none of letters or
    both passes share one."""
    name = when.tzname() or ""
    if name.isalpha() and name != when.replace(fold=1 - when.fold).tzname():
        return name
    return when.strftime("%z")[:3] + ":" + when.strftime("%z")[3:]


def zone_label(zone: tzinfo) -> str:
    """The zone's name as a view's header shows it (its IANA key when it has one)."""
    return getattr(zone, "key", None) or str(zone)


def moment(ts: int, zone: tzinfo) -> str:
    """An instant in a one-line message: `stamp` and the zone's abbreviation for that
    instant (`EST`, `CEST`), which also tells a fall-back day's two 01:30s apart."""
    when = datetime.fromtimestamp(ts, zone)
    return f"{when.strftime('%Y-%m-%d %H:%M:%S')} {when.tzname() or zone_label(zone)}"

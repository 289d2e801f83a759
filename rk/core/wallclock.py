"""The one way rk prints an instant to a person, written once for the views and
for the core's messages (quiet hours, mute, pause, clock went back): local wall
time to the second; a table names the zone once in its header, a message ends
with the zone's abbreviation for that instant. JSON and the log keep unix
seconds and ISO-8601."""

from __future__ import annotations

from datetime import datetime, tzinfo


def stamp(ts: int, zone: tzinfo) -> str:
    """A table cell: local wall time to the second; the view names the zone once
    (`zone_label`), so no cell repeats an offset."""
    return datetime.fromtimestamp(ts, zone).strftime("%Y-%m-%d %H:%M:%S")


def zone_label(zone: tzinfo) -> str:
    """The zone's name as a view's header shows it (its IANA key when it has one)."""
    return getattr(zone, "key", None) or str(zone)


def moment(ts: int, zone: tzinfo) -> str:
    """An instant in a one-line message: `stamp` and the zone's abbreviation for that
    instant (`EST`, `CEST`), which also tells a fall-back day's two 01:30s apart."""
    when = datetime.fromtimestamp(ts, zone)
    return f"{when.strftime('%Y-%m-%d %H:%M:%S')} {when.tzname() or zone_label(zone)}"

"""The status line's fleet part: each other host's agents counted by state, from the
record the ticker keeps (`<state dir>/fleet.status`, `rk.engine.fleet_line`).

`⇄ buildbox ●3○1 gpu1✗ lab?`: per host its name, then its agents by state (`●` active,
`✋` waiting, `⛔` limited, `○` idle; a state none is in is left out, no agent at all
is `0`); `✗` a host whose last look failed (down, or no rk answered); `?` a host with no
answer younger than the record's `stale_after` (the ticker stopped asking, or has not
asked yet): old counts are never shown as live. Past `MAX_NAMED` hosts the live ones are
summed (`⇄18 ●57○23`) and only the others are named.

The status line runs this every few seconds, so, as `rk.core.channels.glance`, it
imports nothing; every piece of text is built from numbers and host names (a
lowercase word, checked again here: a record that names another thing shows nothing
of it).
"""

from __future__ import annotations

from rk.core.channels.glance import COLOURS, tmux_text
from rk.core.pane.state_words import ACTIVE, IDLE, LIMITED, WAITING

#: The record's file, under the state dir.
RECORD = "fleet.status"
#: Each state's mark, in the order shown.
MARKS = ((ACTIVE, "●"), (WAITING, "✋"), (LIMITED, "⛔"), (IDLE, "○"))
#: The colour of a state's count (tmux style names; the rest in the bar's own colour).
STATE_COLOURS = {WAITING: COLOURS[WAITING], LIMITED: COLOURS[LIMITED]}
LIVE, DOWN, STALE = "live", "down", "stale"
#: Seconds after which a host's counts are stale when the record does not say.
STALE_AFTER = 90
#: Hosts named one by one; past this many, the live ones are summed.
MAX_NAMED = 5
LEAD = "⇄"


class HostGlance:
    """One host as the line shows it: live (with its counts), down (with why), or stale."""

    __slots__ = ("counts", "name", "problem", "state")

    def __init__(self, name: str, state: str, counts: dict[str, int] | None = None, problem: str = "") -> None:
        self.name, self.state, self.problem = name, state, problem
        self.counts = counts if counts is not None else {}

    def _key(self) -> tuple[str, str, tuple[tuple[str, int], ...], str]:
        return (self.name, self.state, tuple(sorted(self.counts.items())), self.problem)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostGlance) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"HostGlance{self._key()!r}"


def _name(value: object) -> bool:
    """A host name as `rk.core.fleet.hosts.NAME` has it (no regex here: it costs an import)."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= 32
        and value.isascii()
        and value[0].isalnum()
        and value == value.lower()
        and all(c.isalnum() or c in "-_" for c in value)
    )


def _int(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


def hosts_of(record: dict[str, object] | None, now: int) -> list[HostGlance]:
    """The hosts of the ticker's record (none when there is no record), by name."""
    if not record or not isinstance(record.get("hosts"), dict):
        return []
    stale_after = _int(record.get("stale_after")) or STALE_AFTER
    raw = record["hosts"]
    assert isinstance(raw, dict)
    out = []
    for name in sorted(n for n in raw if _name(n)):
        item = raw[name]
        if isinstance(item, dict):
            out.append(host_of(name, item, now, stale_after))
    return out


def host_of(name: str, item: dict[str, object], now: int, stale_after: int) -> HostGlance:
    """Live when its last answer is younger than `stale_after`; down when its last look,
    younger than that and not older than the last answer, failed; else stale."""
    at, tried, problem = _int(item.get("at")), _int(item.get("tried")), item.get("problem")
    if isinstance(problem, str) and problem and tried >= at and now - tried <= stale_after:
        return HostGlance(name, DOWN, problem=problem)
    if at and now - at <= stale_after:
        counts = item.get("counts")
        got = {state: _int(counts.get(state)) for state, _ in MARKS} if isinstance(counts, dict) else {}
        return HostGlance(name, LIVE, got)
    return HostGlance(name, STALE)


def _counts_text(counts: dict[str, int]) -> list[tuple[str, str]]:
    """(colour, text) of each state with agents in it; `0` when none has any."""
    pieces = [
        (STATE_COLOURS.get(state, "default"), f"{mark}{counts[state]}") for state, mark in MARKS if counts.get(state)
    ]
    return pieces or [("default", "0")]


def parts(hosts: list[HostGlance]) -> list[tuple[str, str]]:
    """(colour, text) pieces of the fleet part ([] with no hosts); a space goes before
    each piece whose text starts with a host name (and before the first count)."""
    if not hosts:
        return []
    if len(hosts) <= MAX_NAMED:
        out: list[tuple[str, str]] = [("default", LEAD)]
        for host in hosts:
            out += _host_parts(host)
        return out
    live = [h for h in hosts if h.state == LIVE]
    summed = {state: sum(h.counts.get(state, 0) for h in live) for state, _ in MARKS}
    out = [("default", f"{LEAD}{len(live)}"), (" ", "")]
    out += _counts_text(summed)
    for host in hosts:
        if host.state != LIVE:
            out += _host_parts(host)
    return out


def _host_parts(host: HostGlance) -> list[tuple[str, str]]:
    if host.state == DOWN:
        return [(" ", ""), (COLOURS["down"], f"{host.name}✗")]
    if host.state == STALE:
        return [(" ", ""), (COLOURS["held"], f"{host.name}?")]
    return [(" ", ""), ("default", f"{host.name} "), *_counts_text(host.counts)]


def plain(hosts: list[HostGlance]) -> str:
    return "".join(" " if colour == " " else text for colour, text in parts(hosts))


def tmux(hosts: list[HostGlance]) -> str:
    """The fleet part in tmux markup ("" with no hosts), the style reset after."""
    pieces = parts(hosts)
    if not pieces:
        return ""
    out, current = [], "default"
    for colour, text in pieces:
        if colour == " ":
            out.append(" ")
            continue
        if colour != current:
            out.append("#[default]" if colour == "default" else f"#[fg={colour}]")
            current = colour
        out.append(tmux_text(text))
    return "".join(out) + "#[default]"


def to_list(hosts: list[HostGlance]) -> list[dict[str, object]]:
    """The JSON twin: one object per host (its counts only when live)."""
    return [
        {
            "host": h.name,
            "state": h.state,
            **({"agents": dict(h.counts)} if h.state == LIVE else {}),
            "problem": h.problem,
        }
        for h in hosts
    ]

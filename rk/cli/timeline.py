"""`rk cron simulate`: scripted pane states in, a terminal timeline out.

The explainer's animated panels as a command: give an entry (from the file or
from schedule flags), a script of the target's states (`0 idle; 10m active;
25m idle`), optionally other panes (for wake_on), and a duration; the real
`due()` and policies run tick by tick (`rk.core.schedule.simulate`) and the result is drawn
as a state strip and an event row, then listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rk.core.pane.state import AgentState

if TYPE_CHECKING:
    from rich.console import Group

import math
from dataclasses import dataclass
from datetime import datetime, tzinfo

from rk.core.durations import DurationError, format_duration, parse_duration
from rk.core.errors import ExitStatus, RkError
from rk.core.log.delivery import Status, status_of
from rk.core.pane.facts import LIMITED
from rk.core.schedule.simulate import DIALOG, DRAFT, GONE, PAUSE, RESUME, SHELL, UNKNOWN, Simulation, StateChange

STATES = (*AgentState, DRAFT, DIALOG, SHELL, UNKNOWN, GONE, PAUSE, RESUME)

#: state → (glyph, style) for the strip
STATE_GLYPH = {
    AgentState.IDLE: ("▁", "green"),
    AgentState.ACTIVE: ("█", "yellow"),
    AgentState.WAITING: ("▆", "red"),
    LIMITED: ("L", "magenta"),
    DRAFT: ("d", "cyan"),
    DIALOG: ("?", "red"),
    SHELL: ("$", "dim"),
    UNKNOWN: ("·", "dim"),
    GONE: (" ", ""),
}

#: outcome status → (glyph, style, rank); a column shows its highest-ranked event
EVENT_GLYPH = {
    Status.DELIVERED: ("▲", "bold green", 5),
    Status.SKIPPED_BUSY: ("s", "yellow", 4),
    Status.SKIPPED_LIMITED: ("l", "magenta", 4),
    Status.SKIPPED_QUIET: ("q", "blue", 3),
    Status.SKIPPED_PAUSED: ("p", "blue", 3),
    Status.HELD_QUIET: ("w", "blue", 3),
    Status.HELD_EXPIRED: ("x", "red", 4),
    Status.MISSED: ("m", "magenta", 4),
    Status.RATE_CAPPED: ("c", "red", 4),
    Status.SKIPPED_ABSENT: ("a", "red", 4),
    Status.NOTIFIED_ABSENT: ("n", "red", 4),
    Status.RESPAWNED: ("r", "cyan", 4),
    Status.FAILED: ("!", "bold red", 6),
    Status.SKIPPED_CAP: ("C", "yellow", 4),  # max_per_day (rk.core.cost.caps)
    Status.RETIRED: ("R", "cyan", 4),  # max_total
    Status.DORMANT: ("z", "magenta", 4),  # no answer to N prompts (rk.core.schedule.dormant)
    "hold": ("h", "blue", 2),
}


class ScriptError(RkError, ValueError, status=ExitStatus.USAGE):
    """A state script that cannot be read."""


def parse_script(text: str, pane: str, start: int) -> list[StateChange]:
    """`"0 idle; 10m active; 25m idle"` → changes of `pane`, offsets from `start`."""
    changes = []
    for part in text.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        words = part.split()
        if len(words) != 2:
            raise ScriptError(f"bad state step {part!r}: want '<offset> <state>', e.g. '10m active'")
        offset, state = words
        try:
            seconds = 0 if offset in ("0", "+0") else parse_duration(offset.lstrip("+"))
        except DurationError as exc:
            raise ScriptError(f"bad offset {offset!r}: {exc}") from None
        if state not in STATES:
            raise ScriptError(f"bad state {state!r}: use {', '.join(STATES)}")
        changes.append(StateChange(start + seconds, pane, state))
    if not changes:
        raise ScriptError("empty state script")
    return changes


@dataclass(frozen=True)
class Column:
    at: int
    state: str
    event: str  #: "" or a key of EVENT_GLYPH


def columns(sim: Simulation, pane: str, start: int, end: int, width: int) -> tuple[list[Column], int]:
    """Bucket the run into at most `width` columns; returns (columns, seconds per column)."""
    span = max(1, end - start)
    ticks = [t for t, _ in sim.strip]
    step = max(1, math.ceil(len(ticks) / max(1, width))) if ticks else 1
    tick = (ticks[1] - ticks[0]) if len(ticks) > 1 else span
    per = step * tick
    cols = []
    for i in range(0, len(ticks), step):
        lo = ticks[i]
        hi = lo + per
        state = sim.strip[i][1].get(pane, GONE)
        best, rank = "", 0
        for ev in sim.events:
            if lo <= ev.at < hi and ev.kind in ("line", "hold"):
                key = "hold" if ev.kind == "hold" else status_of(ev.outcome)
                r = EVENT_GLYPH.get(key, ("?", "", 1))[2]
                if r > rank:
                    best, rank = key, r
        cols.append(Column(lo, state, best))
    return cols, per


def offset_label(seconds: int) -> str:
    return "+" + format_duration(seconds)


def render(
    sim: Simulation, *, title: str, pane: str, others: list[str], start: int, end: int, width: int, zone: tzinfo
) -> Group:
    """A rich renderable (a Group of Text lines)."""
    from rich.console import Group
    from rich.text import Text

    label_w = 7
    cols, per = columns(sim, pane, start, end, max(20, width - label_w - 2))
    lines = [Text(title, style="bold")]
    axis = Text(" " * label_w)
    ruler = ""
    every = max(1, 12)
    for i, col in enumerate(cols):
        if i % every == 0:
            mark = offset_label(col.at - start)
            ruler += mark.ljust(every)[:every] if i + every <= len(cols) else mark[: len(cols) - i]
    axis.append(ruler[: len(cols)], style="dim")
    lines.append(axis)
    for p in [pane, *others]:
        strip = Text(f"{p:<{label_w}}")
        pcols, _ = columns(sim, p, start, end, max(20, width - label_w - 2))
        for col in pcols:
            glyph, style = STATE_GLYPH.get(col.state, ("?", ""))
            strip.append(glyph, style=style)
        lines.append(strip)
    if sim.paused:
        paused = Text(f"{'paused':<{label_w}}")
        for col in cols:
            on = col.at in sim.paused
            paused.append("‖" if on else " ", style="bold blue")
        lines.append(paused)
    row = Text(f"{'fires':<{label_w}}")
    for col in cols:
        if col.event:
            glyph, style, _ = EVENT_GLYPH.get(col.event, ("?", "", 0))
            row.append(glyph, style=style)
        else:
            row.append(" ")
    lines.append(row)
    lines.append(
        Text(
            f"one column = {format_duration(per)}; ▁ idle █ active ▆ waiting L limited d draft ? dialog "
            "$ shell · unknown; ▲ delivered h held s skipped-busy l skipped-limited a skipped-absent "
            "q skipped-quiet p skipped-paused w held-quiet m missed x held-expired ! failed "
            "C skipped-cap R retired z dormant; ‖ paused",
            style="dim",
        )
    )
    lines.append(Text(""))
    events = [ev for ev in sim.events if ev.kind in ("line", "hold")]
    i = 0
    while i < len(events):
        ev = events[i]
        j = i + 1
        if ev.kind == "hold":  # a run of holds of one fire is one line
            while (
                j < len(events)
                and events[j].kind == "hold"
                and events[j].due_at == ev.due_at
                and events[j].entry == ev.entry
            ):
                j += 1
        when = datetime.fromtimestamp(ev.at, zone).strftime("%H:%M:%S")
        if ev.kind == "hold":
            last = events[j - 1]
            what = f"held while busy until {offset_label(last.at - start)} ({j - i} polls)"
        else:
            what = ev.outcome + (" (skipped-unchanged if the screen shows nothing new)" if ev.if_unchanged else "")
        extra = f"  rung {ev.rung}" if ev.rung else ""
        due = f"  due {offset_label(ev.due_at - start)}" if ev.due_at and ev.due_at != ev.at else ""
        lines.append(Text(f"{offset_label(ev.at - start):>9}  {when}  {ev.reason or '-':<8} {what}{extra}{due}"))
        i = j
    summary = summarize(sim)
    lines.append(Text(""))
    lines.append(Text(summary, style="bold"))
    return Group(*lines)


def summarize(sim: Simulation) -> str:
    counts: dict[str, int] = {}
    holds = 0
    for ev in sim.events:
        if ev.kind == "hold":
            holds += 1
        elif ev.kind == "line":
            key = status_of(ev.outcome)
            counts[key] = counts.get(key, 0) + 1
    parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    return f"{sum(counts.values())} log lines ({parts or 'none'}), {holds} holds"

"""`rk agent await`'s decision: given what has been seen of the target panes so far,
is the wait over, and with which pane and condition?

The shell (`rk.channels.waiter`) feeds it observations — a snapshot of the panes read
from tmux, or a state change from the journal — and asks after each one. A
pane's condition comes from its state and how its last turn ended:
`gone` (no longer there), `limited`, `failed` / `interrupted` (at rest, and the
turn end is this rest's), `idle`, `waiting`. With `after_active` a pane counts
only once it was seen `active` (the turn just started must have run). A pane
that reached a condition stays done (for `all`: every worker finished, whatever
it does next).

`gone` ends any wait at once, whatever `--until` asked for: a pane that closed,
whose agent exited, whose server died, or that is no longer the pane the wait
began on (the server restarted, so `%1` names another pane; or the pane runs
another process) can never reach what was asked. The first look at a target
fixes its identity (server start time and pid, pane pid); a later look that
differs is that pane gone, with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from rk.core.pane.identity import UNKNOWN_SERVER, ServerIdentity
from rk.core.pane.state import AgentState
from rk.core.pane.turn import FAILED, INTERRUPTED

GONE = "gone"
CONDITIONS = (AgentState.IDLE, AgentState.WAITING, AgentState.LIMITED, FAILED, INTERRUPTED, GONE)
#: The most specific first: a failed turn is also idle, and is reported as failed
#: when both are asked for.
PRECEDENCE = (GONE, AgentState.LIMITED, FAILED, INTERRUPTED, AgentState.IDLE, AgentState.WAITING)
ANY = "any"
ALL = "all"


def parse_until(text: str) -> frozenset[str]:
    """`idle,waiting,…` → the set of conditions; ValueError with a one-line reason."""
    names = [n.strip() for n in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise ValueError(f"--until {text!r}: list conditions separated by commas ({', '.join(CONDITIONS)})")
    unknown = [n for n in names if n not in CONDITIONS]
    if unknown:
        raise ValueError(f"--until: unknown condition {unknown[0]!r} (use {', '.join(CONDITIONS)})")
    return frozenset(names)


@dataclass(frozen=True)
class PaneView:
    """One pane as seen once: its state (epoch: since when) and its last turn's end."""

    pane: str
    present: bool = True
    state: str = ""
    since: int = 0
    turn_end: str = ""
    turn_end_at: int = 0
    pid: int = 0  #: the pane's process (0: not known, as in a journal line)
    server: ServerIdentity = UNKNOWN_SERVER
    why: str = ""  #: why a pane that is not present is gone


#: The reasons a pane is gone.
CLOSED = "pane closed"
SERVER_GONE = "tmux server gone"


def gone(pane: str, why: str) -> PaneView:
    return PaneView(pane, present=False, why=why)


def moved(first: PaneView, now: PaneView) -> str:
    """Why the pane seen `now` is not the one first seen ("" when it is, or unknown)."""
    if first.server.differs(now.server):
        return f"tmux server restarted ({first.server.describe()}; now {now.server.describe()})"
    if first.pid and now.pid and first.pid != now.pid:
        return f"pane runs another process (pid {first.pid}, now {now.pid})"
    return ""


def conditions_of(view: PaneView) -> frozenset[str]:
    """Every condition the pane is in."""
    if not view.present:
        return frozenset({GONE})
    if view.state in (AgentState.LIMITED, AgentState.WAITING):
        return frozenset({view.state})
    if view.state == AgentState.IDLE:
        out: set[str] = {AgentState.IDLE}
        if view.turn_end in (FAILED, INTERRUPTED) and view.turn_end_at >= view.since:
            out.add(view.turn_end)  # this rest's own end (an older one belongs to an older turn)
        return frozenset(out)
    return frozenset()


@dataclass(frozen=True)
class Reached:
    """A pane that met a wanted condition, and how it looked then."""

    condition: str
    view: PaneView

    def to_dict(self) -> dict[str, object]:
        v = self.view
        return {
            "pane": v.pane,
            "condition": self.condition,
            "state": v.state if v.present else "",
            "since": v.since or None,
            "turn_end": v.turn_end or None,
            "turn_end_at": v.turn_end_at or None,
            "why": v.why or None,
        }


@dataclass(frozen=True)
class Spec:
    """What is awaited."""

    until: frozenset[str]
    after_active: bool = False
    mode: str = ANY


@dataclass(frozen=True)
class Progress:
    """What the wait has seen so far, per target pane."""

    targets: tuple[str, ...]
    seen_active: frozenset[str] = frozenset()
    reached: Mapping[str, Reached] = field(default_factory=dict)
    first: Mapping[str, PaneView] = field(default_factory=dict)  #: each target's first look with its identity


def start(targets: Iterable[str]) -> Progress:
    return Progress(tuple(dict.fromkeys(targets)))


def observe(spec: Spec, progress: Progress, views: Iterable[PaneView]) -> Progress:
    """The progress after seeing `views` (in the order seen; panes not targeted are ignored)."""
    seen = set(progress.seen_active)
    reached = dict(progress.reached)
    first = dict(progress.first)
    for view in views:
        if view.pane not in progress.targets or view.pane in reached:
            continue
        if view.present and (view.pid or view.server.known):
            why = moved(first.setdefault(view.pane, view), view)
            view = gone(view.pane, why) if why else view
        if not view.present:
            reached[view.pane] = Reached(GONE, view)  # whatever was asked: it can never come
            continue
        if view.state == AgentState.ACTIVE:
            seen.add(view.pane)
            continue
        if spec.after_active and view.pane not in seen:
            continue
        hit = [c for c in PRECEDENCE if c in spec.until and c in conditions_of(view)]
        if hit:
            reached[view.pane] = Reached(hit[0], view)
    return replace(progress, seen_active=frozenset(seen), reached=reached, first=first)


def departures(progress: Progress, views: Iterable[PaneView]) -> list[PaneView]:
    """The views of targets that are gone or moved: observed before the journal, whose
    lines carry no identity (after a restart they may speak of another pane's `%1`)."""
    return [
        v for v in views if v.pane in progress.targets and (not v.present or moved(progress.first.get(v.pane, v), v))
    ]


def outcome(spec: Spec, progress: Progress) -> list[Reached] | None:
    """The panes that end the wait (in target order), or None while it goes on:
    with `any`, the first pane that reached a condition; with `all`, every pane,
    or at once the gone ones (first) and those done so far when a pane is gone."""
    done = [progress.reached[p] for p in progress.targets if p in progress.reached]
    lost = [r for r in done if r.condition == GONE]
    if lost and spec.mode == ALL:
        return lost + [r for r in done if r.condition != GONE]
    if spec.mode == ALL:
        return done if progress.targets and len(done) == len(progress.targets) else None
    return done[:1] or None

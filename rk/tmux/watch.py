"""One watch step on one tmux server: glimpse every pane, capture the active ones whose
frame may have changed, and let the tick's own look write a turn's end.

The decisions are `rk.core.pane.watch`'s. A step is one `list-panes` for the
server; when some pane is to be captured, one more listing with those panes'
process trees read (`Server.pane_facts`: a pane must be an agent's for its
screen to count) and one tmux process for all their captures. A capture that
says the turn is over is handed to `rk.tmux.observe.look_now`, which captures
again after a settling pause, writes the state, the turn end and the state
journal (waking every `rk agent await`), exactly as a tick's look does. The
watch only reads: it never types into a pane.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import tzinfo

from rk.core.pane.facts import PaneFact, PaneKind
from rk.core.pane.watch import FIELDS, Glimpse, Seen, any_active, glimpse_of, remembered, to_capture, turn_over
from rk.tmux.observe import look_now, read_screen
from rk.tmux.server import Command, Server, TmuxError, chain, head_format, split_head


def further_source(pane: PaneFact) -> bool | None:
    """A per-CLI source of the pane's state consulted before its capture: True when it
    says the turn is over (the look is taken at once, and its capture confirms it),
    None when it has no word (the capture decides). Claude Code's session registry
    is the one source today, read only for a pane whose process is Claude's and
    validated against that process (`rk.store.claude_sessions`); it never says
    False, as a `busy` record outlives the main turn while a background agent runs."""
    if pane.agent != "claude":
        return None
    from rk.core.pane.registry import ends_turn
    from rk.store import claude_sessions

    return True if ends_turn(claude_sessions.verdict_for(pane, os.environ), pane.state) else None


@dataclass
class StepReport:
    """What one step did: whether any pane is active (so the watch goes on), the panes
    captured, the corrections written (pane, new state), and errors."""

    active: bool = False
    captured: list[str] = field(default_factory=list)
    corrected: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def looks(server: Server, ids: Collection[str]) -> dict[str, tuple[str, str]]:
    """(title, styled screen) of each pane in `ids`, all in one tmux process; a pane
    gone meanwhile fails the batch, and then each is looked at alone (a gone one left out)."""
    mark, fields = os.urandom(6).hex(), ("pane_id", "pane_title")
    head = head_format(fields, mark)
    commands = [c for pane in ids for c in (Command.display(pane, head), Command.capture(pane, styled=True))]
    out: dict[str, tuple[str, str]] = {}
    try:
        text = server.run(*chain(*commands))
        for record in text.split(f"[{mark}]")[1:]:
            row, screen = split_head(f"[{mark}]" + record, fields, mark)
            out[row["pane_id"]] = (row["pane_title"], screen)
        return {pane: out[pane] for pane in ids if pane in out}
    except TmuxError:
        out = {}
    for pane in ids:
        try:
            out[pane] = server.look(pane)
        except TmuxError:
            continue
    return out


class Watch:
    """The watch of one server's agent panes (`only`: of those panes alone, as `rk agent
    await` watches its targets), with what it saw of each at its last capture."""

    def __init__(
        self,
        server: Server,
        zone: tzinfo,
        only: Collection[str] | None = None,
        source: Callable[[PaneFact], bool | None] = further_source,
    ) -> None:
        self.server = server
        self.zone = zone
        self.only = None if only is None else frozenset(only)
        self.source = source
        self.seen: dict[str, Seen] = {}
        self.others: dict[str, str] = {}  #: panes found not an agent's, with the state they had then
        #: each pane's facts (its kind judged from its process tree) while its process and state stay
        self.facts: dict[str, tuple[str, PaneFact]] = {}

    def step(self, now: int, wall: int | None = None) -> StepReport:
        """Glimpse, capture what may have changed, write what ended. `now`: rk's clock;
        `wall`: the system's (tmux's), by default the current second."""
        wall = int(time.time()) if wall is None else wall
        report = StepReport()
        try:
            rows = self.server.listing("list-panes", FIELDS)
        except TmuxError as exc:
            report.errors.append(str(exc))
            return report
        glimpses = [g for g in map(glimpse_of, rows) if self.only is None or g.pane_id in self.only]
        self.seen = remembered(self.seen, glimpses)
        self.others = {p: state for p, state in self.others.items() if p in self.seen}
        self.facts = {p: known for p, known in self.facts.items() if p in self.seen}
        report.active = any_active(glimpses, self.others)
        ids = to_capture(glimpses, self.seen, now, wall)
        if not ids:
            return report
        by_id = {g.pane_id: g for g in glimpses}
        try:
            facts = self._facts([by_id[pane] for pane in ids])
        except TmuxError as exc:
            report.errors.append(str(exc))
            return report
        asked = {pane: self.source(fact) for pane, fact in facts.items() if fact.kind == PaneKind.AGENT}
        screens = looks(self.server, [pane for pane, word in asked.items() if word is None])
        for pane in ids:
            self.seen[pane] = Seen(by_id[pane].state, by_id[pane].frame, wall)
            fact, word = facts.get(pane), asked.get(pane)
            if fact is not None and fact.kind != PaneKind.AGENT:
                self.others[pane] = by_id[pane].state
            if fact is None or pane not in asked or word is False:
                continue  # gone, not an agent's, or still running by another source's word
            if word is None:
                if pane not in screens:
                    continue
                report.captured.append(pane)
                title, styled = screens[pane]
                if not turn_over(fact, read_screen(fact, styled, title, now, self.zone), now):
                    continue
            after = look_now(self.server, fact, now, self.zone)
            if after.state != fact.state or after.epoch != fact.epoch:
                report.corrected.append((pane, after.state))
        return report

    def _facts(self, glimpses: list[Glimpse]) -> dict[str, PaneFact]:
        """The facts of these panes: as last read while a pane's process and state are the
        same, else read now (one listing, their process trees) for those alone."""
        stale = {g.pane_id for g in glimpses if self.facts.get(g.pane_id, ("", None))[0] != g.who}
        if stale:
            who = {g.pane_id: g.who for g in glimpses}
            for fact in self.server.pane_facts(concerned=lambda _: stale):
                if fact.pane_id in stale:
                    self.facts[fact.pane_id] = (who[fact.pane_id], fact)
        return {g.pane_id: self.facts[g.pane_id][1] for g in glimpses if g.pane_id in self.facts}

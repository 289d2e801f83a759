"""The far end's roster of a server's panes: how a pane that vanishes becomes a line
another host's wake can read.

The state journal records states, not panes: a pane closed (its agent exited, its
window killed, the tmux server gone) writes nothing. So the far end of a follow
(`rk.channels.journal_follow`) looks at the server's panes at each turn of its loop
and keeps what it saw in a roster on disk (`rk.store.roster`): each pane with its
window's role and name, and whether it had an agent state (a *known* pane, as a
wake on this host counts only panes with a state). A known pane that the next look
no longer finds (or every known pane, when the server is another one or none) has
vanished: the far end journals `gone` for it, and that line reaches the watcher
with a mark like any other, so a pane that vanished while no link was up wakes
once, at the next look. The roster is the host's, not a link's: two watchers
share it, and a second look finds nothing new.

A vanished pane's role is kept (the newest `KEEP_GONE`): its `gone` line is stamped
with the role it had. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rk.core.schedule.wake import pane_order

#: Vanished panes whose role is kept, newest last.
KEEP_GONE = 256


@dataclass(frozen=True)
class Seen:
    """One pane as a look saw it."""

    role: str = ""  #: its window's role
    window: str = ""  #: its window's name
    known: bool = False  #: it had an agent state


@dataclass(frozen=True)
class Roster:
    """What the newest look saw of one tmux server."""

    server: str = ""  #: the server's identity (`pid:start_time`); "" when none ran or none looked
    panes: Mapping[str, Seen] = field(default_factory=dict)
    #: vanished panes → the role they had, oldest first
    gone: Mapping[str, str] = field(default_factory=dict)

    def stamp(self, pane: str) -> tuple[str, str]:
        """The role and window name a line of `pane` is stamped with: as seen now, or
        the role it had when it vanished (and no window)."""
        seen = self.panes.get(pane)
        if seen is not None:
            return seen.role, seen.window
        return self.gone.get(pane, ""), ""


def vanished(old: Roster, look: Roster) -> list[str]:
    """The known panes of `old` that `look` does not find (all of them when the server
    is another one, or none runs), in tmux's order; none before a first look."""
    if not old.server:
        return []
    same = old.server == look.server
    out = [p for p, seen in old.panes.items() if seen.known and not (same and p in look.panes)]
    return sorted(out, key=pane_order)


def updated(old: Roster, look: Roster, gone: list[str]) -> Roster:
    """The roster after `look`, the `gone` panes' roles kept."""
    kept = {p: r for p, r in old.gone.items() if p not in look.panes and p not in gone}
    kept |= {p: old.panes[p].role for p in gone if p in old.panes}
    newest = list(kept.items())[-KEEP_GONE:]
    return Roster(look.server, dict(look.panes), dict(newest))

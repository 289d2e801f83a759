"""What the far end of a journal follow adds to the lines it streams.

The journal records states; another host's wake needs more that only this host
knows: the panes that vanished (no line of their own), who started the turn a
line ends, and the role of the pane's window. `FarEnd` gives each:

- `look()`: the tmux server's panes, one `list-panes` per turn of the follow's
  loop; a known pane no longer there is journaled `gone` (`rk.store.roster`),
  and then streams like any line, with its mark;
- `stamp()`: each line with `by` (`rk.core.fleet.turns`, over this host's delivery
  log), and `role` and `window` as the newest look saw them (a vanished pane: the
  role it had). A line that would be a human's while a delivery into its pane is
  in flight waits (keeping the order of the lines after it) until that delivery
  is logged, or `LOG_LAG` after its turn began: `holding` says so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path

from rk.core.environ import ROLE_OPTION, STATE_OPTION
from rk.core.fleet.roster import Roster, Seen
from rk.core.fleet.turns import Turns
from rk.core.log.cause import HUMAN, rk_deliveries
from rk.core.pane.facts import parse_state_option
from rk.core.pane.state import AgentState
from rk.host import private
from rk.host.files import read_nofollow
from rk.host.lock import LockHeld
from rk.store import delivery_log
from rk.store.config import ServerFiles
from rk.store.journal_feed import Marked, before
from rk.store.roster import take_look
from rk.tmux.server import Server, TmuxError

#: What a look lists of each pane (`pid` and `start_time`: which server's life the ids belong to).
FIELDS = ("pane_id", ROLE_OPTION, STATE_OPTION, "window_name", "pid", "start_time")
#: Bytes of an intent journal read at most (one is a few hundred).
MAX_INTENT = 64 * 1024
#: Seconds between two looks at most (a busy agent's hooks turn the loop many times a second).
LOOK_EVERY = 0.25


def look_at(server: Server) -> Roster | None:
    """The server's panes now; an empty roster when no server runs; None when tmux did
    not answer (no look: nothing is called gone on a doubt)."""
    if not server.is_live():
        return Roster()
    try:
        rows = server.listing("list-panes", FIELDS)
    except TmuxError:
        return None
    if not rows:
        return None
    panes = {
        r["pane_id"]: Seen(r[ROLE_OPTION], r["window_name"], bool(parse_state_option(r[STATE_OPTION]).state))
        for r in rows
    }
    return Roster(f"{rows[0]['pid']}:{rows[0]['start_time']}", panes)


class FarEnd:
    """One follow's looks and stamps, for server `slug` of this host."""

    def __init__(self, state_dir: str, slug: str, start: tuple[int, int, int], env: Mapping[str, str]) -> None:
        self.state_dir, self.slug, self.env = state_dir, slug, env
        self.server = Server(name=slug, env=env)
        self.files = ServerFiles(Path(state_dir), slug)
        self.log = self.files.log
        self.logs = delivery_log.LiveLogCache()
        self.turns = Turns(before(state_dir, slug, start))
        self.roster = Roster()
        self.waiting: list[Marked] = []  #: lines read, not yet streamed (the first one waits for the log)
        self.taken = 0  #: of them, how many the turns took in
        self.looked = -LOOK_EVERY  #: when the newest look was taken (monotonic)

    @property
    def holding(self) -> bool:
        return bool(self.waiting)

    def in_flight(self) -> set[str]:
        """The panes a delivery of this server types into now (its intent journaled, its
        outcome not yet logged: `rk.act.intents`)."""
        out = set()
        for name in _names(self.files.intents):
            try:
                record = json.loads(read_nofollow(self.files.intents / name, MAX_INTENT))
            except (OSError, ValueError):
                continue
            if isinstance(record, dict) and isinstance(record.get("target"), str):
                out.add(record["target"])
        return out

    def look(self, now: int) -> None:
        """Look at the panes (unless one was taken a moment ago); journal the known ones
        gone since the last look."""
        if time.monotonic() - self.looked < LOOK_EVERY:
            return
        self.looked = time.monotonic()
        seen = look_at(self.server)
        if seen is None:
            return
        try:
            self.roster, _ = take_look(self.state_dir, self.slug, seen, now, self.env)
        except (LockHeld, OSError):
            return  # the next turn of the loop looks again

    def stamp(self, lines: list[Marked], now: int) -> list[Marked]:
        """The lines that may go now, in order, each stamped; the rest wait."""
        self.waiting += lines
        stamps: dict[str, list[int]] | None = None
        ready: list[Marked] = []
        for fields, at in self.waiting:
            if self.taken == len(ready):
                self.turns.add(fields)
                self.taken += 1
            pane, to = str(fields["pane"]), str(fields["to"])
            by = ""
            if to != AgentState.ACTIVE:
                stamps = stamps if stamps is not None else rk_deliveries(self.logs.read(self.log))
                by = self.turns.by(pane, to, stamps)
                if by == HUMAN and not self.turns.settled(pane, by, now, pane in self.in_flight()):
                    break
            role, window = self.roster.stamp(pane)
            extra = {"by": by, "role": role, "window": window}
            ready.append(({**fields, **{k: v for k, v in extra.items() if v}}, at))
        del self.waiting[: len(ready)]
        self.taken -= len(ready)
        return ready


def _names(directory: Path) -> list[str]:
    try:
        return [n for n in private.listdir(directory) if n.endswith(".json")]
    except (OSError, ValueError):
        return []

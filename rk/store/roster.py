"""The far end's roster of a server's panes on disk, and the `gone` lines it journals.

`<state dir>/roster/<slug>.json` (0600, in a 0700 directory, never through a
symbolic link) holds what the newest look saw (`rk.core.fleet.roster`). A look
is taken under `<slug>.lock`, so two far ends (two watching hosts) never journal
one vanish twice; and a pane whose newest journal line is already `gone` (a far
end killed between the journal and the roster) is not journaled again.
An unreadable roster is an empty one: the next look starts afresh.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rk.core.fleet.roster import Roster, Seen, updated, vanished
from rk.core.log import states as journal
from rk.core.log.cause import VANISHED
from rk.host import lock, private
from rk.host.files import atomic_write, read_nofollow
from rk.store import state_journal

ROSTER_DIR = "roster"
#: The journal's source for a vanish: the tmux server's listing said it.
SOURCE = "tmux"
#: Seconds a look waits for another far end's.
LOCK_WAIT = 5.0
MAX_BYTES = 1 << 20


def roster_path(state_dir: str, slug: str) -> Path:
    return Path(state_dir, ROSTER_DIR, f"{slug}.json")


def load(path: Path) -> Roster:
    try:
        doc = json.loads(read_nofollow(path, MAX_BYTES))
        panes = {str(p): Seen(str(r), str(w), bool(k)) for p, (r, w, k) in doc["panes"].items()}
        return Roster(str(doc["server"]), panes, {str(p): str(r) for p, r in doc["gone"]})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Roster()


def _dump(roster: Roster) -> bytes:
    panes = {p: [s.role, s.window, s.known] for p, s in roster.panes.items()}
    return json.dumps({"server": roster.server, "panes": panes, "gone": list(roster.gone.items())}).encode()


def take_look(state_dir: str, slug: str, look: Roster, now: int, env: Mapping[str, str]) -> tuple[Roster, list[str]]:
    """Journal `gone` for each known pane the look no longer finds; the roster after the
    look and the panes journaled. lock.LockHeld when another look held it too long."""
    path = roster_path(state_dir, slug)
    private.private_dir(path.parent)
    with lock.locked(path.with_suffix(".lock"), retry_every=0.02, retry_for=LOCK_WAIT):
        old = load(path)
        gone = vanished(old, look)
        said = _said_gone(state_dir, slug) if gone else set()
        journaled = [p for p in gone if p not in said]
        lines = b"".join(journal.render(now, pane, VANISHED, "", SOURCE) for pane in journaled)
        if lines and not state_journal.append(env, slug, lines):
            return old, []  # not written: the next look tries again
        new = updated(old, look, gone)
        if new != old:
            atomic_write(path, _dump(new))
    if journaled:
        state_journal.wake(env)
    return new, journaled


def _said_gone(state_dir: str, slug: str) -> set[str]:
    """The panes whose newest journal line says they are gone already."""
    lines, _ = state_journal.read_all(state_dir, slug)
    newest = {str(line["pane"]): str(line["to"]) for line in lines}
    return {pane for pane, to in newest.items() if to == VANISHED}

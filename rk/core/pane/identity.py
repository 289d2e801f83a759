"""Pane identity: which pane an entry or a delivery journal meant.

tmux numbers panes `%0`, `%1`, … afresh in every server, so after a restart
`%1` names another pane, often of another project. Within one server's life a
pane id is never reused, so the server (its start time and pid: the start
time alone is whole seconds, and a scripted restart takes less than one) and
the pane id name one pane. A respawned pane keeps its id and stays the same
pane; only its program changed, which the program checks judge.

A delivery journal speaks of one program, so it also names the pane's pid
(the process tmux started in it): a respawn between the crash and the
recovery is another program, never pressed Enter into.

Pure: the facts come from the tmux enumeration or the delivery frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rk.core.bounds import MAX_EPOCH, MAX_PID

#: The refusal (and `skipped-absent: …` detail) of a pane whose identity changed.
REPLACED = "pane replaced"
#: The outcome of a journal whose pane changed: dropped, nothing typed.
JOURNAL_DROPPED = "failed: interrupted; pane replaced, not recovered"
#: The journal's keys (`ServerIdentity`'s and the pane's pid).
JOURNAL_KEYS = ("server_started", "server_pid", "pane_pid")


@dataclass(frozen=True)
class ServerIdentity:
    """One tmux server's life: its `#{start_time}` and `#{pid}` (0: not known)."""

    started: int = 0
    pid: int = 0

    @property
    def known(self) -> bool:
        return bool(self.started or self.pid)

    def differs(self, other: ServerIdentity) -> bool:
        """True when a part both sides know differs (an unknown part is no evidence)."""
        return any(a and b and a != b for a, b in ((self.started, other.started), (self.pid, other.pid)))

    def describe(self) -> str:
        return f"server started {self.started}, pid {self.pid}"


UNKNOWN_SERVER = ServerIdentity()


def bounded(value: object, limit: int) -> int:
    """An identity number from a file: an int in 1…limit, else 0 (not known)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= limit:
        return 0
    return value


def journal_identity(started: int, server_pid: int, pane_pid: int) -> dict[str, int]:
    """The journal's identity fields (only the known ones)."""
    values = dict(zip(JOURNAL_KEYS, (started, server_pid, pane_pid), strict=True))
    return {k: v for k, v in values.items() if v}


def journal_moved(record: Mapping[str, object], now: ServerIdentity | None, pane_pid: int = 0) -> str:
    """Why the pane a journal `record` speaks of is not the pane there now ("" when it is,
    or when the journal predates identity). `now` None: the pane is gone."""
    started = bounded(record.get("server_started"), MAX_EPOCH)
    server_pid = bounded(record.get("server_pid"), MAX_PID)
    recorded_pane_pid = bounded(record.get("pane_pid"), MAX_PID)
    if not (started or server_pid or recorded_pane_pid):
        return ""  # written before identity: recovered as before
    pane = str(record.get("pane") or record.get("target") or "")
    if now is None:
        return f"pane {pane} is gone"
    if ServerIdentity(started, server_pid).differs(now):
        return f"the tmux server restarted ({ServerIdentity(started, server_pid).describe()}; now {now.describe()})"
    if recorded_pane_pid and pane_pid and recorded_pane_pid != pane_pid:
        return f"pane {pane} runs another process (pid {recorded_pane_pid}, now {pane_pid})"
    return ""

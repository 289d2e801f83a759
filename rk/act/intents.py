"""The at-most-once journal of delivery intents, and what a restart makes of one.

A delivery records, durably, each step before it takes it (`Intent`); a marker
exists while its text may sit unsubmitted in the pane (`pending_path`). A
restart that finds a journal decides from the pane what happened (`recover`)
and never types the prompt again if it may have gone in. Not to be confused
with the pane-state journal of `rk.store.state_journal`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rk.act.echo import Echo, enter_and_observe
from rk.act.keys import DEFAULT_BUFFER, DeadlineExceeded, InMode, Run, Timing, pane_lock, server_key
from rk.core.environ import is_pane_id
from rk.core.log.delivery import Outcome, Status
from rk.core.pane.identity import JOURNAL_DROPPED, journal_moved
from rk.host import lock, private
from rk.host.files import atomic_write
from rk.tmux.frame import Frame, frame_server
from rk.tmux.server import Server, TmuxError, format_number


@dataclass(frozen=True)
class Intent:
    """Where a delivery records, durably, what it is about to do: `paste` before the
    paste (with how often the needle showed), `enter` right before Enter (with the
    post-paste frame's fingerprint), `done` with the outcome. `record` holds the
    caller's own fields (entry, reason, ts). The caller removes the file once the
    outcome is in its log; a restart that finds one decides from the pane what
    happened (`recover`) and never types the prompt again if it may have gone in."""

    path: str
    record: dict[str, Any]

    def write(self, **fields: object) -> None:
        atomic_write(Path(self.path), (json.dumps({**self.record, **fields}, sort_keys=True) + "\n").encode("utf-8"))


def digest(text: str) -> str:
    """The payload's sha256, as typed: which prompt a journal speaks of, without the prompt."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def fingerprint(frame: Frame) -> str:
    """The post-paste frame as the `enter` step records it: a pane still showing it
    after a restart never took the Enter."""
    return hashlib.sha256(repr(frame.key()).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def pending_path(server: Server, pane: str) -> str:
    """A marker that exists while text may sit unsubmitted in the pane."""
    key = f"pending\0{server_key(server)}\0{pane}"
    return os.path.join(
        lock.lock_dir(), hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".pending"
    )


def mark_pending(marker: str) -> None:
    """Write the marker (this process's pid, 0600), never through a symbolic link."""
    private.write_file(marker, str(os.getpid()).encode())


def forget_pending(server: Server, pane: str) -> None:
    """Drop the marker of a delivery a crash cut short in `pane` without clearing the
    pane (its journal was dropped: the pane now is not the one it typed into)."""
    with contextlib.suppress(OSError):
        os.unlink(pending_path(server, pane))


def recover(server: Server, record: Mapping[str, Any], *, timing: Timing | None = None) -> tuple[str | None, str]:
    """Decide what an interrupted delivery did, from its journal `record` and the
    pane now: (the outcome to log, or None when nothing was typed and the fire may
    simply come again; a detail for humans).

    * `done`: the outcome it had.
    * `paste`: nothing was submitted. If the paste shows (the needle more often than
      before it), the text is ours alone and unsent: Enter submits it, once.
    * `enter`: the frame still equal to the post-paste one means the Enter never
      went in, so it is pressed now; any other frame may mean it did, and the
      prompt is never typed again.
    """
    phase = record.get("phase")
    if phase == "done":
        return str(record.get("outcome") or _failed_outcome("interrupted")), "recovered from the journal"
    pane, needle = str(record.get("pane", "")), str(record.get("needle", ""))
    timing = timing or Timing()
    if not is_pane_id(pane) or not needle or phase not in ("paste", "enter"):
        return (
            (None, "journal unreadable; nothing retyped")
            if phase != "enter"
            else (_failed_outcome("interrupted after Enter; not retyped"), "journal incomplete")
        )
    try:
        with pane_lock(server, pane, timing.lock_wait):
            with contextlib.suppress(OSError):
                os.unlink(pending_path(server, pane))  # handled here, not by a blind clear later
            run = Run(server, timing, DEFAULT_BUFFER)
            now = run.frame(pane, styled=True)
            moved = journal_moved(record, frame_server(now), format_number(now.field("pane_pid")))
            if moved:  # another server's or another program's pane: nothing is typed into it
                return JOURNAL_DROPPED, f"{moved}; nothing typed"
            if now.dead:
                raise TmuxError("pane dead")
            if now.in_mode:  # the human's: no Enter into it, and it is not cancelled
                raise TmuxError(f"pane in {now.mode}")
            echo = Echo.of(now, needle, False, before_paste=False)
            if phase == "paste":
                if now.norm.count(needle) <= int(record.get("before", 0) or 0) or not echo.holds(echo.look(run, pane)):
                    return None, "interrupted before the paste showed; nothing was submitted"
                shown = echo.look(run, pane)
                if enter_and_observe(run, pane, shown, echo)[0]:
                    return str(Status.DELIVERED), "recovered: the paste was there unsent and Enter submitted it"
                return _failed_outcome("interrupted after the paste; Enter did not take"), "our text may remain"
            if fingerprint(now) != record.get("pasted"):
                return str(Status.DELIVERED), "recovered: the pane moved after the Enter, so it went in; not retyped"
            if enter_and_observe(run, pane, echo.look(run, pane), echo)[0]:
                return str(Status.DELIVERED), "recovered: the Enter had not gone in; pressed once now"
            return _failed_outcome("interrupted before Enter; Enter did not take"), "our text may remain"
    except (TmuxError, DeadlineExceeded, InMode, lock.LockTimeout, OSError) as exc:
        if phase == "enter":
            return _failed_outcome("interrupted after the paste; the pane could not be read"), str(exc)
        return None, f"interrupted before the paste; the pane could not be read ({exc})"


def _failed_outcome(why: str) -> str:
    return str(Outcome(Status.FAILED, why))

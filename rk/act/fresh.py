"""The fresh step of a fire (`--fresh clear|compact`): type the agent CLI's own command,
verified like any delivery, and wait until the agent has finished it, before the payload.

What to type, and whether, is `rk.core.schedule.fresh`'s; here it is typed and watched.
The command goes through `rk.act.deliver.deliver` with the fire's own guard, so a
draft, a dialog, a mode or a busy agent refuse it exactly as they would the payload.
Then the pane is looked at every `poll` seconds until it is at rest and a hook wrote it
since (a new stamp or session), or a done notice appeared, or the screen stood still
(`rk.core.schedule.fresh.finished`); past the kind's `FINISH_WITHIN` the fire fails and
the payload is not typed (typed into a compaction, it would be queued or lost).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from typing import Protocol

from rk.act.deliver import DeliveryResult, Guard, deliver
from rk.act.keys import look_at
from rk.core.durations import format_duration
from rk.core.log.delivery import Outcome, Status
from rk.core.pane.look import seen_before_typing
from rk.core.schedule.fresh import FINISH_WITHIN, Mark, finished, notices
from rk.tmux.frame import Frame
from rk.tmux.observe import pane_of_frame, read_screen
from rk.tmux.server import Server, TmuxError


class Deliverer(Protocol):
    """`rk.act.deliver.deliver`'s shape, as `rk.engine.runtime.Deliverer` has it."""

    def __call__(self, server: Server, pane: str, payload: str, /, *, guard: Guard | None = None) -> DeliveryResult: ...


@dataclass(frozen=True)
class Watch:
    """How the wait looks: its poll, the clock it reads (tests replace them)."""

    poll: float = 0.25
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    #: seconds each kind may take (`FINISH_WITHIN`, shortened by tests)
    within: dict[str, float] | None = None


#: What `freshen` returns when the agent is not at rest: the payload goes alone (as the
#: entry's deliver policy says), the command is withheld for this fire.
BUSY = DeliveryResult(True, None, "the agent was not at rest")


def _failed(why: str) -> DeliveryResult:
    return DeliveryResult(False, Outcome(Status.FAILED, why))


def mark_of(frame: Frame, kind: str, now: int, zone: tzinfo, any_program: bool) -> Mark:
    """The pane in `frame` as the wait compares it (`Mark`)."""
    pane = pane_of_frame(frame)
    screen = read_screen(pane, frame.styled, frame.field("pane_title"), now, zone)
    seen = seen_before_typing(pane, screen, now, any_program)
    rest = not seen.blocker and not seen.refused and not seen.unreadable
    return Mark(pane.epoch, pane.session_ref, notices(kind, frame.norm), rest)


def freshen(
    server: Server,
    pane: str,
    command: str,
    kind: str,
    *,
    guard: Guard | None,
    zone: tzinfo,
    clock: Callable[[], int],
    any_program: bool = False,
    watch: Watch | None = None,
    type_in: Deliverer = deliver,
) -> DeliveryResult | None:
    """Type `command` (of `kind`: clear or compact) into `pane` and wait until the agent
    has finished it: None to go on with the payload; `BUSY` when the agent is not at rest
    (nothing typed: the payload goes alone); else what the fire does instead (the guard's
    refusal, or `failed: …`, nothing more typed). `type_in` types it
    (`rk.act.deliver.deliver`, or the runtime's stand-in); `clock` is the runtime's."""
    watch = watch or Watch()
    try:
        before = mark_of(look_at(server, pane), kind, clock(), zone, any_program)
    except TmuxError as exc:
        return _failed(str(exc))
    if not before.at_rest:  # typed into a turn it would wait in a queue (or hit a draft): not now
        return BUSY
    typed = type_in(server, pane, command, guard=guard)
    if typed.refused is not None:
        return typed
    if not typed.ok:
        return _failed(f"{command} not typed: {typed.outcome.detail if typed.outcome else typed.detail}")
    within = (watch.within or {}).get(kind, FINISH_WITHIN[kind])
    start = watch.monotonic()
    last, still_since = "", start
    while True:
        now = watch.monotonic()
        try:
            frame = look_at(server, pane)
        except TmuxError as exc:
            return _failed(f"{command}: {exc}; payload not typed")
        if frame.norm != last:
            last, still_since = frame.norm, now
        if finished(before, mark_of(frame, kind, clock(), zone, any_program), now - still_since):
            return None
        if now - start >= within:
            return _failed(f"{command} not finished within {format_duration(int(within))}; payload not typed")
        watch.sleep(watch.poll)

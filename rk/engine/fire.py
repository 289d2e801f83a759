"""One fire carried out: disposed of (`rk.core.schedule.dispose`), then typed,
respawned, notified or logged.

Right before typing, the delivery's guard looks again (`last_look`): the entry as
the file holds it now and the pane in the frame the delivery reads decide once
more, and anything but a send is returned instead of typing. The server's lock
is let go while the fire is carried out (`rk.engine.gate`).
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from rk.core.environ import IDLE_LINE_OPTION
from rk.core.log.diagnostics import Diag, Diagnostic
from rk.core.pane.identity import REPLACED, ServerIdentity, journal_identity
from rk.core.pane.look import draft_without_layout, seen_before_typing
from rk.core.pane.recheck import wants_recheck
from rk.core.schedule.dispose import UNREADABLE, Act, Disposition, Seen, dispose, edge_kept, held_mode
from rk.core.schedule.placeholders import typed
from rk.engine.firing import Firing as Firing  # re-exported: its one door before
from rk.engine.fresh import fresh_first, noted
from rk.engine.replace import interrupt_turn, ours
from rk.engine.result import Decision
from rk.store.config import ensure_private_dir
from rk.tmux.observe import pane_of_frame, read_screen
from rk.tmux.server import format_number

if TYPE_CHECKING:
    from collections.abc import Callable

    from rk.act.deliver import LookAgain
    from rk.act.intents import Intent
    from rk.tmux.frame import Frame


#: What a dry run says for a fire it would type (a send, or a replace's interrupt then send).
WOULD_DELIVER, WOULD_REPLACE = "would-deliver", "would-replace"


def fire_outcome(firing: Firing, unchanged: bool = False) -> str | None:
    """Dispose of one fire and execute the disposition; the outcome to log, or
    None for an (unlogged) hold. `firing.pane` is the target as this tick's
    enumeration and looks saw it; right before typing, the delivery's guard
    looks again and may still refuse. With `firing.gate`, the server's lock is let go
    while the fire is carried out; `firing.still` then tells the guard whether the
    entry changed meanwhile. `unchanged`: only_if_changed found nothing new (`rk.engine.marks`)."""
    entry, fire, pane, now = firing.entry, firing.fire, firing.pane, firing.now
    seen = Seen()
    if pane is not None:  # a pane mode (copy-mode, …) is the human's: held like a draft, never cancelled
        seen = replace(seen_before_typing(pane, None, now, entry.any_program), mode=held_mode(pane.in_mode, pane.mode))
    seen = replace(seen, unchanged=unchanged, ours=ours(firing), typed=firing.typed)  # ours: `deliver: replace` only
    rate = firing.runtime.settings.rate_per_hour
    disposition = dispose(fire, entry, firing.view, now, rate, seen if fire.pane else None)
    return execute(firing, disposition)


def execute(firing: Firing, disposition: Disposition) -> str | None:
    """Carry out one disposition: the outcome to log, or None for a hold."""
    outcome, final = _carry_out(firing, disposition)
    fire = firing.fire
    if edge_kept(firing.entry, fire, final, firing.typed):
        firing.out.kept_edges.add(fire.entry)
    if wants_recheck(firing.pane, final, firing.now, firing.typed):
        firing.out.recheck = True
    firing.out.decisions.append(Decision(firing.server.name, fire.entry, fire.reason, fire.pane, outcome or final.text))
    return outcome


def _carry_out(firing: Firing, disposition: Disposition) -> tuple[str | None, Disposition]:
    """(the outcome to log or None for a hold, the disposition carried out: the
    guard's, when the last look before typing refused)."""
    outcome = _act(firing, disposition)
    if isinstance(outcome, Disposition):
        return _carry_out(firing, outcome)
    return outcome, disposition


def _act(firing: Firing, disposition: Disposition) -> str | Disposition | None:
    fire, out, act = firing.fire, firing.out, disposition.act
    if disposition.note is not None:
        out.diagnostics.append(disposition.note)
    if act == Act.HOLD and disposition.held_by.endswith(" since the decision"):
        out.diagnostics.append(Diagnostic(fire.entry, Diag.FIRE_DROPPED, f"{disposition.held_by}; nothing typed"))
        return None
    if act == Act.HOLD:
        out.diagnostics.append(
            Diagnostic(fire.entry, Diag.DELIVERY_HELD, f"{fire.pane}: {disposition.text}; held until idle")
        )
        return None
    if act == Act.LOG:
        return disposition.text
    if act == Act.SEND:
        return WOULD_DELIVER if firing.dry_run else _send(firing)
    if act == Act.REPLACE:
        return WOULD_REPLACE if firing.dry_run else _replace(firing)
    if act == Act.RESPAWN:
        return "would-respawn" if firing.dry_run else _respawn(firing)
    if firing.dry_run:
        return "would-notify"
    return _notify(firing, disposition)


def _send(firing: Firing) -> str | Disposition:
    """Type the prompt, its intent journaled; the outcome, or the last look's refusal (nothing typed)."""
    runtime, entry, fire, out, now = firing.runtime, firing.entry, firing.fire, firing.out, firing.now
    intent = None
    if out.journal is not None:
        from rk.act.intents import Intent

        ensure_private_dir(out.journal.intents)
        record: dict[str, object] = {"entry": entry.id, "reason": str(fire.reason), "ts": now, "target": fire.pane}
        record |= {"mark": fire.mark} if fire.mark else {}  # what a wake on the world consumed: recovery logs it
        if firing.pane is not None:  # which pane it types into (the guard refreshes it from its frame)
            known = firing.pane
            record.update(journal_identity(known.server_started, known.server_pid, known.pane_pid))
        intent = Intent(str(out.journal.intent(entry.id)), record)
    text = typed(entry, fire, firing.view, now, runtime.zone)  # placeholders filled; the journal's needle is of it
    guard = last_look(firing, intent)
    with _unlocked(firing):
        result, note = fresh_first(firing, guard)  # `--fresh`: the CLI's /clear or /compact first
        result = result or runtime.deliver(firing.server, fire.pane, text, guard=guard, intent=intent)
    if result.refused is not None:  # the last look said no: nothing was typed
        return cast(Disposition, result.refused)  # what `last_look` returned
    return noted(str(result.outcome), note)


def _replace(firing: Firing) -> str | Disposition:
    """Interrupt the entry's own running turn (the lock let go), then type as a send does."""
    with _unlocked(firing):
        stopped = interrupt_turn(firing)
    return _send(firing) if stopped is None else stopped


def _respawn(firing: Firing) -> str:
    runtime = firing.runtime
    with _unlocked(firing):
        respawned = runtime.respawn(
            firing.entry.respawn, firing.server.name, runtime.settings.respawn_timeout, runtime.environ
        )
    return str(respawned.outcome)


def _notify(firing: Firing, disposition: Disposition) -> str:
    runtime, server, entry = firing.runtime, firing.server, firing.entry
    why = (disposition.outcome.detail if disposition.outcome else "") or "target absent"
    error = runtime.notify(server, f"cron: {entry.label}", f"{why} on {server.name}", runtime.environ)
    if error:
        firing.out.diagnostics.append(Diagnostic(entry.id, Diag.NOTIFY_FAILED, error))
    return disposition.text


def last_look(firing: Firing, intent: Intent | None = None) -> Callable[[Frame], Disposition | LookAgain | None]:
    """The last look before typing: the entry as the file holds it now (`firing.still`),
    and the pane's facts and screen in the baseline frame decide again; anything
    but a send is returned instead of typing.
    The server the enumeration saw (`firing.pane`'s): a frame from another (the
    server restarted in between, the id reused) is `pane replaced`. The
    journal (`intent`) takes the identity of the pane as this frame saw it.
    An agent's screen that matches none of its layouts is looked at again
    (`LookAgain`) before it holds the fire: a TUI caught mid-redraw reads so."""
    from rk.act.deliver import LookAgain
    from rk.tmux.frame import frame_server

    runtime, entry, fire, view, now, still = (
        firing.runtime,
        firing.entry,
        firing.fire,
        firing.view,
        firing.now,
        firing.still,
    )
    expected: ServerIdentity | None = firing.pane.server if firing.pane is not None else None

    def guard(frame: Frame) -> Disposition | LookAgain | None:
        why = still.changed(entry) if still is not None else ""
        if why:  # a change that landed before the paste wins
            return Disposition(Act.HOLD, held_by=why)
        pane = pane_of_frame(frame)
        server_now = frame_server(frame)
        if expected is not None and expected.differs(server_now):
            seen = Seen(refused=REPLACED)
        else:
            screen = read_screen(pane, frame.styled, frame.field("pane_title"), now, runtime.zone)
            seen = seen_before_typing(pane, screen, now, entry.any_program)
            seen = replace(seen, mode=held_mode(frame.in_mode, frame.field("pane_mode")), typed=firing.typed)
            idle = frame.field(IDLE_LINE_OPTION)
            if not seen.draft and draft_without_layout(pane, screen, idle, frame.cursor_line()):
                seen = replace(seen, draft=True)  # no layout reads it: the cursor's line is not the idle one
        if intent is not None:
            pane_pid = frame.field("pane_pid")
            intent.record.update(journal_identity(server_now.started, server_now.pid, format_number(pane_pid)))
        disposition = dispose(fire, entry, view, now, runtime.settings.rate_per_hour, seen)
        if disposition.act == Act.SEND:
            return None
        return LookAgain(disposition) if seen.blocker == UNREADABLE else disposition  # maybe a redraw

    return guard


def _unlocked(firing: Firing) -> contextlib.AbstractContextManager[None]:
    return firing.gate.open() if firing.gate is not None else contextlib.nullcontext()

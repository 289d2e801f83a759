"""Verified delivery: type one prompt into one tmux pane and press Enter, or
report exactly why not.

The one hard problem every tool that nudges agents in tmux reports is "text
typed, Enter lost, prompt left in the composer". The recipe here is the one
the Go original (run-kit) converged on, adapted to rk (specs/cron.md, "The pane";
specs/delivery.md):

1. a per-(server, pane) lock for the whole sequence, so two deliveries (two
   threads or two rk processes) never interleave keystrokes in one pane;
2. a pane mode (copy-mode, view-mode, clock-mode) is the human's: the baseline
   refuses it instead of cancelling it, and every keystroke is sent only if the
   pane is not in a mode at that instant, decided inside the server;
3. sanitising: control characters never reach the pane (an `ESC[201~` in the
   text would end the bracketed paste early and turn the rest into live keys);
4. a baseline capture of the visible screen;
5. a named buffer (`load-buffer` from stdin, so a leading `-` or a trailing
   `;` survive tmux's argv parser) pasted with `-p` (bracketed paste: the agent
   sees one literal block, a newline inside it is not a submit);
6. an echo probe *before* Enter, in the live composer (`Echo`): the composer a
   layout reads, or the text ending at the cursor, never anywhere on screen;
   no echo means no Enter, and what was pasted is cleared again; text beside
   ours (a human's key pressed during the delivery) means no Enter either, and
   only our own text is backed out, never theirs (`rk.act.echo.back_out`);
7. Enter as its own keystroke;
8. positive evidence after Enter (`Echo.taken`): the composer no longer holds
   the text, or the turn started; a frame that merely moved proves nothing;
9. one bounded recovery when there was none and the text is still there.

The outcome is exactly what the delivery log records: `delivered` or
`failed: <why>`. Nothing here raises for tmux trouble: every TmuxError becomes
`failed: <tmux's message>`.

Cost: a successful delivery into a pane that reacts promptly spawns five tmux
processes (baseline, load+paste, one probe capture, Enter, one observation
capture). Commands that belong together are chained in one tmux invocation
with a `;` argument, and the mode check before every keystroke is an
`if-shell -F` evaluated inside the server, so it costs no process of its own.

The steps are here; the tmux commands, their deadline and the locks are
`rk.act.keys`'s, the echo rule `rk.act.echo`'s, and the at-most-once journal
(each step recorded before it is taken, and what a restart makes of it)
`rk.act.intents`'s.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from rk.act.echo import STAMPED_AFTER_ENTER, Echo, back_out, enter_and_observe, probe, stamped
from rk.act.intents import Intent, digest, fingerprint, mark_pending, pending_path
from rk.act.keys import DEFAULT_BUFFER, DeadlineExceeded, InMode, Run, Timing, pane_lock
from rk.core.environ import is_pane_id
from rk.core.log.delivery import Outcome, Status
from rk.core.pane.payload import COLLAPSE_THRESHOLD, needle_for, sanitize
from rk.host import lock
from rk.tmux.frame import Frame
from rk.tmux.server import Server, TmuxError


@dataclass(frozen=True)
class DeliveryResult:
    """What one delivery did, as its caller logs it."""

    ok: bool
    #: `delivered` or `failed: <why>` (None when the guard refused).
    outcome: Outcome | None
    #: Optional extra information for humans and diagnostics.
    detail: str = ""
    #: What the guard said instead of typing (nothing was typed).
    refused: object = None
    #: Our text may remain in the composer (a human entered a mode before it
    #: could be cleared): the pending marker stays for the next delivery.
    leftover: bool = False


def _failed(why: str, detail: str = "") -> DeliveryResult:
    why = " ".join(why.split())  # one line, always
    if len(why) > 200:
        why = why[:197] + "..."
    return DeliveryResult(False, Outcome(Status.FAILED, why), detail)


#: A guard sees the baseline frame (taken under the pane lock, right before
#: the paste) and returns None to go on, `LookAgain` to be shown a new frame,
#: or anything else to type nothing.
Guard = Callable[[Frame], object]


@dataclass(frozen=True)
class LookAgain:
    """A guard's answer when the frame cannot be judged yet (an agent's screen caught
    mid-redraw matches none of its layouts): the delivery takes another frame
    `Timing.look_again` s later, up to `Timing.look_again_tries` times, and when none
    can be judged either, nothing is typed and `refused` is what the guard said."""

    refused: object


def deliver(
    server: Server,
    pane: str,
    payload: str,
    *,
    buffer: str = DEFAULT_BUFFER,
    timing: Timing | None = None,
    guard: Guard | None = None,
    intent: Intent | None = None,
) -> DeliveryResult:
    """Type `payload` into `pane` on `server` and submit it, verified.

    `pane` should be a pane id (`%N`); any other tmux target is resolved to
    its pane id first (one extra tmux process) so that the lock and every
    later command name the pane itself. `guard` gets the last word on what
    the screen shows, under the lock, before anything is typed. With `intent`,
    each step is journaled before it is taken (see `Intent`). Never raises
    for tmux trouble.
    """
    timing = timing or Timing()
    text = sanitize(payload)
    if not text:
        return _failed("payload is empty after sanitising")
    needle = needle_for(text)
    if not needle:
        return _failed("payload has nothing visible to verify")
    collapsible = "\n" in text or len(text) >= COLLAPSE_THRESHOLD

    target = pane
    if not is_pane_id(pane):
        try:
            target = Run(server, timing, buffer).frame(pane).pane_id
        except TmuxError as exc:
            return _failed(str(exc))
        except DeadlineExceeded:
            return _failed("deadline exceeded before paste")
    held = pane_lock(server, target, timing.lock_wait)
    try:
        held.__enter__()
    except lock.LockTimeout:
        return _failed("pane busy: another delivery into it did not finish")
    except OSError as exc:
        return _failed(f"cannot take the pane lock: {exc}")
    try:
        marker = pending_path(server, target)
        run = Run(server, timing, buffer)
        # We hold the pane lock, so whoever left the marker died mid-delivery
        # (kill -9 between paste and Enter), or met a mode it would not cancel:
        # their text may still sit in the composer and would be submitted glued
        # to ours. Clear it, unless the pane is in a mode (then it stays marked).
        leftover = [os.path.exists(marker) and not run.clear_leftover(target)]
        mark_pending(marker)
        result: DeliveryResult | None = None
        try:
            result = _Sequence(run, target, text, needle, intent).deliver(collapsible, guard, leftover)
            if intent is not None:
                if result.refused is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(intent.path)  # nothing was typed: nothing to recover
                else:
                    with contextlib.suppress(OSError):  # then a restart reads the pane instead
                        intent.write(phase="done", outcome=str(result.outcome), pane=target)
            return result
        finally:
            if not (leftover[0] or (result is not None and result.leftover)):
                with contextlib.suppress(OSError):
                    os.unlink(marker)
    except OSError as exc:
        return _failed(f"cannot write the delivery marker: {exc}")
    finally:
        held.__exit__(None, None, None)


def _gone(frame: Frame, pane: str) -> DeliveryResult | None:
    """The failure when the frame shows `pane` gone or dead, else None."""
    if frame.pane_id != pane:
        return _failed(f"can't find pane: {pane}")
    if frame.dead:
        return _failed(f"pane {pane} is dead")
    return None


@dataclass
class _Sequence:
    """One delivery under its pane lock, and how far it got. Where it is (`stage`)
    decides what a failure means: before the paste nothing was typed (safe to
    retry); between paste and Enter our text may sit in the composer (clear it);
    after an Enter it may or may not have landed."""

    run: Run
    pane: str
    text: str
    needle: str
    intent: Intent | None
    stage: str = "before paste"
    baseline: Frame | None = None

    def deliver(self, collapsible: bool, guard: Guard | None, leftover: list[bool]) -> DeliveryResult:
        """The steps, with every failure turned into the outcome its stage means."""
        run, pane = self.run, self.pane
        try:
            return self.steps(collapsible, guard, leftover)
        except InMode as exc:
            return _in_mode_failure(run, pane, exc, self.stage, self.baseline)
        except TmuxError as exc:
            return _failed(str(exc), self.detail())
        except lock.LockTimeout:  # the buffer lock; an OSError subclass, so first
            return _failed("buffer busy: another delivery held it too long", f"stage: {self.stage}")
        except OSError as exc:  # spawning tmux, the lock directory, or the intent journal
            return _failed(str(exc) or type(exc).__name__, self.detail())
        except DeadlineExceeded:
            if self.stage == "pasted" and self.baseline is not None:
                if run.try_clear(pane, self.baseline):
                    return _failed("deadline exceeded before Enter (payload cleared)")
                return _failed("deadline exceeded before Enter (could not clear composer)")
            if self.stage == "entered":
                return _failed("submit not confirmed (deadline exceeded)")
            return _failed(f"deadline exceeded ({self.stage})")

    def detail(self) -> str:
        """The stage a failure came in; text pasted and not yet entered is cleared first."""
        detail = f"stage: {self.stage}"
        if self.stage == "pasted" and self.baseline is not None:
            detail += f"; cleared={self.run.try_clear(self.pane, self.baseline)}"
        return detail

    def steps(self, collapsible: bool, guard: Guard | None, leftover: list[bool]) -> DeliveryResult:
        run, pane = self.run, self.pane
        # Baseline (with styles and terminal rows, for the guard and the echo rule): one process.
        baseline = self.baseline = run.frame(pane, styled=True, rows=True)
        if gone := _gone(baseline, pane):
            return gone
        if guard is not None:
            refused = guard(baseline)
            for _ in range(run.timing.look_again_tries):
                if not isinstance(refused, LookAgain):
                    break
                run.sleep(run.timing.look_again)
                baseline = self.baseline = run.frame(pane, styled=True, rows=True)
                if gone := _gone(baseline, pane):
                    return gone
                refused = guard(baseline)
            if isinstance(refused, LookAgain):
                refused = refused.refused
            if refused is not None:
                return DeliveryResult(False, None, "refused before typing", refused)
        if baseline.in_mode:  # the human's: never cancelled (a guard holds it; without one, it fails)
            return _failed(f"pane is in {baseline.mode}; nothing typed")
        if leftover[0]:  # an earlier payload a mode kept us from clearing: clear it first
            if not run.clear_leftover(pane):
                return _failed("an earlier payload may remain in the composer and could not be cleared")
            leftover[0] = False
            baseline = self.baseline = run.frame(pane, styled=True, rows=True)
        echo = Echo.of(baseline, self.needle, collapsible)

        shown = self.paste(echo, baseline, retry=False)
        if isinstance(shown, DeliveryResult):
            return shown
        why, last = self.enter(echo, shown, retry=False)
        if why:
            return DeliveryResult(True, Outcome(Status.DELIVERED))
        if not echo.holds(last):
            # No evidence either way (the composer could not be read after Enter):
            # never typed again, since the first Enter may have landed.
            return _failed("submit not confirmed", "no evidence after Enter; the composer could not be read")
        if stamped(shown, last):
            # A hook wrote the pane's state after the Enter: the agent is handling
            # input, and a second paste could be a second prompt. Never retyped; our
            # text is cleared only while it stands alone (the Enter, sent first, is
            # read first: a late submit leaves the C-u an empty composer).
            self.stage = "cleared"
            cleared = not echo.beside(last, self.text)[0] and run.try_clear(pane, baseline)
            return _failed("submit not confirmed", f"{STAMPED_AFTER_ENTER}; cleared={cleared}")
        return self.recovery(echo, baseline)

    def recovery(self, echo: Echo, baseline: Frame) -> DeliveryResult:
        """Bounded recovery, once: no evidence, and our text still in the composer.
        Clear back to the baseline (never a bare second Enter: if the first one
        lands late, a second submits whatever is there then), paste again, probe
        again, Enter, observe."""
        if not self.run.clear(self.pane, baseline):
            return _failed("submit not confirmed", "recovery could not clear the composer")
        shown = self.paste(echo, baseline, retry=True)
        if isinstance(shown, DeliveryResult):
            return shown
        why, last = self.enter(echo, shown, retry=True)
        if why:
            return DeliveryResult(True, Outcome(Status.DELIVERED), "after one recovery")
        if not echo.holds(last):
            return _failed("submit not confirmed", "no evidence after the retry's Enter; not cleared")
        self.stage = "cleared"
        cleared = self.run.try_clear(self.pane, baseline)
        return _failed("submit not confirmed", f"Enter had no visible effect twice; cleared={cleared}")

    def paste(self, echo: Echo, baseline: Frame, retry: bool) -> Frame | DeliveryResult:
        """Journal the paste, paste and probe: the frame that shows our text alone
        in the live composer, or why no Enter may follow (what we typed is cleared
        again, or backed out beside a human's key)."""
        self.journal(phase="paste", before=baseline.norm.count(self.needle))
        self.stage = "pasted"
        self.run.paste(self.pane, self.text)
        shown = probe(self.run, self.pane, echo)
        if shown is None:
            last = echo.look(self.run, self.pane)
            if echo.beside(last, self.text)[0]:  # a key after the paste: C-u would clear theirs too
                return _failed(back_out(self.run, self.pane, echo, last, self.text))
            self.stage = "cleared"
            cleared = self.run.try_clear(self.pane, baseline)
            if retry:
                return _failed("submit not confirmed", f"echo not seen on retry; cleared={cleared}")
            return _failed("echo not seen (payload cleared)" if cleared else "echo not seen (could not clear composer)")
        if echo.beside(shown, self.text)[0]:
            return _failed(back_out(self.run, self.pane, echo, shown, self.text))
        return shown

    def enter(self, echo: Echo, shown: Frame, retry: bool) -> tuple[str, Frame]:
        """Journal the Enter, press it and observe (`enter_and_observe`)."""
        self.journal(phase="enter", pasted=fingerprint(shown))
        self.stage = "entered"
        return enter_and_observe(self.run, self.pane, shown, echo, retry=retry)

    def journal(self, **fields: object) -> None:
        """Record the next step before it is taken (`Intent`), when there is a journal."""
        if self.intent is not None:
            self.intent.write(pane=self.pane, needle=self.needle, digest=digest(self.text), **fields)


def _in_mode_failure(run: Run, pane: str, exc: InMode, stage: str, baseline: Frame | None) -> DeliveryResult:
    """A human entered a mode mid-delivery: no key went into it, and it is left on.
    Text already pasted is cleared once they leave it (within the deadline);
    otherwise the pending marker stays, and the next delivery clears it first."""
    mode = exc.mode
    if exc.step == "paste" or stage == "before paste":
        return _failed(f"pane entered {mode} before the paste; nothing typed")
    what = "before Enter" if exc.step == "Enter" else "before the payload was cleared"
    if baseline is not None and run.wait_out_mode(pane) and run.try_clear(pane, baseline):
        return _failed(f"pane entered {mode} {what} (payload cleared after it)")
    result = _failed(f"pane entered {mode} {what}; the payload may remain in the composer")
    return DeliveryResult(result.ok, result.outcome, "the mode was left on", leftover=True)

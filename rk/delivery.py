"""Verified delivery: type one prompt into one tmux pane and press Enter, or
report exactly why not.

The one hard problem every tool that nudges agents in tmux reports is "text
typed, Enter lost, prompt left in the composer". The recipe here is the one
the Go original (run-kit) converged on, adapted to rk (specs/cron.md, "The pane"):

1. a per-(server, pane) lock for the whole sequence, so two deliveries (two
   threads or two rk processes) never interleave keystrokes in one pane;
2. a pane-mode guard: copy-mode owns the keyboard and would eat our keys;
3. sanitising: control characters never reach the pane (an `ESC[201~` in the
   text would end the bracketed paste early and turn the rest into live keys);
4. a baseline capture of the visible screen;
5. a named buffer (`load-buffer` from stdin, so a leading `-` or a trailing
   `;` survive tmux's argv parser) pasted with `-p` (bracketed paste: the agent
   sees one literal block, a newline inside it is not a submit);
6. an echo probe *before* Enter, by novelty counting (the needle must occur
   more often than in the baseline; mere presence false-passes on stale text);
   no echo means no Enter, and what was pasted is cleared again;
7. Enter as its own keystroke;
8. observation of the frame after Enter;
9. one bounded recovery when the frame did not move at all.

The outcome is exactly what the delivery log records: `delivered` or
`failed: <why>`. Nothing here raises for tmux trouble: every TmuxError becomes
`failed: <tmux's message>`.

Cost: a successful delivery into a pane that is not in a mode and reacts
promptly spawns five tmux processes (guard+baseline, load+paste, one probe
capture, Enter, one observation capture). Commands that belong together are
chained in one tmux invocation with a `;` argument, and the copy-mode guard
before every keystroke is an `if-shell -F` evaluated inside the server, so it
costs no process of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rk import lock
from rk.core.environ import LEGACY_STATE_OPTION, SESSION_OPTION, SOURCE_OPTION, STATE_OPTION, is_pane_id
from rk.core.identity import JOURNAL_DROPPED, ServerIdentity, journal_moved
from rk.core.log import Outcome, Status
from rk.core.payload import COLLAPSE_THRESHOLD, fresh_chip, needle_for, normalise, sanitize
from rk.tmux import Command, Server, TmuxError, chain, head_format, split_head

DEFAULT_BUFFER = "rk-cron-send"


@dataclass(frozen=True)
class Timing:
    """Every delay of the sequence, in seconds, in one place (tests shorten them).

    The defaults are realistic for agent TUIs on a busy machine. The probe and
    observation values are run-kit's; the others are rk's own.
    """

    #: The whole sequence once the pane lock is held: room for a paste and its
    #: probe, the observation ladder, a recovery (clear, paste, probe, the
    #: retry's ladder) and a last clear.
    deadline: float = 12.0
    #: Waiting for another delivery into the same pane (one delivery takes at
    #: most `deadline` plus cleanup, so a little more than that).
    lock_wait: float = 14.0
    #: Grace for clearing the composer when the deadline already passed: a
    #: half-typed payload would jam the next fire, so cleanup gets its own budget.
    cleanup_grace: float = 1.5
    #: After the paste, before the first echo capture.
    settle: float = 0.08
    #: Echo probe: captures after the settle, this far apart.
    probe_interval: float = 0.08
    probe_captures: int = 8
    #: Observation after Enter: capture at these offsets from the Enter, up to
    #: the first change. run-kit's ladder stops at 0.64 s; rk's goes on to 5 s
    #: before it calls an Enter lost, because an agent may take that long to
    #: redraw (OpenCode's first prompt switches views, 1-5 s under load), and
    #: a recovery after an Enter that did land is what leaves text behind.
    observe: tuple[float, ...] = (0.04, 0.08, 0.16, 0.32, 0.64, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
    #: The observation after a recovery's second Enter stops here.
    retry_observe: float = 2.0
    #: Clearing: up to this many C-u, each followed by a few captures.
    clear_attempts: int = 4
    clear_interval: float = 0.05
    clear_captures: int = 3
    #: Polling step while waiting for a lock held by someone else.
    lock_poll: float = 0.02


@dataclass(frozen=True)
class DeliveryResult:
    ok: bool
    #: `delivered` or `failed: <why>` (None when the guard refused).
    outcome: Outcome | None
    #: Optional extra information for humans and diagnostics.
    detail: str = ""
    #: What the guard said instead of typing (nothing was typed).
    refused: object = None


def _failed(why: str, detail: str = "") -> DeliveryResult:
    why = " ".join(why.split())  # one line, always
    if len(why) > 200:
        why = why[:197] + "..."
    return DeliveryResult(False, Outcome(Status.FAILED, why), detail)


# -- the intent journal ----------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    """Where a delivery records, durably, what it is about to do: `paste` before the
    paste (with how often the needle showed), `enter` right before Enter (with the
    post-paste frame's fingerprint), `done` with the outcome. `record` holds the
    caller's own fields (entry, reason, ts). The caller removes the file once the
    outcome is in its log; a restart that finds one decides from the pane what
    happened (`recover`) and never types the prompt again if it may have gone in."""

    path: str
    record: dict

    def write(self, **fields: object) -> None:
        from rk.fsutil import atomic_write

        atomic_write(Path(self.path), (json.dumps({**self.record, **fields}, sort_keys=True) + "\n").encode("utf-8"))


def _digest(text: str) -> str:
    """The payload's sha256, as typed: which prompt a journal speaks of, without the prompt."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _fingerprint(frame: Frame) -> str:
    return hashlib.sha256(repr(frame.key()).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _server_key(server: Server) -> str:
    return os.path.realpath(str(server.path))


def _pending_path(server: Server, pane: str) -> str:
    """A marker that exists while text may sit unsubmitted in the pane."""
    key = f"pending\0{_server_key(server)}\0{pane}"
    return os.path.join(
        lock.lock_dir(), hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".pending"
    )


def pane_lock(server: Server, pane: str, timeout: float = Timing.lock_wait) -> contextlib.AbstractContextManager[None]:
    """The lock `deliver` holds on (server, pane) for its whole sequence.

    Anything else in rk that types into a pane should hold it too. `pane`
    must be the pane id (`%N`) for two spellings of one pane to share a lock.
    Raises TimeoutError if it cannot be had within `timeout` seconds.
    """
    return lock.exclusive(f"pane\0{_server_key(server)}\0{pane}", timeout, Timing.lock_poll)


def buffer_lock(server: Server, buffer: str, timeout: float) -> contextlib.AbstractContextManager[None]:
    """The lock `deliver` holds on (server, buffer name) from load to paste.

    Named buffers are server-global: two deliveries into different panes that
    use one buffer name would otherwise paste (or `-d`-delete) each other's
    text. Raises TimeoutError if it cannot be had within `timeout` seconds.
    """
    return lock.exclusive(f"buffer\0{_server_key(server)}\0{buffer}", timeout, Timing.lock_poll)


# -- the sequence ----------------------------------------------------------------------

#: What every frame reads beside the screen: mode, liveness and cursor, and
#: what the guard needs to judge the pane (its command and tty, the state
#: options, and the title, last because a program sets it freely).
_FRAME_FIELDS = (
    "pane_id",
    "pane_in_mode",
    "pane_mode",
    "pane_dead",
    "pane_pid",
    "start_time",
    "pid",  # the server's (rk.core.identity)
    "cursor_x",
    "cursor_y",
    "pane_current_command",
    "pane_tty",
    STATE_OPTION,
    LEGACY_STATE_OPTION,
    SESSION_OPTION,
    SOURCE_OPTION,
    "window_name",
    "pane_title",
)
_SGR = re.compile(r"\x1b\[[0-9;:?]*[@-~]")


@dataclass(frozen=True)
class Frame:
    """One look at the pane: its screen (plain, and with styles when asked) and facts."""

    pane_id: str
    in_mode: bool
    dead: bool
    cursor: str
    screen: str
    styled: str = ""  #: the screen with its SGR styles (the baseline frame only)
    fields: tuple[str, ...] = ()  #: the values of _FRAME_FIELDS

    def field(self, name: str) -> str:
        i = _FRAME_FIELDS.index(name)
        return self.fields[i] if i < len(self.fields) else ""

    @property
    def norm(self) -> str:
        return normalise(self.screen)

    def key(self) -> tuple[str, str, str]:
        """What "the frame changed" compares: the normalised text, the cursor,
        and the pane's agent state. The cursor counts because Enter in a
        line-mode app that prints nothing (`cat > file`) moves only the cursor;
        the state because a hook's `active` is the agent saying it took the
        prompt, even while its screen has not moved yet."""
        return (self.norm, self.cursor, self.field(STATE_OPTION))


class _Deadline(Exception):
    pass


class _Run:
    """One delivery: the tmux calls, all under one deadline."""

    def __init__(self, server: Server, timing: Timing, buffer: str) -> None:
        self.server = server
        self.timing = timing
        self.buffer = buffer
        self.deadline = time.monotonic() + timing.deadline

    # -- plumbing

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def tmux(self, *args: str, input: str | None = None) -> str:
        left = self.remaining()
        if left <= 0:
            raise _Deadline()
        return self.server.run(*args, input=input, timeout=max(min(left, 5.0), 0.2))

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            if self.remaining() <= seconds:
                raise _Deadline()
            time.sleep(seconds)

    def frame(self, target: str, styled: bool = False) -> Frame:
        """Mode, liveness, cursor, the guard's facts and the visible screen in one
        tmux process (with `styled`, the screen keeps its SGR styles too).

        `display-message` with an unknown target prints empty fields and exits
        0 (tmux 3.3a), so the pane id is checked here; `capture-pane` in the
        same invocation fails loudly for a pane that does not exist."""
        mark = secrets.token_hex(6)
        out = self.tmux(
            *chain(Command.display(target, head_format(_FRAME_FIELDS, mark)), Command.capture(target, styled=styled))
        )
        try:
            head, screen = split_head(out, _FRAME_FIELDS, mark)
        except TmuxError:
            raise TmuxError(f"can't find pane: {target}") from None
        fields = tuple(head[f] for f in _FRAME_FIELDS)
        if not is_pane_id(fields[0]):
            raise TmuxError(f"can't find pane: {target}")
        plain = _SGR.sub("", screen) if styled else screen
        return Frame(
            head["pane_id"],
            head["pane_in_mode"] == "1",
            head["pane_dead"] == "1",
            f"{head['cursor_x']},{head['cursor_y']}",
            plain,
            screen if styled else "",
            fields,
        )

    def guarded(self, pane: str, *commands: list[str], input: str | None = None) -> None:
        """Run `commands` right after leaving copy-mode, in one tmux process.

        The guard is re-evaluated inside the server before every keystroke (a
        human may enter copy-mode at any moment; copy-mode would swallow C-u
        and treat Enter as "copy selection")."""
        self.tmux(*chain(Command.leave_mode(pane), *commands), input=input)

    # -- steps

    def paste(self, pane: str, text: str) -> None:
        """Load the named buffer from stdin and paste it bracketed, deleting it.

        The buffer is server-global, so load→paste holds a second small lock
        per (server, buffer) (`buffer_lock`); the load and the paste are one
        tmux process, so it is held for a few milliseconds."""
        with buffer_lock(self.server, self.buffer, max(self.remaining(), 0.0)):
            self.guarded(pane, Command.load_buffer(self.buffer), Command.paste_buffer(self.buffer, pane), input=text)

    def probe(self, pane: str, baseline: Frame, needle: str, collapsible: bool) -> Frame | None:
        """Wait for the paste to show: the needle occurs more often than in the
        baseline (novelty, not presence: a stale copy of the same text, or a
        short needle like `ok`, must not pass), or, for a paste the agent may
        collapse, a fresh `[Pasted text #N …]` chip. The frame that proved it,
        or None."""
        t = self.timing
        before = baseline.norm.count(needle)
        self.sleep(t.settle)
        for i in range(t.probe_captures):
            if i:
                self.sleep(t.probe_interval)
            f = self.frame(pane)
            if f.norm.count(needle) > before:
                return f
            if collapsible and fresh_chip(baseline.screen, f.screen):
                return f
        return None

    def echo_visible(self, f: Frame, baseline: Frame, needle: str, collapsible: bool) -> bool:
        if f.norm.count(needle) > baseline.norm.count(needle):
            return True
        return collapsible and fresh_chip(baseline.screen, f.screen)

    def enter_and_observe(self, pane: str, pasted: Frame, retry: bool = False) -> Frame | None:
        """Press Enter alone, then capture at the observation offsets until the
        frame differs from the post-paste frame. Returns the changed frame, or
        None if the frame never moved. A change is no proof of submission
        (spinners and status lines move too); no change is the one piece of
        evidence that the Enter did nothing. After a recovery (`retry`) the app
        has shown it is slow to take Enter, not slow to draw: the first steps
        of the ladder (up to `retry_observe`) are enough."""
        self.guarded(pane, Command.send_keys(pane, "Enter"))
        start = time.monotonic()
        ladder = [o for o in self.timing.observe if o <= self.timing.retry_observe] if retry else self.timing.observe
        for offset in ladder:
            self.sleep(start + offset - time.monotonic())
            f = self.frame(pane)
            if f.key() != pasted.key():
                return f
        return None

    def clear(self, pane: str, baseline: Frame) -> bool:
        """Send C-u (kill line: readline, canonical ttys and agent composers
        agree on it) until the normalised screen equals the baseline again.

        Called whenever text may sit in the composer unsubmitted: a payload
        left half-typed would be submitted glued to the next fire. At least one
        C-u is always sent, because an app that does not echo shows the
        baseline while still holding the text. Runs on the cleanup grace if
        the deadline has passed."""
        t = self.timing
        if self.remaining() < t.cleanup_grace:
            self.deadline = time.monotonic() + t.cleanup_grace
        for _ in range(t.clear_attempts):
            self.guarded(pane, Command.send_keys(pane, "C-u"))
            for _ in range(t.clear_captures):
                self.sleep(t.clear_interval)
                if self.frame(pane).norm == baseline.norm:
                    return True
        return False

    def try_clear(self, pane: str, baseline: Frame) -> bool:
        try:
            return self.clear(pane, baseline)
        except (TmuxError, _Deadline):
            return False


#: A guard sees the baseline frame (taken under the pane lock, right before
#: the paste) and returns None to go on, or anything else to type nothing.
Guard = Callable[[Frame], object]


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
            target = _Run(server, timing, buffer).frame(pane).pane_id
        except TmuxError as exc:
            return _failed(str(exc))
        except _Deadline:
            return _failed("deadline exceeded before paste")
    held = pane_lock(server, target, timing.lock_wait)
    try:
        held.__enter__()
    except lock.LockTimeout:
        return _failed("pane busy: another delivery into it did not finish")
    except OSError as exc:
        return _failed(f"cannot take the pane lock: {exc}")
    try:
        marker = _pending_path(server, target)
        run = _Run(server, timing, buffer)
        if os.path.exists(marker):
            # We hold the pane lock, so whoever wrote it died mid-delivery
            # (kill -9 between paste and Enter): their text may still sit in
            # the composer and would be submitted glued to ours. Clear it.
            _clear_leftover(run, target)
        with open(marker, "w") as fh:
            fh.write(str(os.getpid()))
        try:
            result = _deliver_locked(run, target, text, needle, collapsible, guard, intent)
            if intent is not None:
                if result.refused is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(intent.path)  # nothing was typed: nothing to recover
                else:
                    with contextlib.suppress(OSError):  # then a restart reads the pane instead
                        intent.write(phase="done", outcome=str(result.outcome), pane=target)
            return result
        finally:
            with contextlib.suppress(OSError):
                os.unlink(marker)
    except OSError as exc:
        return _failed(f"cannot write the delivery marker: {exc}")
    finally:
        held.__exit__(None, None, None)


def _clear_leftover(run: _Run, pane: str) -> None:
    """Kill whatever line a crashed delivery left in the composer (best effort)."""
    with contextlib.suppress(TmuxError, _Deadline):
        for _ in range(2):
            run.guarded(pane, Command.send_keys(pane, "C-u"))


def _deliver_locked(
    run: _Run, pane: str, text: str, needle: str, collapsible: bool, guard: Guard | None, intent: Intent | None = None
) -> DeliveryResult:
    # Where we are decides what a failure means: before the paste nothing was
    # typed (safe to retry); between paste and Enter our text may sit in the
    # composer (clear it); after an Enter it may or may not have landed.
    stage = "before paste"
    baseline: Frame | None = None
    try:
        # Mode guard + baseline (with styles, for the guard): one process when
        # the pane is not in a mode.
        baseline = run.frame(pane, styled=True)
        if baseline.pane_id != pane:
            return _failed(f"can't find pane: {pane}")
        if baseline.in_mode:
            run.tmux(*Command.cancel_mode(pane))
            baseline = run.frame(pane, styled=True)  # re-check; also the baseline (cancel repaints)
            if baseline.in_mode:
                return _failed("pane is in a mode that did not cancel")
        if baseline.dead:
            return _failed(f"pane {pane} is dead")
        if guard is not None:
            refused = guard(baseline)
            if refused is not None:
                return DeliveryResult(False, None, "refused before typing", refused)

        if intent is not None:
            intent.write(
                phase="paste", pane=pane, needle=needle, digest=_digest(text), before=baseline.norm.count(needle)
            )
        stage = "pasted"
        run.paste(pane, text)
        shown = run.probe(pane, baseline, needle, collapsible)
        if shown is None:
            stage = "cleared"
            if run.try_clear(pane, baseline):
                return _failed("echo not seen (payload cleared)")
            return _failed("echo not seen (could not clear composer)")

        if intent is not None:
            intent.write(phase="enter", pane=pane, needle=needle, digest=_digest(text), pasted=_fingerprint(shown))
        stage = "entered"
        if run.enter_and_observe(pane, shown) is not None:
            return DeliveryResult(True, Outcome(Status.DELIVERED))
        if not run.echo_visible(shown, baseline, needle, collapsible):
            return DeliveryResult(True, Outcome(Status.DELIVERED), "frame unchanged after Enter but the echo is gone")

        # Bounded recovery, once: the frame did not move and our text still
        # shows. Clear back to the baseline (never a bare second Enter: if the
        # first one lands late, a second submits whatever is there then),
        # paste again, probe again, Enter, observe.
        if not run.clear(pane, baseline):
            return _failed("submit not confirmed", "recovery could not clear the composer")
        if intent is not None:
            intent.write(
                phase="paste", pane=pane, needle=needle, digest=_digest(text), before=baseline.norm.count(needle)
            )
        stage = "pasted"
        run.paste(pane, text)
        shown = run.probe(pane, baseline, needle, collapsible)
        if shown is None:
            stage = "cleared"
            cleared = run.try_clear(pane, baseline)
            return _failed("submit not confirmed", f"echo not seen on retry; cleared={cleared}")
        if intent is not None:
            intent.write(phase="enter", pane=pane, needle=needle, digest=_digest(text), pasted=_fingerprint(shown))
        stage = "entered"
        if run.enter_and_observe(pane, shown, retry=True) is not None:
            return DeliveryResult(True, Outcome(Status.DELIVERED), "after one recovery")
        stage = "cleared"
        cleared = run.try_clear(pane, baseline)
        return _failed("submit not confirmed", f"Enter had no visible effect twice; cleared={cleared}")
    except TmuxError as exc:
        detail = f"stage: {stage}"
        if stage == "pasted" and baseline is not None:
            detail += f"; cleared={run.try_clear(pane, baseline)}"
        return _failed(str(exc), detail)
    except lock.LockTimeout:  # the buffer lock; an OSError subclass, so first
        return _failed("buffer busy: another delivery held it too long", f"stage: {stage}")
    except OSError as exc:  # spawning tmux, the lock directory, or the intent journal
        detail = f"stage: {stage}"
        if stage == "pasted" and baseline is not None:
            detail += f"; cleared={run.try_clear(pane, baseline)}"
        return _failed(str(exc) or type(exc).__name__, detail)
    except _Deadline:
        if stage == "pasted" and baseline is not None:
            if run.try_clear(pane, baseline):
                return _failed("deadline exceeded before Enter (payload cleared)")
            return _failed("deadline exceeded before Enter (could not clear composer)")
        if stage == "entered":
            return _failed("submit not confirmed (deadline exceeded)")
        return _failed(f"deadline exceeded ({stage})")


def recover(server: Server, record: dict, *, timing: Timing | None = None) -> tuple[str | None, str]:
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
                os.unlink(_pending_path(server, pane))  # handled here, not by a blind clear later
            run = _Run(server, timing, DEFAULT_BUFFER)
            now = run.frame(pane)
            moved = journal_moved(record, frame_server(now), _number(now.field("pane_pid")))
            if moved:  # another server's or another program's pane: nothing is typed into it
                return JOURNAL_DROPPED, f"{moved}; nothing typed"
            if now.in_mode or now.dead:
                raise TmuxError("pane in a mode or dead")
            if phase == "paste":
                if now.norm.count(needle) <= int(record.get("before", 0) or 0):
                    return None, "interrupted before the paste showed; nothing was submitted"
                if run.enter_and_observe(pane, now) is not None:
                    return str(Status.DELIVERED), "recovered: the paste was there unsent and Enter submitted it"
                return _failed_outcome("interrupted after the paste; Enter did not take"), "our text may remain"
            if _fingerprint(now) != record.get("pasted"):
                return str(Status.DELIVERED), "recovered: the pane moved after the Enter, so it went in; not retyped"
            if run.enter_and_observe(pane, now) is not None:
                return str(Status.DELIVERED), "recovered: the Enter had not gone in; pressed once now"
            return _failed_outcome("interrupted before Enter; Enter did not take"), "our text may remain"
    except (TmuxError, _Deadline, lock.LockTimeout, OSError) as exc:
        if phase == "enter":
            return _failed_outcome("interrupted after the paste; the pane could not be read"), str(exc)
        return None, f"interrupted before the paste; the pane could not be read ({exc})"


def frame_server(frame: Frame) -> ServerIdentity:
    """The server a frame was read from (`rk.core.identity`)."""
    return ServerIdentity(_number(frame.field("start_time")), _number(frame.field("pid")))


def _number(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else 0


def forget_pending(server: Server, pane: str) -> None:
    """Drop the marker of a delivery a crash cut short in `pane` without clearing the
    pane (its journal was dropped: the pane now is not the one it typed into)."""
    with contextlib.suppress(OSError):
        os.unlink(_pending_path(server, pane))


def _failed_outcome(why: str) -> str:
    return str(_failed(why).outcome)

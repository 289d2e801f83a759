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
   only our own text is backed out, never theirs (`_not_alone`);
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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

from rk.core.environ import (
    STATE_OPTION,
    is_pane_id,
)
from rk.core.errors import RkError
from rk.core.log.delivery import Outcome, Status
from rk.core.pane.facts import parse_state_option
from rk.core.pane.identity import JOURNAL_DROPPED, journal_moved
from rk.core.pane.payload import COLLAPSE_THRESHOLD, chips, foreign, needle_for, normalise, sanitize
from rk.core.pane.screen import LAYOUTS, Screen, classify
from rk.host import lock
from rk.tmux.frame import FRAME_FIELDS, SGR, Frame, frame_server
from rk.tmux.server import Command, Server, TmuxError, chain, format_number, head_format, in_mode_of, split_head

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
    #: ...and on while each capture still differs from the one before (a long
    #: paste still being drawn, on a loaded machine), up to this much longer.
    probe_drawing: float = 3.0
    #: Observation after Enter: capture at these offsets from the Enter, up to
    #: the first change. run-kit's ladder stops at 0.64 s; rk's goes on to 5 s
    #: before it calls an Enter lost, because an agent may take that long to
    #: redraw (OpenCode's first prompt switches views, 1-5 s under load), and
    #: a recovery after an Enter that did land is what leaves text behind.
    observe: tuple[float, ...] = (0.04, 0.08, 0.16, 0.32, 0.64, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
    #: The observation after a recovery's second Enter stops here.
    retry_observe: float = 2.0
    #: Observing on after the ladder, this often, while a hook wrote the pane's state since
    #: the Enter (the agent is handling input; OpenCode's first prompt of a session shows
    #: after 1-9 s under load, its session.created stamp at once).
    stamped_poll: float = 0.25
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
    #: Our text may remain in the composer (a human entered a mode before it
    #: could be cleared): the pending marker stays for the next delivery.
    leftover: bool = False


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
        from rk.host.files import atomic_write

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


class _Deadline(RkError):
    pass


class _InMode(RkError):
    """A human put the pane in a mode: the keystroke was not sent (the mode is theirs)."""

    def __init__(self, mode: str, step: str = "") -> None:
        super().__init__(mode)
        self.mode = mode
        self.step = step  #: what was not sent: `paste`, `Enter`, or a clear (`C-u`)


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

    def frame(self, target: str, styled: bool = False, rows: bool = False) -> Frame:
        """Mode, liveness, cursor, the guard's facts and the visible screen in one
        tmux process (with `styled`, the screen keeps its SGR styles too; with
        `rows`, a second capture keeps one row per terminal row, wrapped lines
        unjoined, so its rows are the cursor's).

        `display-message` with an unknown target prints empty fields and exits
        0 (tmux 3.3a), so the pane id is checked here; `capture-pane` in the
        same invocation fails loudly for a pane that does not exist."""
        mark = secrets.token_hex(6)
        commands = [Command.display(target, head_format(FRAME_FIELDS, mark)), Command.capture(target, styled=styled)]
        if rows:
            commands += [Command.display(target, f"[={mark}]"), Command.capture(target, joined=False)]
        out = self.tmux(*chain(*commands))
        try:
            head, screen = split_head(out, FRAME_FIELDS, mark)
        except TmuxError:
            raise TmuxError(f"can't find pane: {target}") from None
        screen, _, unjoined = screen.partition(f"[={mark}]\n")
        fields = tuple(head[f] for f in FRAME_FIELDS)
        if not is_pane_id(fields[0]):
            raise TmuxError(f"can't find pane: {target}")
        plain = SGR.sub("", screen) if styled else screen
        return Frame(
            head["pane_id"],
            head["pane_in_mode"] == "1",
            head["pane_dead"] == "1",
            f"{head['cursor_x']},{head['cursor_y']}",
            plain,
            screen if styled else "",
            fields,
            unjoined,
        )

    def guarded(
        self,
        pane: str,
        *commands: list[str],
        input: str | None = None,
        before: tuple[list[str], ...] = (),
        otherwise: tuple[list[str], ...] = (),
    ) -> None:
        """Run `commands` only if the pane is not in a mode at that instant
        (`Command.unless_mode`, decided inside the server), after `before`,
        in one tmux process. A human may enter copy-mode at any moment; the
        mode is theirs, so it is never cancelled: the keys are not sent and
        `_InMode` says so."""
        out = self.tmux(*chain(*before, Command.unless_mode(pane, *commands, otherwise=otherwise)), input=input)
        mode = in_mode_of(out)
        if mode is not None:
            raise _InMode(mode, commands[-1][-1] if commands else "")

    # -- steps

    def paste(self, pane: str, text: str) -> None:
        """Load the named buffer from stdin and paste it bracketed, deleting it.

        The buffer is server-global, so load→paste holds a second small lock
        per (server, buffer) (`buffer_lock`); the load and the paste are one
        tmux process, so it is held for a few milliseconds."""
        with buffer_lock(self.server, self.buffer, max(self.remaining(), 0.0)):
            try:
                self.guarded(
                    pane,
                    Command.paste_buffer(self.buffer, pane),
                    input=text,
                    before=(Command.load_buffer(self.buffer),),
                    otherwise=(Command.delete_buffer(self.buffer),),  # in a mode: nothing pasted, nothing left behind
                )
            except _InMode as exc:
                raise _InMode(exc.mode, "paste") from None

    def probe(self, pane: str, echo: Echo) -> Frame | None:
        """Wait for the paste to show in the live composer (`Echo.holds`). The
        frame that proved it, or None."""
        t = self.timing
        self.sleep(t.settle)
        last: Frame | None = None
        for i in range(t.probe_captures):
            if i:
                self.sleep(t.probe_interval)
            f = echo.look(self, pane)
            if echo.holds(f):
                return f
            last = f
        until = time.monotonic() + t.probe_drawing
        while last is not None and time.monotonic() < until:  # the screen still moves: the paste may still arrive
            self.sleep(t.probe_interval)
            f = echo.look(self, pane)
            if echo.holds(f):
                return f
            if f.norm == last.norm:
                return None
            last = f
        return None

    def enter_and_observe(self, pane: str, shown: Frame, echo: Echo, retry: bool = False) -> tuple[str, Frame]:
        """Press Enter alone, then capture at the observation offsets until there
        is positive evidence that the prompt was taken (`Echo.taken`): (that
        evidence, or "" when none came; the last frame). A frame that merely
        moved is no evidence (a spinner, a status line, a hook re-stamping
        `idle`). After a recovery (`retry`) the app has shown it is slow to take
        Enter, not slow to draw: the first steps of the ladder (up to
        `retry_observe`) are enough. An agent that would read an Enter close behind
        the paste as part of it gets its layout's `enter_gap` first. While a hook
        has written the pane's state since the Enter (`stamped`), the agent took
        input and is slow to show it: observation goes on, up to the deadline less
        a clear's grace."""
        self.sleep(_ENTER_GAP.get(echo.agent, 0.0))
        self.guarded(pane, Command.send_keys(pane, "Enter"))
        start = time.monotonic()
        ladder = [o for o in self.timing.observe if o <= self.timing.retry_observe] if retry else self.timing.observe
        last = shown
        for offset in ladder:
            self.sleep(start + offset - time.monotonic())
            last = echo.look(self, pane)
            why = echo.taken(last, shown)
            if why:
                return why, last
        t = self.timing
        while stamped(shown, last) and self.remaining() > t.stamped_poll + t.cleanup_grace:
            self.sleep(t.stamped_poll)
            last = echo.look(self, pane)
            why = echo.taken(last, shown)
            if why:
                return why, last
        return "", last

    def clear(self, pane: str, baseline: Frame) -> bool:
        """Send C-u (kill line: readline, canonical ttys and agent composers
        agree on it) until the normalised screen equals the baseline again.
        C-u stops at the start of its row: from the second try on, a BSpace
        first joins an empty row below our text to it (an Enter an agent took
        as a newline leaves the cursor there), so the C-u after it reaches the
        text; in an empty composer a BSpace erases nothing.

        Called whenever text may sit in the composer unsubmitted: a payload
        left half-typed would be submitted glued to the next fire. At least one
        C-u is always sent, because an app that does not echo shows the
        baseline while still holding the text. Runs on the cleanup grace if
        the deadline has passed. Never into a mode (`_InMode`)."""
        t = self.timing
        if self.remaining() < t.cleanup_grace:
            self.deadline = time.monotonic() + t.cleanup_grace
        for attempt in range(t.clear_attempts):
            self.guarded(pane, Command.send_keys(pane, *(("BSpace", "C-u") if attempt else ("C-u",))))
            for _ in range(t.clear_captures):
                self.sleep(t.clear_interval)
                if self.frame(pane).norm == baseline.norm:
                    return True
        return False

    def try_clear(self, pane: str, baseline: Frame) -> bool:
        try:
            return self.clear(pane, baseline)
        except (TmuxError, _Deadline, _InMode):
            return False

    def wait_out_mode(self, pane: str) -> bool:
        """Wait, within the deadline and the cleanup grace, for a human to leave
        the mode they entered mid-delivery. True once the pane is out of it."""
        t = self.timing
        self.deadline = max(self.deadline, time.monotonic() + t.cleanup_grace)
        try:
            while True:
                if not self.frame(pane).in_mode:
                    return True
                self.sleep(t.probe_interval)
        except (TmuxError, _Deadline):
            return False


@dataclass(frozen=True)
class Echo:
    """Where the payload must show to count as typed, and what proves it left.

    The live composer, never anywhere on screen. Two readings of it:

    * `composer`: for a screen an agent layout reads (`rk.core.pane.screen.classify`),
      the composer text it finds (`Screen.draft`) holds the needle more often
      than at the baseline (or, for a paste an agent collapses, a fresh chip);
    * `cursor`: the text that ends at the cursor ends with the needle (or a
      fresh chip), and the cursor moved since the baseline: where any program
      (a line-mode app, `cat`) echoes what is typed.

    What shows beside our text (`beside`) is read from where the cursor stood at
    the baseline to where it stands now; when the program redrew its screen
    meanwhile and the line moved to another row (Codex's startup screen), that
    span is the redraw's, so the line is found again by what it held up to the
    cursor (the `line` reading, `Frame.past_anchor`).

    So a copy of the same text already on screen (the transcript, a previous
    identical payload) never counts. Whichever reading proved the echo must
    later show the text gone for the Enter to count (`taken`).
    """

    needle: str
    collapsible: bool
    #: The layout that reads the pane's screen at the baseline ("": none).
    agent: str = ""
    base_cursor: str = ""
    #: Needle occurrences in the layout's composer at the baseline.
    base_count: int = 0
    #: Chips in the layout's composer at the baseline.
    base_chips: tuple[tuple[str, int], ...] = ()
    #: The layout's composer text at the baseline, normalised.
    base_draft: str = ""
    #: The cursor's row up to the cursor at the baseline (the prompt typing starts after).
    base_anchor: str = ""

    @classmethod
    def of(cls, baseline: Frame, needle: str, collapsible: bool, *, before_paste: bool = True) -> Echo:
        """The echo rule for a pane as `baseline` (a styled frame) shows it. A
        journal's recovery has no frame from before the paste: with `before_paste`
        False, the frame only names the layout, any cursor counts as moved and
        the composer as empty before."""
        screen = _read(baseline.styled or baseline.screen, "", baseline.field("pane_title"))
        composer = screen.draft if screen.agent and before_paste else ""
        line = baseline.cursor_line() if before_paste else None
        return cls(
            needle,
            collapsible,
            screen.agent,
            baseline.cursor if before_paste else "",
            normalise(composer).count(needle),
            tuple(chips(composer).items()),
            normalise(composer),
            line[0] if line is not None else "",
        )

    def look(self, run: _Run, pane: str) -> Frame:
        """One frame, with what both readings need (styles for a layout, terminal rows)."""
        return run.frame(pane, styled=bool(self.agent), rows=True)

    def screen(self, f: Frame) -> Screen | None:
        """The layout's reading of `f`; None without a layout, or when it no longer reads it."""
        if not self.agent:
            return None
        screen = _read(f.styled or f.screen, self.agent, f.field("pane_title"))
        return screen if screen.agent == self.agent else None

    def _fresh_chip(self, text: str, before: dict[str, int]) -> bool:
        return self.collapsible and any(n > before.get(chip, 0) for chip, n in chips(text).items())

    def in_composer(self, screen: Screen) -> bool:
        return normalise(screen.draft).count(self.needle) > self.base_count or self._fresh_chip(
            screen.draft, dict(self.base_chips)
        )

    def at_cursor(self, f: Frame) -> bool:
        if f.cursor == self.base_cursor:
            return False
        text = f.before_cursor()
        return normalise(text).endswith(self.needle) or self._fresh_chip(text, {})

    def where(self, f: Frame) -> str:
        """Which reading shows our text in `f`: `composer`, `cursor`, or ""."""
        screen = self.screen(f)
        if screen is not None and self.in_composer(screen):
            return "composer"
        return "cursor" if self.at_cursor(f) else ""

    def holds(self, f: Frame) -> bool:
        """Our text is in the live composer of `f`."""
        return bool(self.where(f))

    def alone(self, f: Frame, where: str) -> str | None:
        """What the reading `where` (`composer`, `cursor` or `line`) shows in `f` beyond
        the baseline, normalised: the layout's composer text past its baseline text,
        the screen from the baseline's cursor to the cursor, or the cursor's row past
        the baseline's anchor when the line moved. None when it cannot be read."""
        if where == "composer":
            screen = self.screen(f)
            draft = normalise(screen.draft) if screen is not None else None
            return draft[len(self.base_draft) :] if draft is not None and draft.startswith(self.base_draft) else None
        seen = None
        if where == "line" and self.base_cursor:
            seen = f.past_anchor(self.base_anchor, self.base_cursor)
        elif where == "cursor" and self.base_cursor:
            seen = f.since(self.base_cursor)
        return normalise(seen) if seen is not None else None

    def beside(self, f: Frame, text: str) -> tuple[str, str, str]:
        """Text in the live composer of `f` that is neither our `text` nor there at the
        baseline: (the reading that shows it, the part before our text, the part
        after it), normalised (`rk.core.pane.payload.foreign`). The reading that proves
        the echo is asked, or, when none does (a key after the paste moved the
        cursor past our text), each. Judged for a single line only (a multi-line
        paste into a line-mode program is echoed back line by line) and never for
        a collapsed paste (a chip).

        Where the cursor reading is asked, the line that moved (`line`) is asked
        first, and counts only when it holds our whole text: then the program
        redrew its screen, and what that line shows beside our text decides (a key
        typed into it still shows); the span from the old cursor is the redraw's."""
        if "\n" in text or self.collapsible:
            return "", "", ""
        proved = self.where(f)
        readings = (proved,) if proved else ("composer", "cursor")
        for where in ("line", *readings) if "cursor" in readings else readings:
            seen = self.alone(f, where)
            if seen is None or (where == "line" and normalise(text) not in seen):
                continue
            before, after = foreign(seen, text)
            if before or after:
                return where, before, after
            if where == "line":
                return "", "", ""
        return "", "", ""

    def taken(self, f: Frame, shown: Frame) -> str:
        """Positive evidence in `f` that the prompt shown in `shown` was taken, or "":
        the hooks say a turn started (`active`, newly or with a newer epoch), the
        layout shows a working turn that `shown` did not, or the reading that
        proved the echo no longer shows it (the composer, read, lost it; the
        cursor moved past it)."""
        now, then = parse_state_option(f.field(STATE_OPTION)), parse_state_option(shown.field(STATE_OPTION))
        if now.state == "active" and (then.state != "active" or now.epoch > then.epoch):
            return "the hooks say the turn started"
        if f.in_mode:
            return ""
        screen = self.screen(f)
        if screen is not None and screen.state == "active":
            before = self.screen(shown)
            if before is None or before.state != "active":
                return "the screen shows the turn working"
        where = self.where(shown)
        if where == "composer":
            return "the composer no longer holds it" if screen is not None and not self.in_composer(screen) else ""
        if where == "cursor" and not self.at_cursor(f):
            return "the cursor moved past it"
        return ""


def _read(styled: str, hint: str, title: str) -> Screen:
    """A capture as the agent layouts read it (the reset dating does not matter here)."""
    return classify(styled, LAYOUTS, now=int(time.time()), zone=UTC, hint=hint, title=title)


#: Why a delivery was not retyped after an Enter with no evidence.
STAMPED_AFTER_ENTER = "a hook wrote the pane's state after Enter; not retyped"


def stamped(shown: Frame, now: Frame) -> bool:
    """A hook wrote the pane's state option between `shown` and `now` (any state: a
    session's stamp is no evidence of a turn, but it says the agent took input)."""
    return now.field(STATE_OPTION) != shown.field(STATE_OPTION)


#: How long each agent's Enter keeps behind its paste (`Layout.enter_gap`).
_ENTER_GAP: dict[str, float] = {layout.agent: layout.enter_gap for layout in LAYOUTS if layout.enter_gap}


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
        # We hold the pane lock, so whoever left the marker died mid-delivery
        # (kill -9 between paste and Enter), or met a mode it would not cancel:
        # their text may still sit in the composer and would be submitted glued
        # to ours. Clear it, unless the pane is in a mode (then it stays marked).
        leftover = [os.path.exists(marker) and not _clear_leftover(run, target)]
        with open(marker, "w") as fh:
            fh.write(str(os.getpid()))
        result: DeliveryResult | None = None
        try:
            result = _deliver_locked(run, target, text, needle, collapsible, guard, intent, leftover)
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


def _clear_leftover(run: _Run, pane: str) -> bool:
    """Kill whatever line a crashed delivery left in the composer (best effort).
    False when the pane is in a mode (nothing is sent into it) or tmux failed."""
    try:
        for _ in range(2):
            run.guarded(pane, Command.send_keys(pane, "C-u"))
        return True
    except (TmuxError, _Deadline, _InMode):
        return False


def _in_mode_failure(run: _Run, pane: str, exc: _InMode, stage: str, baseline: Frame | None) -> DeliveryResult:
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


#: Why a delivery did not press Enter when the composer held more than rk's text.
NOT_ALONE = "a key was typed into the composer during the delivery; not submitted"


def _not_alone(run: _Run, pane: str, echo: Echo, shown: Frame, text: str) -> DeliveryResult:
    """The composer holds our text and someone else's (a human pressed a key between
    rk's look and its paste, or after the paste): Enter would send both as one
    prompt, so it is not pressed. Our text is backed out (one BackSpace per
    character) only when it is last on the line, a single line of characters one
    BackSpace each erases, and theirs then stands alone; otherwise all is left
    as it is. Nothing ever clears their text, and no pending marker is left: the
    next fire finds their draft and is held by it."""
    where, before, after = echo.beside(shown, text)
    if after or any(unicodedata.combining(ch) for ch in text):
        return _failed(f"{NOT_ALONE}; rk's text is left beside theirs (it is not last on the line)")
    try:
        run.guarded(pane, Command.send_keys(pane, *["BSpace"] * len(text)))
        for i in range(run.timing.probe_captures):
            if i:
                run.sleep(run.timing.probe_interval)
            f = echo.look(run, pane)
            if echo.alone(f, where) == before:
                return _failed(f"{NOT_ALONE}; rk's text was backed out, theirs is kept")
    except (TmuxError, _Deadline, _InMode) as exc:
        return _failed(f"{NOT_ALONE}; backing out rk's text failed ({exc or type(exc).__name__})")
    return _failed(f"{NOT_ALONE}; backing out rk's text did not show, the composer is left as it is")


def _deliver_locked(
    run: _Run,
    pane: str,
    text: str,
    needle: str,
    collapsible: bool,
    guard: Guard | None,
    intent: Intent | None = None,
    leftover: list[bool] | None = None,
) -> DeliveryResult:
    # Where we are decides what a failure means: before the paste nothing was
    # typed (safe to retry); between paste and Enter our text may sit in the
    # composer (clear it); after an Enter it may or may not have landed.
    stage = "before paste"
    baseline: Frame | None = None
    try:
        # Baseline (with styles and terminal rows, for the guard and the echo rule): one process.
        baseline = run.frame(pane, styled=True, rows=True)
        if baseline.pane_id != pane:
            return _failed(f"can't find pane: {pane}")
        if baseline.dead:
            return _failed(f"pane {pane} is dead")
        if guard is not None:
            refused = guard(baseline)
            if refused is not None:
                return DeliveryResult(False, None, "refused before typing", refused)
        if baseline.in_mode:  # the human's: never cancelled (a guard holds it; without one, it fails)
            return _failed(f"pane is in {baseline.mode}; nothing typed")
        if leftover and leftover[0]:  # an earlier payload a mode kept us from clearing: clear it first
            if not _clear_leftover(run, pane):
                return _failed("an earlier payload may remain in the composer and could not be cleared")
            leftover[0] = False
            baseline = run.frame(pane, styled=True, rows=True)
        echo = Echo.of(baseline, needle, collapsible)

        if intent is not None:
            intent.write(
                phase="paste", pane=pane, needle=needle, digest=_digest(text), before=baseline.norm.count(needle)
            )
        stage = "pasted"
        run.paste(pane, text)
        shown = run.probe(pane, echo)
        if shown is None:
            last = echo.look(run, pane)
            if echo.beside(last, text)[0]:  # a key after the paste: C-u would clear theirs too
                return _not_alone(run, pane, echo, last, text)
            stage = "cleared"
            if run.try_clear(pane, baseline):
                return _failed("echo not seen (payload cleared)")
            return _failed("echo not seen (could not clear composer)")

        if echo.beside(shown, text)[0]:
            return _not_alone(run, pane, echo, shown, text)
        if intent is not None:
            intent.write(phase="enter", pane=pane, needle=needle, digest=_digest(text), pasted=_fingerprint(shown))
        stage = "entered"
        why, last = run.enter_and_observe(pane, shown, echo)
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
            stage = "cleared"
            cleared = not echo.beside(last, text)[0] and run.try_clear(pane, baseline)
            return _failed("submit not confirmed", f"{STAMPED_AFTER_ENTER}; cleared={cleared}")

        # Bounded recovery, once: no evidence, and our text still in the
        # composer. Clear back to the baseline (never a bare second Enter: if
        # the first one lands late, a second submits whatever is there then),
        # paste again, probe again, Enter, observe.
        if not run.clear(pane, baseline):
            return _failed("submit not confirmed", "recovery could not clear the composer")
        if intent is not None:
            intent.write(
                phase="paste", pane=pane, needle=needle, digest=_digest(text), before=baseline.norm.count(needle)
            )
        stage = "pasted"
        run.paste(pane, text)
        shown = run.probe(pane, echo)
        if shown is None:
            last = echo.look(run, pane)
            if echo.beside(last, text)[0]:
                return _not_alone(run, pane, echo, last, text)
            stage = "cleared"
            cleared = run.try_clear(pane, baseline)
            return _failed("submit not confirmed", f"echo not seen on retry; cleared={cleared}")
        if echo.beside(shown, text)[0]:
            return _not_alone(run, pane, echo, shown, text)
        if intent is not None:
            intent.write(phase="enter", pane=pane, needle=needle, digest=_digest(text), pasted=_fingerprint(shown))
        stage = "entered"
        why, last = run.enter_and_observe(pane, shown, echo, retry=True)
        if why:
            return DeliveryResult(True, Outcome(Status.DELIVERED), "after one recovery")
        if not echo.holds(last):
            return _failed("submit not confirmed", "no evidence after the retry's Enter; not cleared")
        stage = "cleared"
        cleared = run.try_clear(pane, baseline)
        return _failed("submit not confirmed", f"Enter had no visible effect twice; cleared={cleared}")
    except _InMode as exc:
        return _in_mode_failure(run, pane, exc, stage, baseline)
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
                if run.enter_and_observe(pane, shown, echo)[0]:
                    return str(Status.DELIVERED), "recovered: the paste was there unsent and Enter submitted it"
                return _failed_outcome("interrupted after the paste; Enter did not take"), "our text may remain"
            if _fingerprint(now) != record.get("pasted"):
                return str(Status.DELIVERED), "recovered: the pane moved after the Enter, so it went in; not retyped"
            if run.enter_and_observe(pane, echo.look(run, pane), echo)[0]:
                return str(Status.DELIVERED), "recovered: the Enter had not gone in; pressed once now"
            return _failed_outcome("interrupted before Enter; Enter did not take"), "our text may remain"
    except (TmuxError, _Deadline, _InMode, lock.LockTimeout, OSError) as exc:
        if phase == "enter":
            return _failed_outcome("interrupted after the paste; the pane could not be read"), str(exc)
        return None, f"interrupted before the paste; the pane could not be read ({exc})"


def look_at(server: Server, pane: str, timing: Timing | None = None) -> Frame:
    """One frame of `pane` as delivery's baseline takes it (styled, with rows): for
    anything else that looks before it presses a key (`rk.act.interrupt`). TmuxError
    when the pane is gone."""
    try:
        return _Run(server, timing or Timing(), DEFAULT_BUFFER).frame(pane, styled=True, rows=True)
    except _Deadline:
        raise TmuxError(f"{pane}: no answer from tmux in time") from None


def forget_pending(server: Server, pane: str) -> None:
    """Drop the marker of a delivery a crash cut short in `pane` without clearing the
    pane (its journal was dropped: the pane now is not the one it typed into)."""
    with contextlib.suppress(OSError):
        os.unlink(_pending_path(server, pane))


def _failed_outcome(why: str) -> str:
    return str(_failed(why).outcome)

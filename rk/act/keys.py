"""The keys of one delivery: every tmux command it runs, under one deadline.

A delivery's tmux calls (`Run`) share one deadline (`Timing`), send a keystroke
only if the pane is not in a mode at that instant (decided inside the server,
so a human's copy-mode is never cancelled: `InMode` says the key was not sent),
and hold the per-(server, pane) lock for the whole sequence and the
per-(server, buffer) lock from load to paste, so two deliveries (two threads or
two rk processes) never interleave keystrokes in one pane or paste each other's
buffer. What the keys are for is `rk.act.deliver`'s; reading the echo is
`rk.act.echo`'s.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from dataclasses import dataclass

from rk.core.environ import is_pane_id
from rk.core.errors import RkError
from rk.core.pane.screen import REDRAW_PAUSE, REDRAW_TRIES
from rk.host import lock
from rk.tmux.frame import FRAME_FIELDS, SGR, Frame
from rk.tmux.server import Command, Server, TmuxError, chain, head_format, in_mode_of, split_head

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
    #: ...stopping once the screen stood still this long (a loaded machine draws a
    #: 20 KB paste in bursts, two captures 80 ms apart can be equal mid-paste; a
    #: starved TUI such as OpenCode's may not redraw at all for most of a second).
    probe_still: float = 1.0
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
    #: A guard that cannot judge the frame yet (`rk.act.deliver.LookAgain`: a TUI caught
    #: mid-redraw reads as no layout) is shown a new one this much later, up to this many
    #: times (`rk.core.pane.screen.REDRAW_PAUSE`, as a tick's look is).
    look_again: float = REDRAW_PAUSE
    look_again_tries: int = REDRAW_TRIES


def server_key(server: Server) -> str:
    """The server as its locks and markers name it: one socket, however it is spelled."""
    return os.path.realpath(str(server.path))


def pane_lock(server: Server, pane: str, timeout: float = Timing.lock_wait) -> contextlib.AbstractContextManager[None]:
    """The lock `deliver` holds on (server, pane) for its whole sequence.

    Anything else in rk that types into a pane should hold it too. `pane`
    must be the pane id (`%N`) for two spellings of one pane to share a lock.
    Raises TimeoutError if it cannot be had within `timeout` seconds.
    """
    return lock.exclusive(f"pane\0{server_key(server)}\0{pane}", timeout, Timing.lock_poll)


def buffer_lock(server: Server, buffer: str, timeout: float) -> contextlib.AbstractContextManager[None]:
    """The lock `deliver` holds on (server, buffer name) from load to paste.

    Named buffers are server-global: two deliveries into different panes that
    use one buffer name would otherwise paste (or `-d`-delete) each other's
    text. Raises TimeoutError if it cannot be had within `timeout` seconds.
    """
    return lock.exclusive(f"buffer\0{server_key(server)}\0{buffer}", timeout, Timing.lock_poll)


class DeadlineExceeded(RkError):
    """The delivery's deadline passed before the next tmux call or wait."""


class InMode(RkError):
    """A human put the pane in a mode: the keystroke was not sent (the mode is theirs)."""

    def __init__(self, mode: str, step: str = "") -> None:
        super().__init__(mode)
        self.mode = mode
        self.step = step  #: what was not sent: `paste`, `Enter`, or a clear (`C-u`)


class Run:
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
            raise DeadlineExceeded()
        return self.server.run(*args, input=input, timeout=max(min(left, 5.0), 0.2))

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            if self.remaining() <= seconds:
                raise DeadlineExceeded()
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
        `InMode` says so."""
        out = self.tmux(*chain(*before, Command.unless_mode(pane, *commands, otherwise=otherwise)), input=input)
        mode = in_mode_of(out)
        if mode is not None:
            raise InMode(mode, commands[-1][-1] if commands else "")

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
            except InMode as exc:
                raise InMode(exc.mode, "paste") from None

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
        the deadline has passed. Never into a mode (`InMode`)."""
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
        except (TmuxError, DeadlineExceeded, InMode):
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
        except (TmuxError, DeadlineExceeded):
            return False

    def clear_leftover(self, pane: str) -> bool:
        """Kill whatever line a crashed delivery left in the composer (best effort).
        False when the pane is in a mode (nothing is sent into it) or tmux failed."""
        try:
            for _ in range(2):
                self.guarded(pane, Command.send_keys(pane, "C-u"))
            return True
        except (TmuxError, DeadlineExceeded, InMode):
            return False


def look_at(server: Server, pane: str, timing: Timing | None = None) -> Frame:
    """One frame of `pane` as delivery's baseline takes it (styled, with rows): for
    anything else that looks before it presses a key (`rk.act.interrupt`). TmuxError
    when the pane is gone."""
    try:
        return Run(server, timing or Timing(), DEFAULT_BUFFER).frame(pane, styled=True, rows=True)
    except DeadlineExceeded:
        raise TmuxError(f"{pane}: no answer from tmux in time") from None

"""The echo probe: where a pasted prompt must show before Enter, and what proves it taken.

The live composer, never anywhere on screen (`Echo`): no echo means no Enter.
Text beside ours (a human's key pressed during the delivery) means no Enter
either, and only our own text is backed out, never theirs (`back_out`). After
Enter, only positive evidence counts (`Echo.taken`): the composer no longer
holds the text, or the turn started; a frame that merely moved proves nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC

from rk.act.keys import DeadlineExceeded, InMode, Run
from rk.core.environ import STATE_OPTION
from rk.core.pane.facts import parse_state_option
from rk.core.pane.idle_line import cell_width
from rk.core.pane.payload import chips, foreign, normalise
from rk.core.pane.screen import LAYOUTS, Screen, classify
from rk.core.pane.state import AgentState
from rk.tmux.frame import Frame
from rk.tmux.server import Command, TmuxError


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

    def look(self, run: Run, pane: str) -> Frame:
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
        if now.state == AgentState.ACTIVE and (then.state != AgentState.ACTIVE or now.epoch > then.epoch):
            return "the hooks say the turn started"
        if f.in_mode:
            return ""
        screen = self.screen(f)
        if screen is not None and screen.state == AgentState.ACTIVE:
            before = self.screen(shown)
            if before is None or before.state != AgentState.ACTIVE:
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


def probe(run: Run, pane: str, echo: Echo) -> Frame | None:
    """Wait for the paste to show in the live composer (`Echo.holds`). The
    frame that proved it, or None."""
    t = run.timing
    run.sleep(t.settle)
    last: Frame | None = None
    for i in range(t.probe_captures):
        if i:
            run.sleep(t.probe_interval)
        f = echo.look(run, pane)
        if echo.holds(f):
            return f
        last = f
    until = time.monotonic() + t.probe_drawing
    still_since = time.monotonic()
    while last is not None and time.monotonic() < until:  # the screen still moves: the paste may still arrive
        run.sleep(t.probe_interval)
        f = echo.look(run, pane)
        if echo.holds(f):
            return f
        if f.norm != last.norm:
            still_since = time.monotonic()
        elif time.monotonic() - still_since >= t.probe_still:
            return None
        last = f
    return None


def enter_and_observe(run: Run, pane: str, shown: Frame, echo: Echo, retry: bool = False) -> tuple[str, Frame]:
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
    run.sleep(_ENTER_GAP.get(echo.agent, 0.0))
    run.guarded(pane, Command.send_keys(pane, "Enter"))
    start = time.monotonic()
    ladder = [o for o in run.timing.observe if o <= run.timing.retry_observe] if retry else run.timing.observe
    last = shown
    for offset in ladder:
        run.sleep(start + offset - time.monotonic())
        last = echo.look(run, pane)
        why = echo.taken(last, shown)
        if why:
            return why, last
    t = run.timing
    while stamped(shown, last) and run.remaining() > t.stamped_poll + t.cleanup_grace:
        run.sleep(t.stamped_poll)
        last = echo.look(run, pane)
        why = echo.taken(last, shown)
        if why:
            return why, last
    return "", last


#: Why a delivery did not press Enter when the composer held more than rk's text.
NOT_ALONE = "a key was typed into the composer during the delivery; not submitted"


def one_key_each(text: str) -> bool:
    """Whether one BackSpace erases each character of `text`: none joins the one before
    it into one glyph (a combining mark, a variation selector, a zero-width joiner or other
    format character, an emoji modifier, a flag's second half), which an editor may
    erase with its base at once: the BackSpaces left over would erase a human's text."""
    return not any(
        cell_width(ch, text[i - 1] if i else "") == 0
        or "\U0001f1e6" <= ch <= "\U0001f1ff"
        or "\U0001f3fb" <= ch <= "\U0001f3ff"
        for i, ch in enumerate(text)
    )


def back_out(run: Run, pane: str, echo: Echo, shown: Frame, text: str) -> str:
    """The composer holds our text and someone else's (a human pressed a key between
    rk's look and its paste, or after the paste): Enter would send both as one
    prompt, so it is not pressed; what is returned says why. Our text is backed
    out (one BackSpace per character) only when it is last on the line, a single
    line of characters one BackSpace each erases, and theirs then stands alone;
    otherwise all is left as it is. Nothing ever clears their text, and no
    pending marker is left: the next fire finds their draft and is held by it."""
    where, before, after = echo.beside(shown, text)
    if after:
        return f"{NOT_ALONE}; rk's text is left beside theirs (it is not last on the line)"
    if not one_key_each(text):
        return f"{NOT_ALONE}; rk's text is left beside theirs (BackSpace would not erase it a character at a time)"
    try:
        run.guarded(pane, Command.send_keys(pane, *["BSpace"] * len(text)))
        for i in range(run.timing.probe_captures):
            if i:
                run.sleep(run.timing.probe_interval)
            f = echo.look(run, pane)
            if echo.alone(f, where) == before:
                return f"{NOT_ALONE}; rk's text was backed out, theirs is kept"
    except (TmuxError, DeadlineExceeded, InMode) as exc:
        return f"{NOT_ALONE}; backing out rk's text failed ({exc or type(exc).__name__})"
    return f"{NOT_ALONE}; backing out rk's text did not show, the composer is left as it is"

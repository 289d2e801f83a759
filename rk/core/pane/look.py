"""The screen as a second source of truth: when rk looks at a pane, and what the
look changes about what rk believes.

Hooks are the first source, and a fresh hook state costs nothing. The
screen only ever reads an agent's pane (one the process tree or a hook pid
shows): it never makes a shell or a program (a REPL over an agent's last
frame) an agent. rk looks (one `capture-pane`) at an agent pane that matters
this tick when

* it has no state at all, or only one the screen wrote (an agent without hooks);
* it is idle and its CLI's hooks report no turn start (`UNREPORTED_STARTS`);
* it is busy (`active` or `waiting`) without a fresh write for STALE_AFTER
  seconds: an Esc, a denied dialog or a failed request may have ended the turn
  without any hook;
* it is a busy Claude pane whose session registry says the turn ended since
  (`rk.core.pane.registry`): the registry is never trusted alone, the look
  confirms it;
* it is `limited` and the reset has passed, or the reset is not known (the
  look may find it, or see the limit gone);

and always right before typing. The screen's verdict corrects the stored
state, which then records that the screen wrote it. Going from busy to rest
needs a settled screen (two captures alike): a streaming reply can look idle
for an instant. Pure: the captures come in, the corrected facts go out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rk.core.pane.facts import BUSY_STATES, LIMITED, PaneFact, PaneKind, Source, SourceNote, refusal
from rk.core.pane.idle_line import is_draft, parse
from rk.core.pane.recheck import watching_dialog
from rk.core.pane.registry import Verdict, ends_turn
from rk.core.pane.screen import LAYOUTS, Screen
from rk.core.pane.state import AgentState
from rk.core.schedule.dispose import Seen

#: Agents whose screens rk can read: a screen of theirs that matches no layout is unreadable.
READABLE = frozenset(layout.agent for layout in LAYOUTS)

#: A busy hook state older than this is checked against the screen (well
#: under a minute: an Esc in Claude leaves `active` with no hook at all).
STALE_AFTER = 20
#: Agent CLIs whose hooks report a turn's end but not its start (Mistral Vibe's post_agent):
#: an idle pane of theirs is looked at too, so a turn begun since shows `active`.
UNREPORTED_STARTS = frozenset({"vibe"})
#: A limit whose reset the agent did not print counts as reset this long after
#: it was first seen (an API rate limit of "try again later").
LIMIT_RETRY = 15 * 60


#: A CLI that says it will continue by itself at the reset (Claude Code's "Continuing
#: automatically at 10:16am", then "Continuing shortly") is given this long past the
#: reset (as rk reads it: `rk.core.pane.screen.resets.Reset.over`) to do so before rk
#: calls the limit over and may prompt it: Claude fires 30-90 s after the reset and
#: checks every 30 s, so by 120 s; the rest is for its turn to show.
SELF_RESUME_GRACE = 150


def resumes_itself(pane: PaneFact, screen: Screen, now: int) -> bool:
    """The screen says the agent will continue by itself, and the reset (the screen's,
    else the pane's, else the retry delay's end) is at most SELF_RESUME_GRACE past: the
    limit ends with the agent's own turn, not with a prompt of rk's (a `limit-reset`
    "continue" beside Claude's own would be a second prompt, and cancels Claude's wait)."""
    reset = screen.reset_at or pane.reset_at or pane.epoch + LIMIT_RETRY
    return screen.resumes and now - reset <= SELF_RESUME_GRACE


def screen_reset(pane: PaneFact, screen: Screen) -> int:
    """The reset the screen prints, unless the pane's limit began after it: the banner
    a refused resume repeats names the reset that did not end that limit, which then
    lasts LIMIT_RETRY (ended at once, rk would type into it again every tick)."""
    return screen.reset_at if pane.state != LIMITED or screen.reset_at > pane.epoch else 0


def limit_over(pane: PaneFact, now: int) -> bool:
    """A limited pane whose reset instant has passed (or, unknown, whose retry delay has)."""
    if pane.state != LIMITED:
        return False
    return now >= pane.reset_at if pane.reset_at else now - pane.epoch >= LIMIT_RETRY


def asks_registry(pane: PaneFact, now: int) -> bool:
    """Whether Claude's session registry is worth reading for this pane: a busy Claude
    pane the screen would not be looked at for yet (its registry knows an Esc at once)."""
    return (
        pane.kind == PaneKind.AGENT
        and not pane.dead
        and pane.provider == "claude"
        and pane.state in BUSY_STATES
        and not needs_look(pane, now)
    )


def needs_look(pane: PaneFact, now: int, registry: Verdict | None = None) -> bool:
    """Whether the tick should capture this pane's screen (see the module docstring);
    `registry`: what Claude's session registry implies for the pane, if it was read."""
    if pane.dead or pane.kind != PaneKind.AGENT:
        return False  # a shell or a program (a REPL): its screen cannot make it an agent
    if not pane.state or (pane.source == Source.SCREEN and not pane.pid):
        return True
    if pane.state == AgentState.IDLE and pane.provider in UNREPORTED_STARTS:
        return True  # no hook says a turn began: the screen does
    if watching_dialog(pane, now):
        return True  # a dialog's answer fires no hook: watch the screen
    if pane.state in BUSY_STATES:
        if ends_turn(registry, pane.state):
            return True  # Claude's session registry says the turn ended: the screen confirms it
        return now - pane.epoch > STALE_AFTER
    if pane.state == LIMITED:
        return not pane.reset_at or limit_over(pane, now) or now - pane.epoch > STALE_AFTER
    return False


@dataclass(frozen=True)
class Correction:
    """A state the screen showed that differs from the stored one: what to write."""

    state: str
    epoch: int
    pid: int
    reset_at: int = 0

    @property
    def value(self) -> str:
        """The `@rk_pane_agent_state` value."""
        return f"{self.state}:{self.epoch}:{self.pid}" if self.pid else f"{self.state}:{self.epoch}"

    @property
    def note(self) -> str:
        """The `@rk_pane_agent_source` value."""
        return SourceNote(Source.SCREEN, self.epoch, self.reset_at).render()


def correction(pane: PaneFact, screen: Screen, now: int, settled: bool) -> Correction | None:
    """What the look changes, or None to keep the stored state.

    `settled`: a second capture showed the same screen (required before a busy
    or limited pane is called at rest)."""
    state = screen.state
    if not state:
        return None  # not a screen rk can read: it claims nothing
    if state in BUSY_STATES:
        if pane.state == LIMITED and state == AgentState.WAITING and not limit_over(pane, now):
            return None  # a dialog over a limit (what to do about it): still limited
        return None if pane.state == state else Correction(state, now, pane.pid)
    if state == LIMITED:
        if pane.state == LIMITED:
            reset = screen_reset(pane, screen) or pane.reset_at
            if limit_over(replace(pane, reset_at=reset), now):
                if resumes_itself(pane, screen, now):
                    return None  # the agent continues by itself: its own turn ends the limit
                # over: at rest once the screen has settled and no dialog is up
                return Correction(AgentState.IDLE, now, pane.pid) if settled and not screen.dialog else None
            if reset != pane.reset_at:
                return Correction(LIMITED, pane.epoch, pane.pid, reset)  # the reset learnt
            return None
        if screen.reset_at and screen.reset_at <= now:
            state = AgentState.IDLE  # an old limit message: its reset has passed
        else:
            return Correction(LIMITED, now, pane.pid, screen.reset_at)
    # at rest
    if pane.state == AgentState.IDLE:
        return None
    if pane.state and not settled:
        return None
    return Correction(AgentState.IDLE, now, pane.pid)


def corrected(pane: PaneFact, fix: Correction | None) -> PaneFact:
    """The pane as rk believes it after the look: the correction applied. The
    screen may confirm an agent the process tree shows; it never makes a shell
    or a program (a REPL over an agent's last frame) one, nor gives it a state."""
    if fix is None or pane.kind != PaneKind.AGENT:
        return pane
    return replace(
        pane, state=fix.state, epoch=fix.epoch, pid=fix.pid, source=str(Source.SCREEN), reset_at=fix.reset_at
    )


def seen_before_typing(pane: PaneFact, screen: Screen | None, now: int, any_program: bool = False) -> Seen:
    """The pane right before typing, from its hook state and a fresh look
    (`screen`; None when there was none, as in a dry run).

    The screen decides where it reads a state, with two exceptions that fail
    closed: a fresh busy hook state beats one idle frame, and a limit that has
    not reset beats a screen at rest (the banner may have scrolled away). A
    limit message is old once its reset has passed, or when it names none and
    the pane's state is idle (the tick's look already ended that limit). A
    screen of an agent rk can read that matches no layout is `unreadable`: rk
    does not know what it would type into."""
    refused = refusal(pane, any_program)
    hooks = AgentState.IDLE if limit_over(pane, now) else pane.state
    if screen is None or not screen.state:
        unreadable = screen is not None and pane.provider in READABLE
        return Seen(hooks, pane.reset_at, refused=refused, unreadable=unreadable)
    state = screen.state
    if state == AgentState.IDLE and pane.state in BUSY_STATES and now - pane.epoch <= STALE_AFTER:
        state = pane.state
    if hooks == LIMITED and state != AgentState.ACTIVE:
        state = LIMITED
    if state == LIMITED:
        printed = screen_reset(pane, screen)
        over = limit_over(pane, now) or bool(printed and printed <= now)
        # a message with no reset on a pane the hooks (or this tick's look) call idle was judged already: old
        judged = not screen.reset_at and pane.state == AgentState.IDLE
        if (over or judged) and not resumes_itself(pane, screen, now):
            state = AgentState.WAITING if screen.dialog else AgentState.IDLE  # the limit is over; its message is old
    return Seen(
        state, pane.reset_at or screen.reset_at, dialog=screen.dialog, draft=bool(screen.draft), refused=refused
    )


def learns_idle_line(pane: PaneFact) -> bool:
    """Whether rk keeps this pane's idle line (`rk.core.pane.idle_line`): an agent at rest by
    its state whose screen no layout of rk's is made for (a known CLI's draft is
    read from its composer, and its unread screen is held as `unreadable`)."""
    return (
        pane.kind == PaneKind.AGENT
        and pane.state == AgentState.IDLE
        and not pane.dead
        and pane.provider not in READABLE
    )


def draft_without_layout(pane: PaneFact, screen: Screen | None, idle: str, line: tuple[str, str] | None) -> bool:
    """A draft in a pane whose screen no layout read, by its idle line (the pane
    option's value `idle`) and the cursor's `line` now (`rk.core.pane.idle_line.is_draft`:
    unsure is a draft)."""
    if screen is None or screen.agent or not learns_idle_line(pane):
        return False
    return is_draft(parse(idle), line)

"""A fresh context per fire (`--fresh clear|compact`): whether a fire sends the agent
CLI's own `/clear` or `/compact` before its payload, and why not.

A heartbeat into a long session pays for the whole context every time; the CLI's
own command empties (clear) or summarises (compact) it first. The human's context
is theirs: when a turn someone else started ran in the pane since this entry's
last delivery, the command is withheld (the payload still goes), unless the value
says `-always`. An agent CLI with no such command refuses it (nothing typed).
Pure: the entry's value, the agent's commands and the pane's state journal come in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from rk.core.cost.turn_timeout import START_WINDOW, StateLine, runs
from rk.core.schedule.entry import ALWAYS as ALWAYS
from rk.core.schedule.entry import FreshMode as FreshMode

#: Each agent CLI's own command for each kind, as its TUI takes it typed into the composer:
#: Claude Code's and Codex's run offline (tests/agents/test_real_fresh.py), the others' from
#: their docs (Gemini and Qwen name compaction /compress; Codex, OpenCode and Kilo start a
#: new session with /new).
#: An agent not listed, or a kind missing, has none: the fire refuses it.
COMMANDS: Mapping[str, Mapping[str, str]] = {
    "claude": {"clear": "/clear", "compact": "/compact"},
    "codex": {"clear": "/new", "compact": "/compact"},
    "gemini": {"clear": "/clear", "compact": "/compress"},
    "qwen": {"clear": "/clear", "compact": "/compress"},
    "opencode": {"clear": "/new", "compact": "/compact"},
    "kilo": {"clear": "/new", "compact": "/compact"},
    "copilot": {"clear": "/clear", "compact": "/compact"},
    "vibe": {"clear": "/clear", "compact": "/compact"},  # Mistral Vibe (its docs; not yet run here)
}


def command_for(mode: FreshMode, agent: str) -> str:
    """The command `agent` takes for `mode` ("" when it has none, or the agent is not known)."""
    return COMMANDS.get(agent, {}).get(mode.command, "")


def refusal(mode: FreshMode, agent: str) -> str:
    """Why `agent` cannot take `mode` (one line), or "" when it can."""
    if command_for(mode, agent):
        return ""
    if not agent:
        return f"--fresh {mode.command}: the pane runs no agent rk knows"
    return f"--fresh {mode.command}: {agent} has no {mode.command} command"


def human_turn_since(journal: Sequence[StateLine], rk_stamps: Sequence[int], since: int) -> bool:
    """Whether a turn someone other than rk started ran in the pane after `since` (the
    entry's last delivery, else its creation). A busy run is rk's when it began at most
    `START_WINDOW` after one of rk's deliveries into the pane (`rk_stamps`: a fire's
    own command and payload both start within it); any other run after `since` is a
    human's. A run already going at `since` is not new."""
    for run in runs(journal):
        if run.start <= since:
            continue
        if not any(stamp <= run.start <= stamp + START_WINDOW for stamp in rk_stamps):
            return True
    return False


class Step(StrEnum):
    """What a fire does about its entry's `fresh`."""

    NONE = "none"  #: the entry has no fresh: the payload alone
    SEND = "send"  #: the command first, then the payload
    WITHHELD = "withheld"  #: a human typed since the last fire: the payload alone, said in the log
    REFUSED = "refused"  #: the agent has no such command: nothing typed, a `failed:` line


@dataclass(frozen=True)
class Plan:
    """One fire's fresh step: what to do, the command to type, and why (for the log)."""

    step: Step
    command: str = ""
    why: str = ""

    @property
    def note(self) -> str:
        """What the delivered line says in parentheses ("" when nothing is to say)."""
        if self.step == Step.SEND:
            return f"after {self.command}"
        if self.step == Step.WITHHELD:
            return f"fresh withheld: {self.why}"
        return ""


WITHHELD_WHY = "a human typed since the last fire"


def plan(mode: FreshMode | None, agent: str, human_typed: str) -> Plan:
    """The fresh step of one fire of an entry with `mode` into a pane running `agent`;
    `human_typed` says why the human's context may be there ("" when it is not: no
    human's turn since the entry's last delivery, as far as the journal tells)."""
    if mode is None:
        return Plan(Step.NONE)
    why = refusal(mode, agent)
    if why:
        return Plan(Step.REFUSED, why=why)
    if human_typed and not mode.always:
        return Plan(Step.WITHHELD, why=human_typed)
    return Plan(Step.SEND, command_for(mode, agent))


#: Seconds the agent may take to finish each kind of command before the fire gives up
#: (a compaction is a model call on the whole context; a clear is local).
FINISH_WITHIN: Mapping[str, int] = {"clear": 30, "compact": 300}
#: What a CLI prints once a compaction is done (Claude Code `Compacted`, Codex `Context
#: compacted`, Gemini and Qwen `compressed`): a new one on screen is the screen's evidence.
DONE_NOTICES: Mapping[str, tuple[str, ...]] = {"compact": ("ompacted", "ompressed")}
#: Seconds a screen at rest must stand still to count as finished without a hook or notice.
SETTLE = 2.0


@dataclass(frozen=True)
class Mark:
    """The pane as the fresh step sees it at one instant: the hooks' stamp and session,
    the done notices on screen, and whether it is at rest (no turn, dialog, draft, mode)."""

    epoch: int = 0
    session: str = ""
    notices: int = 0
    at_rest: bool = False


def notices(kind: str, screen: str) -> int:
    """How many done notices of `kind` the screen shows."""
    return sum(screen.count(word) for word in DONE_NOTICES.get(kind, ()))


def finished(before: Mark, now: Mark, still_for: float) -> bool:
    """Whether the agent has finished the command typed after `before`: at rest now, and a
    hook wrote the pane since (a new stamp or session: Claude's `/clear` starts a session),
    or a new done notice shows, or the screen stood still at rest `SETTLE` seconds."""
    if not now.at_rest:
        return False
    hooked = now.epoch > before.epoch or now.session != before.session
    return hooked or now.notices > before.notices or still_for >= SETTLE

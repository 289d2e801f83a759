"""What an agent is doing (`AgentState`) and how its last turn ended (`TurnEnd`).

Both are `StrEnum`s: a member equals its word, so what tmux options, the state journal
and the log hold stays the word itself, and a word read from outside compares equal to
its member. The words are spelled once, in `rk.core.pane.state_words`, which the hook
path uses instead.
"""

from __future__ import annotations

from enum import StrEnum

from rk.core.pane import state_words as words


class AgentState(StrEnum):
    """The scheduling state: what the pane's agent does now."""

    ACTIVE = words.ACTIVE
    WAITING = words.WAITING
    IDLE = words.IDLE
    LIMITED = words.LIMITED


class TurnEnd(StrEnum):
    """How the last turn ended, beside the state (`@rk_pane_turn_end`)."""

    OK = words.OK
    FAILED = words.FAILED
    INTERRUPTED = words.INTERRUPTED
    LIMITED = words.LIMITED


#: The states in which an agent is busy: a prompt typed now would queue or land in a dialog.
BUSY_STATES = frozenset({AgentState.ACTIVE, AgentState.WAITING})

"""The agent states and turn ends, spelled once, as plain words.

`rk.core.pane.state` builds the `AgentState` and `TurnEnd` enums from these words, and
the code passes the enums around. The hook path (`rk agent hook`, on every agent event)
imports only this module: `enum` alone costs it ~10 ms, a third of its budget.
"""

from __future__ import annotations

ACTIVE = "active"  #: working on a turn
WAITING = "waiting"  #: a dialog waits for the human
IDLE = "idle"  #: at rest, ready for a prompt
LIMITED = "limited"  #: at a usage or rate limit
STATES = (ACTIVE, WAITING, IDLE, LIMITED)

OK = "ok"  #: the turn ended as the agent meant it to
FAILED = "failed"  #: an API or tool error ended it
INTERRUPTED = "interrupted"  #: Esc cut it short
TURN_ENDS = (OK, FAILED, INTERRUPTED, LIMITED)

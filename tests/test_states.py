"""Agent states and turn ends are named once: `rk.core.pane.state_words` spells them,
`rk.core.pane.state` types them, and no other module of rk/ writes a state as a bare
string (the places that write the same word for another meaning are listed, with why).
"""

from __future__ import annotations

import io
import json
import tokenize
from pathlib import Path

from rk.core.pane import state_words
from rk.core.pane.state import BUSY_STATES, AgentState, TurnEnd

RK = Path(__file__).resolve().parent.parent / "rk"
WORDS = {"active", "idle", "waiting", "limited"}

#: (module, word): the same word meaning something else than an agent state.
OTHER_MEANINGS = {
    # `systemctl --user is-active` prints "active"
    ("rk/cli/doctor.py", "active"),
    # the glance's segment parts and JSON keys (counts of panes waiting, limited)
    ("rk/core/channels/glance.py", "waiting"),
    ("rk/core/channels/glance.py", "limited"),
    # notification event kinds, named in the config file's `on:` lists
    ("rk/core/channels/notice.py", "waiting"),
    ("rk/core/channels/notice.py", "limited"),
    # Claude Code's session registry's own status words (rk/core/pane/registry.py maps them)
    ("rk/core/pane/registry.py", "idle"),
    ("rk/core/pane/registry.py", "waiting"),
}


def test_the_enums_are_the_words():
    assert tuple(AgentState) == state_words.STATES
    assert tuple(TurnEnd) == state_words.TURN_ENDS
    assert {"active", "waiting"} == BUSY_STATES


def test_a_member_is_its_word_wherever_it_is_written():
    assert f"{AgentState.IDLE}:5" == "idle:5"
    assert json.dumps({"to": AgentState.LIMITED}) == '{"to": "limited"}'
    assert AgentState("waiting") is AgentState.WAITING
    assert {"idle": 1}[AgentState.IDLE] == 1


def bare_state_words(path: Path) -> list[tuple[int, str]]:
    """(line, word) of each string token in `path` that is exactly a state word."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.STRING:
            body = token.string.strip("rbuRBU")
            if body[:1] in "\"'" and body.strip("\"'") in WORDS and len(body) <= 10:
                found.append((token.start[0], body.strip("\"'")))
    return found


def test_no_module_writes_a_state_as_a_bare_string():
    stray = []
    for path in sorted(RK.rglob("*.py")):
        name = str(path.relative_to(RK.parent))
        if name == "rk/core/pane/state_words.py":
            continue
        stray += [
            f"{name}:{line}: {word!r}" for line, word in bare_state_words(path) if (name, word) not in OTHER_MEANINGS
        ]
    assert stray == []


def test_the_scan_sees_a_bare_state(tmp_path):
    source = tmp_path / "m.py"
    source.write_text('x = "idle"\ny = "idle: a docstring"\nz = AgentState.IDLE\n')
    assert bare_state_words(source) == [(1, "idle")]

"""`rk cron runs` against the real Claude Code and Codex offline (`make test-agents`):
three fires of an entry, each answered by the mock with known usage, a human's turn
between the second and the third; `rk cron runs --json` has one row per fire, and each row matches its turn in the agent's own
session record: the count, the turn's start (the journal's busy line against the
record's prompt, within `TAKEN`), how it ended, its tokens and the reply's first line."""

from __future__ import annotations

import json

import pytest
from test_real_usage import RK_TURN, _tick_until, _turn_done

from rk.core.cost import usage
from rk.store.transcripts import Transcripts, locate
from rk.tmux.server import Server

pytestmark = pytest.mark.agents

PROMPT = "rk runs probe"
REPLY = "Hello from the mock API."
#: Seconds from the journal's busy line (its second) to the agent's record of the prompt, at most:
#: well under the 5 s between fires, so a row still matches its own turn alone.
TAKEN = 3


@pytest.mark.parametrize("agent", ("claude", "codex"))
def test_each_fire_is_a_row_that_matches_its_turn_in_the_agents_record(rig, agent):
    r = rig(agent)
    r.run.mock.set_mode("ok", usage=RK_TURN)
    entry = r.add(PROMPT, "--every", "5s", "--force")
    for n in (1, 2, 3):
        assert _tick_until(r, entry) == "delivered"
        _turn_done(r, PROMPT, count=n)
        if n == 2:  # a human's turn between rk's: no row of its own, nobody's tokens
            r.run.submit("a human question")
            _turn_done(r, "a human question")

    rows = json.loads(r.rk("cron", "runs", "--json").stdout)["result"]
    env = r.client().env()
    provider, path, why = locate(Server(name=r.server, env=env), r.pane, env)
    assert path, why
    records, why = Transcripts().records(provider, path)
    assert records is not None, why
    turns = [t for t in usage.turns(records) if t.prompt.text.strip() == PROMPT]

    assert len(rows) == len(turns) == 3, (rows, turns)
    for row, turn in zip(rows, turns, strict=True):
        assert (row["entry"], row["reason"], row["ended"]) == (entry, "schedule", "ok"), row
        # the journal's busy line is to the second; the agent records the prompt when it takes
        # it, which a loaded machine delays (a Codex 1.002 s after): the same second, or soon after
        assert row["turn"] is not None and -1 <= turn.prompt.ts - row["turn"]["start"] < TAKEN, (row, turn.prompt.ts)
        assert row["at"] <= row["turn"]["start"] <= row["turn"]["end"]
        assert row["seconds"] == row["turn"]["end"] - row["turn"]["start"]
        assert row["tokens"] == turn.tokens.to_dict(), (row["tokens"], turn.tokens)
        assert row["reply"] == REPLY
    table = r.rk("cron", "runs", entry).stdout.splitlines()
    assert len(table) == 4 and all(" ok " in line and REPLY in line for line in table[1:]), table

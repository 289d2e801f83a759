"""`rk events --pane` is bounded: at most `MAX_PANES` panes a call (a one-line usage
error beyond, before any file is read), and the filter looks each event up in a set."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cli_helpers import json_error, make_env, one_line_error, run_in

from rk.core.log import states as journal
from rk.core.log.delivery import LogLine
from rk.core.log.events import MAX_PANES, Event, log_events, selected
from rk.store import state_journal as statejournal
from rk.store.delivery_log import append_lines


def _panes(n: int) -> list[str]:
    return [arg for i in range(n) for arg in ("--pane", f"%{i}")]


def test_more_panes_than_the_bound_is_a_one_line_usage_error(tmp_path):
    env = make_env(tmp_path)
    res = run_in(["events", "-L", "s", *_panes(MAX_PANES + 1)], env)
    assert res.code == 2
    message = one_line_error(res)
    assert f"at most {MAX_PANES}" in message and len(message) < 100  # the list is not echoed back
    assert "at most" in json_error(run_in(["events", "-L", "s", "--json", *_panes(MAX_PANES + 1)], env), "usage")


def test_twenty_thousand_panes_are_refused_at_once(tmp_path):
    start = time.monotonic()
    res = run_in(["events", "-L", "s", *_panes(20_000)], make_env(tmp_path))
    assert res.code == 2 and "20,000 --pane given" in res.err
    assert time.monotonic() - start < 5


def test_the_bound_itself_is_allowed_and_filters(tmp_path):
    env = make_env(tmp_path)
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(mode=0o700)
    for i in range(3):
        statejournal.append(env, "s", journal.render(1000 + i, f"%{i}", "active", "", "hook"))
    append_lines(state / "s.log", [LogLine(1005, "e1", "%500", "schedule", "delivered")])
    res = run_in(["events", "-L", "s", "--json", *_panes(MAX_PANES - 1), "--pane", "%500"], env)
    assert res.code == 0, res
    assert [json.loads(x)["pane"] for x in res.out.splitlines()] == ["%0", "%1", "%2", "%500"]
    named = run_in(["events", "-L", "s", "--json", "--pane", "%1", "--pane", "%500"], env)
    assert [json.loads(x)["pane"] for x in named.out.splitlines()] == ["%1", "%500"]


def test_the_filter_is_a_set_lookup():
    events = log_events([LogLine(i, "e", f"%{i % 1000}", "schedule", "delivered") for i in range(20_000)])
    panes = frozenset(f"%{i}" for i in range(MAX_PANES))
    start = time.monotonic()
    kept = selected(events, None, panes)
    assert len(kept) == 20_000 * MAX_PANES // 1000
    assert all(isinstance(e, Event) and e.pane in panes for e in kept)
    assert time.monotonic() - start < 2

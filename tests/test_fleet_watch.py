"""The rule of a wake on another host's panes (rk.core.fleet.watch), pure: each mirrored
line judged once, a turn that ended while the link was down still wakes, the debounce
holds the lines, a cold start fires nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rk.core.fleet.watch import MirrorLine, RemoteScope, ScopeError, parse_scope, remote_edge
from rk.core.schedule.wake import Observation, WakeVerdict

B = RemoteScope("b")
PANE1 = RemoteScope("b", pane="%1")


def line(n: int, to: str, pane: str = "%1", by: str = "", role: str = "") -> MirrorLine:
    return MirrorLine(1000 + n, pane, to, (7, 9, 100 * (n + 1)), by, role)


@pytest.mark.parametrize(
    "text, scope",
    [
        ("server", None),
        ("", None),
        ("%3@buildbox", RemoteScope("buildbox", "default", "%3")),
        ("@gpu1", RemoteScope("gpu1")),
        ("@gpu1/work", RemoteScope("gpu1", "work")),
        ("%12@b/x_y-z", RemoteScope("b", "x_y-z", "%12")),
        ("role:worker@buildbox", RemoteScope("buildbox", role="worker")),
        ("role:a@b@gpu1/work", RemoteScope("gpu1", "work", role="a@b")),
    ],
)
def test_scopes_read(text, scope):
    assert parse_scope(text) == scope


@pytest.mark.parametrize(
    "text",
    [
        "%3",
        "b",
        "%x@b",
        "@",
        "@B",
        "@all@x",
        "%3@b/",
        "@b/a b",
        "@b;id",
        "worker@b",
        "role:@b",
        "role:a b@b",
        "role:x@B",
    ],
)
def test_other_scopes_are_refused(text):
    with pytest.raises(ScopeError):
        parse_scope(text)


def test_a_wake_names_the_pane_with_its_host():
    assert PANE1.name("%1") == "%1@b"
    assert RemoteScope("b", "work").name("%2") == "%2@b/work"


def test_cold_it_takes_the_newest_mark_and_fires_nothing():
    verdict, obs, pane, *_ = remote_edge(None, B, [line(0, "idle")], None, 0, 5000)
    assert (verdict, pane) == (WakeVerdict.COLD_START, "")
    assert remote_edge(obs, B, [line(0, "idle")], None, 0, 5001)[0] == WakeVerdict.UNCHANGED


def test_a_turn_that_ended_while_the_link_was_down_wakes_once():
    _, obs, *_ = remote_edge(None, B, [line(0, "idle")], None, 0, 5000)
    lines = [line(0, "idle"), line(1, "active"), line(2, "idle"), line(3, "active")]  # ended, and busy again
    verdict, obs2, pane, state, *_ = remote_edge(obs, B, lines, None, 0, 5010)
    assert (verdict, pane, state) == (WakeVerdict.FIRE, "%1@b", "idle")
    assert remote_edge(obs2, B, lines, None, 0, 5011)[0] == WakeVerdict.UNCHANGED  # judged once


def test_a_hosts_journal_before_the_entry_looked_wakes_nothing():
    _, obs, *_ = remote_edge(None, B, [], None, 0, 1001)  # cold, and nothing mirrored yet
    history = [line(0, "idle"), line(1, "active")]  # the first follow brings the journal so far
    assert remote_edge(obs, B, history, None, 0, 1002).verdict == WakeVerdict.IGNORED
    fired = remote_edge(obs, B, [*history, line(2, "idle")], None, 0, 1003)
    assert (fired.verdict, fired.state) == (WakeVerdict.FIRE, "idle")


def test_going_to_work_or_another_pane_is_not_a_wake():
    _, obs, *_ = remote_edge(None, PANE1, [], None, 0, 1000)
    verdict, *_ = remote_edge(obs, PANE1, [line(0, "active"), line(1, "idle", "%2")], None, 0, 5001)
    assert verdict == WakeVerdict.IGNORED


def test_the_debounce_holds_the_lines_until_it_passes():
    _, obs, *_ = remote_edge(None, B, [], None, 0, 1000)
    lines = [line(0, "waiting")]
    verdict, held, *_ = remote_edge(obs, B, lines, 4990, 60, 5010)
    assert verdict == WakeVerdict.DEBOUNCED and held == obs
    assert remote_edge(held, B, lines, 4990, 60, 5051)[0] == WakeVerdict.FIRE


def test_a_mark_no_longer_mirrored_falls_back_to_the_lines_since_it_looked():
    obs = Observation("mirror:1.2.3", 1001)  # a line rotated out of the mirror
    lines = [line(0, "idle"), line(1, "idle"), line(5, "idle")]  # ts 1000, 1001, 1005
    verdict, *_ = remote_edge(obs, B, lines, None, 0, 5000)
    assert verdict == WakeVerdict.FIRE
    assert remote_edge(obs, B, lines[:2], None, 0, 5000)[0] == WakeVerdict.UNCHANGED


def test_a_role_scope_wakes_on_the_panes_whose_window_carried_the_role_when_streamed():
    worker = RemoteScope("b", role="worker")
    _, obs, *_ = remote_edge(None, worker, [], None, 0, 1000)
    other = [line(0, "idle", "%1", role="reviewer"), line(1, "idle", "%2")]
    verdict, obs, *_ = remote_edge(obs, worker, other, None, 0, 5001)
    assert verdict == WakeVerdict.IGNORED
    lines = [*other, line(2, "active", "%2", role="worker"), line(3, "idle", "%2", role="worker")]
    fired = remote_edge(obs, worker, lines, None, 0, 5002)
    assert (fired.verdict, fired.pane, fired.state) == (WakeVerdict.FIRE, "%2@b", "idle")


def test_wake_from_human_lets_pass_the_end_of_a_turn_rk_started_there():
    _, obs, *_ = remote_edge(None, B, [], None, 0, 1000)
    ours = [line(0, "active", by=""), line(1, "idle", by="rk")]
    verdict, obs2, *_ = remote_edge(obs, B, ours, None, 0, 5001, from_human=True)
    assert verdict == WakeVerdict.FROM_RK and obs2.fingerprint == "mirror:7.9.200"  # consumed, not held
    assert remote_edge(obs, B, ours, None, 0, 5001, from_human=False).verdict == WakeVerdict.FIRE  # wake_from any
    theirs = [*ours, line(2, "active"), line(3, "idle", by="human")]
    fired = remote_edge(obs2, B, theirs, None, 0, 5002, from_human=True)
    assert (fired.verdict, fired.by) == (WakeVerdict.FIRE, "human")


@pytest.mark.parametrize("to, by", [("waiting", "rk"), ("gone", "rk"), ("limited", "rk"), ("idle", "")])
def test_a_question_a_limit_a_vanish_or_a_turn_nobody_can_tell_wakes_a_human(to, by):
    _, obs, *_ = remote_edge(None, B, [], None, 0, 1000)
    fired = remote_edge(obs, B, [line(0, "active"), line(1, to, by=by)], None, 0, 5001, from_human=True)
    assert (fired.verdict, fired.state, fired.by) == (WakeVerdict.FIRE, to, by or "human")


STATES = st.sampled_from(["active", "idle", "waiting", "limited"])


@given(st.lists(STATES, min_size=1, max_size=30), st.lists(st.integers(1, 5), min_size=1, max_size=30))
def test_every_batch_with_an_end_fires_once_and_every_line_is_judged_once(states, cuts):
    """However the lines arrive (in batches of any size, a tick between batches), a
    batch fires exactly when it holds a line going anywhere but active; then nothing
    fires again on the same lines."""
    lines = [line(i, s) for i, s in enumerate(states)]
    _, obs, *_ = remote_edge(None, B, [], None, 0, 1000)
    seen, fires, expected = 0, 0, 0
    for cut in cuts * 30:
        if seen >= len(lines):
            break
        upto = min(len(lines), seen + cut)
        batch = lines[seen:upto]
        verdict, obs, *_ = remote_edge(obs, B, lines[:upto], None, 0, 5000 + upto)
        fires += verdict == WakeVerdict.FIRE
        expected += any(x.to != "active" for x in batch)
        assert remote_edge(obs, B, lines[:upto], None, 0, 5000 + upto)[0] == WakeVerdict.UNCHANGED
        seen = upto
    assert fires == expected

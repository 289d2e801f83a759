"""The far end of a follow: the roster that turns a vanished pane into a `gone` line
(once, whoever looks, across a crash), and the stamps on each streamed line (who started
the turn, the window's role), pure and against the files."""

from __future__ import annotations

from pathlib import Path

from rk.channels.far_end import FarEnd
from rk.core.fleet.roster import KEEP_GONE, Roster, Seen, updated, vanished
from rk.core.fleet.turns import LOG_LAG, Turns
from rk.core.log import states
from rk.core.log.delivery import LogLine
from rk.store import delivery_log, state_journal
from rk.store.journal_feed import before, feed_of
from rk.store.roster import load, roster_path, take_look

WORKER = Seen("worker", "w1", True)
SHELL = Seen("", "sh", False)


def test_a_known_pane_the_look_no_longer_finds_has_vanished():
    old = Roster("1:9", {"%1": WORKER, "%2": SHELL, "%10": WORKER, "%3": WORKER})
    look = Roster("1:9", {"%3": WORKER})
    assert vanished(old, look) == ["%1", "%10"]  # a shell is not a known pane; tmux's order
    assert vanished(Roster(), look) == []  # before a first look: nothing to compare
    assert vanished(old, Roster("2:10", {"%1": WORKER})) == ["%1", "%3", "%10"]  # another server: all gone
    assert vanished(old, Roster()) == ["%1", "%3", "%10"]  # no server runs


def test_the_roster_keeps_a_vanished_panes_role_until_the_id_is_seen_again():
    old = Roster("1:9", {"%1": WORKER})
    after = updated(old, Roster("1:9", {}), ["%1"])
    assert after.stamp("%1") == ("worker", "")
    again = updated(after, Roster("1:9", {"%1": SHELL}), [])
    assert again.stamp("%1") == ("", "sh") and "%1" not in again.gone
    many = Roster("1:9", {f"%{i}": WORKER for i in range(KEEP_GONE + 5)})
    assert len(updated(many, Roster("1:9", {}), vanished(many, Roster("1:9", {}))).gone) == KEEP_GONE


def journal(state: Path) -> list[dict[str, object]]:
    return state_journal.read_all(str(state), "default")[0]


def test_a_vanish_is_journaled_once_however_many_look_and_after_a_crash(tmp_path):
    env = {"RK_STATE_DIR": str(tmp_path)}
    state = str(tmp_path)
    take_look(state, "default", Roster("1:9", {"%1": WORKER, "%2": WORKER}), 100, env)
    roster, gone = take_look(state, "default", Roster("1:9", {"%2": WORKER}), 101, env)
    assert gone == ["%1"] and roster.stamp("%1") == ("worker", "")
    assert take_look(state, "default", Roster("1:9", {"%2": WORKER}), 102, env)[1] == []  # a second far end
    # a far end killed after the journal and before the roster: the next look sees it said
    roster_path(state, "default").write_text(
        '{"server": "1:9", "panes": {"%1": ["worker", "w", true], "%2": ["", "", true]}, "gone": []}'
    )
    assert take_look(state, "default", Roster("1:9", {"%2": WORKER}), 103, env)[1] == []
    assert [(x["pane"], x["to"], x["source"]) for x in journal(tmp_path)] == [("%1", "gone", "tmux")]
    assert load(roster_path(state, "default")).gone == {"%1": "worker"}
    assert oct(roster_path(state, "default").stat().st_mode & 0o777) == "0o600"


def test_an_unreadable_roster_is_a_first_look(tmp_path):
    env = {"RK_STATE_DIR": str(tmp_path)}
    roster_path(str(tmp_path), "default").parent.mkdir(mode=0o700)
    roster_path(str(tmp_path), "default").write_text("{not json")
    assert take_look(str(tmp_path), "default", Roster("1:9", {}), 100, env)[1] == []


def line(ts: int, pane: str, to: str, end: str = "") -> dict[str, object]:
    return {"ts": ts, "pane": pane, "to": to, "end": end, "source": "hook", "agent": "claude"}


def test_who_started_a_turn_is_read_from_this_hosts_deliveries():
    turns = Turns([line(90, "%1", "idle")])
    for x in (line(100, "%1", "active"), line(101, "%1", "active"), line(130, "%1", "idle", "ok")):
        turns.add(x)
    assert turns.by("%1", "idle", {"%1": [99]}) == "rk"
    assert turns.by("%1", "idle", {"%1": [50]}) == "human"  # a delivery long before the turn
    assert turns.by("%1", "idle", {}) == "human"
    assert turns.by("%1", "active", {"%1": [99]}) == ""
    assert len(turns.panes["%1"]) == 3  # the same state again is no change


def test_a_humans_line_of_a_turn_just_begun_waits_for_the_log_while_a_delivery_is_in_flight():
    turns = Turns([line(90, "%1", "idle"), line(100, "%1", "active"), line(100, "%1", "idle", "ok")])
    assert not turns.settled("%1", "human", 100 + LOG_LAG, in_flight=True)
    assert turns.settled("%1", "human", 101 + LOG_LAG, in_flight=True)
    assert turns.settled("%1", "human", 100, in_flight=False)  # nothing typed into it: the log is whole
    assert turns.settled("%1", "rk", 100, in_flight=True)


def test_the_lines_before_a_mark_are_the_feeds_memory(tmp_path):
    env = {"RK_STATE_DIR": str(tmp_path)}
    for i in range(4):
        assert state_journal.append(env, "default", states.render(100 + i, "%1", "idle"))
    marks = feed_of(str(tmp_path), "default").poll_marked()
    assert [x["ts"] for x in before(str(tmp_path), "default", marks[1][1])] == [100, 101]
    assert before(str(tmp_path), "default", (0, 0, 0)) == []
    assert before(str(tmp_path), "default", (1, 2, 3)) == []


def in_flight(state: Path, pane: str) -> Path:
    """An intent journal of a delivery typing into `pane` (`rk.act.intents`)."""
    (state / "default.intents").mkdir(mode=0o700, exist_ok=True)
    path = state / "default.intents" / "e1.json"
    path.write_text(f'{{"entry": "e1", "reason": "schedule", "target": "{pane}", "ts": 300}}')
    return path


def test_each_streamed_line_is_stamped_and_a_humans_end_waits_for_a_delivery_in_flight(tmp_path):
    env = {"RK_STATE_DIR": str(tmp_path), "TMUX_TMPDIR": str(tmp_path / "no-tmux")}
    delivery_log.append_lines(tmp_path / "default.log", [LogLine(99, "e1", "%1", "schedule", "delivered")])
    far = FarEnd(str(tmp_path), "default", (0, 0, 0), env)
    far.roster = Roster("1:9", {"%1": WORKER})
    ours = [(line(95, "%1", "idle"), (1, 1, 1)), (line(100, "%1", "active"), (1, 1, 2))]
    ours.append((line(101, "%1", "idle", "ok"), (1, 1, 3)))
    sent = far.stamp(ours, 200)
    assert [x.get("by") for x, _ in sent] == ["human", None, "rk"]
    assert sent[2][0]["role"] == "worker" and sent[2][0]["window"] == "w1"
    theirs = [(line(300, "%1", "active"), (1, 1, 4)), (line(301, "%1", "idle", "ok"), (1, 1, 5))]
    later = [(line(302, "%1", "active"), (1, 1, 6))]
    intent = in_flight(tmp_path, "%1")
    assert [at for _, at in far.stamp(theirs, 301)] == [(1, 1, 4)]  # the end waits: its delivery may come
    assert far.holding
    assert far.stamp(later, 302) == []  # and the lines after it wait behind it
    delivery_log.append_lines(tmp_path / "default.log", [LogLine(300, "e1", "%1", "schedule", "delivered")])
    intent.unlink()
    sent = far.stamp([], 302)
    assert [(x.get("by"), at) for x, at in sent] == [("rk", (1, 1, 5)), (None, (1, 1, 6))]
    assert not far.holding
    question = [(line(399, "%1", "idle"), (1, 1, 7)), (line(400, "%1", "active"), (1, 1, 8))]
    in_flight(tmp_path, "%1")
    assert len(far.stamp([*question, (line(401, "%1", "waiting"), (1, 1, 9))], 401)) == 2
    assert [x["by"] for x, _ in far.stamp([], 401 + LOG_LAG)] == ["human"]  # no delivery came: a human's
    in_flight(tmp_path, "%2")  # a delivery into another pane holds nothing
    sent = far.stamp([(line(500, "%1", "active"), (1, 1, 10)), (line(500, "%1", "idle"), (1, 1, 11))], 500)
    assert [x.get("by") for x, _ in sent] == [None, "human"]

"""Pane identity as values: how a pane target stores the server its id belongs to, how
it round-trips through the entry file, and when a journal's pane is another one."""

from __future__ import annotations

import pytest

from rk.core.pane.facts import PaneFact, resolve_target
from rk.core.pane.identity import REPLACED, ServerIdentity, journal_moved
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.entry import EntryError, Target, TargetKind
from rk.store.config import ServerFiles
from rk.store.entries import EntryDocument, load_entries, parse_entries_text

A = ServerIdentity(1_796_195_015, 7624)


def element(**target) -> dict:
    return {"id": "e1", "schedule": {"kind": "every", "interval": "1m"}, "target": target, "payload": "hi"}


def test_a_pane_target_reads_and_writes_its_server_beside_the_pane_id():
    raw = element(kind="pane", pane="%3", server_started=A.started, server_pid=A.pid)
    entry = decode_entry(raw)
    assert entry.target == Target(TargetKind.PANE, "%3", A)
    assert entry.target.summary == "pane:%3"
    assert entry.to_yaml()["target"] == {"kind": "pane", "pane": "%3", "server_started": A.started, "server_pid": A.pid}


def test_a_file_without_identity_loads_unchanged_and_writes_none():
    entry = decode_entry(element(kind="pane", pane="%3"))
    assert entry.target == Target(TargetKind.PANE, "%3") and not entry.target.server.known
    assert entry.to_yaml()["target"] == {"kind": "pane", "pane": "%3"}


def test_role_and_session_targets_carry_no_identity():
    entry = decode_entry(element(kind="role", role="op", server_started=5, server_pid=6))
    assert not entry.target.server.known and entry.to_yaml()["target"] == {"kind": "role", "role": "op"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"server_started": "soon"}, "server_started must be an integer"),
        ({"server_pid": -1}, "server_pid must be a process id"),
        ({"server_pid": True}, "server_pid must be an integer"),
    ],
)
def test_a_malformed_identity_makes_the_entry_invalid(extra, message):
    with pytest.raises(EntryError, match=message):
        decode_entry(element(kind="pane", pane="%3", **extra))


def test_identity_round_trips_through_the_round_trip_file_and_first_sight_keeps_the_text(tmp_path):
    files = ServerFiles(tmp_path / "state", "s")
    files.dir.mkdir(mode=0o700)
    text = (
        "entries:\n"
        "  # the build pane\n"
        "  - id: e1\n"
        "    schedule: {kind: every, interval: 1m0s}\n"
        '    target: {kind: pane, pane: "%3", note: kept} # mine\n'
        "    payload: hi\n"
    )
    files.entries.write_text(text)
    with EntryDocument.edit(files) as doc:
        assert doc.learn_server("e1", A)
        assert not doc.learn_server("e1", ServerIdentity(1, 2))  # known already: never relearned
    written = files.entries.read_text()
    assert written == text.replace("note: kept}", f"note: kept, server_started: {A.started}, server_pid: {A.pid}}}")
    assert load_entries(files.entries).entries[0].target.server == A
    assert parse_entries_text(written).diagnostics == []


def test_resolve_target_calls_a_reused_id_of_another_server_replaced():
    target = Target(TargetKind.PANE, "%1", A)
    same = PaneFact("%1", command="claude", server_started=A.started, server_pid=A.pid)
    other = PaneFact("%1", command="claude", server_started=A.started + 60, server_pid=9999)
    same_second = PaneFact("%1", command="claude", server_started=A.started, server_pid=9999)
    assert resolve_target(target, [same]).pane == "%1"
    for pane in (other, same_second):
        fact = resolve_target(target, [pane])
        assert (fact.pane, fact.refused) == ("", REPLACED)
        assert "tmux server restarted" in fact.why
    assert resolve_target(Target(TargetKind.PANE, "%1"), [other]).pane == "%1"  # not known yet: as before
    assert resolve_target(target, [PaneFact("%1", command="claude")]).pane == "%1"  # facts without identity


def test_a_journal_names_its_pane_by_server_and_pane_pid():
    record = {"pane": "%0", "server_started": A.started, "server_pid": A.pid, "pane_pid": 100}
    assert journal_moved(record, A, 100) == ""
    assert "restarted" in journal_moved(record, ServerIdentity(A.started + 1, 1), 100)
    assert "restarted" in journal_moved(record, ServerIdentity(A.started, 1), 100)
    assert "another process" in journal_moved(record, A, 101)
    assert journal_moved(record, None) == "pane %0 is gone"
    assert journal_moved({"pane": "%0"}, None) == ""  # written before identity: recovered as before

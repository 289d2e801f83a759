"""Unit tests of the small pure pieces and the file modules: pane facts and
resolution, policy decisions, settings, the entry file, the cursor, the clock."""

from __future__ import annotations

import os
import stat

import pytest

from rk.core.log.delivery import LogLine, LogView
from rk.core.log.diagnostics import Diag
from rk.core.pane.facts import (
    PaneFact,
    PaneKind,
    ProcessInfo,
    StateOption,
    TargetFact,
    parse_state_option,
    reconcile,
    refusal,
    resolve_target,
)
from rk.core.schedule.decoding import check_respawn_intent, decode_entry
from rk.core.schedule.dispose import Act, Disposition, Seen, absent_disposition, deliver_policy, over_rate_cap
from rk.core.schedule.entry import (
    CreatedBy,
    Deliver,
    Entry,
    EntryError,
    Every,
    Target,
)
from rk.core.schedule.orphan import expires_at, should_expire
from rk.core.schedule.wake import Observation
from rk.host import clock
from rk.host.process import parse_stat, process_info
from rk.store.config import ConfigError, ServerFiles, Settings, check_slug, known_servers, load_settings
from rk.store.cursor import parse_cursor, read_cursor, render_cursor, write_cursor
from rk.store.entries import EntryDocument, EntryFileError, EntryNotFound, load_entries, parse_entries_text

# ---------------------------------------------------------------- pane facts


@pytest.mark.parametrize(
    "value, want",
    [
        ("idle:1751790042", StateOption("idle", 1751790042)),
        ("active:1751790100:48213", StateOption("active", 1751790100, 48213)),
        (" waiting:5 ", StateOption("waiting", 5)),
        ("busy:5", StateOption()),
        ("idle", StateOption()),
        ("idle:", StateOption()),
        (":5", StateOption()),
        ("idle:5x", StateOption()),
        ("idle:-5", StateOption()),
        ("idle:5:0", StateOption()),
        ("idle:5:abc", StateOption()),
        ("idle:5:6:7", StateOption()),
        ("", StateOption()),
    ],
)
def test_state_option_grammar_is_all_or_nothing(value, want):
    assert parse_state_option(value) == want


def _probe(front=(), behind=(), tty=7):
    """A process probe: pids in `front` own tty `tty`'s foreground, pids in `behind` are alive but not."""

    def probe(pid):
        if pid in front:
            return ProcessInfo(alive=True, tty=tty, pgrp=pid, tpgid=pid)
        if pid in behind:
            return ProcessInfo(alive=True, tty=tty, pgrp=pid, tpgid=pid + 1)
        return ProcessInfo()

    return probe


def test_reconciler_uses_the_pid_when_there_is_one_else_the_shell_rule():
    live = _probe(front={100})
    shell = PaneFact("%1", command="bash", tty=7)
    agent = PaneFact("%2", command="claude", tty=7)
    # a recorded pid in front of the pane decides, whatever the command (a wrapped launch shows bash)
    wrapped = reconcile(shell, "active:5:100", "", "claude:s1", live)
    assert (wrapped.state, wrapped.kind) == ("active", PaneKind.AGENT)
    dead = reconcile(agent, "active:5:200", "", "claude:s1", live)
    assert (dead.state, dead.epoch, dead.session_ref) == ("", 0, "")
    # no pid: a plain shell means the agent is gone
    assert reconcile(shell, "idle:5", "", "claude:s1", live).state == ""
    assert reconcile(agent, "idle:5", "", "claude:s1", live).session_ref == "claude:s1"
    # legacy option when the canonical one is absent
    assert reconcile(agent, "", "waiting:9", "", live).state == "waiting"


def test_pane_kind_decides_what_may_be_typed_into():
    probe = _probe(front={100}, behind={300})
    kind = lambda command, raw="", tty=7: reconcile(PaneFact("%1", command=command, tty=tty), raw, "", "", probe)  # noqa: E731
    for sh in ("bash", "zsh", "fish", "sh", "dash", "ksh", "tcsh", "nu"):
        assert kind(sh).kind == PaneKind.SHELL
        assert kind(sh, "idle:5").kind == PaneKind.SHELL  # a leftover state does not make a shell an agent
    assert kind("claude").kind == PaneKind.AGENT  # known agent CLI, no hooks yet
    assert kind("node", "idle:5:100").kind == PaneKind.AGENT  # an npm build, vouched for by its recorded pid
    assert kind("python3").kind == PaneKind.PROGRAM  # a REPL that never reported a state
    assert kind("python3", "idle:5").kind == PaneKind.AGENT  # ...that reported one by hand
    # the agent is alive but suspended (Ctrl-Z) and the shell has the keyboard again
    suspended = kind("bash", "idle:5:300")
    assert (suspended.kind, suspended.state) == (PaneKind.SHELL, "")
    # the agent is alive but another program is in front of it
    assert kind("vim", "idle:5:300").kind == PaneKind.PROGRAM
    # the recorded pid fronts another terminal, not this pane's
    assert kind("bash", "idle:5:100", tty=8).kind == PaneKind.SHELL
    assert refusal(kind("bash")) == "shell in pane"
    assert refusal(kind("python3")) == "no agent in pane (python3)"
    assert refusal(kind("python3"), any_program=True) == ""
    assert refusal(kind("bash"), any_program=True) == "shell in pane"  # never a shell


def test_a_refused_target_is_unresolved_and_says_why():
    panes = [
        PaneFact("%1", command="bash", kind=PaneKind.SHELL),
        PaneFact("%2", command="python3", kind=PaneKind.PROGRAM),
    ]
    shell = resolve_target(Target("pane", "%1"), panes)
    assert (shell.resolved, shell.refused, shell.why) == (False, "shell in pane", "%1: shell in pane")
    repl = resolve_target(Target("pane", "%2"), panes)
    assert (repl.resolved, repl.refused) == (False, "no agent in pane (python3)")
    assert resolve_target(Target("pane", "%2"), panes, any_program=True).pane == "%2"
    assert resolve_target(Target("pane", "%1"), panes, any_program=True).refused == "shell in pane"


def test_process_stat_parsing():
    line = "4242 (my (odd) prog) S 1 4242 4242 34816 4242 4194304 0 0"
    assert parse_stat(line) == ProcessInfo(alive=True, tty=34816, pgrp=4242, tpgid=4242)
    assert parse_stat(line).fronts(34816) and not parse_stat(line).fronts(1)
    assert parse_stat("9 (bash) S 1 9 9 34816 77 0").fronts(34816) is False  # another group owns the tty
    assert parse_stat("9 (x) Z 1 9 9 0 -1 0") == ProcessInfo()  # a zombie is dead
    assert parse_stat("garbage") == ProcessInfo()
    assert process_info(os.getpid()).alive and not process_info(0).alive


def test_role_resolves_to_the_windows_agent_pane():
    panes = [
        PaneFact("%1", window_id="@1", role="worker", state="idle", epoch=1, active=True),
        PaneFact("%2", window_id="@2", role="operator", active=True),
        PaneFact("%3", window_id="@2", role="operator", state="idle", epoch=7, active=False),
        PaneFact("%4", window_id="@2", role="operator", state="active", epoch=9, active=False),
    ]
    assert resolve_target(Target("role", "operator"), panes) == TargetFact(pane="%3", state="idle", epoch=7)
    panes[3] = PaneFact("%4", window_id="@2", role="operator", state="active", epoch=9, active=True)
    assert resolve_target(Target("role", "operator"), panes).pane == "%4"  # known state and active wins
    assert resolve_target(Target("role", "nobody"), panes).why == "no window carries role nobody"
    bare = [
        PaneFact("%8", window_id="@3", role="r", active=False),
        PaneFact("%9", window_id="@3", role="r", active=True),
    ]
    assert resolve_target(Target("role", "r"), bare).pane == "%9"  # no states: the active pane


def test_session_and_pane_targets():
    panes = [PaneFact("%1", session_ref="claude:abc"), PaneFact("%2", dead=True)]
    assert resolve_target(Target("session", "abc"), panes).pane == "%1"
    assert resolve_target(Target("session", "claude:abc"), panes).pane == "%1"
    assert resolve_target(Target("session", "zzz"), panes).why == "session zzz ended (no pane runs it now)"
    assert resolve_target(Target("pane", "%2"), panes).why == "pane %2 is dead"


# ---------------------------------------------------------------- policy


def test_deliver_policy_table():
    imm, idle, skip = Deliver.IMMEDIATE, Deliver.WHEN_IDLE, Deliver.SKIP_IF_BUSY
    assert deliver_policy(imm, Seen(error="not read"), 0, 10).act == Act.SEND  # immediate never reads
    for policy in (idle, skip):
        assert deliver_policy(policy, Seen("idle"), 0, 10).act == Act.SEND
        assert deliver_policy(policy, Seen(""), 0, 10).act == Act.SEND  # unknown delivers
        failed = deliver_policy(policy, Seen(error="tmux: no server"), 0, 10)
        assert (failed.act, failed.text) == (Act.LOG, "failed: agent-state read: tmux: no server")
    assert deliver_policy(idle, Seen("active"), 1000, 1000 + 7200).act == Act.HOLD  # 2 h exactly: still held
    expired = deliver_policy(idle, Seen("waiting"), 1000, 1000 + 7201)
    assert (expired.act, expired.text) == (Act.LOG, "held-expired: waiting")
    skipped = deliver_policy(skip, Seen("waiting"), 1000, 10**9)
    assert (skipped.act, skipped.text) == (Act.LOG, "skipped-busy: waiting")


def test_nothing_is_typed_into_a_limit_a_dialog_or_a_draft():
    imm, idle, skip = Deliver.IMMEDIATE, Deliver.WHEN_IDLE, Deliver.SKIP_IF_BUSY
    due, now = 1000, 1100
    limited = Seen("limited", reset_at=5000)
    assert deliver_policy(imm, limited, due, now).text == "skipped-limited: resets 1970-01-01T01:23:20Z"
    assert deliver_policy(skip, Seen("limited"), due, now).text == "skipped-limited"
    assert deliver_policy(idle, limited, due, now) == Disposition(Act.HOLD, held_by="limited")
    # when-idle holds a limit until its reset and HOLD_WINDOW after it, not after the due time
    assert deliver_policy(idle, limited, due, due + 7201).act == Act.HOLD
    assert deliver_policy(idle, limited, due, 5000 + 7201).text == "held-expired: limited"
    assert deliver_policy(idle, Seen("limited"), due, due + 7201).text == "held-expired: limited"
    dialog = Seen("waiting", dialog=True)
    assert deliver_policy(imm, dialog, due, now) == Disposition(Act.HOLD, held_by="waiting")
    assert deliver_policy(imm, Seen("waiting"), due, now).act == Act.SEND  # hooks alone: send anyway, as before
    assert deliver_policy(skip, dialog, due, now).text == "skipped-busy: waiting"
    for state in ("idle", "active", "waiting", ""):
        draft = Seen(state, draft=True)
        assert deliver_policy(imm, draft, due, now).act == Act.HOLD, state
        assert deliver_policy(idle, draft, due, now).act == Act.HOLD, state
        assert deliver_policy(imm, draft, due, due + 7201).text == "held-expired: draft", state
    assert deliver_policy(skip, Seen("idle", draft=True), due, now).text == "skipped-busy: draft"
    assert deliver_policy(idle, Seen("idle", draft=True), due, due + 7201).text == "held-expired: draft"
    assert deliver_policy(imm, Seen("active"), due, now).act == Act.SEND


def test_rate_cap_trips_at_the_limit():
    now = 100_000
    view = LogView([LogLine(now - i, "e", "%1", "schedule", "delivered") for i in range(29)])
    assert not over_rate_cap(view, now, 30, target="%1")
    view.add(LogLine(now, "e", "%1", "schedule", "failed: x"))
    assert over_rate_cap(view, now, 30, target="%1")
    assert not over_rate_cap(view, now, 0, target="%1")  # 0 disables


def _entry(kind="pane", **kw):
    value = {"pane": "%1", "session": "s1", "role": "op"}[kind]
    return Entry(id="e1", schedule=Every(interval=60), target=Target(kind, value), **kw)


def test_next_due_is_the_earliest_coming_instant_including_a_debounce_end():
    from rk.core.schedule.due import due, next_due
    from rk.core.schedule.entry import WakeOn

    now = 10_000
    every = Entry(
        id="ev", schedule=Every(interval=600), target=Target("pane", "%1"), created_by=CreatedBy(at=now - 100)
    )
    leased = Entry(id="mu", schedule=Every(interval=60), target=Target("pane", "%1"), muted_until=now + 300)
    waker = Entry(
        id="wk",
        schedule=Every(interval=86400),
        target=Target("pane", "%1"),
        wake_on=WakeOn(debounce=120),
        created_by=CreatedBy(at=now),
    )
    targets = {e.id: TargetFact(pane="%1", state="idle", epoch=1) for e in (every, leased, waker)}
    assert next_due([every], LogView(), targets, now) == now + 500
    assert next_due([every, leased], LogView(), targets, now) == now + 300  # a lease lapsing is a due time
    # A wake edge that arrives 30 s after the entry's own line is held 90 s more,
    # and the held edge is due when the debounce ends (not at the next poll).
    view = LogView([LogLine(now - 30, "wk", "%1", "wake", "delivered")])
    panes = [PaneFact("%1", state="idle", epoch=1), PaneFact("%2", state="idle", epoch=now)]
    cursor = {"wk": Observation("%2=active\n", now - 60)}
    ev = due([waker], view, panes, targets, cursor, now)
    assert ev.debounced == ("wk",) and not ev.fires
    assert next_due([waker], view, targets, now) == now - 30 + 86400  # the every anchor: its newest line
    assert next_due([waker], view, targets, now, debounced=ev.debounced) == now - 30 + 120


def test_orphan_expiry_rules():
    week = 7 * 86400
    gone = TargetFact(why="gone")
    assert should_expire(_entry(), gone, since=100, now=100 + week, resolved_this_tick=False)
    assert not should_expire(_entry(), gone, since=100, now=100 + week - 1, resolved_this_tick=False)
    assert should_expire(_entry(muted=True), gone, since=100, now=100 + week, resolved_this_tick=False)
    assert not should_expire(_entry(pinned=True), gone, since=100, now=100 + week, resolved_this_tick=False)
    assert not should_expire(_entry("role"), gone, since=100, now=10**9, resolved_this_tick=False)
    assert not should_expire(_entry(), gone, since=100, now=10**9, resolved_this_tick=True)
    assert not should_expire(_entry(), TargetFact(pane="%1"), since=100, now=10**9, resolved_this_tick=False)
    assert not should_expire(_entry(), gone, since=0, now=10**9, resolved_this_tick=False)
    assert not should_expire(_entry(), None, since=100, now=10**9, resolved_this_tick=False)
    assert expires_at(_entry(), 100) == 100 + week
    assert expires_at(_entry(pinned=True), 100) == 0 and expires_at(_entry("role"), 100) == 0


def test_absent_disposition_matrix():
    def act(entry):
        d = absent_disposition(entry)
        return d.act, d.text, d.note.reason if d.note else None

    assert act(_entry()) == (Act.LOG, "skipped-absent", None)
    assert act(_entry(if_absent="notify")) == (Act.NOTIFY, "notified-absent", None)
    assert act(_entry("session", if_absent="respawn", respawn=("x",))) == (Act.RESPAWN, "", None)
    assert act(_entry("role", if_absent="respawn", respawn=("x",))) == (Act.RESPAWN, "", None)
    assert act(_entry("pane", if_absent="respawn", respawn=("x",))) == (
        Act.NOTIFY,
        "notified-absent",
        "respawn-uncommanded",
    )
    assert act(_entry("session", if_absent="respawn")) == (Act.NOTIFY, "notified-absent", "respawn-uncommanded")
    # a pane that is there but refused is absent, and the line says why
    assert absent_disposition(_entry(), "shell in pane").text == "skipped-absent: shell in pane"
    assert absent_disposition(_entry(if_absent="notify"), "shell in pane").text == "notified-absent: shell in pane"


def test_respawn_intent_is_an_add_time_rule():
    with pytest.raises(EntryError, match="requires a respawn command"):
        check_respawn_intent(_entry("role", if_absent="respawn"))
    check_respawn_intent(_entry("session", if_absent="respawn"))  # sessions may omit it


# ---------------------------------------------------------------- settings and slugs


def test_settings_defaults_file_and_env(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    assert load_settings(env) == Settings()
    cfg = tmp_path / "cfg" / "rk"
    cfg.mkdir(parents=True)
    (cfg / "config.yaml").write_text("max_entries: 80\nrate_per_hour: 60\nunknown: 1\n")
    assert load_settings(env).max_entries == 80
    assert load_settings({**env, "RK_MAX_ENTRIES": "99"}).max_entries == 99
    with pytest.raises(ConfigError, match="RK_RATE_PER_HOUR"):
        load_settings({**env, "RK_RATE_PER_HOUR": "lots"})
    (cfg / "config.yaml").write_text("max_entries: [1\n")
    with pytest.raises(ConfigError):
        load_settings(env)


@pytest.mark.parametrize("slug", ["default", "work", "rk-test-1", "a_b"])
def test_good_slugs(slug):
    assert check_slug(slug) == slug


@pytest.mark.parametrize("slug", ["", "a.b", "a/b", "..", "a b", "a:b", "-L", "é"])
def test_bad_slugs(slug):
    with pytest.raises(ConfigError):
        check_slug(slug)


def test_known_servers_skip_cursors_and_bad_stems(tmp_path):
    for name in ("work.yaml", "work.cursor.yaml", "default.yaml", "a.b.yaml", "notes.txt"):
        (tmp_path / name).write_text("")
    assert known_servers(tmp_path) == ["default", "work"]


# ---------------------------------------------------------------- entry file

GOOD = "{id: ok01, schedule: {kind: every, interval: 5m}, target: {kind: pane, pane: '%1'}, payload: hi}"


def test_tolerant_load_skips_bad_elements_and_names_them():
    text = f"""entries:
  - {GOOD}
  - {{id: bad1, schedule: {{kind: every, interval: soon}}, target: {{kind: pane, pane: '%1'}}}}
  - just a string
  - {GOOD}
  - {{id: ok02, schedule: {{kind: cron, expr: "0 9 * * *"}}, target: {{kind: role, role: op}}, retired_key: x}}
"""
    result = parse_entries_text(text)
    assert [e.id for e in result.entries] == ["ok01", "ok02"]
    details = [(d.reason, d.detail) for d in result.diagnostics]
    assert details[0][0] == Diag.ENTRY_INVALID and details[0][1].startswith("entry #2 (id bad1): every interval")
    assert details[1][1].startswith("entry #3: entry must be a mapping")
    assert details[2][1] == "entry #4 (id ok01): duplicate id ok01"


@pytest.mark.parametrize(
    "text, reason",
    [
        ("entries: [", Diag.ENTRY_FILE_CORRUPT),
        ("- a\n- b\n", Diag.ENTRY_FILE_CORRUPT),
        ("entries: 5\n", Diag.ENTRY_FILE_CORRUPT),
    ],
)
def test_a_corrupt_file_loads_nothing_with_a_diagnostic(text, reason):
    result = parse_entries_text(text)
    assert result.entries == [] and [d.reason for d in result.diagnostics] == [reason]


def test_absent_and_empty_files_load_nothing_silently(tmp_path):
    assert load_entries(tmp_path / "none.yaml").diagnostics == []
    (tmp_path / "e.yaml").write_text("")
    assert load_entries(tmp_path / "e.yaml").entries == []


def test_strict_open_refuses_corrupt_files_and_writes_nothing(tmp_path):
    path = tmp_path / "s.yaml"
    for text in ("entries: [", "entries: {a: 1}", "entries:\n  - 5\n", "[1, 2]"):
        path.write_text(text)
        with pytest.raises(EntryFileError, match="refusing to mutate"):
            EntryDocument.read(path)
        assert path.read_text() == text


def test_saves_are_private_and_keep_comments_unknown_keys_and_exact_text(tmp_path):
    path = tmp_path / "s.yaml"
    original = """# top comment
entries:
  # first
  - id: aaaa
    schedule: {kind: every, interval: 1m0s}   # Go form stays
    target: {kind: pane, pane: '%1'}
    payload: one
    legacy: keep-me
  # second
  - id: bbbb
    schedule: {kind: every, interval: 5m}
    target: {kind: pane, pane: '%2'}
    payload: two
"""
    path.write_text(original)
    from dataclasses import replace

    with EntryDocument.edit(ServerFiles(tmp_path, "s")) as doc:
        doc.replace(replace(doc.get("bbbb"), muted=True))
    text = path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert text.startswith(original.split("  # second")[0])  # the other entry, byte for byte
    assert "# second" in text and "muted: true" in text
    with EntryDocument.edit(ServerFiles(tmp_path, "s")) as doc:
        doc.replace(replace(doc.get("bbbb"), muted=False))
    assert path.read_text() == original


def test_add_assigns_a_fresh_id_and_respects_the_cap(tmp_path):
    path = tmp_path / "s.yaml"
    doc = EntryDocument.read(path)
    e = decode_entry(
        {"id": "x", "schedule": {"kind": "every", "interval": "1m"}, "target": {"kind": "pane", "pane": "%1"}}
    )
    added = [doc.add(e, 3).id for _ in range(3)]
    assert len(set(added)) == 3 and all(len(i) == 4 and i.isalnum() for i in added)
    with pytest.raises(EntryFileError, match="maximum 3"):
        doc.add(e, 3)
    with pytest.raises(EntryNotFound):
        doc.remove("nope")


# ---------------------------------------------------------------- cursor and clock


def test_cursor_round_trip_and_garbage(tmp_path):
    cursor = {"op01": Observation("%1=idle\n%2=active\n", 1000)}
    path = tmp_path / "c.yaml"
    write_cursor(path, cursor)
    assert read_cursor(path) == cursor
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    go_yaml = 'entries:\n  op01:\n    fingerprint: "%1=idle\\n"\n    observed_at: 5\n'
    assert parse_cursor(go_yaml) == {"op01": Observation("%1=idle\n", 5)}
    for bad in ("", "[", "entries: 3", '{"entries": {"x": {"fingerprint": 1, "observed_at": 2}}}', "\x00\x01"):
        assert parse_cursor(bad) == {}
    assert read_cursor(tmp_path / "missing") == {}
    assert render_cursor({}) == '{\n "entries": {}\n}\n'


def test_clock_reads_rk_now_in_both_forms():
    assert clock.now({"RK_NOW": "1800000000"}) == 1_800_000_000
    assert clock.now({"RK_NOW": "2027-01-15T09:00:00+01:00"}) == 1_800_000_000
    assert clock.parse_instant("2026-01-01T00:00:00Z") == 1767225600
    assert clock.parse_instant("2026-01-01T01:00:00+01:00") == 1767225600
    for bad in ("soon", "2026-01-01T00:00:00", ""):
        with pytest.raises(clock.ClockError):
            clock.parse_instant(bad)


def test_local_zone_prefers_tz():
    assert clock.zone_name(clock.local_zone({"TZ": "Europe/Berlin"})) == "Europe/Berlin"
    assert clock.zone_name(clock.local_zone({"TZ": ":America/New_York"})) == "America/New_York"


def test_values_with_colons_in_flow_maps_round_trip_and_load(tmp_path):
    """`claude:6f0d…` inside `{…}` is YAML 1.2 that libyaml (the fast loader)
    refuses: rk quotes it when writing and falls back when reading."""
    path = tmp_path / "s.yaml"
    entry = decode_entry(
        {
            "id": "x",
            "schedule": {"kind": "cron", "expr": "0 9 * * 1-5"},
            "target": {"kind": "session", "session": "claude:6f0d"},
            "respawn": ["claude", "--resume", "a:b"],
            "if_absent": "respawn",
            "created_by": {"session": "claude:6f0d", "pane": "%0", "at": 5},
        }
    )
    with EntryDocument.edit(ServerFiles(tmp_path, "s")) as doc:
        added = doc.add(entry, 50)
    loaded = load_entries(path)
    assert loaded.diagnostics == [] and loaded.entries[0].target.value == "claude:6f0d"
    assert loaded.entries[0].created_by.session == "claude:6f0d" and loaded.entries[0].respawn[-1] == "a:b"
    hand = "entries:\n  - {id: h1, schedule: {kind: every, interval: 1m}, target: {kind: session, session: claude:1}}\n"
    assert [e.target.value for e in parse_entries_text(hand).entries] == ["claude:1"]
    assert added.id in path.read_text()

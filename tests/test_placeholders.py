"""Placeholders in payloads (specs/cron.md#placeholders): the add-time check, the
tolerant rendering, every name's value, the fire's occurrence and wake fields, the
log queries and what a rotation keeps for them, the CLI's views, and what a real
tick types into a real pane.

The pure part runs in `make test-fast`; the CLI and tmux tests carry the `shell`
marker (and the `tmux` one through the fixture)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC
from pathlib import Path

import pytest
from cli_helpers import (
    T0,
    json_error,
    log_line,
    make_env,
    one_line_error,
    record_intent_writes,
    run_in,
    snapshot,
    write_private,
)
from conftest import run_rk, wait_for

from rk.core.log.delivery import MISSED_CAP, LogLine, LogView, Reason, lines_to_keep
from rk.core.pane.facts import PaneFact, resolve_all
from rk.core.schedule.cronexpr import zone_for
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.due import Fire, due
from rk.core.schedule.entry import (
    Backoff,
    CreatedBy,
    Cron,
    Entry,
    Every,
    Target,
    TargetKind,
    WakeOn,
    WakeOnly,
)
from rk.core.schedule.placeholders import (
    NAMES,
    NEVER,
    PlaceholderError,
    check,
    has_placeholders,
    render,
    stamp,
    typed,
    values_for,
)
from rk.core.schedule.simulate import StateChange, simulate
from rk.core.schedule.wake import Observation, pane_order, trigger

BERLIN = zone_for("Europe/Berlin")
NEW_YORK = zone_for("America/New_York")
PANE = Target(TargetKind.PANE, "%1")


def entry(payload: str, schedule=None, **kw) -> Entry:
    return Entry(
        id=kw.pop("id", "e1"),
        schedule=schedule or Every(3600),
        target=kw.pop("target", PANE),
        payload=payload,
        created_by=kw.pop("created_by", CreatedBy(at=0)),
        **kw,
    )


def fire(entry_id: str = "e1", reason: str = Reason.SCHEDULE, at: int = T0, **kw) -> Fire:
    return Fire(entry_id, reason, "%1", kw.pop("rung", 0), kw.pop("due_at", at), at, **kw)


def line(ts: int, outcome: str, entry_id: str = "e1", reason: str = "schedule") -> LogLine:
    return LogLine(ts, entry_id, "%1", reason, outcome)


# --------------------------------------------------------------------------- check


@pytest.mark.parametrize(
    "payload",
    [
        "plain text",
        "",
        "{now}",
        "a {{b}} c",
        "{{",
        "}}",
        "{{now}}",
        "{{{now}}}",
        "first line\n{missed} missed since {last_delivered}",
        " ".join("{" + n + "}" for n in NAMES),
    ],
)
def test_check_accepts_known_names_and_doubled_braces(payload):
    check(payload)


@pytest.mark.parametrize(
    "payload, fragment",
    [
        ("{foo}", "unknown placeholder {foo} ("),
        ("hi {NOW}", "unknown placeholder {NOW} ("),
        ("{now:%H}", "unknown placeholder {now:%H} ("),
        ('reply as {"a":1}', 'unknown placeholder {"a":1} ('),
        ("{ now }", "a lone { at character 1 is not a placeholder"),
        ("a }", "a lone } at character 3 is not a placeholder"),
        ("{now", "a lone { at character 1 is not a placeholder"),
        ("{now}}", "a lone } at character 6 is not a placeholder"),
        ("x {}", "empty placeholder {} at character 3"),
        ("line one\nline {two} three", "unknown placeholder {two} ("),
        ("{" + "x" * 100 + "}", "unknown placeholder {" + "x" * 40 + "…} ("),
    ],
)
def test_check_refuses_unknown_names_and_lone_braces_in_one_line(payload, fragment):
    with pytest.raises(PlaceholderError) as info:
        check(payload)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert message.endswith("; write {{ and }} for literal braces)")
    assert "known: {now}, {last_delivered}, {window_start}, {window_end}, {missed}" in message
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------- render


def test_render_fills_known_names_and_halves_doubled_braces():
    values = {"now": "N", "missed": "3"}
    assert render("at {now}: {missed} {{missed}} {{{now}}}", values) == "at N: 3 {missed} {N}"


def test_render_is_tolerant_of_what_check_refuses():
    """A hand-edited payload: unknown names, lone and empty braces stay as written."""
    values = {"now": "N"}
    assert render('{foo} {"a": {now}} { {} }', values) == '{foo} {"a": N} { {} }'
    assert render("{now", values) == "{now"
    assert render("{missed}", values) == "{missed}"  # a name without a value is typed as written


def test_a_payload_without_braces_is_returned_as_it_is():
    payload = "no placeholders here"
    assert not has_placeholders(payload)
    assert render(payload, {"now": "N"}) is payload
    assert typed(entry(payload), fire(), LogView(), T0, UTC) is payload
    assert has_placeholders("{") and has_placeholders("}")


# --------------------------------------------------------------------------- values


def test_values_of_an_entry_never_delivered():
    got = values_for(entry("x"), fire(), LogView(), T0, UTC)
    assert got == {
        "now": "2027-01-15T08:00:00+00:00",
        "last_delivered": NEVER,
        "window_start": NEVER,
        "window_end": "2027-01-15T08:00:00+00:00",
        "missed": "0",
        "occurrences": "2027-01-15T08:00:00+00:00",
        "wake_pane": "",
        "wake_state": "",
        "wake_window": "",
        "wake_by": "",
        "signal": "",
        "signal_data": "",
    }
    assert set(got) == set(NAMES)


def test_times_are_local_iso_with_seconds_and_offset_in_the_ticker_zone():
    got = values_for(entry("x"), fire(at=T0 + 7), LogView([line(T0 - 3600, "delivered")]), T0 + 7, BERLIN)
    assert got["now"] == "2027-01-15T09:00:07+01:00"
    assert got["last_delivered"] == "2027-01-15T08:00:00+01:00"


def test_a_cron_entry_with_a_tz_renders_in_its_own_zone():
    e = entry("x", Cron("0 9 * * *", tz="America/New_York"))
    got = values_for(e, fire(reason=Reason.MANUAL), LogView([line(T0 - 60, "delivered")]), T0, BERLIN)
    assert got["now"] == "2027-01-15T03:00:00-05:00"
    assert got["last_delivered"] == "2027-01-15T02:59:00-05:00"


@pytest.mark.parametrize(
    "outcome",
    [
        "skipped-busy: active",
        "skipped-busy: draft",
        "skipped-limited",
        "missed",
        "failed: echo not seen (payload cleared)",
        "held-expired: waiting",
        "rescheduled",
        "rate-capped",
        "skipped-absent",
        "notified-absent",
        "respawned",
        "respawn-failed: exit status 1",
        "would-deliver",
    ],
)
def test_only_a_delivered_line_moves_last_delivered(outcome):
    view = LogView([line(T0 - 600, "delivered"), line(T0 - 60, outcome)])
    got = values_for(entry("x"), fire(), view, T0, UTC)
    assert got["last_delivered"] == stamp(T0 - 600, UTC)
    assert got["window_start"] == stamp(T0 - 600, UTC)


def test_another_entrys_delivery_does_not_count():
    view = LogView([line(T0 - 600, "delivered", entry_id="other")])
    assert values_for(entry("x"), fire(), view, T0, UTC)["last_delivered"] == NEVER


def test_missed_counts_since_the_last_delivery_or_all_of_them():
    lines = [line(T0 - 900, "missed"), line(T0 - 800, "delivered"), line(T0 - 700, "missed")]
    lines += [line(T0 - 600, "skipped-busy: active"), line(T0 - 500, "missed"), line(T0 - 400, "rescheduled")]
    lines += [line(T0 - 300, "missed", entry_id="other")]
    assert values_for(entry("x"), fire(), LogView(lines), T0, UTC)["missed"] == "2"
    never = [line(T0 - 900, "missed"), line(T0 - 700, "failed: x"), line(T0 - 500, "missed")]
    assert values_for(entry("x"), fire(), LogView(never), T0, UTC)["missed"] == "2"
    assert values_for(entry("x"), fire(), LogView([line(T0 - 9, "delivered")]), T0, UTC)["missed"] == "0"


def test_missed_is_capped_and_says_so():
    below = [line(T0 - 10_000 + i, "missed") for i in range(MISSED_CAP - 1)]
    assert values_for(entry("x"), fire(), LogView(below), T0, UTC)["missed"] == str(MISSED_CAP - 1)
    at = [line(T0 - 10_000 + i, "missed") for i in range(MISSED_CAP)]
    assert values_for(entry("x"), fire(), LogView(at), T0, UTC)["missed"] == f"{MISSED_CAP}+"
    many = [line(T0 - 10_000 + i, "missed") for i in range(MISSED_CAP * 3)]
    assert values_for(entry("x"), fire(), LogView(many), T0, UTC)["missed"] == f"{MISSED_CAP}+"


def _due_one(e: Entry, log: LogView, now: int, zone=UTC, panes=None, cursor=None) -> Fire:
    panes = panes if panes is not None else [PaneFact("%1", state="idle", epoch=1)]
    ev = due([e], log, panes, resolve_all([e], panes), cursor or {}, now, zone=zone)
    (only,) = ev.fires
    return only


def test_an_on_time_cron_fire_spans_the_previous_occurrence_to_its_own():
    e = entry("{window_start} .. {window_end} @ {now}", Cron("30 8 * * *"))  # 08:30 UTC daily
    now = T0 + 30 * 60 + 45  # 2027-01-15T08:30:45Z
    f = _due_one(e, LogView(), now)
    assert (f.due_at, f.occurrence) == (T0 + 1800, T0 + 1800)
    text = typed(e, f, LogView(), now, UTC)
    assert text == "2027-01-14T08:30:00+00:00 .. 2027-01-15T08:30:00+00:00 @ 2027-01-15T08:30:45+00:00"


def test_a_catch_up_fire_has_due_at_now_but_spans_its_occurrence():
    e = entry("{window_start} .. {window_end}", Cron("30 8 * * *", catch_up="once"))
    now = T0 + 5 * 3600  # 13:00Z: the 08:30 occurrence is long past its grace
    f = _due_one(e, LogView(), now)
    assert (f.due_at, f.occurrence) == (now, T0 + 1800)
    assert typed(e, f, LogView(), now, UTC) == "2027-01-14T08:30:00+00:00 .. 2027-01-15T08:30:00+00:00"


def test_a_cron_window_across_a_clock_change_keeps_each_ends_own_offset():
    # Europe/Berlin springs forward on 2027-03-28: Sunday's 09:00 window starts at Saturday's
    e = entry("{window_start} .. {window_end}", Cron("0 9 * * *", tz="Europe/Berlin"))
    sunday_0900 = 1806217200  # 2027-03-28T09:00:00+02:00
    got = values_for(e, fire(at=sunday_0900, occurrence=sunday_0900), LogView(), sunday_0900, UTC)
    assert (got["window_start"], got["window_end"]) == ("2027-03-27T09:00:00+01:00", "2027-03-28T09:00:00+02:00")
    monday_0900 = sunday_0900 + 86400
    got = values_for(e, fire(at=monday_0900, occurrence=monday_0900), LogView(), monday_0900, UTC)
    assert (got["window_start"], got["window_end"]) == ("2027-03-28T09:00:00+02:00", "2027-03-29T09:00:00+02:00")


def test_a_cron_fire_not_for_an_occurrence_spans_the_last_delivery_to_now():
    """A manual run (`rk cron run`) or a wake fire of a cron entry: no occurrence."""
    e = entry("{window_start} .. {window_end}", Cron("0 9 * * *"))
    view = LogView([line(T0 - 3600, "delivered")])
    for reason in (Reason.MANUAL, Reason.WAKE):
        assert typed(e, fire(reason=reason), view, T0, UTC) == "2027-01-15T07:00:00+00:00 .. 2027-01-15T08:00:00+00:00"


@pytest.mark.parametrize("schedule", [Every(600), Backoff(60, 1800), WakeOnly()], ids=["every", "backoff", "wake-only"])
def test_every_backoff_and_wake_only_span_the_last_delivery_to_now(schedule):
    e = entry("{window_start} .. {window_end}", schedule)
    assert typed(e, fire(), LogView(), T0, UTC) == "never .. 2027-01-15T08:00:00+00:00"
    view = LogView([line(T0 - 3600, "delivered"), line(T0 - 60, "skipped-busy: active")])
    assert typed(e, fire(rung=2), view, T0, UTC) == "2027-01-15T07:00:00+00:00 .. 2027-01-15T08:00:00+00:00"


def test_a_backoff_fire_from_due_renders_with_its_window():
    e = entry("since {window_start}", Backoff(60, 1800), created_by=CreatedBy(at=T0 - 7200))
    panes = [PaneFact("%1", state="idle", epoch=T0 - 3600)]
    view = LogView([line(T0 - 3700, "delivered")])
    f = _due_one(e, view, T0, panes=panes)
    assert (f.reason, f.occurrence) == ("schedule", 0) and f.rung >= 1
    assert typed(e, f, view, T0, UTC) == "since 2027-01-15T06:58:20+00:00"


# --------------------------------------------------------------------------- wake fields


def test_trigger_names_the_actionable_change_lowest_pane_first():
    assert trigger({"%2": "active"}, {"%2": "idle"}) == ("%2", "idle")
    assert trigger({"%2": "active"}, {"%2": "waiting"}) == ("%2", "waiting")
    assert trigger({"%2": "active"}, {"%2": "limited"}) == ("%2", "limited")
    assert trigger({"%2": "active"}, {}) == ("%2", "gone")
    assert trigger({}, {"%5": "idle"}) == ("%5", "idle")
    assert trigger({"%2": "idle"}, {"%2": "active", "%3": "active"}) == ("", "")
    assert trigger({"%2": "idle"}, {"%2": "idle"}) == ("", "")
    # several: tmux order, not string order (%10 sorts before %9 as a string)
    assert trigger({"%10": "active", "%9": "active"}, {"%10": "idle", "%9": "waiting"}) == ("%9", "waiting")
    assert trigger({"%10": "active", "%9": "idle"}, {"%10": "idle", "%9": "active"}) == ("%10", "idle")
    assert sorted(["%10", "%9", "%100", "%1"], key=pane_order) == ["%1", "%9", "%10", "%100"]


def _wake_entry(payload: str, debounce: int = 0) -> Entry:
    return entry(payload, WakeOnly(), id="op", target=Target(TargetKind.PANE, "%0"), wake_on=WakeOn(debounce=debounce))


def test_a_wake_fire_carries_the_pane_its_state_and_its_window():
    e = _wake_entry("{wake_pane} {wake_state} {wake_window}")
    panes = [PaneFact("%0", state="idle", epoch=1), PaneFact("%3", state="waiting", epoch=5, window_name="build")]
    cursor = {"op": Observation("%3=active\n", 1)}
    f = _due_one(e, LogView(), T0, panes=panes, cursor=cursor)
    assert (f.reason, f.wake_pane, f.wake_state, f.wake_window) == ("wake", "%3", "waiting", "build")
    assert typed(e, f, LogView(), T0, UTC) == "%3 waiting build"


def test_a_pane_whose_state_became_unknown_is_gone_but_keeps_its_window_name():
    e = _wake_entry("{wake_pane} {wake_state} {wake_window}")
    panes = [PaneFact("%0", state="idle", epoch=1), PaneFact("%3", window_name="build")]
    f = _due_one(e, LogView(), T0, panes=panes, cursor={"op": Observation("%3=active\n", 1)})
    assert typed(e, f, LogView(), T0, UTC) == "%3 gone build"


def test_a_burst_held_by_the_debounce_names_the_lowest_pane_when_it_fires():
    e = _wake_entry("{wake_pane}={wake_state}", debounce=60)
    panes = [
        PaneFact("%0", state="idle", epoch=1),
        PaneFact("%11", state="idle", epoch=5),
        PaneFact("%4", state="idle", epoch=5),
    ]
    cursor = {"op": Observation("%11=active\n%4=active\n", 1)}
    held = due([e], LogView([line(T0 - 30, "delivered", "op")]), panes, resolve_all([e], panes), cursor, T0)
    assert held.fires == () and held.next_cursor["op"] == cursor["op"]  # pending, the old observation kept
    view = LogView([line(T0 - 30, "delivered", "op")])
    f = _due_one(e, view, T0 + 30, panes=panes, cursor=held.next_cursor)
    assert typed(e, f, view, T0 + 30, UTC) == "%4=idle"


def test_schedule_and_manual_fires_have_empty_wake_fields():
    e = entry("[{wake_pane}|{wake_state}|{wake_window}]", wake_on=WakeOn())
    assert typed(e, fire(), LogView(), T0, UTC) == "[||]"
    assert typed(e, fire(reason=Reason.MANUAL), LogView(), T0, UTC) == "[||]"


# --------------------------------------------------------------------------- tolerant load


def test_an_entry_with_an_unknown_placeholder_still_loads_and_types_it_as_written(tmp_path):
    from rk.store.entries import load_entries

    raw = {
        "id": "hand",
        "schedule": {"kind": "every", "interval": "1m"},
        "target": {"kind": "pane", "pane": "%1"},
        "payload": "{foo} at {now} { lone",
    }
    e = decode_entry(raw)
    assert e.payload == "{foo} at {now} { lone"
    with pytest.raises(PlaceholderError):
        check(e.payload)
    assert typed(e, fire("hand"), LogView(), T0, UTC) == "{foo} at 2027-01-15T08:00:00+00:00 { lone"
    path = write_private(
        tmp_path / "s.yaml",
        "entries:\n  - {id: hand, schedule: {kind: every, interval: 1m}, target: {kind: pane, pane: '%1'},"
        " payload: '{foo} {now'}\n",
    )
    loaded = load_entries(path)
    assert [x.id for x in loaded.entries] == ["hand"] and loaded.diagnostics == []


# --------------------------------------------------------------------------- log and rotation


def test_the_log_queries_behind_last_delivered_and_missed():
    view = LogView([line(1, "delivered"), line(2, "missed"), line(3, "delivered"), line(4, "missed")])
    assert view.last_delivered("e1") == line(3, "delivered")
    assert view.missed_since_delivered("e1") == 1
    assert view.last_delivered("nobody") is None and view.missed_since_delivered("nobody") == 0


def test_a_rotation_keeps_the_last_delivery_and_the_missed_lines_after_it():
    lines = [line(1000, "delivered")] + [line(2000 + i, "missed") for i in range(MISSED_CAP + 10)]
    lines += [line(9000 + i, "skipped-busy: active", entry_id="e2") for i in range(50)]
    lines += [line(20_000, "delivered", entry_id="e2"), line(20_001, "failed: x", entry_id="e2")]
    now = 100_000  # every line is outside the rate window
    kept = LogView([lines[i] for i in lines_to_keep(lines, now, backoff=())])
    whole = LogView(lines)
    assert len(kept) < len(whole)
    for entry_id in ("e1", "e2"):
        assert kept.last_delivered(entry_id) == whole.last_delivered(entry_id)
        assert kept.missed_since_delivered(entry_id) == whole.missed_since_delivered(entry_id)
    assert kept.missed_since_delivered("e1") == MISSED_CAP


def test_the_missed_lines_a_rotation_keeps_do_not_join_the_orphan_run():
    """Found by the property test: an old missed line kept for `{missed}` must not reach
    past the respawn that ended the orphan run, so that line is kept too."""
    lines = [line(1000, "missed"), line(1001, "respawned"), line(1174, "failed: x"), line(1660, "rescheduled")]
    kept = LogView([lines[i] for i in lines_to_keep(lines, 100_000, backoff=())])
    whole = LogView(lines)
    assert kept.orphaned_since("e1", 1) == whole.orphaned_since("e1", 1) == 1174
    assert kept.missed_since_delivered("e1") == whole.missed_since_delivered("e1") == 1


# --------------------------------------------------------------------------- simulate


def test_simulate_records_the_typed_text_of_each_delivery():
    e = entry("last {last_delivered}", Every(600), created_by=CreatedBy(at=T0))
    sim = simulate([e], start=T0, end=T0 + 1201, tick=30, script=[StateChange(T0, "%1", "idle")])
    delivered = [ev for ev in sim.events if ev.kind == "line" and ev.outcome == "delivered"]
    assert [ev.typed for ev in delivered] == ["last never", f"last {stamp(T0 + 600, UTC)}"]
    plain = simulate(
        [entry("no braces", Every(600), created_by=CreatedBy(at=T0))],
        start=T0,
        end=T0 + 1201,
        script=[StateChange(T0, "%1", "idle")],
    )
    assert [ev.outcome for ev in plain.events] == ["delivered", "delivered"]
    assert all(ev.typed == "" for ev in plain.events)


# --------------------------------------------------------------------------- the CLI


def _cli_env(tmp_path, **extra):
    return make_env(tmp_path, RK_NOW=str(T0), **extra)


ADD = ("cron", "add")
WHERE = ("--every", "1h", "--pane", "%1")


@pytest.mark.shell
@pytest.mark.parametrize(
    "payload, fragment",
    [
        ("hello {foo}", "unknown placeholder {foo} (known: {now}, "),
        ("hello {", "a lone { at character 7 is not a placeholder"),
        ("hello } there", "a lone } at character 7 is not a placeholder"),
        ("{}", "empty placeholder {}"),
    ],
)
def test_add_refuses_a_bad_placeholder_with_exit_2_and_writes_nothing(tmp_path, payload, fragment):
    env = _cli_env(tmp_path)
    state = Path(env["RK_STATE_DIR"])
    before = snapshot(state)
    res = run_in([*ADD, payload, *WHERE], env)
    assert res.code == 2, res
    message = one_line_error(res)
    assert fragment in message and "write {{ and }} for literal braces" in message
    assert snapshot(state) == before
    res = run_in([*ADD, payload, *WHERE, "--json"], env)
    assert res.code == 2
    assert fragment in json_error(res, "usage")
    assert snapshot(state) == before


@pytest.mark.shell
def test_add_keeps_the_placeholders_in_the_stored_payload(tmp_path):
    from ruamel.yaml import YAML

    env = _cli_env(tmp_path)
    res = run_in([*ADD, "at {now}: {{literal}}", *WHERE, "--json"], env)
    assert res.code == 0, res
    doc = YAML(typ="safe").load((Path(env["RK_STATE_DIR"]) / "default.yaml").read_text())
    assert doc["entries"][0]["payload"] == "at {now}: {{literal}}"


SHOWN = """\
entries:
  - id: ph01
    schedule: {kind: cron, expr: "0 9 * * *", tz: Europe/Berlin}
    target: {kind: pane, pane: "%1"}
    payload: "window {window_start} to {window_end}, last {last_delivered}, missed {missed}, {{ok}}"
    created_by: {at: 1799990000}
  - id: ph02
    schedule: {kind: every, interval: 10m}
    target: {kind: pane, pane: "%1"}
    payload: plain words
    created_by: {at: 1799990000}
  - id: ph03
    schedule: {kind: every, interval: 10m}
    target: {kind: pane, pane: "%1"}
    payload: "{foo} at {now}"
    created_by: {at: 1799990000}
"""


def _populated(tmp_path):
    env = _cli_env(tmp_path)
    state = Path(env["RK_STATE_DIR"])
    write_private(state / "default.yaml", SHOWN)
    log = [
        log_line(T0 - 86400 + 60, "ph01", "%1", "schedule", "delivered"),
        log_line(T0 - 3600, "ph01", "", "schedule", "missed"),
        log_line(T0 - 600, "ph01", "%1", "schedule", "skipped-busy: active"),
    ]
    write_private(state / "default.log", "\n".join(log) + "\n")
    return env


@pytest.mark.shell
def test_show_prints_what_a_run_now_would_type(tmp_path):
    env = _populated(tmp_path)
    res = run_in(["cron", "show", "ph01"], env)
    assert res.code == 0, res
    lines = res.out.splitlines()
    payload = lines.index(
        "payload:    window {window_start} to {window_end}, last {last_delivered}, missed {missed}, {{ok}}"
    )
    assert lines[payload + 1] == (
        "typed:      window 2027-01-14T09:01:00+01:00 to 2027-01-15T09:00:00+01:00,"
        " last 2027-01-14T09:01:00+01:00, missed 1, {ok}"
    )
    doc = json.loads(run_in(["cron", "show", "ph01", "--json"], env).out)["result"]
    assert doc["typed"] == lines[payload + 1].removeprefix("typed:      ")


@pytest.mark.shell
def test_show_and_next_of_a_plain_payload_are_unchanged(tmp_path):
    env = _populated(tmp_path)
    shown = run_in(["cron", "show", "ph02"], env)
    assert shown.code == 0, shown
    assert "payload:    plain words" in shown.out.splitlines()
    assert not [x for x in shown.out.splitlines() if x.startswith(("typed", "note"))]
    assert "typed" not in json.loads(run_in(["cron", "show", "ph02", "--json"], env).out)["result"]
    nxt = run_in(["cron", "next", "ph02", "-n", "1", "--json"], env)
    assert set(json.loads(nxt.out)["result"]) == {"id", "fires"}
    assert "typed" not in run_in(["cron", "next", "ph02"], env).out.lower()


@pytest.mark.shell
def test_show_of_a_hand_edited_payload_notes_what_add_would_refuse(tmp_path):
    env = _populated(tmp_path)
    res = run_in(["cron", "show", "ph03"], env)
    assert res.code == 0, res
    lines = res.out.splitlines()
    assert "typed:      {foo} at 2027-01-15T08:00:00+00:00" in lines
    (note,) = [x for x in lines if x.startswith("note:")]
    assert "unknown placeholder {foo}" in note and note.endswith("; typed as written")
    assert res.err == ""


@pytest.mark.shell
def test_next_renders_the_first_listed_fire(tmp_path):
    env = _populated(tmp_path)
    # at 09:00 Berlin today's occurrence is due: it is listed first, for its own window; yesterday's
    # was delivered, so none is owed before it (the log's older `missed` line is not an occurrence since)
    res = run_in(["cron", "next", "ph01", "-n", "2"], env)
    assert res.code == 0, res
    assert res.out.splitlines()[-1] == (
        "typed (first fire): window 2027-01-14T09:00:00+01:00 to 2027-01-15T09:00:00+01:00,"
        " last 2027-01-14T09:01:00+01:00, missed 0, {ok}"
    )
    # an hour later it is past its grace: tomorrow's is the first, and its window reaches back to the
    # watermark (yesterday's, the newest delivered), owing today's missed occurrence too
    later = dict(env, RK_NOW=str(T0 + 3600))
    doc = json.loads(run_in(["cron", "next", "ph01", "-n", "1", "--json"], later).out)["result"]
    assert doc["typed"] == (
        "window 2027-01-14T09:00:00+01:00 to 2027-01-16T09:00:00+01:00, last 2027-01-14T09:01:00+01:00, missed 1, {ok}"
    )
    # an every entry long due types on the next tick, at about now
    every = json.loads(run_in(["cron", "next", "ph03", "-n", "1", "--json"], env).out)["result"]
    assert every["typed"] == "{foo} at 2027-01-15T08:00:00+00:00"


@pytest.mark.shell
def test_simulate_json_carries_the_typed_text(tmp_path):
    env = _populated(tmp_path)
    res = run_in(["cron", "simulate", "ph03", "--for", "25m", "--json"], env)
    assert res.code == 0, res
    events = json.loads(res.out)["result"]["events"]
    typed_texts = [e["typed"] for e in events if e["outcome"] == "delivered"]
    assert typed_texts == ["{foo} at 2027-01-15T08:10:00+00:00", "{foo} at 2027-01-15T08:20:00+00:00"]
    human = run_in(["cron", "simulate", "ph03", "--for", "25m", "--width", "100"], env)
    assert human.code == 0, human
    assert human.out.splitlines()[-1] == "typed at 2027-01-15 08:10:00 UTC: {foo} at 2027-01-15T08:10:00+00:00"
    plain = json.loads(run_in(["cron", "simulate", "ph02", "--for", "25m", "--json"], env).out)["result"]
    assert all("typed" not in e for e in plain["events"])


# --------------------------------------------------------------------------- a real tick, a real pane


def _rk(args, env, now):
    return run_rk(args, dict(env, RK_NOW=str(now)), check=True)


def _add(env, server, *args) -> str:
    out = _rk(["cron", "add", *args, "--any-program", "--json", "-L", server.name], env, T0)
    return json.loads(out.stdout)["result"]["id"]


def _typed_lines(server, pane: str, text: str) -> int:
    """Screen lines equal to `text`: 2 per submission into `cat` (the tty's echo, then cat's)."""
    return sum(1 for row in server.capture(pane).splitlines() if row.rstrip() == text)


def _pane(server, target: str) -> str:
    return server.run("display-message", "-p", "-t", target, "#{pane_id}").strip()


@pytest.mark.shell
def test_a_tick_types_the_rendered_payload_into_the_pane(env, tmux_server):
    pane = _pane(tmux_server, "main")
    payload = "from {window_start} to {window_end} last={last_delivered} missed={missed} now={now} {{ok}}"
    entry_id = _add(env, tmux_server, payload, "--every", "1m", "--pane", pane)
    _rk(["cron", "tick", "-L", tmux_server.name], env, T0 + 60)
    first = "from never to 2027-01-15T08:01:00+00:00 last=never missed=0 now=2027-01-15T08:01:00+00:00 {ok}"
    wait_for(lambda: _typed_lines(tmux_server, pane, first) == 2, message="the first rendering, echoed and catted")
    _rk(["cron", "tick", "-L", tmux_server.name], env, T0 + 125)
    second = (
        "from 2027-01-15T08:01:00+00:00 to 2027-01-15T08:02:05+00:00 last=2027-01-15T08:01:00+00:00"
        " missed=0 now=2027-01-15T08:02:05+00:00 {ok}"
    )
    wait_for(lambda: _typed_lines(tmux_server, pane, second) == 2, message="the second rendering")
    # `rk cron run` goes the same way (reason manual)
    _rk(["cron", "run", entry_id, "-L", tmux_server.name], env, T0 + 130)
    third = (
        "from 2027-01-15T08:02:05+00:00 to 2027-01-15T08:02:10+00:00 last=2027-01-15T08:02:05+00:00"
        " missed=0 now=2027-01-15T08:02:10+00:00 {ok}"
    )
    wait_for(lambda: _typed_lines(tmux_server, pane, third) == 2, message="the manual run's rendering")
    assert payload in Path(env["RK_STATE_DIR"], f"{tmux_server.name}.yaml").read_text()  # the file keeps them


@pytest.mark.shell
def test_a_wake_fire_types_the_pane_its_state_and_its_window(env, tmux_server):
    operator = _pane(tmux_server, "main")
    tmux_server.run("new-window", "-d", "-t", "main", "-n", "worker", "cat")
    worker = _pane(tmux_server, "main:worker")
    tmux_server.set_pane_option(worker, "@rk_pane_agent_state", f"active:{T0}")
    _add(
        env,
        tmux_server,
        "woke by {wake_pane} {wake_state} in {wake_window}",
        "--wake-on",
        "agent-state-change",
        "--pane",
        operator,
    )
    cold = json.loads(_rk(["cron", "tick", "-L", tmux_server.name, "--json"], env, T0 + 5).stdout)["result"]
    assert "wake-cold-start" in {d["reason"] for d in cold["diagnostics"]} and cold["fires"] == 0
    tmux_server.set_pane_option(worker, "@rk_pane_agent_state", f"idle:{T0 + 8}")
    done = json.loads(_rk(["cron", "tick", "-L", tmux_server.name, "--json"], env, T0 + 10).stdout)["result"]
    assert [(d["reason"], d["outcome"]) for d in done["decisions"]] == [("wake", "delivered")], done
    text = f"woke by {worker} idle in worker"
    wait_for(lambda: _typed_lines(tmux_server, operator, text) == 2, message="the wake fire's rendering")
    # the worker's window closes: its pane is gone, and so is its window name
    tmux_server.run("kill-window", "-t", "main:worker")
    _rk(["cron", "tick", "-L", tmux_server.name], env, T0 + 100)
    gone = f"woke by {worker} gone in"
    wait_for(lambda: _typed_lines(tmux_server, operator, gone) == 2, message="the vanished pane's rendering")


@pytest.mark.shell
def test_the_delivery_journal_speaks_of_the_rendered_text(env, tmux_server, monkeypatch):
    """The intent's needle and digest are of what is typed, so a recovery after a crash
    looks for the rendered text (it reads only the journal; nothing renders again)."""
    from rk.core.pane.payload import needle_for
    from rk.engine.runtime import Runtime
    from rk.engine.tick import sweep

    pane = _pane(tmux_server, "main")
    _add(env, tmux_server, "journal at {now}", "--every", "1m", "--pane", pane)
    writes = record_intent_writes(monkeypatch)
    result = sweep(Runtime.from_environ(dict(env, RK_NOW=str(T0 + 60))), only=tmux_server.name)
    assert [d.outcome for d in result.decisions] == ["delivered"]
    text = "journal at 2027-01-15T08:01:00+00:00"
    pasted = [w for w in writes if w["phase"] in ("paste", "enter")]
    assert pasted and all(w["needle"] == needle_for(text) for w in pasted)
    assert all(w["digest"] == hashlib.sha256(text.encode()).hexdigest() for w in pasted)
    assert writes[-1]["phase"] == "done"
    wait_for(lambda: _typed_lines(tmux_server, pane, text) == 2, message="the rendered text")


# --------------------------------------------------------------------------- the watermark

DAILY = Cron("0 9 * * *")  # 09:00 UTC
D = 86400
D1 = T0 + 3600  # 2027-01-15T09:00Z


def _owed(log: list[LogLine], occurrence: int, now: int | None = None, schedule: Cron = DAILY) -> dict[str, str]:
    e = entry("{window_start} {window_end} {missed} {occurrences}", schedule)
    got = values_for(
        e, fire(at=now or occurrence + 10, occurrence=occurrence), LogView(log), now or occurrence + 10, UTC
    )
    return {k: got[k] for k in ("window_start", "window_end", "missed", "occurrences")}


def test_a_missed_day_stays_in_the_window_and_is_owed():
    """The issue's case: delivered on the 1st, the 2nd missed; the 3rd's window starts at the 1st."""
    log = [line(D1 - D + 10, "delivered"), line(D1 + 200, "missed")]
    assert _owed(log, D1 + D) == {
        "window_start": stamp(D1 - D, UTC),
        "window_end": stamp(D1 + D, UTC),
        "missed": "1",
        "occurrences": f"{stamp(D1, UTC)}, {stamp(D1 + D, UTC)}",
    }


def test_three_days_down_owe_three_windows_without_a_single_missed_line():
    log = [line(D1 - D + 5, "delivered")]  # then the ticker was down: nothing logged at all
    got = _owed(log, D1 + 3 * D, now=D1 + 3 * D + 5400)  # a catch-up an hour and a half late
    assert got["window_start"] == stamp(D1 - D, UTC) and got["missed"] == "3"
    assert got["occurrences"] == ", ".join(stamp(D1 + k * D, UTC) for k in range(4))


def test_an_outage_that_ends_on_an_occurrence_counts_the_hours_it_covered():
    hourly = Cron("0 * * * *")
    log = [line(D1 - 4 * 3600 + 3, "delivered")]  # 05:00 delivered, then down until 09:00
    got = _owed(log, D1, schedule=hourly)
    assert (got["window_start"], got["missed"]) == (stamp(D1 - 4 * 3600, UTC), "3")


@pytest.mark.parametrize(
    "outcome",
    ["skipped-busy: active", "skipped-quiet", "skipped-paused", "missed", "failed: echo not seen", "rate-capped"],
)
def test_an_occurrence_not_delivered_does_not_move_the_watermark(outcome):
    log = [line(D1 - D + 10, "delivered"), line(D1 + 10, outcome)]
    got = _owed(log, D1 + D)
    assert (got["window_start"], got["missed"]) == (stamp(D1 - D, UTC), "1")


@pytest.mark.parametrize("reason", [Reason.WAKE, Reason.MANUAL])
def test_a_wake_or_manual_delivery_answers_no_occurrence(reason):
    log = [line(D1 - D + 10, "delivered"), line(D1 + 3 * 3600, "delivered", reason=reason)]
    got = _owed(log, D1 + D)
    assert (got["window_start"], got["missed"]) == (stamp(D1 - D, UTC), "1")


def test_a_held_fire_delivered_late_delivers_its_occurrence():
    log = [line(D1 + 40 * 60, "delivered")]  # when-idle: held 40 minutes, then delivered
    assert _owed(log, D1 + D)["window_start"] == stamp(D1, UTC)
    assert _owed(log, D1 + D)["missed"] == "0"


def test_never_delivered_owes_one_window():
    assert _owed([], D1 + D) == {
        "window_start": stamp(D1, UTC),
        "window_end": stamp(D1 + D, UTC),
        "missed": "0",
        "occurrences": stamp(D1 + D, UTC),
    }


def test_owed_occurrences_are_capped_oldest_first_and_say_so():
    minutely = Cron("* * * * *")
    got = _owed([line(D1 - D, "delivered")], D1, schedule=minutely)  # a day down: 1,440 owed
    assert got["missed"] == f"{MISSED_CAP}+"
    listed = got["occurrences"].removesuffix(" …").split(", ")
    assert got["occurrences"].endswith(" …") and len(listed) == MISSED_CAP
    assert listed[0] == stamp(D1 - D + 60, UTC) and listed == sorted(listed)


def test_a_fire_without_an_occurrence_owes_what_the_schedule_left_undelivered():
    """`rk cron run` of a cron entry: the occurrences since the watermark, up to now."""
    e = entry("{missed}: {occurrences}", DAILY)
    view = LogView([line(D1 - D + 10, "delivered")])
    assert typed(e, fire(reason=Reason.MANUAL, at=D1 + 60), view, D1 + 60, UTC) == f"1: {stamp(D1, UTC)}"
    assert typed(e, fire(reason=Reason.MANUAL, at=D1 - 60), view, D1 - 60, UTC) == "0: "


def test_a_rotation_keeps_the_watermark_behind_newer_wake_deliveries():
    lines = [line(D1 - D + 10, "delivered")]
    lines += [line(D1 - D + 3600 * k, "delivered", reason=Reason.WAKE) for k in range(1, 20)]
    lines += [line(D1 + 10, "skipped-busy: active")]
    kept = LogView([lines[i] for i in lines_to_keep(lines, D1 + D, backoff=())])
    assert kept.last_delivered("e1", Reason.SCHEDULE) == lines[0]
    assert _owed([lines[i] for i in lines_to_keep(lines, D1 + D, backoff=())], D1 + D) == _owed(lines, D1 + D)

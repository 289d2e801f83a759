"""Times just in the past, and far in the past, where a core decision meets the
clock: the cron grace (120 s, `rk.core.schedule.grace`), `--at`, cron and `at`
catch-up, and the mute and pause leases. Each rule is fed ages on both sides
of its edge: 1 s, 59 s, 119 s, 120 s, 121 s and months ago."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from cli_helpers import make_env, one_line_error, run_in
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from rk.core.log.delivery import LogView
from rk.core.log.diagnostics import Diag
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule.due import Missed, due
from rk.core.schedule.entry import At, CreatedBy, Cron, Entry, Every, Target
from rk.core.schedule.grace import CRON_GRACE
from rk.store.pause import paused_until, write_pause

#: 2027-01-01T09:00:00Z: a yearly cron occurrence, so an age of months is still its latest one.
OCCURRENCE = int(datetime(2027, 1, 1, 9, tzinfo=UTC).timestamp())
YEARLY = "0 9 1 1 *"
DAY = 86400
AGES = [0, 1, 59, 119, 120, 121, 3600, 90 * DAY]
PANES = [PaneFact("%1", state="idle", epoch=1)]
TARGETS = {"e1": TargetFact(pane="%1", state="idle", epoch=1)}


def entry(schedule, **kw) -> Entry:
    return Entry(id="e1", schedule=schedule, target=Target("pane", "%1"), payload="p", created_by=CreatedBy(at=1), **kw)


def evaluate(e: Entry, now: int, **kw):
    return due([e], LogView(), PANES, TARGETS, {}, now, **kw)


def fired(ev) -> list[tuple[str, int]]:
    return [(f.reason, f.due_at) for f in ev.fires]


# -- the grace, cron and at ------------------------------------------------------


@pytest.mark.parametrize("age", AGES)
def test_a_cron_occurrence_fires_within_the_grace_and_is_missed_past_it(age):
    now = OCCURRENCE + age
    ev = evaluate(entry(Cron(expr=YEARLY)), now)
    if age <= CRON_GRACE:
        assert fired(ev) == [("schedule", OCCURRENCE)] and ev.missed == ()
    else:
        assert ev.fires == () and ev.missed == (Missed("e1", OCCURRENCE),)


@pytest.mark.parametrize("age", AGES)
def test_a_cron_catch_up_fires_at_now_once_the_grace_is_past(age):
    now = OCCURRENCE + age
    ev = evaluate(entry(Cron(expr=YEARLY, catch_up="once")), now)
    assert ev.missed == ()
    assert fired(ev) == [("schedule", OCCURRENCE if age <= CRON_GRACE else now)]
    assert ev.fires[0].occurrence == OCCURRENCE


@pytest.mark.parametrize("age", AGES)
@pytest.mark.parametrize("within", [CRON_GRACE + 1, 3600])
def test_a_cron_catch_up_window_counts_from_the_occurrence(age, within):
    now = OCCURRENCE + age
    ev = evaluate(entry(Cron(expr=YEARLY, catch_up="once", catch_up_within=within)), now)
    if age <= within:
        assert [f.occurrence for f in ev.fires] == [OCCURRENCE] and ev.missed == ()
    else:
        assert ev.fires == () and ev.missed == (Missed("e1", OCCURRENCE),)


@pytest.mark.parametrize("age", AGES)
@pytest.mark.parametrize("catch_up", ["", "once"])
def test_an_at_fires_within_the_grace_and_after_it_only_with_catch_up(age, catch_up):
    now = OCCURRENCE + age
    ev = evaluate(entry(At(at=OCCURRENCE, catch_up=catch_up)), now)
    if age <= CRON_GRACE:
        assert fired(ev) == [("schedule", OCCURRENCE)]
    elif catch_up:
        assert fired(ev) == [("schedule", now)]
    else:
        assert ev.fires == () and ev.missed == (Missed("e1", OCCURRENCE),)


@settings(max_examples=200, deadline=None)
@given(age=st.integers(0, 400 * DAY), within=st.sampled_from([0, CRON_GRACE + 1, 3600, 7 * DAY]))
def test_an_at_is_due_exactly_once_however_late_the_tick(age, within):
    """Fired on time, fired late, or missed: one of the three, never two, never none."""
    now = OCCURRENCE + age
    ev = evaluate(entry(At(at=OCCURRENCE, catch_up="once" if within else "", catch_up_within=within)), now)
    late = age > CRON_GRACE
    if not late:
        assert fired(ev) == [("schedule", OCCURRENCE)] and ev.missed == ()
    elif within and age > within:
        assert ev.fires == () and ev.missed == (Missed("e1", OCCURRENCE),)
    elif within:
        assert fired(ev) == [("schedule", now)] and ev.missed == ()
    else:
        assert ev.fires == () and ev.missed == (Missed("e1", OCCURRENCE),)


# -- --at in the CLI -------------------------------------------------------------


def stored_at(env) -> list[int]:
    doc = YAML(typ="safe").load((Path(env["RK_STATE_DIR"]) / "default.yaml").read_text())
    return [raw["schedule"]["at"] for raw in doc["entries"]]


@pytest.mark.parametrize("age", AGES)
def test_add_at_refuses_an_instant_just_or_far_in_the_past(tmp_path, age):
    now = OCCURRENCE
    env = make_env(tmp_path, RK_NOW=str(now))
    for text in (str(now - age), datetime.fromtimestamp(now - age, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")):
        res = run_in(["cron", "add", "x", "--at", text, "--role", "op"], env)
        assert res.code == 2, res
        assert one_line_error(res) == f"--at {text!r} is in the past"
    assert not (Path(env["RK_STATE_DIR"]) / "default.yaml").exists()


@pytest.mark.parametrize("ahead", [1, 59, 121])
def test_add_at_keeps_an_instant_just_ahead(tmp_path, ahead):
    now = OCCURRENCE
    env = make_env(tmp_path, RK_NOW=str(now))
    res = run_in(["cron", "add", "x", "--at", str(now + ahead), "--role", "op", "--json"], env)
    assert res.code == 0, res
    assert stored_at(env) == [now + ahead]


@pytest.mark.parametrize("back", [1, 59, 119, 121])
def test_add_at_a_time_of_day_just_past_books_tomorrow(tmp_path, back):
    """`--at HH:MM` a few seconds after that minute began is tomorrow, not now."""
    now = OCCURRENCE + back  # 09:00 + back
    env = make_env(tmp_path, RK_NOW=str(now))
    res = run_in(["cron", "add", "x", "--at", "09:00", "--role", "op", "--json"], env)
    assert res.code == 0, res
    assert stored_at(env) == [OCCURRENCE + DAY]


# -- the mute lease ---------------------------------------------------------------


@pytest.mark.parametrize("age", AGES)
def test_a_mute_lease_that_lapsed_any_time_ago_lets_the_entry_fire(age):
    now = OCCURRENCE
    e = entry(Every(interval=60), muted_until=now - age)
    ev = evaluate(e, now)
    assert [f.entry for f in ev.fires] == ["e1"]
    assert not any(d.reason == Diag.MUTED for d in ev.diagnostics)


@pytest.mark.parametrize("ahead", [1, 59, 119, 121, 90 * DAY])
def test_a_mute_lease_still_ahead_silences_the_entry(ahead):
    now = OCCURRENCE
    ev = evaluate(entry(Every(interval=60), muted_until=now + ahead), now)
    assert ev.fires == ()
    assert [d.reason for d in ev.diagnostics] == [Diag.MUTED]


@pytest.mark.parametrize("lease", ["1s", "59s", "119s", "121s"])
def test_mute_for_a_short_lease_lapses_at_its_second(tmp_path, lease):
    """`rk cron mute --for` through the CLI: the stored lease is now + the duration."""
    now = OCCURRENCE
    env = make_env(tmp_path, RK_NOW=str(now))
    added = run_in(["cron", "add", "x", "--every", "5m", "--role", "op", "--json"], env)
    entry_id = added.json()["result"]["id"]
    res = run_in(["cron", "mute", entry_id, "--for", lease, "--json"], env)
    assert res.code == 0, res
    seconds = int(lease[:-1])
    assert res.json()["result"] == {"id": entry_id, "muted": True, "until": now + seconds}


# -- the pause lease -----------------------------------------------------------------


@pytest.mark.parametrize("age", AGES)
def test_a_pause_that_lapsed_any_time_ago_is_no_pause(tmp_path, age):
    now = OCCURRENCE
    path = tmp_path / "s.pause"
    write_pause(path, now - 100 * DAY, now - age)
    assert paused_until(path, now) is None
    ev = evaluate(entry(Every(interval=60)), now, paused_until=paused_until(path, now))
    assert [f.entry for f in ev.fires] == ["e1"]


@pytest.mark.parametrize("ahead", [1, 59, 119, 121, 90 * DAY])
def test_a_pause_still_ahead_silences_the_server_until_its_second(tmp_path, ahead):
    now = OCCURRENCE
    path = tmp_path / "s.pause"
    write_pause(path, now - 1, now + ahead)
    assert paused_until(path, now) == now + ahead
    ev = evaluate(entry(Cron(expr=YEARLY)), now, paused_until=paused_until(path, now))
    assert ev.fires == () and ev.missed == ()
    assert [d.reason for d in ev.diagnostics] == [Diag.PAUSED]
    assert paused_until(path, now + ahead) is None  # lapses at that instant

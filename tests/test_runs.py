"""Every run on record (issue 30, item 6): retries of a failed delivery
(`rk.core.schedule.retry`) and `rk cron runs` (`rk.core.log.runs`).

Sections:
 1. retries, pure: only after `failed:`, never after a skip or a delivery, at most N,
    `retry_after` apart, restart-safe from the log alone; `due()` fires them, a regular
    fire wins, the ticker wakes for them; a property over random outcomes
 2. the entry field: the file, add and edit
 3. runs, pure: the turn a delivery started, how it ended, the reply's first line
 4. `rk cron runs` and a tick on a private tmux server
"""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from cli_helpers import T0, json_error, make_env, one_line_error, run_in
from conftest import run_rk
from hypothesis import given, settings
from hypothesis import strategies as st
from test_mcp import caller  # noqa: F401  (a fixture)

from rk.core.cost.turn_timeout import START_WINDOW, StateLine
from rk.core.cost.usage import Tokens
from rk.core.log.cause import rk_deliveries
from rk.core.log.delivery import LogLine, LogView
from rk.core.log.runs import RUNNING, TIMEOUT, UNDELIVERED, UNKNOWN, Facts, busy_runs, first_line, runs, started
from rk.core.pane.facts import PaneFact, TargetFact
from rk.core.schedule import retry
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.due import due, next_due
from rk.core.schedule.entry import CreatedBy, Entry, EntryError, Every, Target, TargetKind
from rk.store import delivery_log as logfile

PANE = "%1"
T = T0
EVERY = 3600


def entry(**kw) -> Entry:
    base = {
        "id": "r1",
        "schedule": Every(EVERY),
        "target": Target(TargetKind.PANE, PANE),
        "payload": "status?",
        "retry": 2,
        "retry_after": 120,
        "created_by": CreatedBy(at=T - 10),
    }
    return Entry(**(base | kw))


def line(ts: int, outcome: str, reason: str = "schedule", entry_id: str = "r1") -> LogLine:
    return LogLine(ts, entry_id, PANE, reason, outcome)


FAILED = "failed: paste: no such pane"


# --------------------------------------------------------------------------- 1. retries, pure


def test_a_failed_fire_is_retried_after_retry_after_and_not_before():
    view = LogView([line(T, FAILED)])
    assert retry.due_retry(entry(), view, T + 119) is None
    attempt = retry.due_retry(entry(), view, T + 120)
    assert attempt == retry.Attempt(1, 2, T) and attempt.reason == f"retry 1/2 of {T}"
    assert retry.parse(attempt.reason) == attempt


def test_a_failed_retry_is_retried_up_to_n_then_never():
    view = LogView([line(T, FAILED), line(T + 120, FAILED, f"retry 1/2 of {T}")])
    assert retry.due_retry(entry(), view, T + 240) == retry.Attempt(2, 2, T)
    view.add(line(T + 240, FAILED, f"retry 2/2 of {T}"))
    assert retry.pending(entry(), view) is None
    assert retry.due_retry(entry(), view, T + 10_000) is None


@pytest.mark.parametrize(
    "outcome",
    ["delivered", "skipped-busy: active", "skipped-limited", "skipped-quiet", "rate-capped", "skipped-absent"],
)
def test_a_delivered_or_skipped_attempt_ends_the_retries(outcome):
    for lines in ([line(T, outcome)], [line(T, FAILED), line(T + 120, outcome, f"retry 1/2 of {T}")]):
        assert retry.pending(entry(), LogView(lines)) is None, lines


@pytest.mark.parametrize(
    "outcome",
    [
        "failed: submit not confirmed",
        "failed: submit not confirmed (deadline exceeded)",
        "failed: interrupted after the paste; Enter did not take",
        "failed: interrupted after the paste; the pane could not be read",
        "failed: deadline exceeded before Enter (could not clear composer)",
    ],
)
def test_a_failure_that_may_have_submitted_the_prompt_is_never_retried(outcome):
    assert retry.pending(entry(), LogView([line(T, outcome)])) is None
    assert retry.pending(entry(), LogView([line(T, "failed: deadline exceeded before Enter (payload cleared)")]))


def test_no_retry_without_the_field_nor_after_a_manual_send_nor_an_absent_target():
    assert retry.pending(entry(retry=0), LogView([line(T, FAILED)])) is None
    assert retry.pending(entry(), LogView([line(T, FAILED, "manual")])) is None
    assert retry.pending(entry(), LogView([LogLine(T, "r1", "", "schedule", FAILED)])) is None


def test_the_retry_count_is_restart_safe_from_the_newest_line_alone():
    """A fresh view of the same lines (a restarted ticker) owes the same retry, and a
    rotation's kept lines (each entry's newest is always kept) too."""
    from rk.core.log.delivery import lines_to_keep

    lines = [line(T - 7200, "delivered"), line(T, FAILED), line(T + 120, FAILED, f"retry 1/2 of {T}")]
    kept = [lines[i] for i in lines_to_keep(lines, T + 100_000, backoff=())]
    for seen in (lines, kept):
        assert retry.due_retry(entry(), LogView(seen), T + 240) == retry.Attempt(2, 2, T)


def _fires(e: Entry, lines: list[LogLine], now: int, state: str = "idle"):
    panes = [PaneFact(PANE, state=state, epoch=T - 100, agent="claude")]
    targets = {e.id: TargetFact(pane=PANE, state=state, epoch=T - 100)}
    return due([e], LogView(lines), panes, targets, {}, now).fires


def test_due_fires_the_retry_with_its_reason_and_the_regular_fire_wins():
    (fire,) = _fires(entry(), [line(T, FAILED)], T + 120)
    assert (fire.reason, fire.pane) == (f"retry 1/2 of {T}", PANE)
    (regular,) = _fires(entry(retry_after=EVERY), [line(T, FAILED)], T + EVERY)
    assert regular.reason == "schedule"
    assert not _fires(entry(), [line(T, FAILED)], T + 119)
    assert not _fires(entry(), [line(T, "delivered")], T + 120)


def test_a_muted_entry_or_an_unresolved_target_holds_the_retry():
    assert not _fires(entry(muted=True), [line(T, FAILED)], T + 120)
    e = entry()
    ev = due([e], LogView([line(T, FAILED)]), [], {e.id: TargetFact(why="gone")}, {}, T + 120)
    assert not ev.fires and not ev.absent


def test_the_ticker_wakes_for_a_retry():
    assert next_due([entry()], LogView([line(T, FAILED)]), {}, T + 1) == T + 120
    assert next_due([entry()], LogView([line(T, "delivered")]), {}, T + 1) == T + EVERY


def test_a_retrys_turn_is_rks_own():
    assert rk_deliveries([line(T, "delivered", f"retry 1/2 of {T - 120}")]) == {PANE: [T]}


#: What a delivery attempt may end in: a failure, a delivery, or a skip.
OUTCOMES = st.sampled_from([FAILED, "delivered", "skipped-busy: active", "skipped-limited", "rate-capped"])


@settings(max_examples=200, deadline=None)
@given(
    outcomes=st.lists(OUTCOMES, min_size=1, max_size=30),
    n=st.integers(1, 4),
    wait=st.sampled_from([60, 120, 600]),
)
def test_retries_follow_only_failures_at_most_n_per_fire_never_after_a_delivery_or_skip(outcomes, n, wait):
    """Drive `due()` a minute at a time; each fire's attempt gets the next outcome."""
    e = replace(entry(retry=n, retry_after=wait, schedule=Every(1800)), dormant_after=0)  # the agent never answers
    lines: list[LogLine] = []
    it = iter(outcomes)
    now = T
    for _ in range(100_000):  # bounded: a rule that stops firing fails the test, never hangs it
        fires = _fires(e, lines, now)
        if fires:
            outcome = next(it, None)
            if outcome is None:
                break
            lines.append(line(now, outcome, fires[0].reason))
        now += 60
    else:
        raise AssertionError(f"the entry stopped firing after {len(lines)} attempts")
    for before, after in itertools.pairwise(lines):
        attempt = retry.parse(after.reason)
        if attempt is None:
            continue
        assert before.outcome == FAILED, (before, after)  # only after a failed attempt
        assert after.ts - before.ts >= wait
        assert 1 <= attempt.number <= n and attempt.of == n
        fire = retry.parse(before.reason)
        assert attempt.number == (fire.number + 1 if fire else 1)
        assert attempt.fire == (fire.fire if fire else before.ts)


# --------------------------------------------------------------------------- 2. the field


def _raw(**kw) -> dict:
    return {"id": "r1", "schedule": {"kind": "every", "interval": "1h"}, "target": {"kind": "pane", "pane": PANE}} | kw


def test_the_retry_fields_round_trip_through_the_file():
    e = decode_entry(_raw(retry=3, retry_after="5m", payload="x"))
    assert (e.retry, e.retry_after) == (3, 300)
    assert decode_entry(e.to_yaml()) == e
    assert decode_entry(_raw(retry=1, payload="x")).retry_after == 0  # the default, said by `retry.after`
    assert retry.after(decode_entry(_raw(retry=1, payload="x"))) == retry.DEFAULT_AFTER


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"retry": 0}, "retry must be a whole number from 1 to 10"),
        ({"retry": 11}, "retry must be a whole number"),
        ({"retry": "2"}, "retry must be a whole number"),
        ({"retry_after": "2m"}, "retry_after needs retry"),
        ({"retry": 2, "retry_after": "0s"}, "retry_after must be a positive duration"),
    ],
)
def test_a_bad_retry_refuses_the_entry(kw, message):
    with pytest.raises(EntryError, match=message):
        decode_entry(_raw(payload="x", **kw))


@pytest.fixture
def cli(tmp_path):
    return make_env(tmp_path, RK_NOW=str(T0))


@pytest.mark.shell
def test_add_and_edit_take_the_retries_and_show_them(cli):
    res = run_in(["cron", "add", "x", "--every", "1h", "--pane", PANE, "--retry", "2", "--json"], cli)
    assert res.code == 0, res
    rec = res.json()["result"]
    assert (rec["retry"], rec["retry_after"]) == (2, retry.DEFAULT_AFTER)
    eid = rec["id"]
    edited = run_in(["cron", "edit", eid, "--retry-after", "5m", "--json"], cli)
    assert edited.code == 0 and edited.json()["result"]["retry_after"] == 300, edited
    show = run_in(["cron", "show", eid], cli)
    assert "retry:      2 times, 5m after a failed delivery" in show.out, show
    cleared = run_in(["cron", "edit", eid, "--retry", "0", "--json"], cli)
    assert "retry" not in cleared.json()["result"], cleared
    assert "retry" not in (Path(cli["RK_STATE_DIR"]) / "default.yaml").read_text()


@pytest.mark.shell
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--every", "1h", "--retry", "0"], "--retry: from 1 to 10, not 0"),
        (["--every", "1h", "--retry", "11"], "--retry: from 1 to 10"),
        (["--every", "1h", "--retry-after", "2m"], "--retry-after needs --retry"),
        (["--every", "1h", "--retry", "1", "--retry-after", "soon"], "--retry-after:"),
        (["--in", "1h", "--retry", "1"], "an --at/--in entry retires with its one line"),
    ],
)
def test_add_refuses_a_bad_retry_in_one_line(cli, flags, message):
    res = run_in(["cron", "add", "x", "--pane", PANE, *flags], cli)
    assert res.code == 2 and message in one_line_error(res), res
    as_json = run_in(["cron", "add", "x", "--pane", PANE, "--json", *flags], cli)
    assert as_json.code == 2 and message in json_error(as_json, "usage")


# --------------------------------------------------------------------------- 3. runs, pure

#: At rest since T-100; rk's delivery at T; its turn from T+1 to T+40, ended ok.
JOURNAL = [StateLine(T - 100, "idle", "ok"), StateLine(T + 1, "active"), StateLine(T + 40, "idle", "ok")]


def test_a_delivery_has_the_turn_it_started_its_end_its_length_and_its_facts():
    facts = {("r1", T): Facts(Tokens(1000, 200, 300, 40), 0.5, "Done.\nThe rest")}
    (row,) = runs([line(T, "delivered")], {PANE: JOURNAL}, facts)
    assert (row.start, row.end, row.ended, row.seconds) == (T + 1, T + 40, "ok", 39)
    assert (row.tokens, row.cost, row.reply) == (Tokens(1000, 200, 300, 40), 0.5, "Done.")
    rec = row.to_dict()
    assert rec["turn"] == {"start": T + 1, "end": T + 40} and rec["tokens"]["total"] == 1540
    assert rec["retry"] is None and rec["target"] == PANE


@pytest.mark.parametrize("how", ["failed", "interrupted", "limited"])
def test_the_turn_ends_as_its_rest_line_says(how):
    journal = [*JOURNAL[:2], StateLine(T + 40, "limited" if how == "limited" else "idle", how)]
    (row,) = runs([line(T, "delivered")], {PANE: journal}, {})
    assert row.ended == how


def test_a_turn_that_goes_on_is_running_and_one_past_its_timeout_is_timeout():
    (row,) = runs([line(T, "delivered")], {PANE: JOURNAL[:2]}, {})
    assert (row.ended, row.seconds, row.end) == (RUNNING, None, 0)
    timed = [line(T, "delivered"), line(T + 1200, "turn-timeout: still active 20m after the delivery")]
    (row,) = runs(timed, {PANE: JOURNAL[:2]}, {})
    assert row.ended == TIMEOUT


def test_a_prompt_into_a_busy_agent_or_a_late_turn_started_nothing():
    busy = [StateLine(T - 100, "active"), StateLine(T + 30, "idle", "ok"), StateLine(T + 31, "active")]
    (row,) = runs([line(T, "delivered")], {PANE: busy}, {})
    assert (row.ended, row.start) == (UNKNOWN, 0) and "no turn began" in row.why
    late = [StateLine(T - 100, "idle"), StateLine(T + START_WINDOW + 1, "active")]
    assert runs([line(T, "delivered")], {PANE: late}, {})[0].start == 0
    assert runs([line(T, "delivered")], {}, {})[0].ended == UNKNOWN


def test_the_next_delivery_bounds_a_turn():
    """Two deliveries 5 s apart, one turn after the second: it is the second's."""
    journal = [StateLine(T - 100, "idle"), StateLine(T + 6, "active"), StateLine(T + 9, "idle", "ok")]
    first, second = runs([line(T, "delivered"), line(T + 5, "delivered", entry_id="r2")], {PANE: journal}, {})
    assert (first.start, second.start) == (0, T + 6)


def test_a_failed_attempt_is_a_row_and_its_retry_shows_its_fire():
    lines = [line(T - 120, FAILED), line(T, "delivered", f"retry 1/2 of {T - 120}")]
    failed, retried = runs(lines, {PANE: JOURNAL}, {})
    assert (failed.ended, failed.why) == (UNDELIVERED, FAILED)
    assert (retried.ended, retried.fire, retried.start) == ("ok", T - 120, T + 1)
    assert retried.to_dict()["retry"] == {"number": 1, "of": 2, "fire": T - 120}


def test_the_reply_is_its_first_line_shortened_and_masked():
    assert first_line("\n\n  hello  \nmore") == "hello"
    assert len(first_line("x" * 500)) == 120
    facts = {("r1", T): Facts(reply="run it with --api-key sk-secret-123 please")}
    (row,) = runs([line(T, "delivered")], {PANE: JOURNAL}, facts)
    assert "sk-secret" not in row.reply and "***" in row.reply


def test_busy_runs_and_started_agree_with_the_rules():
    found = busy_runs(JOURNAL)
    assert found == [busy_runs(JOURNAL)[0]] and (found[0].how, found[0].rest_from) == ("ok", T - 100)
    assert started(T, 0, found) == found[0]
    assert started(T + 2, 0, found) is None  # began before it


# --------------------------------------------------------------------------- 4. the command, a tick

FIXTURES = Path(__file__).parent / "fixtures" / "usage"


def _claude_pane(tmux_server, tmp_path: Path) -> tuple[str, Path]:
    pane = tmux_server.run("display-message", "-p", "-t", "main:0.0", "#{pane_id}").strip()
    transcript = tmp_path / "t.jsonl"
    shutil.copy(FIXTURES / "claude-transcript.jsonl", transcript)
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_session", "claude:abc")
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_transcript", str(transcript))
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    return pane, state


def _prompt_at(n: int) -> int:
    from rk.core.cost import usage

    objects = [json.loads(x) for x in (FIXTURES / "claude-transcript.jsonl").read_text().splitlines() if x.strip()]
    records = usage.records_of("claude", objects)
    assert records is not None
    return int(usage.turns(records)[n].prompt.ts)


@pytest.mark.shell
@pytest.mark.tmux
def test_cron_runs_joins_the_log_the_journal_and_the_record(tmp_path, tmux_server, env):
    pane, state = _claude_pane(tmux_server, tmp_path)
    at = _prompt_at(0) - 1
    slug = tmux_server.name
    (state / f"{slug}.yaml").write_text(
        "entries:\n"
        f"- {{id: rk1, name: probe, schedule: {{kind: every, interval: 1h}}, target: {{kind: pane, pane: '{pane}'}},"
        " payload: first prompt from rk}\n"
    )
    logfile.append_lines(state / f"{slug}.log", [LogLine(at, "rk1", pane, "schedule", "delivered")])
    journal = [(at - 50, "idle", "ok"), (at + 1, "active", ""), (at + 3, "idle", "ok")]
    (state / f"{slug}.events").write_text(
        "".join(json.dumps({"ts": t, "pane": pane, "to": to, "end": end}) + "\n" for t, to, end in journal)
    )
    env = {**env, "RK_NOW": str(at + 600)}
    res = run_rk(["-L", slug, "cron", "runs", "--json"], env)
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["result"]
    assert (row["entry"], row["name"], row["at"], row["ended"], row["seconds"]) == ("rk1", "probe", at, "ok", 2)
    assert row["turn"] == {"start": at + 1, "end": at + 3}
    assert row["tokens"] == Tokens(1000, 200, 300, 40).to_dict()
    assert row["reply"] == "Hello from the mock API."
    table = run_rk(["-L", slug, "cron", "runs", "rk1"], env)
    assert table.returncode == 0, table.stderr
    header, body = table.stdout.splitlines()
    assert header.split()[:2] == ["WHEN", "ENTRY"] and "ok" in body.split() and "1.54k" in body
    assert "Hello from the mock API." in body
    missing = run_rk(["-L", slug, "cron", "runs", "nope", "--json"], env)
    assert missing.returncode != 0 and json.loads(missing.stdout)["error"]["code"] == "not-found"
    old = run_rk(["-L", slug, "cron", "runs", "--since", "1m"], env)
    assert old.returncode == 0 and old.stdout.startswith("no runs since 1m"), old.stdout


@pytest.mark.shell
@pytest.mark.tmux
def test_a_tick_retries_a_failed_fire_once_and_a_delivery_ends_it(tmp_path, tmux_server, env):
    """The entry's fire at T failed; two minutes on, a tick types `retry 1/2 of T` into the
    pane (a `cat`, allowed by any_program), then fires nothing more until its next regular fire."""
    pane = tmux_server.run("display-message", "-p", "-t", "main:0.0", "#{pane_id}").strip()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    slug = tmux_server.name
    (state / f"{slug}.yaml").write_text(
        "entries:\n"
        f"- {{id: rk1, schedule: {{kind: every, interval: 1h}}, target: {{kind: pane, pane: '{pane}'}},"
        " payload: retried hello, any_program: true, retry: 2, retry_after: 2m}\n"
    )
    now = int(__import__("time").time())
    fired = now - 125
    logfile.append_lines(state / f"{slug}.log", [LogLine(fired, "rk1", pane, "schedule", FAILED)])
    res = run_rk(["-L", slug, "cron", "tick", "--json"], env)
    assert res.returncode == 0, res.stderr
    lines = logfile.read_history(state / f"{slug}.log")
    assert [(x.reason, x.outcome) for x in lines[1:]] == [(f"retry 1/2 of {fired}", "delivered")], lines
    assert "retried hello" in tmux_server.capture(pane)
    again = run_rk(["-L", slug, "cron", "tick", "--json"], {**env, "RK_NOW": str(now + 600)})
    assert again.returncode == 0, again.stderr
    assert len(logfile.read_history(state / f"{slug}.log")) == 2  # a delivery ends the retries
    rows = json.loads(run_rk(["-L", slug, "cron", "runs", "--json"], env).stdout)["result"]
    assert [(r["ended"], (r["retry"] or {}).get("fire")) for r in rows] == [(UNDELIVERED, None), (UNKNOWN, fired)]


@pytest.mark.tmux
@pytest.mark.shell
def test_mcp_cron_runs_shows_only_the_runs_into_panes_the_caller_may_read(caller):  # noqa: F811
    from test_mcp import _cli_add, serve

    c = caller
    env = dict(c["env"], RK_NOW=str(T0 + 600))
    mine = _cli_add({"env": env}, "--every", "1h", "--pane", c["pane"], "mine")
    theirs = _cli_add({"env": env}, "--every", "1h", "--pane", c["worker"], "theirs")
    log = Path(env["RK_STATE_DIR"]) / f"{c['tmux'].name}.log"
    logfile.append_lines(
        log,
        [LogLine(T0, mine, c["pane"], "schedule", "delivered"), LogLine(T0, theirs, c["worker"], "schedule", FAILED)],
    )

    def body(s):
        return {
            "all": s.call("cron_runs"),
            "theirs": s.call("cron_runs", id=theirs),
            "mine": s.call("cron_runs", id=mine),
        }

    got = serve(env, body)
    assert [(r["entry"], r["target"]) for r in got["all"].result()] == [(mine, c["pane"])]
    assert [r["entry"] for r in got["mine"].result()] == [mine]
    assert got["theirs"].error and got["theirs"].text.startswith("refused: ")


@pytest.mark.tmux
@pytest.mark.shell
def test_a_stand_in_agents_turn_is_the_deliverys_row(caller):  # noqa: F811
    """The demo's fake agent reports `active` and `idle` with `rk agent state` as hooks do: the
    tick's delivery gets the turn the journal shows, begun after it, ended (no end word: unknown)."""
    import time

    from conftest import wait_for

    c = caller
    env = {k: v for k, v in c["env"].items() if k not in ("TMUX", "TMUX_PANE")}
    flags = ("-L", c["tmux"].name, "--every", "1h", "--pane", c["worker"], "--any-program", "hi")
    eid = _cli_add_at(env, int(time.time()) - 3600, *flags)
    tick = run_rk(["-L", c["tmux"].name, "cron", "tick", "--json"], env)
    assert tick.returncode == 0, tick.stderr
    assert json.loads(tick.stdout)["result"]["decisions"][0]["outcome"] == "delivered", (tick.stdout, tick.stderr)
    wait_for(lambda: "done: handled prompt #1" in c["tmux"].capture(c["worker"]), timeout=30, message="the turn")

    def row():
        res = run_rk(["-L", c["tmux"].name, "cron", "runs", "--json"], env)
        rows = json.loads(res.stdout)["result"]
        return rows[0] if rows and rows[0]["turn"] and rows[0]["turn"]["end"] else None

    got = wait_for(row, timeout=30, interval=0.5, message="the turn's end in the journal")
    assert (got["entry"], got["reason"], got["target"]) == (eid, "schedule", c["worker"])
    assert got["at"] <= got["turn"]["start"] <= got["at"] + START_WINDOW
    assert got["ended"] == UNKNOWN and got["seconds"] == got["turn"]["end"] - got["turn"]["start"]
    assert got["tokens"] is None and "why" in got


def _cli_add_at(env: dict, now: int, *args: str) -> str:
    res = run_in(["cron", "add", "--json", *args], dict(env, RK_NOW=str(now)))
    assert res.code == 0, res
    return res.json()["result"]["id"]

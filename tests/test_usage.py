"""Issue 20 item 4: token budgets from the agent's own records, and `rk cron usage`.

1. the pure core (`rk.core.cost.usage`): real-format Claude Code transcript and Codex
   rollout lines (tests/fixtures/usage: written by the real CLIs against the
   mock, which reported 1000 in / 200 out / 300 cache read / 40 cache write for
   the first turn and 7 / 3 for the second), attribution (rk's turn vs a
   human's), budgets, days, prices; `due()`'s budget step at its boundary
2. the shell: the bounded, offset-cached reader; the hook's transcript option
3. the command line: --budget on add/edit, a hand-edited bad budget, and
   `rk cron usage` (table, json, unknown) against a private tmux server
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from cli_helpers import json_ok, run_in
from conftest import run_rk

from rk.agent import hook_event, hook_tmux
from rk.core.channels.notice import BUDGET, Memory, events_of
from rk.core.cost import caps, usage
from rk.core.cost.budget import Budget, BudgetError, Spent, over_budget
from rk.core.cost.usage import Delivery, Price, Tokens
from rk.core.log.delivery import LogLine, LogView, Status
from rk.core.log.diagnostics import Diag
from rk.core.pane.facts import TargetFact
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.due import due, next_due
from rk.core.schedule.entry import CreatedBy, Entry, EntryError, Every, Target, TargetKind
from rk.core.schedule.forecast import forecast
from rk.core.schedule.health import is_trouble
from rk.core.settings import Settings
from rk.store.transcripts import Transcripts

FIXTURES = Path(__file__).parent / "fixtures" / "usage"
FIRST = Tokens(input=1000, output=200, cache_read=300, cache_write=40)
HUMAN = Tokens(input=7, output=3)


def _objects(name: str) -> list[object]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def _turns(provider: str, name: str) -> list[usage.Turn]:
    records = usage.records_of(provider, _objects(name))
    assert records is not None
    return usage.turns(records)


# --------------------------------------------------------------------------- 1. pure


def test_a_real_claude_transcript_gives_each_turn_its_usage():
    turns = _turns("claude", "claude-transcript.jsonl")
    assert [(t.prompt.text, t.tokens) for t in turns] == [
        ("first prompt from rk", FIRST),
        ("second prompt human", HUMAN),
    ]
    assert {s.model for t in turns for s in t.spends} == {"claude-opus-4-8"}


def test_a_real_codex_rollout_gives_each_turn_its_usage_from_the_running_totals():
    turns = _turns("codex", "codex-rollout.jsonl")
    # Codex reports no cache writes, and counts the cached tokens inside input_tokens (1300)
    assert [(t.prompt.text, t.tokens) for t in turns] == [
        ("first prompt from rk", Tokens(1000, 200, 300, 0)),
        ("second prompt human", HUMAN),
    ]
    assert {s.model for t in turns for s in t.spends} == {"gpt-5"}


def test_a_real_gemini_session_gives_each_turn_its_usage():
    turns = _turns("gemini", "gemini-session.jsonl")  # the Gemini mock reports 10 in, 5 out
    assert [(t.prompt.text, t.tokens) for t in turns] == [
        ("first prompt from rk", Tokens(10, 5)),
        ("second prompt human", Tokens(10, 5)),
    ]
    thinking = {"type": "gemini", "timestamp": "2026-12-02T18:28:04Z", "id": "x", "model": "m"}
    thinking["tokens"] = {"input": 100, "cached": 60, "output": 5, "thoughts": 20, "tool": 3}
    assert usage.gemini_records(thinking)[0].tokens == Tokens(input=43, output=25, cache_read=60)


def test_injected_context_and_tool_results_start_no_turn():
    objects = _objects("codex-rollout.jsonl")
    texts = [r.text for r in usage.records_of("codex", objects) if isinstance(r, usage.Prompt)]
    assert texts == ["first prompt from rk", "second prompt human"]  # not the <environment_context> message
    tool_result = {
        "type": "user",
        "timestamp": "2026-12-02T18:14:35Z",
        "message": {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]},
    }
    meta = {"type": "user", "isMeta": True, "timestamp": "2026-12-02T18:14:35Z", "message": {"content": "x"}}
    assert usage.claude_records(tool_result) == [] and usage.claude_records(meta) == []


def test_a_claude_message_written_once_per_content_block_counts_once():
    line = _objects("claude-transcript.jsonl")
    assistant = next(o for o in line if o.get("type") == "assistant")
    prompt = next(o for o in line if o.get("type") == "user")
    records = usage.records_of("claude", [prompt, assistant, assistant])
    assert usage.turns(records)[0].tokens == FIRST


def test_a_repeated_codex_token_count_adds_nothing():
    objects = _objects("codex-rollout.jsonl")
    counts = [o for o in objects if (o.get("payload") or {}).get("type") == "token_count"]
    turns = usage.turns(usage.records_of("codex", [*objects, *counts[-1:]]))
    assert turns[-1].tokens == HUMAN


def test_garbage_lines_give_no_records():
    for obj in (None, [], {"type": "assistant"}, {"type": "user", "timestamp": "no"}, {"type": "event_msg"}):
        assert usage.claude_records(obj) == [] and usage.codex_records(obj) == []
    assert usage.records_of("opencode", []) is None  # a CLI whose record rk does not read: unknown


def _at(turns: list[usage.Turn], i: int) -> int:
    return int(turns[i].prompt.ts)


def test_the_turn_rk_started_is_the_entry_s_and_a_human_s_is_nobody_s():
    turns = _turns("claude", "claude-transcript.jsonl")
    rk_turn = Delivery("e1", _at(turns, 0) - 1, "first prompt from rk")
    found = usage.attribute(turns, [rk_turn])
    assert found[0] is not None and found[0].tokens == FIRST  # the human's 10 tokens are not in it
    spaced = [
        usage.Turn(usage.Prompt(100, "first prompt from rk"), turns[0].spends),
        usage.Turn(usage.Prompt(200, "a human's question"), turns[1].spends),
    ]
    # a delivery whose prompt is not in the record (only the human's turn is after it): unknown, not theirs
    assert usage.attribute(spaced, [Delivery("e1", 150, "first prompt from rk")]) == [None]
    # a turn written before the delivery (beyond the skew) is not its turn; within the skew it is
    assert usage.attribute(spaced, [Delivery("e1", 100 + usage.SKEW + 1, "first prompt from rk")]) == [None]
    assert usage.attribute(spaced, [Delivery("e1", 100 + usage.SKEW, "first prompt from rk")]) == [spaced[0]]
    # the next delivery to the pane bounds the turns a delivery may claim
    two = [Delivery("e1", 50, "first prompt from rk"), Delivery("e2", 90, "other")]
    assert usage.attribute(spaced, two) == [None, None]


def test_each_turn_is_one_delivery_s_at_most_and_placeholders_match_any_text():
    turns = _turns("codex", "codex-rollout.jsonl")
    t0 = _at(turns, 0) - 1
    both = usage.attribute(
        turns, [Delivery("a", t0, "first prompt from rk"), Delivery("b", t0, "first prompt from rk")]
    )
    assert [t is not None for t in both].count(True) == 1
    assert usage.Matcher("first {last_delivered} rk")("first prompt from rk")
    assert not usage.Matcher("first prompt")("first prompt from rk")
    assert usage.Matcher("a  b\n")("a b")


@pytest.mark.parametrize(
    "text, tokens", [("2M/day", 2_000_000), ("500k/day", 500_000), ("1500/d", 1500), ("1.5M / day", 1_500_000)]
)
def test_budgets_read(text, tokens):
    assert Budget.parse(text).tokens == tokens
    assert Budget.parse(Budget.parse(text).text) == Budget.parse(text)


@pytest.mark.parametrize("text", ["2M", "2M/week", "-1/day", "0/day", "lots/day", "", 5, True])
def test_a_bad_budget_is_refused(text):
    with pytest.raises(BudgetError):
        Budget.parse(text)


def test_a_hand_written_bad_budget_refuses_its_entry():
    raw = {"id": "a", "schedule": {"kind": "every", "interval": "1m"}, "target": {"kind": "pane", "pane": "%1"}}
    assert decode_entry({**raw, "budget": "2M/day"}).budget == Budget(2_000_000)
    with pytest.raises(EntryError, match="budget"):
        decode_entry({**raw, "budget": "two million"})


def test_the_day_starts_at_local_midnight_even_where_dst_skips_it():
    berlin = ZoneInfo("Europe/Berlin")
    ts = int(datetime(2026, 3, 29, 15, 0, tzinfo=berlin).timestamp())  # spring forward at 02:00
    start, end = caps.day_bounds(ts, berlin)
    assert start == int(datetime(2026, 3, 29, tzinfo=berlin).timestamp())
    assert end - start == 23 * 3600
    santiago = ZoneInfo("America/Santiago")  # 2026-09-06 starts at 01:00 (midnight is skipped)
    ts = int(datetime(2026, 9, 6, 12, 0, tzinfo=santiago).timestamp())
    start, _ = caps.day_bounds(ts, santiago)
    assert datetime.fromtimestamp(start, santiago).strftime("%Y-%m-%d %H:%M") == "2026-09-06 01:00"
    assert datetime.fromtimestamp(start - 1, santiago).date().isoformat() == "2026-09-05"


def test_unknown_usage_is_never_zero():
    assert usage.day_spent([None, None], "no record") == Spent(None, 2, "no record")
    assert usage.day_spent([FIRST, None], "x") == Spent(FIRST.total, 1, "x")
    assert usage.day_spent([]) == Spent(0)
    assert not over_budget(Budget(1), Spent(None, 3))


def test_prices_cost_each_model_and_a_model_without_one_is_unknown():
    prices, problems = usage.parse_prices(
        {"claude-opus": {"input": 15, "output": 75, "cache_read": 1.5, "cache_write": 18.75}, "bad": {"input": "x"}},
        "config.yaml",
    )
    assert list(prices) == ["claude-opus"] and len(problems) == 1 and "bad" in problems[0]
    turn = _turns("claude", "claude-transcript.jsonl")[0]
    assert turn.cost(prices) == pytest.approx((1000 * 15 + 200 * 75 + 300 * 1.5 + 40 * 18.75) / 1e6)
    assert turn.cost({"gpt": Price(1, 1)}) is None
    assert turn.cost({"default": Price(1, 1)}) == pytest.approx(1200 / 1e6)


T = 1_800_000_000 - 1_800_000_000 % 86400 + 12 * 3600  # noon UTC


def _budgeted(tokens: int = 1000) -> Entry:
    return Entry(
        id="b",
        schedule=Every(60),
        target=Target(TargetKind.PANE, "%1"),
        payload="check",
        budget=Budget(tokens),
        created_by=CreatedBy(at=T - 3600),
    )


def _due(entry: Entry, lines: list[LogLine], now: int, spent: Spent | None):
    target = {entry.id: TargetFact(pane="%1", state="idle", epoch=1)}
    return due([entry], LogView(lines), [], target, {}, now, spent={entry.id: spent} if spent else {})


def test_the_budget_stops_the_entry_at_the_fire_that_reaches_it_once_a_day():
    entry = _budgeted(1000)
    old = [LogLine(T - 60, "b", "%1", "schedule", "delivered")]
    assert [f.entry for f in _due(entry, old, T, Spent(999)).fires] == ["b"]  # one under: it fires
    ev = _due(entry, old, T, Spent(1000))  # reached: one skipped-budget line
    assert ev.fires == () and [line.outcome for line, _ in ev.ledger(T)] == [Status.SKIPPED_BUDGET]
    said = [*old, LogLine(T, "b", "%1", "schedule", "skipped-budget")]
    later = _due(entry, said, T + 120, Spent(1000))  # then silent the rest of the day
    assert later.fires == () and later.ledger(T + 120) == []
    assert [d.reason for d in later.diagnostics] == [Diag.BUDGET_SPENT]
    midnight = T + 12 * 3600
    assert [f.entry for f in _due(entry, said, midnight, Spent(0)).fires] == ["b"]  # a new local day


def test_an_unknown_usage_fires_with_a_diagnostic_instead_of_counting_as_zero():
    entry = _budgeted(1)
    ev = _due(entry, [], T, Spent(None, 2, "no session record"))
    assert [f.entry for f in ev.fires] == ["b"]
    assert [(d.reason, "cannot be enforced" in d.detail) for d in ev.diagnostics] == [(Diag.BUDGET_UNKNOWN, True)]
    assert [d.reason for d in _due(entry, [], T, None).diagnostics] == [Diag.BUDGET_UNKNOWN]


def test_a_budget_stop_is_a_notice_event():
    events = events_of("srv", [("b", "%1", "skipped-budget")], [], T, Memory())
    assert [(e.kind, e.entry) for e in events] == [(BUDGET, "b")]


def test_the_forecast_and_next_due_skip_a_budget_stopped_day_to_its_midnight():
    entry = _budgeted(1000)
    said = [LogLine(T - 60, "b", "%1", "schedule", "delivered"), LogLine(T, "b", "%1", "schedule", "skipped-budget")]
    target = TargetFact(pane="%1", state="idle", epoch=1)
    midnight = T + 12 * 3600
    assert next_due([entry], LogView(said), {"b": target}, T + 30) == midnight  # not T + 60
    told = forecast(entry, LogView(said), target, T + 30, zone=UTC, settings=Settings(), n=2)
    assert [u.ts for u in told.fires] == [midnight, midnight + 60]  # a new day is not spent
    assert told.why_not is not None and told.why_not.startswith("budget spent: 1k/day today")
    assert not is_trouble(told.why_not)  # chosen, like a cap
    fresh = forecast(entry, LogView(said[:1]), target, T, zone=UTC, settings=Settings())
    assert fresh.next == T and fresh.why_not is None and "within its budget (1k/day)" in fresh.note
    yesterday = [LogLine(T - 86400, "b", "%1", "schedule", "skipped-budget"), *said[:1]]
    assert next_due([entry], LogView(yesterday), {"b": target}, T - 30) == T  # yesterday's stop is over


# --------------------------------------------------------------------------- 2. shell


@pytest.mark.shell
def test_the_reader_waits_for_a_partial_last_line_and_reads_only_what_was_appended(tmp_path):
    lines = (FIXTURES / "claude-transcript.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "t.jsonl"
    cut = next(i for i, line in enumerate(lines) if b'"assistant"' in line)
    path.write_bytes(b"".join(lines[:cut]) + lines[cut][:40])  # the assistant line still being written
    cache = Transcripts()
    records, why = cache.records("claude", str(path))
    assert why == "" and usage.turns(records)[0].tokens == Tokens()
    with path.open("ab") as f:
        f.write(lines[cut][40:] + b"".join(lines[cut + 1 :]))
    offset = cache._files[("claude", str(path))].offset
    records, _ = cache.records("claude", str(path))
    assert [t.tokens for t in usage.turns(records)] == [FIRST, HUMAN]
    assert cache._files[("claude", str(path))].offset == path.stat().st_size > offset


@pytest.mark.shell
def test_the_first_read_of_a_huge_record_is_bounded_to_its_end(tmp_path):
    path = tmp_path / "t.jsonl"
    body = (FIXTURES / "claude-transcript.jsonl").read_bytes()
    path.write_bytes(b'{"pad": "' + b"x" * 100_000 + b'"}\n' + body)
    records, _ = Transcripts(max_read=len(body) + 10).records("claude", str(path))
    assert [t.tokens for t in usage.turns(records)] == [FIRST, HUMAN]
    assert Transcripts().records("opencode", str(path)) == (None, "opencode records no token usage rk can read")
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    assert Transcripts().records("claude", str(link))[0] is None  # never read through a symlink


def test_the_hook_writes_the_transcript_beside_the_session_in_the_same_tmux_call():
    args = hook_tmux.tmux_commands("%3", "idle", 5, 0, "claude:abc", transcript="/h/t.jsonl")
    assert args[-8:] == ["claude:abc", ";", "set-option", "-p", "-t", "%3", "@rk_pane_transcript", "/h/t.jsonl"]
    assert hook_event.transcript_of({"transcript_path": "/h/t.jsonl"}) == "/h/t.jsonl"
    for bad in ("relative.jsonl", "/ends;", "/a\nb", 5, ""):
        assert hook_event.transcript_of({"transcript_path": bad}) == ""


# --------------------------------------------------------------------------- 3. command line


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    from cli_helpers import make_env

    return make_env(tmp_path, RK_NOW=str(T), **extra)


@pytest.mark.shell
def test_add_and_edit_take_a_budget_and_refuse_a_bad_one(tmp_path):
    env = _env(tmp_path)
    res = run_in(
        ["-L", "srv", "cron", "add", "hi", "--every", "10m", "--pane", "%1", "--budget", "2M/day", "--json"], env
    )
    entry_id = json_ok(res)["id"]
    text = (tmp_path / "state" / "srv.yaml").read_text()
    assert "budget: 2M/day" in text
    before = text
    bad = run_in(["-L", "srv", "cron", "edit", entry_id, "--budget", "lots"], env)
    assert bad.code == 2 and "--budget" in bad.err and (tmp_path / "state" / "srv.yaml").read_text() == before
    assert run_in(["-L", "srv", "cron", "add", "x", "--every", "10m", "--pane", "%1", "--budget", "off"], env).code == 2
    assert run_in(["-L", "srv", "cron", "edit", entry_id, "--budget", "off"], env).code == 0
    assert "budget" not in (tmp_path / "state" / "srv.yaml").read_text()


def _delivered(ts: int, entry: str, pane: str = "%0") -> str:
    return LogLine(ts, entry, pane, "schedule", "delivered").to_json() + "\n"


def _claude_pane(tmux_server, tmp_path: Path) -> tuple[str, int, Path]:
    """The server's first pane as a Claude session whose record is the fixture
    transcript (as rk's hook leaves it); the instant just before its first turn,
    when rk's delivery went in; an empty private state directory."""
    pane = tmux_server.run("display-message", "-p", "-t", "main:0.0", "#{pane_id}").strip()
    transcript = tmp_path / "t.jsonl"
    shutil.copy(FIXTURES / "claude-transcript.jsonl", transcript)
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_agent_session", "claude:abc")
    tmux_server.run("set-option", "-p", "-t", pane, "@rk_pane_transcript", str(transcript))
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    return pane, _at(_turns("claude", "claude-transcript.jsonl"), 0) - 1, state


@pytest.mark.shell
@pytest.mark.tmux
def test_usage_shows_the_tokens_of_rk_s_turns_per_day_and_unknown_where_no_record_says(tmp_path, tmux_server, env):
    pane, delivered_at, state = _claude_pane(tmux_server, tmp_path)
    slug = tmux_server.name
    (state / f"{slug}.yaml").write_text(
        "entries:\n"
        f"- {{id: rk1, schedule: {{kind: every, interval: 1h}}, target: {{kind: pane, pane: '{pane}'}},"
        " payload: first prompt from rk}\n"
        "- {id: gone, schedule: {kind: every, interval: 1h}, target: {kind: pane, pane: '%99'}, payload: hi}\n"
    )
    (state / f"{slug}.log").write_text(_delivered(delivered_at, "rk1", pane) + _delivered(delivered_at, "gone", "%99"))
    config = Path(env["XDG_CONFIG_HOME"]) / "rk"
    config.mkdir(parents=True)
    (config / "config.yaml").write_text("prices:\n  claude-opus: {input: 15, output: 75, cache_read: 1.5}\n")
    env = {**env, "RK_NOW": str(delivered_at + 3600)}
    res = run_rk(["-L", slug, "cron", "usage", "--json"], env)
    assert res.returncode == 0, res.stderr
    days = {d["entry"]: d for d in json.loads(res.stdout)["result"]}
    assert days["rk1"]["tokens"] == FIRST.to_dict()  # the human's turn (7 + 3) is not in it
    assert days["rk1"]["cost"] == pytest.approx((1000 * 15 + 200 * 75 + 300 * 1.5) / 1e6)
    assert days["rk1"]["day"] == datetime.fromtimestamp(delivered_at, UTC).date().isoformat()
    assert days["gone"]["tokens"] is None and days["gone"]["cost"] is None and days["gone"]["unknown"] == 1
    table = run_rk(["-L", slug, "cron", "usage"], env)
    assert table.returncode == 0, table.stderr
    rows = {line.split()[1]: line.split() for line in table.stdout.splitlines()[1:]}
    assert rows["rk1"][3:9] == ["1", "1k", "200", "300", "40", "1.54k"]
    assert rows["gone"][4:9] == ["unknown"] * 5 and "unknown" in table.stderr
    assert run_rk(["-L", slug, "cron", "usage", "nope"], env).returncode == 1
    assert run_rk(["-L", slug, "cron", "usage", "--since", "soon"], env).returncode == 2


@pytest.mark.shell
@pytest.mark.tmux
def test_the_tick_reads_the_record_of_a_budgeted_entry_and_skips_it_once(tmp_path, tmux_server, env):
    pane, delivered_at, state = _claude_pane(tmux_server, tmp_path)
    slug = tmux_server.name
    (state / f"{slug}.yaml").write_text(
        "entries:\n"
        f"- {{id: b1, schedule: {{kind: every, interval: 1m}}, target: {{kind: pane, pane: '{pane}'}},"
        f" payload: first prompt from rk, budget: {FIRST.total}/day, created_by: {{at: {delivered_at - 60}}}}}\n"
    )
    (state / f"{slug}.log").write_text(_delivered(delivered_at, "b1", pane))

    def tick(at: int) -> dict:
        res = run_rk(["-L", slug, "cron", "tick", "--json"], {**env, "RK_NOW": str(at)})
        return json.loads(res.stdout)["result"]

    first = tick(delivered_at + 120)
    assert [(d["entry"], d["outcome"]) for d in first["decisions"]] == [("b1", "skipped-budget")]
    second = tick(delivered_at + 240)
    assert second["decisions"] == []
    assert any(d["reason"] == "budget-spent" for d in second["diagnostics"])


@pytest.mark.shell
@pytest.mark.tmux
def test_show_and_doctor_say_when_a_budget_cannot_be_enforced(tmp_path, tmux_server, env):
    pane = tmux_server.run("display-message", "-p", "-t", "main:0.0", "#{pane_id}").strip()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    slug = tmux_server.name
    (state / f"{slug}.yaml").write_text(
        "entries:\n"
        f"- {{id: b1, schedule: {{kind: every, interval: 1h}}, target: {{kind: pane, pane: '{pane}'}},"
        " payload: hi, budget: 1M/day}\n"
    )
    (state / f"{slug}.log").write_text(_delivered(T - 60, "b1", pane))  # a pane with no agent session
    env = {**env, "RK_NOW": str(T)}
    show = run_rk(["-L", slug, "cron", "show", "b1"], env)
    assert "budget:     1M/day (usage unknown" in show.stdout and "cannot be enforced" in show.stdout
    shown = json.loads(run_rk(["-L", slug, "cron", "show", "b1", "--json"], env).stdout)["result"]
    assert shown["budget"] == "1M/day" and shown["budget_today"]["tokens"] is None
    doctor = run_rk(["-L", slug, "doctor", "--json"], env)
    assert "budget of b1" in doctor.stdout and "cannot be enforced" in doctor.stdout


@pytest.mark.shell
@pytest.mark.tmux
def test_mcp_cron_add_and_edit_take_a_budget(tmux_server, env):
    from test_mcp import serve

    pane = tmux_server.display("main:", "#{pane_id}").strip()
    socket = tmux_server.display("main:", "#{socket_path}").strip()
    e = dict(env, TMUX=f"{socket},1,0", TMUX_PANE=pane)

    def body(s):
        added = s.call("cron_add", prompt="status?", every="10m", budget="2M/day").result()
        shown = s.call("cron_show", id=added["id"]).result()
        bad = s.call("cron_edit", id=added["id"], budget="lots")
        off = s.call("cron_edit", id=added["id"], budget="off").result()
        return shown, bad, off

    shown, bad, off = serve(e, body)
    assert shown["budget"] == "2M/day"
    assert "--budget" in bad.text and ('"ok": false' in bad.text or bad.error), bad
    assert "budget" not in off


def test_a_rotation_keeps_a_budgeted_entry_s_deliveries_of_its_day():
    from rk.core.log.delivery import lines_to_keep

    hours = (27, 22, 21)
    lines = [LogLine(T - h * 3600, "b", "%1", "schedule", "delivered") for h in hours]
    lines.append(LogLine(T - 19 * 3600, "b", "%1", "schedule", "skipped-busy: active"))
    plain = {lines[i] for i in lines_to_keep(lines, T, ())}
    kept = {lines[i] for i in lines_to_keep(lines, T, (), budgeted={"b"})}
    assert lines[1] not in plain and lines[1] in kept  # within 26 h: kept for the budget
    assert lines[0] not in kept  # older than any local day

"""Token counts that are not whole numbers ≥ 0 (negative, fractions, text) are not
counted, and said: the record's field and value, in `rk cron usage` and its JSON."""

from __future__ import annotations

import json
from datetime import UTC, date
from pathlib import Path

import pytest
from conftest import run_rk
from test_usage import FIXTURES, _claude_pane, _delivered

from rk.cli.usage import odd_note
from rk.core.cost import usage
from rk.core.cost.usage import Attributed, Tokens

TS = "2026-12-01T10:00:05Z"


def _claude(counts: dict) -> list[usage.Record]:
    return usage.claude_records(
        {"type": "assistant", "timestamp": TS, "message": {"id": "m", "model": "x", "usage": counts}}
    )


def test_a_bad_claude_count_is_zero_and_said():
    (spend,) = _claude(
        {"input_tokens": 12, "output_tokens": -5, "cache_read_input_tokens": 2.5, "cache_creation_input_tokens": "40"}
    )
    assert isinstance(spend, usage.Spend)
    assert spend.tokens == Tokens(input=12)
    assert spend.odd == ("output_tokens=-5", "cache_read_input_tokens=2.5", "cache_creation_input_tokens='40'")
    (fine,) = _claude({"input_tokens": 0, "output_tokens": 3, "service_tier": "standard"})
    assert isinstance(fine, usage.Spend) and fine.odd == () and fine.tokens == Tokens(output=3)
    (flag,) = _claude({"input_tokens": True})
    assert isinstance(flag, usage.Spend) and flag.odd == ("input_tokens=True",)


def test_a_bad_codex_or_gemini_count_is_zero_and_said():
    event = {
        "type": "event_msg",
        "timestamp": TS,
        "payload": {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 10, "output_tokens": "9"}}},
    }
    spends = usage.codex_spends(usage.codex_records(event))
    assert [(s.tokens, s.odd) for s in spends if isinstance(s, usage.Spend)] == [
        (Tokens(input=10), ("output_tokens='9'",))
    ]
    only_odd = usage.codex_spends(
        usage.codex_records(
            {**event, "payload": {**event["payload"], "info": {"total_token_usage": {"input_tokens": -1}}}}
        )
    )
    assert [s.odd for s in only_odd if isinstance(s, usage.Spend)] == [("input_tokens=-1",)]  # said, even with 0 spent
    (gem,) = usage.gemini_records({"type": "gemini", "timestamp": TS, "id": "g", "tokens": {"input": 4, "output": -2}})
    assert isinstance(gem, usage.Spend) and gem.tokens == Tokens(input=4) and gem.odd == ("output=-2",)


def test_a_day_counts_what_it_did_not_count_and_the_note_says_it():
    prompt = usage.Prompt(1_764_583_200.0, "status?")
    bad = usage.Spend(prompt.ts + 5, Tokens(input=12), odd=("output_tokens=-5", "cache_read_input_tokens=2.5"))
    good = usage.Spend(prompt.ts + 9, Tokens(output=3))
    turn = usage.Turn(prompt, (bad, good))
    assert turn.odd == ("output_tokens=-5", "cache_read_input_tokens=2.5")
    (day,) = usage.per_day([Attributed("e1", int(prompt.ts), turn)], {"e1": UTC})
    assert (day.tokens.total, day.odd, day.odd_example) == (15, 2, "output_tokens=-5")
    assert odd_note(day) == (
        f"e1 {day.day}: 2 token counts in the session record not a whole number (output_tokens=-5, …); not counted"
    )
    one = usage.DayUsage("e1", date(2026, 12, 1), 1, odd=1, odd_example="output=-2")
    assert (
        odd_note(one)
        == "e1 2026-12-01: a token count in the session record not a whole number (output=-2); not counted"
    )
    (clean,) = usage.per_day([Attributed("e1", int(prompt.ts), usage.Turn(prompt, (good,)))], {"e1": UTC})
    assert clean.odd == 0


@pytest.mark.shell
@pytest.mark.tmux
def test_rk_cron_usage_says_the_counts_it_did_not_count(tmp_path, tmux_server, env):
    pane, delivered_at, state = _claude_pane(tmux_server, tmp_path)
    transcript = tmp_path / "t.jsonl"
    text = (FIXTURES / "claude-transcript.jsonl").read_text()
    text = text.replace('"output_tokens":200', '"output_tokens":-200', 1)
    text = text.replace('"cache_read_input_tokens":300', '"cache_read_input_tokens":"300"', 1)
    transcript.write_text(text)
    slug = tmux_server.name
    (state / f"{slug}.yaml").write_text(
        "entries:\n"
        f"- {{id: rk1, schedule: {{kind: every, interval: 1h}}, target: {{kind: pane, pane: '{pane}'}},"
        " payload: first prompt from rk}\n"
    )
    (state / f"{slug}.log").write_text(_delivered(delivered_at, "rk1", pane))
    env = {**env, "RK_NOW": str(delivered_at + 3600)}
    res = run_rk(["-L", slug, "cron", "usage", "--json"], env)
    assert res.returncode == 0, res.stderr
    (day,) = json.loads(res.stdout)["result"]
    assert day["tokens"] == Tokens(input=1000, cache_write=40).to_dict() and day["not_counted"] == 2
    table = run_rk(["-L", slug, "cron", "usage"], env)
    assert table.returncode == 0, table.stderr
    notes = [line for line in table.stderr.splitlines() if "not counted" in line]
    assert len(notes) == 1 and "(output_tokens=-200, …)" in notes[0], table.stderr
    assert Path(transcript).exists()

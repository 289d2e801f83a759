"""Dormancy against a real tmux server: a stand-in agent (`tests/fixtures/composer_app.py`)
takes each prompt and never answers (no state is written after it). Real ticks at
controlled instants type three prompts, then log `dormant` once and type nothing more;
a human's prompt (its turn start written as a hook writes it) wakes the entry, and
`rk cron wake` ends a second dormancy by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import run_rk, wait_for

from rk.store.delivery_log import read_live

FIXTURES = Path(__file__).resolve().parent / "fixtures"
T0 = 1_800_000_000
EVERY = 300
PROMPT = "status?"

pytestmark = [pytest.mark.tmux, pytest.mark.shell]


@pytest.fixture
def deaf(tmux_server, tmp_path):
    """The first pane runs the composer app (it takes prompts, never answers); (pane, submissions file)."""
    received = tmp_path / "submitted.txt"
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    tmux_server.run(
        "respawn-pane", "-k", "-t", pane, f"exec {sys.executable} {FIXTURES / 'composer_app.py'} {received}"
    )
    wait_for(lambda: tmux_server.capture(pane).startswith("> "), message="the composer drawn")
    return pane, received


def rk(env, server, at: int, *args: str) -> str:
    return run_rk([*args, "-L", server.name], dict(env, RK_NOW=str(at)), check=True).stdout


def hook(server, pane: str, state: str, at: int) -> None:
    """The state an agent's hook writes (its journal line aside: the stamp is what dormancy reads)."""
    server.set_pane_option(pane, "@rk_pane_agent_state", f"{state}:{at}")


def tick(env, server, at: int) -> None:
    rk(env, server, at, "cron", "tick")


def submissions(received: Path) -> list[str]:
    return received.read_text().splitlines() if received.exists() else []


def outcomes(env, entry_id: str) -> list[str]:
    logs = Path(env["RK_STATE_DIR"]).glob("*.log")
    return [line.outcome.split(":")[0] for p in logs for line in read_live(p) if line.entry == entry_id]


def listed(env, server, at: int) -> dict:
    return json.loads(rk(env, server, at, "cron", "list", "--json"))["result"][0]


def test_a_deaf_agent_gets_three_prompts_then_silence_until_a_human_prompt_or_wake(env, tmux_server, deaf):
    pane, received = deaf
    hook(tmux_server, pane, "idle", T0)  # an agent with hooks, at rest
    added = rk(env, tmux_server, T0, "cron", "add", PROMPT, "--every", "5m", "--pane", pane, "--json")
    entry = json.loads(added)["result"]["id"]

    for k in (1, 2, 3):
        tick(env, tmux_server, T0 + k * EVERY)
        wait_for(lambda k=k: len(submissions(received)) == k, message=f"prompt {k} submitted")
    tick(env, tmux_server, T0 + 4 * EVERY)  # the fourth: told, not typed
    tick(env, tmux_server, T0 + 5 * EVERY)  # then silent: no line at all
    assert outcomes(env, entry) == ["delivered"] * 3 + ["dormant"]
    assert submissions(received) == [PROMPT] * 3
    row = listed(env, tmux_server, T0 + 5 * EVERY + 10)
    assert row["dormant"] is True and row["why_not"].startswith("dormant: no answer to 3 prompts")
    assert row["next"] is None

    # a human types a prompt: the agent's hook writes its turn start; the entry wakes
    tmux_server.run("send-keys", "-t", pane, "-l", "hello")
    tmux_server.run("send-keys", "-t", pane, "Enter")
    wait_for(lambda: submissions(received)[-1:] == ["hello"], message="the human's prompt")
    hook(tmux_server, pane, "active", T0 + 5 * EVERY + 30)
    assert listed(env, tmux_server, T0 + 5 * EVERY + 40)["dormant"] is False
    tick(env, tmux_server, T0 + 6 * EVERY)
    wait_for(lambda: submissions(received).count(PROMPT) == 4, message="typed again after the human's turn")

    # three unanswered since the turn's stamp: dormant again; then woken by hand
    for k in (7, 8):
        tick(env, tmux_server, T0 + k * EVERY)
    tick(env, tmux_server, T0 + 9 * EVERY)
    assert outcomes(env, entry)[-4:] == ["delivered"] * 3 + ["dormant"]
    assert submissions(received).count(PROMPT) == 6
    woke = json.loads(rk(env, tmux_server, T0 + 9 * EVERY + 30, "cron", "wake", entry, "--json"))["result"]
    assert woke == {"id": entry, "woken": True, "was_dormant": True}
    tick(env, tmux_server, T0 + 10 * EVERY)
    wait_for(lambda: submissions(received).count(PROMPT) == 7, message="typed again after rk cron wake")
    assert outcomes(env, entry)[-2:] == ["woken", "delivered"]


def test_the_flag_on_add_edit_and_simulate_and_wake_for_an_unknown_id(env, tmux_server, deaf):
    pane, _ = deaf
    added = json.loads(rk(env, tmux_server, T0, "cron", "add", PROMPT, "--every", "5m", "--pane", pane, "--json"))
    entry = added["result"]["id"]
    bad = run_rk(["cron", "add", PROMPT, "--every", "5m", "--pane", pane, "--dormant-after", "soon"], env)
    assert bad.returncode == 2 and "--dormant-after must be a whole number" in bad.stderr
    assert "Traceback" not in bad.stderr
    rk(env, tmux_server, T0, "cron", "edit", entry, "--dormant-after", "off")
    entries = (Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.yaml").read_text()
    assert "dormant_after: off" in entries
    rk(env, tmux_server, T0, "cron", "edit", entry, "--dormant-after", "3")  # the default: the key goes
    assert "dormant_after" not in (Path(env["RK_STATE_DIR"]) / f"{tmux_server.name}.yaml").read_text()
    missing = run_rk(["cron", "wake", "zzzz", "-L", tmux_server.name], env)
    assert missing.returncode != 0 and "zzzz" in missing.stderr and "Traceback" not in missing.stderr

    def simulated(*flags: str) -> int:
        out = rk(env, tmux_server, T0, "cron", "simulate", entry, "--states", "0 idle", "--for", "1d", *flags)
        return sum(1 for e in json.loads(out)["result"]["events"] if e["outcome"] == "delivered")

    assert simulated("--busy", "0", "--json") == 3  # a deaf agent over a day: 3 prompts
    assert simulated("--busy", "0", "--dormant-after", "off", "--json") == 287
    assert simulated("--json") == 287  # an agent that answers each prompt (--busy 20s)

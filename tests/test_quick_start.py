"""The README's Quick start is a test: typed line by line into a shell in an 80×24
tmux pane, in a fresh HOME with no systemd user bus, from a copy of this checkout,
with `claude` a stand-in that loads Claude Code's hooks at start and draws its
screen (tests/fixtures/fake_claude.py), until rk delivers the entry's first prompt.
Then the README's "in another pane" block runs against what the first one made.
The README changes only together with this test (`make test-agents` runs the same
with the real Claude Code: tests/agents/test_real_quick_start.py).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from newcomer import Newcomer, readme_blocks

pytestmark = [pytest.mark.shell, pytest.mark.long(135)]  # `make install` and two minutes of quiet, on the real clock

FAKE_CLAUDE = Path(__file__).resolve().parent / "fixtures" / "fake_claude.py"


def stand_in_claude(directory: Path) -> Path:
    """`claude` on the PATH: the stand-in, under that name (the kernel names the
    process after the script, as rk's program check sees it)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "claude"
    path.write_text(f"#!{sys.executable}\n" + FAKE_CLAUDE.read_text())
    path.chmod(0o755)
    return directory


def quick_start_and_the_first_delivery(user: Newcomer, delivered: Callable[[], bool]) -> tuple[str, float]:
    """Run the Quick start's lines (the last one starts the agent and does not return);
    the entry's id and the seconds from the first line to the first delivered prompt."""
    first, *_ = readme_blocks("Quick start")
    *setup, start_agent = first
    assert start_agent.split()[0] == "claude", "the Quick start ends by starting the agent"
    began = time.monotonic()
    for line in setup:
        status = user.run_line(line)
        verb = line.split("#")[0].strip()
        if verb.startswith("rk doctor"):
            continue  # doctor's status says whether all is well: looked at below
        assert status == 0, f"{verb!r} exited {status}:\n{user.screen()}"
    entries = user.rk("cron", "list", "--json")
    assert entries.returncode == 0, entries.stderr
    (entry,) = json.loads(entries.stdout)["result"]
    assert entry["target"] == f"pane:{user.pane()}", entry  # the pane it was typed in, not an agent's session
    set_up = time.monotonic() - began
    user.type_line(start_agent)
    user.wait(lambda: "? for shortcuts" in user.screen(), 30, "the agent's composer")
    user.wait(delivered, 300, "the first delivered prompt")
    took = time.monotonic() - began
    lines = [line for line in user.log_lines() if line.get("outcome") == "delivered"]
    assert lines and lines[0]["entry"] == entry["id"], user.log_lines()
    after = took - set_up
    print(f"\nQuick start: its lines before the agent took {set_up:.0f}s; the first prompt came {after:.0f}s later")
    return str(entry["id"]), took


def test_the_quick_start_delivers_its_first_prompt_at_80x24_without_a_user_bus(tmp_path, tmux_server):
    prompts = tmp_path / "prompts"
    user = Newcomer(
        root=tmp_path,
        sockdir=Path(os.environ["TMUX_TMPDIR"]),
        agent_bin=stand_in_claude(tmp_path / "agent-bin"),
        extra_env={"FAKE_CLAUDE_LOG": str(prompts)},
    )
    try:
        entry, took = quick_start_and_the_first_delivery(
            user, lambda: prompts.exists() and "status?" in prompts.read_text()
        )
        print(f"\nQuick start: first prompt delivered {took:.0f}s after its first line")
        doctor = user.rk("doctor")
        assert " fail " not in f" {doctor.stdout} ", doctor.stdout
        # the README's next block, in another window of the same server
        user.tmux("new-window", "-t", "work", "-n", "look")
        user.wait(lambda: user.count() >= 1 + len(readme_blocks("Quick start")[0]), 20, "the second shell's prompt")
        for line in readme_blocks("Quick start")[1]:
            line = line.replace(" ID ", f" {entry} ").replace(" ID\t", f" {entry}\t")
            if " -f" in line.split("#")[0]:  # follows the log until Ctrl-C, as the README says
                user.type_line(line, "look")
                user.wait(lambda: "delivered" in user.screen("look"), 20, "the log's delivered line")
                before = user.count()
                user.tmux("send-keys", "-t", "look", "C-c")
                user.wait(lambda before=before: user.count() > before, 20, "the prompt after Ctrl-C")
                continue
            status = user.run_line(line, timeout=60, target="look")
            assert status == 0, f"{line!r} exited {status}:\n{user.screen('look')}"
        assert user.rk("cron", "list", "--json").stdout.count('"id"') == 0  # the last line removed it
    finally:
        user.close()

"""The README's Quick start with the real Claude Code: typed line by line into a shell
in an 80×24 pane, in a fresh HOME with no user bus, from a copy of this checkout
(`make install` included), with `claude` the pinned CLI against the local mock of its
API, until rk delivers the entry's first prompt (tests/test_quick_start.py runs the
same with a stand-in, in `make test`)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import harness
import pytest
from newcomer import Newcomer
from test_quick_start import quick_start_and_the_first_delivery

pytestmark = [pytest.mark.agents, pytest.mark.long(130)]  # the README's two minutes of quiet, on the real clock


def test_the_quick_start_delivers_its_first_prompt_to_the_real_claude_code(tmp_path, agent_bin):
    run = harness.AgentRun("claude", launch=False, bin_dir=agent_bin)
    sockdir = Path(tempfile.mkdtemp(prefix="s", dir="/tmp"))
    user = None

    def first_run_done(home: Path, checkout: Path) -> None:
        """What a user's Claude Code already has: onboarding done, the API key approved,
        this checkout trusted; and nothing of rk's."""
        state = json.loads((run.home / ".claude.json").read_text())
        state["projects"] = {str(checkout): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}}
        (home / ".claude.json").write_text(json.dumps(state))
        (home / ".claude").mkdir(exist_ok=True)
        (home / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "default"}}))

    try:
        agent_env = {k: v for k, v in run.agent_env().items() if k.startswith(("ANTHROPIC_", "CLAUDE_", "DISABLE_"))}
        user = Newcomer(
            root=tmp_path, sockdir=sockdir, agent_bin=run.root / "bin", extra_env=agent_env, prepare=first_run_done
        )
        entry, took = quick_start_and_the_first_delivery(user, lambda: any("status?" in p for p in run.mock.prompts()))
        print(f"\nQuick start with Claude Code: {entry}'s first prompt delivered {took:.0f}s after its first line")
    finally:
        if user is not None:
            user.close()
        run.close()

"""The demo checks itself: its summary counts only log lines, and a scene whose
refusal or delivery did not happen fails it (demo/run.py's tally, tested directly)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("demo_run", Path(__file__).resolve().parent.parent / "demo" / "run.py")
assert _spec is not None and _spec.loader is not None
demo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(demo)


def _tally(lines):
    tally = demo.new_tally()
    for kind, outcome in lines:
        demo.count_line(tally, kind, outcome)
    return tally


GOOD = [
    ("every", "delivered"),
    ("cron", "delivered"),
    ("backoff", "delivered"),
    ("wake", "delivered"),
    ("shell", "skipped-absent: shell in pane"),
    ("draft", "delivered"),  # before the human typed, or after they sent it
    ("draft", "skipped-busy: draft"),
]


def test_a_good_log_passes_and_its_summary_counts_the_log():
    tally = _tally(GOOD)
    assert demo.failed_scenes(tally) == []
    assert "skipped-busy: draft: 1" in demo.summary(tally)
    assert "skipped-absent: shell in pane: 1" in demo.summary(tally)


def test_deliveries_of_the_draft_entry_are_not_counted_as_refusals():
    lines = [line for line in GOOD if line != ("draft", "skipped-busy: draft")] + [("draft", "delivered")] * 2
    tally = _tally(lines)
    assert "skipped-busy: draft: 0" in demo.summary(tally)
    assert demo.failed_scenes(tally) == ["draft: no 'skipped-busy: draft' logged"]


def test_a_draft_fused_with_rk_s_prompt_fails_the_draft_scene():
    screen = f"[worker-d] got: {demo.DRAFT}anything new? (every 10s)\n"
    assert demo.fused(screen)
    assert not demo.fused(f"[worker-d] got: {demo.DRAFT}\n[worker-d] got: anything new? (every 10s)\n")
    tally = _tally(GOOD)
    tally["draft:wrong"] += 1
    assert demo.failed_scenes(tally) == ["draft: rk typed into it"]


def test_a_prompt_into_the_shell_or_a_kind_that_never_delivered_fails_its_scene():
    tally = _tally([*GOOD[1:], ("shell", "delivered")])
    assert demo.failed_scenes(tally) == ["every: no delivery logged", "shell: rk typed into it"]


@pytest.mark.tmux
@pytest.mark.slow
@pytest.mark.long(50)
def test_the_demo_passes_with_every_scene_shown(tmp_path):
    """The demo itself, as fast as its scripted human allows (it sends the draft at 30 s)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW")}
    env["TMUX_TMPDIR"] = str(tmp_path)  # its private server's socket, away from the user's
    script = Path(__file__).resolve().parent.parent / "demo" / "run.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--min", "0", "--max", "75"], env=env, capture_output=True, text=True, timeout=150
    )
    assert proc.returncode == 0, proc.stderr
    assert "skipped-busy: draft" in proc.stdout and "scene failed" not in proc.stderr

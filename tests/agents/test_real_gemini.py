"""rk against the real Gemini CLI 0.61, offline against a local mock of the Gemini API.

Gemini's hooks end every turn with AfterAgent (errors and Esc included, with
no payload that says which), and its daily-quota dialog fires no hook at all:
there the screen is rk's only source. `pane_current_command` is `node`; the
pid rk's hook records vouches for the pane.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agents.gemini_launch import GeminiSession
from agents.mock_gemini import MockGemini
from agents.session_rig import SessionRig

pytestmark = pytest.mark.agents


class GeminiRig(SessionRig):
    def __init__(self, root: Path, bin_dir: Path, settings_extra: dict | None = None) -> None:
        self.state_dir = root / "rk-state"
        self.mock = MockGemini(mode="ok", delay=3)
        self.mock.start()
        self.g = self.session = GeminiSession(
            self.mock.base_url,
            root=root / "gemini",
            env={"RK_STATE_DIR": str(self.state_dir)},
            binary=str(bin_dir / "gemini"),
            settings_extra=settings_extra,
        )
        self.launch("gemini", {"HOME": self.g.env["HOME"]}, lambda: self.g.wait_ready(timeout=60))
        self.pane = self.g.tmux("display", "-p", "-t", "g", "#{pane_id}").strip()

    def prompts(self) -> list[str]:
        """What arrived as the user's prompt (Gemini puts a <session_context> block before the first one)."""
        return [
            r["last_user_text"].rpartition("</session_context>\n")[2]
            for r in self.mock.model_requests()
            if r.get("kind") == "stream"
        ]

    def close(self) -> None:
        self.g.stop()
        self.mock.stop()


@pytest.fixture
def gemini(tmp_path, agent_bin):
    rig = GeminiRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def test_a_delivered_turn_goes_active_then_idle(gemini):
    gemini.wait_state("idle", timeout=20)  # SessionStart's stamp, with the node pid
    assert gemini.g.info()["pane_current_command"] == "node"
    gemini.mock.set_mode("slow", delay=3)
    entry = gemini.add("say hello")
    assert gemini.tick() == {entry: "delivered"}
    gemini.wait_state("active", timeout=10)
    gemini.wait_state("idle", timeout=30)
    assert gemini.prompts() == ["say hello"]


def test_a_humans_draft_is_left_alone(gemini):
    gemini.wait_state("idle", timeout=20)
    draft = "a draft a human typed but did not send"
    gemini.fire_at_a_draft(draft)
    assert draft in gemini.g.capture()
    assert gemini.prompts() == []


def test_the_quota_dialog_fires_no_hook_and_the_screen_reports_the_limit(gemini):
    gemini.wait_state("idle", timeout=20)
    gemini.mock.set_mode("error429")
    first = gemini.add("work on the task")
    assert gemini.tick() == {first: "delivered"}
    gemini.g.wait_for(lambda screen: "Usage limit reached" in screen, timeout=30)
    assert gemini.state().split(":")[0] == "active"  # no hook fired
    gemini.rk("cron", "rm", first)
    ping = gemini.add("1")  # "1" would answer the dialog ("Keep trying")
    decided = gemini.tick(now=int(time.time()) + 30)  # past the staleness bound: rk looks
    assert decided == {ping: "skipped-limited"}
    assert gemini.state().split(":")[0] == "limited"
    assert "Usage limit reached" in gemini.g.capture()
    assert gemini.prompts() == ["work on the task"]

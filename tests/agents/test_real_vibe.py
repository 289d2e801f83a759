"""rk against the real Mistral Vibe 3.0.2 (its own Python >= 3.12 venv), offline against rk's
OpenAI chat-completions mock (tests/agents/vibe_launch.py).

Vibe's hooks (`rk agent setup vibe`, a block in `$VIBE_HOME/hooks.toml`) report only a turn's
end (`post_agent`) and the tools around it (`pre_tool`, `post_tool`): a turn's start, its
permission dialogs, an Esc and an error are read from the screen — a tick looks at an idle
Vibe pane, and the watch of `rk agent await` at an active one. `pane_current_command` is
`vibe-rs`, the native TUI, whose child `vibe-app-server` runs the hooks.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from harness import SEEN_WITHOUT_A_TICK

from agents.rkclient import listed
from agents.session_rig import SessionRig
from agents.vibe_launch import BUSY_RE, VIBE_VERSION, VibeSession, composer, ensure_vibe

pytestmark = pytest.mark.agents

DRAFT = "a draft a human typed but did not send"


class VibeRig(SessionRig):
    """The real Vibe with rk's hooks (the real `rk agent setup vibe`, beside a logging hook for
    each event), and rk pointed at its tmux server."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.state_dir = root / "rk-state"
        self.v = self.session = VibeSession(
            root=root / "vibe", env={"RK_STATE_DIR": str(self.state_dir)}, bin_dir=bin_dir
        )
        self.launch("vibe", {"HOME": str(self.v.home), "VIBE_HOME": str(self.v.vibe_home)}, self.v.wait_ready)
        self.pane = self.v.pane

    def prompts(self) -> list[str]:
        """The prompts the model was asked (one per turn; a tool's result is no prompt, and
        Vibe's side request that titles the session quotes the turn as `user: …`)."""
        asked = (r["prompt"] for r in self.v.requests() if r.get("kind") in ("reply", "tool", "error"))
        return [p for p in asked if not p.startswith("user: ")]


@pytest.fixture(scope="session")
def vibe_bin() -> Path:
    return ensure_vibe()


@pytest.fixture
def vibe(tmp_path, vibe_bin):
    rig = VibeRig(tmp_path, vibe_bin)
    yield rig
    rig.close()


def deliver(v: VibeRig, prompt: str) -> str:
    entry = v.add(prompt)
    assert v.tick() == {entry: "delivered"}, v.v.capture()
    return entry


def look_until(v: VibeRig, state: str, timeout: float = 10.0) -> None:
    """Ticks (each looks at the idle Vibe pane its entry targets) until the pane is `state`:
    a tick in the same second as the delivery's own look leaves the pane alone."""
    deadline = time.monotonic() + timeout
    while v.state().split(":")[0] != state:
        unread = v.v.tmux("show-options", "-pqv", "-t", v.pane, "@rk_pane_unread")
        assert time.monotonic() < deadline, (v.state(), unread, v.v.capture())
        assert v.tick() == {}
        time.sleep(0.5)


def at_rest(screen: str) -> bool:
    return composer(screen) is not None and not BUSY_RE.search(screen)


def test_states_through_a_turn_and_an_error(vibe):
    """A delivered turn is `active` from the screen (a tick's
    look) and idle from post_agent (turn end ok); a turn that fails ends idle all the same.
    (Vibe 3.0.2 in its default mode runs the mock's bash call with no dialog, and fires no
    pre_tool or post_tool for it.)"""
    v = vibe
    assert v.v.info()["pane_current_command"] == "vibe-rs"
    row = listed(v)
    assert (row["program"], row["kind"]) == ("vibe", "agent"), row  # vibe-rs, execed by the `vibe` script

    entry = deliver(v, "say hello mock:slow=6")
    v.v.wait_for(BUSY_RE.search, 20)
    look_until(v, "active")  # the ticks' looks (the entry, not due again, makes the pane watched)
    v.rk("cron", "rm", entry)
    hook = v.v.wait_hook("post_agent", timeout=60)
    v.wait_state("idle", timeout=10)
    assert v.turn_end() == "ok"
    assert hook["payload"]["session_id"] in v.v.tmux("show-options", "-pqv", "-t", v.pane, "@rk_pane_agent_session")

    entry = deliver(v, "this fails mock:status=500")
    v.rk("cron", "rm", entry)
    v.v.wait_for(lambda s: at_rest(s) and "500" in s.split("mock:status=500")[-1], 90)
    look_until(v, "idle")


def test_esc_is_seen_by_rk_agent_await_with_no_ticker(vibe):
    """Esc ends the turn within a second for `rk agent await` with no ticker (Vibe 3.0.2's TUI
    fires post_agent for it; the await's watch reads the screen too)."""
    v = vibe
    latencies = []
    for attempt in range(2):
        entry = deliver(v, f"take your time {attempt} mock:slow=60")
        v.v.wait_for(BUSY_RE.search, 20)
        look_until(v, "active")
        v.rk("cron", "rm", entry)
        # the watch starts on an `active` at least WATCH_AFTER seconds old
        latencies.append(v.await_idle_after(v.v.esc, watch_after=2.5)[1])
        v.v.wait_for(lambda s: at_rest(s) and "Interrupted" in s, 10)
    print(f"\nVibe Esc -> rk agent await returned: {', '.join(f'{x:.2f}' for x in latencies)} s")
    assert max(latencies) < SEEN_WITHOUT_A_TICK, latencies


def test_a_draft_in_the_composer_is_left_alone(vibe):
    v = vibe
    v.fire_at_a_draft(DRAFT)
    assert composer(v.v.capture()) == DRAFT
    assert v.prompts() == []


PAYLOADS = [
    "three lines\nof one prompt\nsubmitted once",
    "ünïcødé ✓ — 日本語 and émoji 🦊",
    "-starts with a dash",
    "#{pane_id} stays literal; \"double\" and 'single' quotes, $HOME, a `backtick` & 100% done",
]


def test_a_scheduled_fire_is_delivered_once_byte_exact(vibe):
    v = vibe
    for payload in PAYLOADS:
        t = time.time()
        entry = deliver(v, payload.replace("{", "{{").replace("}", "}}"))
        v.v.wait_hook("post_agent", since=t, timeout=60)
        v.wait_state("idle", timeout=10)
        v.rk("cron", "rm", entry)
    assert v.prompts() == PAYLOADS
    assert v.tick() == {}  # nothing left to fire, nothing typed twice
    assert v.prompts() == PAYLOADS


def test_exit_ends_the_session(vibe):
    v = vibe
    v.v.type("/exit")
    v.v.wait_for("/exit  Exit the application", 10)  # the composer's mark turns `/` in command mode
    time.sleep(0.3)
    v.v.enter()
    deadline = time.monotonic() + 30
    while not v.v.info()["dead"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert v.v.info()["dead"], v.v.capture()
    assert listed(v)["kind"] != "agent"


def test_doctor_names_the_tested_version(vibe, vibe_bin):
    checks = vibe.doctor_checks(vibe_bin, HOME=str(vibe.v.home), VIBE_HOME=str(vibe.v.vibe_home))
    assert checks["vibe version"]["level"] == "ok", checks["vibe version"]
    assert checks["vibe version"]["detail"].startswith(VIBE_VERSION)
    assert checks["vibe hooks"]["level"] == "ok", checks["vibe hooks"]

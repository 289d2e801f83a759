"""Quiet heartbeats with the real Claude Code, Codex and Gemini CLI, offline: an entry
`--every 1m --only-if-changed` whose agent has answered and sits at rest skips 12 of
12 fires, and the fire after a human's turn goes.

The user here has a Stop hook of their own that takes SLOW_HOOK seconds (a sound, a
linter), as on a loaded machine rk's own hook does: the CLI then draws the end of its
turn (`running stop hooks… 1/2`, `esc to interrupt`, Gemini's `Executing Hooks`) for
that long after rk's hook has said `idle`. The ticks are run as the ticker runs them:
one the moment the hook says `idle` (its nudge), then one every RECHECK_AFTER while the
mark is put off (the rechecks the tick asks for), then the fires, on rk's fake clock a
minute apart. Before the mark waited for a settled pane, the nudged tick marked the
turn's end frames and the fires went: 1, 0 and 0 of 12 skipped on Claude, Codex and
Gemini (here rk's clock runs ahead of the hooks', so a fire that goes is never marked
and every later one goes too; with the ticker, each such fire is a model turn).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agents.conftest import Rig
from agents.test_real_gemini import GeminiRig
from rk.core.pane.recheck import RECHECK_AFTER

pytestmark = pytest.mark.agents

#: Seconds the user's own Stop hook takes.
SLOW_HOOK = 3
#: The fires with nothing new (the spec: at least 11 of 12 skipped).
FIRES = 12
#: Real seconds between two fires (each a minute apart on rk's clock): the fires see the
#: frames the CLI draws in the seconds after its turn (the slow hook's end, a notice).
FIRE_GAP = 1.0
#: The user's own hook for each CLI's end of turn.
STOP_EVENT = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent"}


def user_hook(event: str) -> dict:
    """A hooks block of the user's own, after rk's: it sleeps SLOW_HOOK seconds."""
    return {event: [{"hooks": [{"type": "command", "command": f"sleep {SLOW_HOOK}"}]}]}


class SlowStopRig(Rig):
    """Claude Code or Codex, with the user's slow Stop hook beside rk's."""

    def __init__(self, agent: str, root: Path, bin_dir: Path, **kw) -> None:
        super().__init__(agent, root, bin_dir, allow=("user's slow Stop hook",), **kw)

    def _allow(self, rules: tuple[str, ...]) -> None:  # runs after rk's setup, before the launch
        path = self.run.home / (".claude/settings.json" if self.agent == "claude" else ".codex/hooks.json")
        settings = json.loads(path.read_text())
        settings["hooks"][STOP_EVENT[self.agent]] += user_hook(STOP_EVENT[self.agent])[STOP_EVENT[self.agent]]
        path.write_text(json.dumps(settings, indent=1))


def slow_gemini(root: Path, bin_dir: Path) -> GeminiRig:
    """Gemini CLI with the user's slow AfterAgent hook (rk's setup adds its own to the list)."""
    return GeminiRig(root, bin_dir, settings_extra={"hooks": user_hook("AfterAgent")})


def turn_end(option: str) -> int:
    return int(option.partition(":")[2] or 0)


def mark_of(rig, entry: str) -> dict | None:
    path = rig.client().state_dir / f"{rig.client().server}.unchanged.json"
    return json.loads(path.read_text())["entries"].get(entry) if path.exists() else None


def nudged_ticks(rig, option, entry: str, delivered: int, timeout: float = 30.0) -> tuple[int, float]:
    """As the ticker does after a Stop hook's nudge: a tick the moment the hook says the
    turn ended, then one every RECHECK_AFTER until the mark of `delivered` is taken.
    The number of ticks it took, and the seconds from the turn's end to the mark."""
    deadline = time.monotonic() + timeout
    while turn_end(option("@rk_pane_turn_end")) < delivered:
        assert time.monotonic() < deadline, "the turn did not end"
        time.sleep(0.02)
    ticks, ended = 0, time.monotonic()
    while (mark_of(rig, entry) or {}).get("delivered") != delivered:
        assert time.monotonic() < deadline, "no mark taken"
        rig.tick()
        ticks += 1
        time.sleep(RECHECK_AFTER)
    return ticks, round(time.monotonic() - ended, 1)


def quiet_fires(rig, option, human_turn) -> dict:
    """One delivery, its answer marked, FIRES fires with nothing new, a human's turn, one fire."""
    entry = rig.add("anything new?", "--every", "1m", "--only-if-changed")
    t = int(time.time())
    assert rig.tick(t) == {entry: "delivered"}  # the first fire always goes
    mark = nudged_ticks(rig, option, entry, t)
    outcomes = []
    for i in range(1, FIRES + 1):  # spread over what the CLI draws after its turn (a notice at +8 s)
        outcomes.append(rig.tick(t + 60 * i + 5).get(entry, ""))
        time.sleep(FIRE_GAP)
    human_turn()
    after = rig.tick(t + 60 * (FIRES + 1) + 5).get(entry, "")
    return {"mark (ticks, s)": mark, "outcomes": outcomes, "after_a_human_turn": after}


def arrived(prompts, count: int = 3, timeout: float = 30.0) -> list[str]:
    """The prompts the mock received, once `count` have (or the timeout)."""
    deadline = time.monotonic() + timeout
    while len(prompts()) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return prompts()


def check(agent: str, found: dict) -> None:
    print(f"{agent}: {found}")
    skipped = found["outcomes"].count("skipped-unchanged")
    assert skipped >= FIRES - 1, found
    assert found["after_a_human_turn"] == "delivered", found


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_an_agent_at_rest_is_not_prompted_again_until_a_human_turn(tmp_path, agent_bin, agent):
    rig = SlowStopRig(agent, tmp_path / agent, agent_bin)
    try:
        rig.run.mock.set_mode("ok")
        if agent == "claude":  # Codex's SessionStart fires at the first prompt
            rig.wait_state("idle", timeout=20)

        def human_turn() -> None:
            since = int(time.time())
            rig.run.submit("a human's question")
            deadline = time.monotonic() + 30
            while turn_end(rig.option("@rk_pane_turn_end")) < since or rig.state() != "idle":
                assert time.monotonic() < deadline, rig.run.capture()
                time.sleep(0.05)

        check(agent, quiet_fires(rig, rig.option, human_turn))
        assert arrived(rig.prompts) == ["anything new?", "a human's question", "anything new?"]
    finally:
        rig.close()


def test_gemini_at_rest_is_not_prompted_again_until_a_human_turn(tmp_path, agent_bin):
    rig = slow_gemini(tmp_path / "gemini", agent_bin)
    try:
        rig.wait_state("idle", timeout=30)
        rig.mock.set_mode("ok", delay=1)

        def option(name: str) -> str:
            return rig.g.tmux("show-options", "-pqv", "-t", rig.pane, name).strip()

        def human_turn() -> None:
            since = int(time.time())
            rig.g.submit("a human's question")
            deadline = time.monotonic() + 30
            while turn_end(option("@rk_pane_turn_end")) < since or rig.state().split(":")[0] != "idle":
                assert time.monotonic() < deadline, rig.g.capture()
                time.sleep(0.05)

        check("gemini", quiet_fires(rig, option, human_turn))
        assert arrived(rig.prompts) == ["anything new?", "a human's question", "anything new?"]
    finally:
        rig.close()

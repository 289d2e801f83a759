"""rk's OpenCode plugin against the real OpenCode 1.18, offline against a local mock.

OpenCode ends every turn with `session.idle` (errors and interrupts too), asks
permission with `permission.asked` and hears the answer in
`permission.replied`; a turn that ended on a 429 is `limited` at its
`session.idle` (rk's plugin remembers the `session.error`). The plugin is the
one `rk agent setup opencode` writes, calling the installed rk.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from agents.opencode_launch import OpenCodeRun, classify
from agents.rkclient import ClientRig, RkClient, wait_option_state
from rk.agent.setup import find_rk, opencode_plugin

pytestmark = pytest.mark.agents

REPO = Path(__file__).resolve().parent.parent.parent


class OpenCodeRig(ClientRig):
    add_flags = ("--every", "1m")  # created a minute ago: due now

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.state_dir = root / "rk-state"
        rk = find_rk(str(Path(sys.executable).parent / "rk"))
        self.oc = OpenCodeRun(
            root=str(root / "oc"),
            binary=str(bin_dir / "opencode"),
            extra_plugins={"rk.js": opencode_plugin(rk)},
            extra_env={"RK_STATE_DIR": str(self.state_dir)},
        )
        self.oc.start()
        self.oc.wait_screen(lambda s: classify(s) == "idle", timeout=90)
        self.settle()
        self.pane = self.oc.display("#{pane_id}")

    def settle(self, quiet: float = 1.0, timeout: float = 30.0) -> None:
        """Wait until OpenCode has gone `quiet` seconds without an event: its composer is
        drawn while it still loads plugins (`plugin.added`, `catalog.updated` for up to
        half a second after, longer under load), and a first prompt typed then waits for
        that load before anything on screen answers its Enter."""
        end = time.time() + timeout
        while time.time() < end:
            last = max((e["t"] for e in self.oc.events(noisy=True)), default=0.0)
            if time.time() - last >= quiet:
                return
            time.sleep(0.1)
        raise AssertionError(f"OpenCode's events did not settle within {timeout}s")

    def client(self) -> RkClient:
        return RkClient(self.oc.socket, self.pane, self.state_dir)

    def wait_state(self, state: str, timeout: float = 30.0) -> str:
        return wait_option_state(self.oc.rk_state, state, timeout, self.oc.capture)

    def close(self) -> None:
        self.oc.stop()


@pytest.fixture
def opencode(tmp_path, agent_bin):
    rig = OpenCodeRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def test_a_turn_a_limited_turn_and_a_permission_through_rks_plugin(opencode):
    """One OpenCode session (it starts slowly): a delivered turn (active, idle),
    a 429 turn (limited, not idle, though OpenCode says session.idle), and a
    permission request (waiting at once, active after the answer, then idle)."""
    oc = opencode
    first = oc.add("say hello mock:slow=2")
    assert oc.tick() == {first: "delivered"}
    oc.wait_state("active", timeout=30)
    oc.wait_state("idle", timeout=30)
    oc.rk("cron", "rm", first)

    limited = oc.add("rate limit please mock:status=429 mock:retry-after-ms=200")
    assert oc.tick() == {limited: "delivered"}
    oc.oc.wait_event("session.error", timeout=60)
    oc.wait_state("limited", timeout=15)
    ping = oc.add("status?")
    assert oc.tick()[ping] == "skipped-limited"
    oc.rk("cron", "rm", limited)
    oc.rk("cron", "rm", ping)

    asking = oc.add("read it mock:read=/etc/hostname")
    assert oc.tick() == {asking: "skipped-limited"}  # still limited
    # no reset printed: rk tries again once LIMIT_RETRY (15 min) has passed and the screen is at rest
    assert oc.tick(now=int(time.time()) + 16 * 60) == {asking: "delivered"}
    oc.oc.wait_event("permission.asked", timeout=60)
    oc.wait_state("waiting", timeout=5)
    oc.rk("cron", "rm", asking)
    oc.oc.wait_screen(lambda s: classify(s) == "dialog", timeout=15)  # the event comes before the frame
    oc.oc.send_keys("Enter")  # the human allows it once
    oc.oc.wait_event("permission.replied", timeout=15)
    oc.wait_state("idle", timeout=60)


def test_a_humans_draft_is_left_alone(opencode):
    oc = opencode
    oc.oc.type_text("half-typed draft")
    oc.oc.wait_screen(lambda s: "half-typed draft" in s, timeout=10)
    now = oc.add("status?")
    skip = oc.add("status?", "--deliver", "skip-if-busy")
    assert oc.tick() == {now: "held-busy: draft", skip: "skipped-busy: draft"}
    assert "half-typed draft" in oc.oc.capture()

"""rk's Kilo plugin (OpenCode's, reporting as `--agent kilo`) against the real Kilo Code CLI
7.7.7, offline against the OpenCode mock (tests/agents/kilo_launch.py).

Kilo sends OpenCode 1.18's events: `session.status` busy, `session.idle` at every turn end,
`session.error` before it (an APIError with `statusCode`, MessageAbortedError for Esc Esc),
`permission.asked` / `permission.replied`. The plugin is the one `rk agent setup kilo` writes,
calling the installed rk.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness import SEEN_WITHOUT_A_TICK

from agents.kilo_launch import KiloRun, classify
from agents.rkclient import listed
from agents.test_real_opencode import OpenCodeRig
from agents.test_real_opencode_turns import journal, press_until_aborted, wait_turn_end
from rk.agent.setup import find_rk
from rk.agent.setup.kilo import kilo_plugin

pytestmark = pytest.mark.agents

REPO = Path(__file__).resolve().parent.parent.parent

#: A scheduled prompt with what a shell or a TUI could mangle: typed, never run.
PAYLOAD = 'Fire at 12:00 — "quoted", $HOME, `ticks`, back\\slash & 100% done mock:slow=2'


class KiloRig(OpenCodeRig):
    """OpenCode's rig (settle, wait_state, the rk client) on a Kilo TUI with rk's Kilo plugin."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.state_dir = root / "rk-state"
        rk = find_rk(str(Path(sys.executable).parent / "rk"))
        self.oc = KiloRun(
            root=str(root / "kilo"),
            binary=str(bin_dir / "kilo"),
            extra_plugins={"rk.js": kilo_plugin(rk)},
            extra_env={"RK_STATE_DIR": str(self.state_dir)},
        )
        self.oc.start()
        self.oc.wait_screen(lambda s: classify(s) == "idle", timeout=120)
        self.settle()
        self.pane = self.oc.display("#{pane_id}")


@pytest.fixture
def kilo(tmp_path, agent_bin):
    rig = KiloRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def deliver(k: KiloRig, prompt: str) -> tuple[float, int]:
    started, before = time.time(), len(journal(k))
    entry = k.add(prompt)
    assert k.tick() == {entry: "delivered"}
    k.rk("cron", "rm", entry)
    return started, before


def texts(k: KiloRig) -> dict[str, str]:
    """Every text part of the session as Kilo's events last showed it, by part id (the
    mock keeps only a prompt's tail, and Kilo appends its `<environment_details>` there)."""
    parts = (e["p"].get("part") or {} for e in k.oc.events(noisy=True) if e.get("type") == "message.part.updated")
    return {p["id"]: p.get("text", "") for p in parts if p.get("type") == "text" and "id" in p}


def test_a_fire_a_dialog_esc_and_a_limit_through_rks_plugin(kilo):
    """One Kilo session: a scheduled fire delivered once, byte-exact (active, then idle, ok);
    a permission dialog (waiting at once, idle after the human allows it); Esc Esc while the
    reply streams (interrupted, and `rk agent await` with no ticker returns within a second);
    a 400 turn (failed); a 429 turn (limited, though Kilo says session.idle)."""
    k = kilo
    row = listed(k)
    assert row["kind"] == "agent", row  # npm's node launcher and its native .kilo, before any hook
    started, before = deliver(k, PAYLOAD)
    k.wait_state("active", timeout=30)
    wait_turn_end(k, "ok", before, timeout=60)
    k.wait_state("idle", timeout=10)
    assert list(texts(k).values()).count(PAYLOAD) == 1, texts(k)
    row = listed(k)
    assert (row["program"], row["kind"], row["turn_end"]) == ("kilo", "agent", "ok"), row
    assert k.tick() == {}  # nothing left to fire

    started, before = deliver(k, "read it mock:read=/etc/hostname")
    k.oc.wait_event("permission.asked", after=started, timeout=60)
    k.wait_state("waiting", timeout=5)
    k.oc.wait_screen(lambda s: classify(s) == "dialog", timeout=15)  # the event comes before the frame
    k.oc.send_keys("Enter")  # the human allows it once
    k.oc.wait_event("permission.replied", after=started, timeout=15)
    wait_turn_end(k, "ok", before, timeout=60)

    started, before = deliver(k, "stream slowly mock:slow=120")
    k.wait_state("active", timeout=30)
    k.oc.wait_event(
        "message.part.updated",
        after=started,
        timeout=30,
        pred=lambda e: (e["p"].get("part") or {}).get("type") == "text",
    )
    waiter = subprocess.Popen(
        [sys.executable, "-m", "rk", "-L", k.oc.socket, "agent", "await", "--pane", k.pane]
        + ["--until", "idle,interrupted", "--after-active", "--timeout", "60s", "--json"],
        env=k.client().env(),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # a margin for the waiter to start under load (nothing to poll: --after-active makes it
    # wait for an end only once it has seen the turn running, so a late start fails, never passes)
    time.sleep(3.0)
    press_until_aborted(k, "kilo", started)
    err = k.oc.wait_event("session.error", after=started, timeout=15)
    assert err["p"]["error"]["name"] == "MessageAbortedError"
    out, errs = waiter.communicate(timeout=70)
    returned = time.time()
    assert waiter.returncode == 0, (out, errs)
    assert returned - err["t"] < SEEN_WITHOUT_A_TICK, f"await returned {returned - err['t']:.2f} s after Kilo's abort"
    wait_turn_end(k, "interrupted", before)
    print(f"\nKilo Esc Esc: rk agent await returned {returned - err['t']:.2f} s after the abort event")

    started, before = deliver(k, "bad request mock:status=400")  # an error Kilo does not retry
    err = k.oc.wait_event("session.error", after=started, timeout=60)
    assert err["p"]["error"]["data"]["statusCode"] == 400
    wait_turn_end(k, "failed", before)

    started, before = deliver(k, "rate limit please mock:status=429 mock:retry-after-ms=200")
    k.oc.wait_event("session.error", after=started, timeout=60)
    k.wait_state("limited", timeout=15)
    ping = k.add("status?")
    assert k.tick()[ping] == "skipped-limited"


def test_a_humans_draft_is_left_alone(kilo):
    k = kilo
    k.oc.type_text("half-typed draft")
    k.oc.wait_screen(lambda s: "half-typed draft" in s, timeout=10)
    now = k.add("status?")
    skip = k.add("status?", "--deliver", "skip-if-busy")
    assert k.tick() == {now: "held-busy: draft", skip: "skipped-busy: draft"}
    assert "half-typed draft" in k.oc.capture()
    assert json.loads(k.rk("agent", "list", "--json").stdout)["result"]

"""rk's hooks against the real GitHub Copilot CLI 1.0.102, offline against a local mock.

The hooks are the file `rk agent setup copilot` writes ($COPILOT_HOME/hooks/rk.json),
calling the installed rk. Copilot ends a normal turn with agentStop (idle) and says a
dialog is up with notification(permission_prompt) (waiting). A failed turn fires only
errorOccurred, and Esc Esc nothing: rk leaves the pane `active` and its screen look
reads the end (a `✗` entry, `Operation cancelled by user`, the idle footer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from harness import SEEN_WITHOUT_A_TICK

from agents.copilot_launch import CopilotRun, at_rest
from agents.rkclient import ClientRig, RkClient, listed, wait_option_state
from agents.test_real_agents import PAYLOADS
from rk.agent.setup import find_rk
from rk.agent.setup.copilot import HOOKS as COPILOT_HOOKS
from rk.agent.setup.hooks import install_hooks
from rk.core.pane.screen.resets import MINUTE, RESET_MARGIN

pytestmark = pytest.mark.agents


class CopilotRig(ClientRig):
    add_flags = ("--every", "1m")  # created a minute ago: due now

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.state_dir = root / "rk-state"
        rk = find_rk(str(Path(sys.executable).parent / "rk"))
        self.cp = CopilotRun(
            root=str(root / "cp"),
            binary=str(bin_dir / "copilot"),
            hooks={"rk.json": install_hooks({}, "copilot", rk)},
            extra_env={"RK_STATE_DIR": str(self.state_dir)},
        )
        self.cp.start()
        self.cp.wait_screen(at_rest, timeout=120)
        time.sleep(1.0)  # keys typed as the composer first shows are lost
        self.pane = self.cp.display("#{pane_id}")

    def client(self) -> RkClient:
        return RkClient(self.cp.socket, self.pane, self.state_dir)

    def state(self) -> str:
        return self.cp.rk_state().split(":")[0]

    def wait_state(self, state: str, timeout: float = 30.0) -> str:
        return wait_option_state(self.cp.rk_state, state, timeout, self.cp.capture)

    def prompts(self) -> list[str]:
        """What Copilot's userPromptSubmitted hook was given, in order."""
        return [r["payload"]["prompt"] for r in self.cp.hook_events() if r["event"] == "userPromptSubmitted"]

    def settle(self, after: float, timeout: float = 30.0) -> None:
        """Wait until rk's own hook runs for Copilot's hooks since `after` have written
        their journal lines: the recorder's line says Copilot fired a hook, not that rk's
        process for it (a Python start-up, seconds on a loaded machine) is done. A late
        sessionStart stamp would otherwise write `idle` over what a tick read after it."""
        hooked = {event for event, matcher, _ in COPILOT_HOOKS if matcher is None}
        journal = next(self.state_dir.glob("*.events"), None)
        deadline = time.monotonic() + timeout
        while True:
            fired = sum(1 for r in self.cp.hook_events() if r["event"] in hooked and r["t"] >= after)
            lines = journal.read_text().splitlines() if journal else []
            written = sum(1 for line in lines if '"source":"hook"' in line and json.loads(line)["ts"] >= int(after))
            if written >= fired:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"rk's hooks wrote {written} of {fired} lines since {after}")
            time.sleep(0.05)
            journal = journal or next(self.state_dir.glob("*.events"), None)

    def fire_after_look(self) -> str:
        """A due entry ticked 30 s on (the stored `active` is stale, so rk reads the pane's
        screen): `delivered` only if the screen said the turn is over."""
        entry = self.add("status?")
        outcome = self.tick(now=int(time.time()) + 30)[entry]
        self.rk("cron", "rm", entry)
        return outcome

    def close(self) -> None:
        self.cp.stop()


@pytest.fixture
def copilot(tmp_path, agent_bin):
    rig = CopilotRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def test_the_rk_hook_file_is_loaded_as_written(copilot):
    """The nested Claude-style groups rk writes, with a matcher on `notification`."""
    doc = json.loads((copilot.cp.copilot_home / "hooks" / "rk.json").read_text())
    assert set(doc["hooks"]) == {
        "sessionStart",
        "userPromptSubmitted",
        "preToolUse",
        "postToolUse",
        "postToolUseFailure",
        "notification",
        "agentStop",
    }
    t = copilot.cp.send_prompt("say hello")
    copilot.cp.wait_hook("agentStop", after=t)
    copilot.wait_state("idle", timeout=10)
    row = listed(copilot)
    pid = int(copilot.cp.rk_state().split(":")[2])
    assert (row["kind"], row["program"], row["state"]) == ("agent", "copilot", "idle"), row
    assert pid == row["process_pid"], (pid, row)  # the hook found the native binary (comm MainThread)
    session = copilot.cp.tmux("show-options", "-p", "-v", "-q", "-t", "cp", "@rk_pane_agent_session").strip()
    assert session.startswith("copilot:") and len(session) > len("copilot:")


def test_a_turn_a_dialog_an_error_and_esc(copilot):
    """States through a delivered turn (active, then idle from agentStop), a permission
    dialog (waiting from the notification hook, idle after the approval), a failed turn
    and an Esc Esc (no hook: the screen look ends them)."""
    first = copilot.add("say hello mock:slow=3")
    assert copilot.tick() == {first: "delivered"}
    copilot.wait_state("active", timeout=15)
    copilot.wait_state("idle", timeout=30)
    copilot.rk("cron", "rm", first)

    made = copilot.cp.work / "made"
    asking = copilot.add(f"run it mock:bash=touch {made}")
    assert copilot.tick() == {asking: "delivered"}
    copilot.rk("cron", "rm", asking)
    copilot.cp.wait_hook("notification", timeout=30)
    copilot.wait_state("waiting", timeout=5)
    assert not made.exists()
    copilot.cp.send_keys("Enter")  # "1. Yes" is selected
    copilot.wait_state("idle", timeout=30)
    assert made.exists()

    t = copilot.cp.send_prompt("fail please mock:status=400")
    copilot.cp.wait_hook("errorOccurred", after=t)
    copilot.cp.wait_screen(lambda s: "✗ 400 mock error 400" in s and at_rest(s), timeout=15)
    copilot.settle(t)
    assert copilot.state() == "active"  # no hook ended it
    assert copilot.fire_after_look() == "delivered"
    copilot.wait_state("idle", timeout=30)

    t = copilot.cp.send_prompt("long one mock:slow=60")
    copilot.cp.wait_screen(lambda s: "esc esc interrupt" in s, timeout=20)
    copilot.wait_state("active", timeout=5)
    pressed = copilot.cp.esc_esc()
    copilot.cp.wait_screen(lambda s: "Operation cancelled by user" in s and at_rest(s), timeout=10)
    drawn = time.time() - pressed
    print(f"Esc Esc -> cancelled and at rest on screen in {drawn:.2f}s")
    assert drawn < SEEN_WITHOUT_A_TICK
    assert copilot.state() == "active"  # Copilot fires no hook for Esc
    assert copilot.fire_after_look() == "delivered"
    copilot.wait_state("idle", timeout=30)


def test_a_limit_is_read_from_the_screen_with_its_reset(copilot):
    """GitHub's rate limit (`✗ 400 Sorry, you've hit a rate limit … try again in 2 hours`):
    limited, the reset two hours on, and a fire meanwhile skipped."""
    t = copilot.cp.send_prompt("limit please mock:limit=400")
    copilot.cp.wait_hook("errorOccurred", after=t)
    copilot.cp.wait_screen(lambda s: "try again in 2 hours" in s and at_rest(s), timeout=15)
    copilot.settle(t)
    ping = copilot.add("status?")
    now = int(time.time()) + 30
    outcome = copilot.tick(now=now)[ping]
    assert outcome.startswith("skipped-limited: resets "), outcome
    reset = int(datetime.fromisoformat(outcome.rsplit(" ", 1)[1].replace("Z", "+00:00")).timestamp())
    # a delay in hours is known to the minute: over at that minute's end, plus the margin
    assert now + 7200 - 5 <= reset <= now + 7200 + 5 + MINUTE + RESET_MARGIN, (outcome, now)
    assert copilot.state() == "limited"
    assert copilot.prompts() == ["limit please mock:limit=400"]  # nothing typed into the limit


def test_a_humans_draft_is_left_alone_and_a_fire_goes_in_once_byte_exact(copilot):
    copilot.cp.type_text("half-typed draft")
    copilot.cp.wait_screen(lambda s: "❯ half-typed draft" in s, timeout=10)
    now = copilot.add("status?")
    skip = copilot.add("status?", "--deliver", "skip-if-busy")
    assert copilot.tick() == {now: "held-busy: draft", skip: "skipped-busy: draft"}
    assert "❯ half-typed draft" in copilot.cp.capture()
    assert copilot.prompts() == []
    copilot.rk("cron", "rm", now)
    copilot.rk("cron", "rm", skip)
    copilot.cp.send_keys("C-u")
    copilot.cp.wait_screen(lambda s: "half-typed draft" not in s and at_rest(s), timeout=10)

    for payload in PAYLOADS:
        stored = payload.replace("{", "{{").replace("}", "}}")  # literal braces: not placeholders
        entry = copilot.add(stored)
        assert copilot.tick() == {entry: "delivered"}, payload[:40]
        copilot.wait_state("idle", timeout=30)
        assert entry not in copilot.tick()  # not due again for a minute: delivered once
        copilot.rk("cron", "rm", entry)
    assert copilot.prompts() == PAYLOADS


def test_doctors_version_line_and_exit(copilot, agent_bin):
    """`rk doctor` reads 1.0.102 from the package beside `copilot` on PATH (ok: tested);
    `/exit` ends the session (sessionEnd, once per session) and the agent's processes."""
    env = {**copilot.client().env(), "PATH": f"{agent_bin}:{os.environ['PATH']}"}
    out = subprocess.run(
        [sys.executable, "-m", "rk", "-L", copilot.cp.socket, "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    checks = {c["name"]: c for c in json.loads(out.stdout)["result"]}
    line = checks["copilot version"]
    assert (line["level"], line["detail"]) == ("ok", f"1.0.102 ({agent_bin / 'copilot'})"), line

    t = copilot.cp.send_prompt("say hello")
    copilot.cp.wait_hook("agentStop", after=t)
    assert [r["event"] for r in copilot.cp.hook_events()].count("sessionEnd") == 0  # not per turn
    pid = copilot.cp.pane_pid
    t = copilot.cp.send_prompt("/exit")
    end = copilot.cp.wait_hook("sessionEnd", after=t, timeout=20)
    assert end["payload"]["reason"] == "user_exit"
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists()


def test_a_stalled_reply_is_interrupted_once_after_a_minute(copilot):
    """`--turn-timeout 1m --on-timeout interrupt`: Copilot's Esc Esc, `key_gap` apart inside
    its 500 ms window, ends the stalled turn once; no hook says so, the screen does."""
    from agents.timeouts import interrupted_once, ticks_once_only
    from rk.store import delivery_log as logfile

    timeout = 60
    entry = copilot.add("answer slowly mock:slow=180", "--turn-timeout", "1m", "--on-timeout", "interrupt")
    assert copilot.tick() == {entry: "delivered"}
    copilot.rk("cron", "edit", entry, "--every", "1h")  # no second fire while we watch
    log = copilot.state_dir / f"{copilot.cp.socket}.log"
    delivered = logfile.read_live(log)[0].ts
    copilot.wait_state("active", timeout=15)
    lines, timed_out, _ = interrupted_once(copilot.tick, log, delivered, timeout, copilot.cp.capture)
    copilot.cp.wait_screen(lambda s: "Operation cancelled by user" in s and at_rest(s), timeout=10)
    copilot.wait_state("idle", timeout=10)
    ticks_once_only(copilot.tick, log)
    print(f"\ncopilot: timed out {timed_out.ts - delivered} s after the delivery; {lines[-1].outcome}")

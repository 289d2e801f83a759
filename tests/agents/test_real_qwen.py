"""rk against the real Qwen Code 0.24.4 (on node 22), offline against rk's Anthropic mock.

Qwen's hooks are Claude's shape, and its idle_prompt Notification comes at once on every
return to idle, after an Esc too (which fires no Stop): so every turn end is seen from a
hook, with no ticker and no look at the screen. A 429 ends the turn with StopFailure
`rate_limit` (the mock sends it mid-stream: an HTTP 429 is retried for minutes first).
`pane_current_command` is `node`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from harness import SEEN_WITHOUT_A_TICK

from agents.qwen_launch import BUSY_RE, QWEN_VERSION, QwenSession, composer, ensure_qwen
from agents.rkclient import listed
from agents.session_rig import SessionRig

pytestmark = pytest.mark.agents

DRAFT = "a draft a human typed but did not send"


class QwenRig(SessionRig):
    """The real Qwen Code with rk's hooks (the real `rk agent setup qwen`) beside a logging hook
    for every event, and rk pointed at its tmux server."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.state_dir = root / "rk-state"
        self.q = self.session = QwenSession(
            root=root / "qwen", env={"RK_STATE_DIR": str(self.state_dir)}, bin_dir=bin_dir
        )
        self.launch("qwen", {"HOME": str(self.q.home)}, self.q.wait_ready)
        self.pane = self.q.pane
        self.mock = self.q.mock

    def prompts(self) -> list[str]:
        return self.mock.prompts()


@pytest.fixture(scope="session")
def qwen_bin() -> Path:
    return ensure_qwen()


@pytest.fixture
def qwen(tmp_path, qwen_bin):
    rig = QwenRig(tmp_path, qwen_bin)
    yield rig
    rig.close()


def test_states_through_a_turn_and_a_dialog_and_its_approval(qwen):
    stamp = qwen.wait_state("idle", timeout=20)  # SessionStart's stamp, with the node pid
    assert qwen.q.info()["pane_current_command"] == "node"
    assert len(stamp.split(":")) == 3
    row = listed(qwen)
    assert row["state"] == "idle" and "qwen" in json.dumps(row), row
    assert qwen.q.tmux("show-options", "-pqv", "-t", qwen.pane, "@rk_pane_agent_session").startswith("qwen:")

    qwen.mock.set_mode("slow", seconds=3)
    entry = qwen.add("say hello")
    assert qwen.tick() == {entry: "delivered"}
    qwen.wait_state("active", timeout=10)
    qwen.wait_state("idle", timeout=30)
    assert qwen.turn_end() == "ok"
    qwen.rk("cron", "rm", entry)

    qwen.mock.set_mode("tool", tool_name="run_shell_command", command="touch made-by-tool.txt")
    entry = qwen.add("create the file")
    assert qwen.tick() == {entry: "delivered"}
    qwen.wait_state("waiting", timeout=30)  # the permission_prompt Notification
    qwen.q.wait_for("Allow execution of: 'touch'\\?", 10)  # the hook fires as the dialog is drawn
    qwen.rk("cron", "rm", entry)
    held = qwen.add("not into a dialog")
    assert qwen.tick() == {held: "held-busy: waiting"}
    t = qwen.q.enter()  # "Yes, allow once"
    qwen.q.wait_hook("PreToolUse", since=t)
    qwen.wait_state("idle", timeout=30)
    assert (qwen.q.work / "made-by-tool.txt").exists()
    assert qwen.prompts() == ["say hello", "create the file"]


ERRORS = [
    pytest.param("error500", {"midstream": True}, "idle", "failed", id="500"),
    pytest.param("error429", {"midstream": True}, "limited", "limited", id="429-midstream"),
    # an HTTP 429 is retried (7 attempts, each after the retry-after it names), then shown
    pytest.param("error429", {"retry_after": 1}, "limited", "limited", id="429"),
]


@pytest.mark.parametrize(("mode", "options", "state", "end"), ERRORS)
def test_an_error_turn_is_reported_at_once(qwen, mode, options, state, end):
    """StopFailure (`server_error`, `rate_limit`) as the red `✕ [API Error: …]` shows; the
    idle_prompt right beside it keeps the limit."""
    qwen.wait_state("idle", timeout=20)
    qwen.mock.set_mode(mode, **options)
    entry = qwen.add("this will fail")
    assert qwen.tick() == {entry: "delivered"}
    qwen.q.wait_hook("StopFailure", timeout=90)
    qwen.q.wait_hook("Notification", kind="idle_prompt", since=qwen.q.hooks()[-1]["t"] - 5)
    qwen.wait_state(state, timeout=10)
    time.sleep(0.5)  # both hooks have run: the state stays
    assert (qwen.state().split(":")[0], qwen.turn_end()) == (state, end)
    if state == "limited":
        qwen.rk("cron", "rm", entry)
        ping = qwen.add("are you there?")
        assert qwen.tick() == {ping: "skipped-limited"}
        assert "rate_limit_error" in qwen.q.capture()
    assert set(qwen.prompts()) == {"this will fail"}  # Qwen retries by itself
    assert len([h for h in qwen.q.hooks() if h["event"] == "UserPromptSubmit"]) == 1  # typed once


def screen_ends(qwen: QwenRig, since: float) -> list[str]:
    """The turn ends rk's screen reads journaled since `since` for the pane (a hook's have
    source `hook`; the idle notice's guarded write journals nothing)."""
    path = qwen.state_dir / f"{qwen.q.socket}.events"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [
        line["end"]
        for line in lines
        if line["pane"] == qwen.pane and line["source"] == "screen" and line["ts"] >= int(since) and line["end"]
    ]


def test_esc_is_seen_from_the_idle_prompt_hook_with_no_ticker(qwen):
    """`rk agent await` returns within a second of an Esc: no Stop, but idle_prompt at once,
    which records the turn it finds still active as interrupted."""
    qwen.wait_state("idle", timeout=20)
    latencies = []
    for attempt in range(3):
        qwen.mock.set_mode("slow", seconds=60)
        entry = qwen.add(f"take your time {attempt}")
        assert qwen.tick() == {entry: "delivered"}
        qwen.wait_state("active", timeout=10)
        qwen.q.wait_for(BUSY_RE.search, 15)
        qwen.rk("cron", "rm", entry)
        pressed, latency = qwen.await_idle_after(qwen.q.esc)
        latencies.append(latency)
        assert not [h for h in qwen.q.hooks(pressed) if h["event"] in ("Stop", "StopFailure")]
        ends = screen_ends(qwen, pressed)
        if ends:  # the await's own watch read the screen at rest before Qwen's idle notice came:
            # a known limit (the screen shows no mark of an Esc), said in the note, so the end is `ok`
            assert ends == ["ok"] and qwen.turn_end() == "ok", ends
            print(f"\nattempt {attempt}: the watch saw the end first (recorded ok)")
        else:
            assert qwen.turn_end() == "interrupted"  # the idle notice found the turn still active
        qwen.q.wait_for(lambda s: composer(s) is not None and not BUSY_RE.search(s), 10)
        qwen.q.keys("C-u")  # Esc before the reply puts the prompt back into the composer
        qwen.q.wait_for(lambda s: composer(s) == "", 10)
    print(f"\nQwen Esc -> rk agent await returned: {', '.join(f'{x:.2f}' for x in latencies)} s")
    assert max(latencies) < SEEN_WITHOUT_A_TICK, latencies


def test_a_draft_in_the_composer_is_left_alone(qwen):
    qwen.wait_state("idle", timeout=20)
    qwen.fire_at_a_draft(DRAFT)
    assert composer(qwen.q.capture()) == DRAFT
    assert qwen.prompts() == []


PAYLOADS = [
    "three lines\nof one prompt\nsubmitted once",
    "ünïcødé ✓ — 日本語 and émoji 🦊",
    "-starts with a dash",
    "#{pane_id} stays literal; \"double\" and 'single' quotes, and a `backtick`",
]


def test_a_scheduled_fire_is_delivered_once_byte_exact(qwen):
    qwen.wait_state("idle", timeout=20)
    qwen.mock.set_mode("ok")
    for payload in PAYLOADS:
        entry = qwen.add(payload.replace("{", "{{").replace("}", "}}"))
        assert qwen.tick() == {entry: "delivered"}, payload[:40]
        qwen.wait_state("idle", timeout=30)
        qwen.rk("cron", "rm", entry)
    assert qwen.prompts() == PAYLOADS
    assert qwen.tick() == {}  # nothing left to fire, nothing typed twice
    assert qwen.prompts() == PAYLOADS


def test_quit_ends_the_session(qwen):
    qwen.wait_state("idle", timeout=20)
    t = qwen.q.type("/quit")
    qwen.q.wait_composer_text("/quit")
    time.sleep(0.3)
    qwen.q.enter()
    qwen.q.wait_hook("SessionEnd", since=t, timeout=20)
    deadline = time.monotonic() + 20
    while not qwen.q.info()["dead"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert qwen.q.info()["dead"]
    assert qwen.state().split(":")[0] == "idle"


def test_doctor_names_the_tested_version(qwen, qwen_bin):
    checks = qwen.doctor_checks(qwen_bin, HOME=str(qwen.q.home))
    assert checks["qwen version"]["level"] == "ok", checks["qwen version"]
    assert checks["qwen version"]["detail"].startswith(QWEN_VERSION)


def test_a_fire_into_a_busy_qwen_steers_the_running_turn(qwen):
    """Typed while Qwen works, Enter steers the running turn (its footer says `Enter to steer`):
    the default delivery goes in and reaches the model within that turn (no UserPromptSubmit of
    its own, one Stop), or in a turn of its own when the first ended as it was typed."""
    qwen.wait_state("idle", timeout=20)
    qwen.mock.set_mode("slow", seconds=6)
    first = qwen.add("the first task")
    assert qwen.tick() == {first: "delivered"}
    qwen.wait_state("active", timeout=10)
    qwen.q.wait_for(BUSY_RE.search, 15)
    qwen.rk("cron", "rm", first)
    qwen.mock.set_mode("ok")
    second = qwen.add("and a second thought")
    assert qwen.tick() == {second: "delivered"}
    qwen.wait_state("idle", timeout=40)
    qwen.q.wait_hook("Stop", since=qwen.mock.requests()[-1]["t"])
    submits = [h["payload"].get("prompt") for h in qwen.q.hooks() if h["event"] == "UserPromptSubmit"]
    stops = [h for h in qwen.q.hooks() if h["event"] == "Stop"]
    print(f"\nbusy fire: UserPromptSubmit {submits}, {len(stops)} Stop(s)")
    reached = [r for r in qwen.mock.requests() if any("and a second thought" in t for t in r["user_texts"])]
    assert reached and qwen.prompts()[0] == "the first task"
    assert submits[0] == "the first task" and len(stops) == len(submits)

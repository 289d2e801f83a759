"""How an OpenCode turn ends, with the real OpenCode 1.18 offline against its mock:
an error it gives up on is `failed`, an abort (Esc Esc, while streaming or while
waiting to retry) and a rejected permission `interrupted`, a 429 `limited`; and a
turn past its entry's `--turn-timeout 1m --on-timeout interrupt` is interrupted
once, by rk pressing Esc Esc.

OpenCode 1.18 fires `session.error` (APIError; MessageAbortedError for Esc Esc)
and then `session.idle` twice; rk's plugin sends the turn's end with that idle.
Figures (the event's time in OpenCode → `@rk_pane_turn_end` written) are printed.
"""

from __future__ import annotations

import json
import time

import pytest

from agents.opencode_launch import classify
from agents.rkclient import listed
from agents.test_real_opencode import OpenCodeRig
from agents.timeouts import interrupted_once, ticks_once_only
from rk.act.interrupt import press_commands
from rk.core.cost.turn_timeout import INTERRUPT_KEYS
from rk.store import delivery_log as logfile
from rk.tmux.server import chain

pytestmark = pytest.mark.agents


@pytest.fixture
def opencode(tmp_path, agent_bin):
    rig = OpenCodeRig(tmp_path, agent_bin)
    yield rig
    rig.close()


def turn_end(oc: OpenCodeRig) -> str:
    """`@rk_pane_turn_end` of the pane ("" if unset)."""
    return oc.oc._tmux("show-options", "-p", "-v", "-q", "-t", "oc", "@rk_pane_turn_end").strip()


def journal(oc: OpenCodeRig) -> list[dict]:
    """The state journal's lines for the pane (every hook write, with its turn end)."""
    path = oc.state_dir / f"{oc.oc.socket}.events"
    lines = path.read_text().splitlines() if path.exists() else []
    return [line for line in map(json.loads, lines) if line["pane"] == oc.pane]


def wait_turn_end(oc: OpenCodeRig, end: str, after: int, timeout: float = 30.0) -> float:
    """Poll until the turn that went active past the journal's first `after` lines
    (a late second idle of the turn before comes ahead of it) has ended, and check
    it ended `end` (and `@rk_pane_turn_end` says so); when it was seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = journal(oc)[after:]
        began = next((i for i, line in enumerate(lines) if line["to"] == "active"), len(lines))
        ends = [line["end"] for line in lines[began:] if line["end"]]
        if ends:
            seen = time.time()
            assert ends[0] == end, (ends, journal(oc), oc.oc.capture())
            assert turn_end(oc).startswith(f"{end}:")
            return seen
        time.sleep(0.02)
    raise AssertionError(f"no turn end in {timeout}s; journal {journal(oc)}; screen:\n{oc.oc.capture()}")


def deliver(oc: OpenCodeRig, prompt: str) -> tuple[float, int]:
    """Deliver `prompt` through rk: when, and how long the pane's journal was before."""
    started, before = time.time(), len(journal(oc))
    entry = oc.add(prompt)
    assert oc.tick() == {entry: "delivered"}
    oc.rk("cron", "rm", entry)
    return started, before


def press_esc_twice(oc: OpenCodeRig) -> None:
    """Esc Esc as rk's turn timeout presses them (`press_commands`: KEY_GAP apart)."""
    oc.oc._tmux(*chain(*press_commands(oc.pane, INTERRUPT_KEYS["opencode"])))


def press_until_aborted(oc, program: str, started: float, tries: int = 3) -> float:
    """Press OpenCode's (or Kilo's) Esc Esc until it aborts the turn (its `session.error`), and say
    when the press that took was made. On a loaded machine OpenCode's TUI may read the
    two Escapes in one read (Alt+Esc, not an abort): that is a press OpenCode never saw,
    not a wait rk failed to end, so the wait is timed from the press that took."""
    for _ in range(tries):
        pressed = time.time()
        oc.oc._tmux(*chain(*press_commands(oc.pane, INTERRUPT_KEYS[program])))
        deadline = time.monotonic() + 8  # an abort: session.error (MessageAbortedError), or the turn's end
        while time.monotonic() < deadline:
            if any(e.get("type") in ("session.error", "session.idle") and e["t"] >= started for e in oc.oc.events()):
                return pressed
            time.sleep(0.1)
    raise AssertionError(f"OpenCode did not abort after {tries} Esc Esc presses")


def error_requests(oc: OpenCodeRig, prompt_mark: str) -> int:
    return sum(1 for r in oc.oc.mock.requests if r.get("kind") == "error" and prompt_mark in r.get("prompt", ""))


def test_errors_aborts_and_a_rejection_end_the_turn_failed_interrupted_and_limited(opencode):
    oc = opencode
    figures: list[str] = []

    def ended(case: str, end: str, event_t: float, before: int) -> None:
        seen = wait_turn_end(oc, end, before)
        oc.wait_state("limited" if end == "limited" else "idle", timeout=10)
        row = listed(oc)
        assert (row["turn_end"], row["state"]) == (end, "limited" if end == "limited" else "idle"), row
        figures.append(f"{case}: {end} {seen - event_t:.2f} s after the event")

    # a plain turn first (the first prompt's session set-up is slow)
    started, before = deliver(oc, "say hello mock:slow=2")
    idle = oc.oc.wait_event("session.idle", after=started, timeout=60)
    ended("plain", "ok", idle["t"], before)

    # Esc Esc while the reply streams: MessageAbortedError
    started, before = deliver(oc, "stream slowly mock:slow=120")
    oc.wait_state("active", timeout=30)
    oc.oc.wait_event(
        "message.part.updated",
        after=started,
        timeout=30,
        pred=lambda e: (e["p"].get("part") or {}).get("type") == "text",
    )
    press_until_aborted(oc, "opencode", started)
    err = oc.oc.wait_event("session.error", after=started, timeout=15)
    assert err["p"]["error"]["name"] == "MessageAbortedError"
    ended("Esc Esc streaming", "interrupted", err["t"], before)

    # a request OpenCode does not retry (400): failed at once
    started, before = deliver(oc, "bad request mock:status=400")
    err = oc.oc.wait_event("session.error", after=started, timeout=60)
    assert err["p"]["error"]["name"] == "APIError" and err["p"]["error"]["data"]["statusCode"] == 400
    ended("400", "failed", err["t"], before)
    figures[-1] += f" ({error_requests(oc, 'status=400')} request)"

    # a 500 it retries 5 times, then gives up on
    started, before = deliver(oc, "server error mock:status=500 mock:retry-after-ms=200")
    err = oc.oc.wait_event("session.error", after=started, timeout=60)
    assert err["p"]["error"]["data"]["statusCode"] == 500
    ended("500", "failed", err["t"], before)
    figures[-1] += f" ({error_requests(oc, 'status=500')} requests)"

    # a rejected permission ends the turn
    started, before = deliver(oc, "read it mock:read=/etc/hostname")
    oc.oc.wait_event("permission.asked", after=started, timeout=60)
    oc.wait_state("waiting", timeout=5)
    oc.oc.wait_screen(lambda s: classify(s) == "dialog", timeout=15)  # the event comes before the frame
    oc.oc.send_keys("Escape")  # Reject
    replied = oc.oc.wait_event("permission.replied", after=started, timeout=15)
    assert replied["p"]["reply"] == "reject"
    idle = oc.oc.wait_event("session.idle", after=replied["t"], timeout=15)
    ended("permission rejected", "interrupted", idle["t"], before)

    # Esc Esc while waiting to retry: no session.error at all, the idle follows the retry
    started, before = deliver(oc, "unavailable mock:status=503 mock:retry-after-ms=60000")
    retry = oc.oc.wait_event(
        "session.status", after=started, timeout=30, pred=lambda e: e["p"]["status"]["type"] == "retry"
    )
    # (OpenCode forgets an Esc some seconds after it: the streaming case's first Esc,
    # long before, must not cut this pair in two; the cases between take longer)
    oc.oc.wait_screen(lambda s: "retrying in" in s, timeout=10)
    press_esc_twice(oc)
    idle = oc.oc.wait_event("session.idle", after=retry["t"], timeout=15)
    assert not [e for e in oc.oc.events() if e["type"] == "session.error" and e["t"] >= started]
    ended("Esc Esc retry wait", "interrupted", idle["t"], before)

    # a 429 is still a limit (last: a limited pane takes no delivery)
    started, before = deliver(oc, "rate limit mock:status=429 mock:retry-after-ms=200")
    err = oc.oc.wait_event("session.error", after=started, timeout=60)
    ended("429", "limited", err["t"], before)
    print("\nopencode turn ends: " + "; ".join(figures))


TIMEOUT = 60
SLOW = 180


@pytest.mark.slow
def test_a_stalled_reply_is_interrupted_once_after_a_minute(opencode):
    """The mock's reply stalls for 3 minutes; the entry's turn timeout is 1 minute.
    Ticks every 3 s leave the turn alone before the minute; then `turn-timeout` is
    logged once, Esc Esc pressed once (MessageAbortedError), `interrupted` logged,
    and the pane is idle with the turn end `interrupted`."""
    oc = opencode
    entry = oc.add(f"think slowly mock:slow={SLOW}", "--turn-timeout", "1m", "--on-timeout", "interrupt")
    assert oc.tick() == {entry: "delivered"}
    oc.rk("cron", "edit", entry, "--every", "1h")  # no second fire while we watch
    log = oc.state_dir / f"{oc.oc.socket}.log"
    delivered = logfile.read_live(log)[0].ts
    oc.wait_state("active", timeout=30)

    lines, timed_out, pressed_at = interrupted_once(oc.tick, log, delivered, TIMEOUT, oc.oc.capture)
    oc.wait_state("idle", timeout=10)
    aborts = [e for e in oc.oc.events() if e["type"] == "session.error" and e["t"] >= delivered]
    assert [e["p"]["error"]["name"] for e in aborts] == ["MessageAbortedError"]
    assert turn_end(oc).startswith("interrupted:")
    assert listed(oc)["turn_end"] == "interrupted"
    assert "interrupted" in oc.oc.capture()  # `▣  Build · Mock Model · interrupted`

    ticks_once_only(oc.tick, log)
    assert oc.oc.rk_state().startswith("idle:")
    closed = [r for r in oc.oc.mock.requests if r.get("kind") == "client_closed"]
    print(
        f"\nopencode: timed out {timed_out.ts - delivered} s after the delivery; {lines[-1].outcome}; "
        f"the tick that pressed began {aborts[0]['t'] - pressed_at:.2f} s before the abort event; "
        f"stream closed by OpenCode {len(closed)} time(s)"
    )

"""Drive the real Claude Code and Codex CLIs through the screen scenarios rk
must recognise, and save screen fixtures plus a hook-timing report.

    python tests/agents/capture.py                 # both agents
    python tests/agents/capture.py --agent codex   # one agent
    python tests/agents/capture.py --quick         # skip the 65 s idle_prompt wait
    python tests/agents/capture.py --agent claude --claude-version 2.1.332   # the newest Claude Code

Writes ``tests/fixtures/screens/<agent>/<scenario>.txt`` (``<agent>-<version>/`` for
a version other than the pinned one) (``capture-pane -p -J``)
and ``.ansi`` (``-e``), and a JSON report (default
``/tmp/rk-agents-capture-report.json``) with, per scenario, the hook events
that fired (ms from the action that started it) and their key payload fields,
``pane_current_command`` and the agent's process-group facts. Everything runs
offline against ``mocks.py``, in private tmux servers (see ``harness.py``).
The CLIs are installed with npm into the cache on first use.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mocks  # noqa: E402
from harness import CLAUDE_VERSION, AgentRun, format_tree, read_proc  # noqa: E402

FIXTURES = HERE.parent / "fixtures" / "screens"
MOCK_PORTS = {"claude": 18765, "codex": 18766}
DRAFT = "a draft a human typed but did not send"
PASTE3 = "line one of paste\nline two of paste\nline three"
PASTE40 = "\n".join(f"long paste line {i:02d} with some words in it" for i in range(40))

PAYLOAD_KEYS = (
    "source",
    "prompt",
    "error",
    "last_assistant_message",
    "notification_type",
    "message",
    "tool_name",
    "tool_input",
    "status",
    "kind",
    "attempt_number",
    "reason",
    "stop_hook_active",
    "type",
    "input-messages",
    "last-assistant-message",
    "thread-id",
)


def brief(payload):
    if not isinstance(payload, dict):
        return payload
    out = {}
    for k in PAYLOAD_KEYS:
        if k in payload:
            v = payload[k]
            if isinstance(v, str) and len(v) > 160:
                v = v[:157] + "..."
            if k == "prompt" and isinstance(v, str):
                v = (
                    v
                    if len(v) <= 80
                    else f"{v[:60]}... ({len(payload[k])} chars, {payload[k].count(chr(10)) + 1} lines)"
                )
            if k == "input-messages":
                v = [m[:60] for m in v]
            out[k] = v
    return out


class Capturer:
    def __init__(self, agent: str, out: Path, report: dict, version: str = ""):
        self.agent, self.version = agent, version
        self.out = out / (f"{agent}-{version}" if version else agent)
        self.out.mkdir(parents=True, exist_ok=True)
        self.report = report.setdefault(self.out.name, {"scenarios": {}, "notes": []})
        self.run: AgentRun | None = None

    # -- plumbing ------------------------------------------------------------
    def start(self, suffix: str = "", width: int = 120, height: int = 40, **kw) -> AgentRun:
        root = Path(f"/tmp/rk-capture-{self.agent}{suffix}")
        self.run = AgentRun(
            self.agent,
            width=width,
            height=height,
            root=root,
            launch=False,
            mock_port=MOCK_PORTS[self.agent],
            version=self.version,
            **kw,
        )
        self.run.launch(ansi_frames=True)
        return self.run

    def stop(self):
        if self.run:
            self.run.close()
            self.run = None

    def save(self, name: str, plain: str | None = None, ansi: str | None = None) -> str:
        if plain is None:
            plain, ansi = self.run.capture_both()
        (self.out / f"{name}.txt").write_text(plain)
        (self.out / f"{name}.ansi").write_text(ansi or "")
        try:
            info = self.run.pane_info()
            self.report.setdefault("screens", {})[name] = {
                "pane_title": info["pane_title"],
                "pane_current_command": info["pane_current_command"],
                "alternate_on": info["alternate_on"],
            }
        except Exception:
            pass
        print(f"  saved {self.out.name}/{name}")
        return plain

    def scenario(self, name: str, since: float, **extra):
        run = self.run
        evs = run.hooks(since)
        entry = {
            "hooks": [[e["event"], round((e["t"] - since) * 1000)] for e in evs],
            "payloads": [[e["event"], brief(e.get("payload"))] for e in evs],
            "pane": run.pane_info()["pane_current_command"],
        }
        entry.update(extra)
        self.report["scenarios"][name] = entry
        print(f"  {name}: {entry['hooks']}")
        return entry

    def note(self, text: str):
        self.report["notes"].append(text)
        print("  note:", text)

    def wait_quiet(self, seconds: float = 0.4, timeout: float = 5.0) -> str:
        """Wait until the screen has not changed for ``seconds`` (spinners never
        settle; gives up after ``timeout`` and returns the last screen)."""
        last, since = self.run.capture(), time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(0.05)
            s = self.run.capture()
            if s != last:
                last, since = s, time.monotonic()
            elif time.monotonic() - since >= seconds:
                break
        return last

    def proc_facts(self, label: str):
        run = self.run
        tree = run.proc_tree()
        info = run.pane_info()
        facts = dict(info, tree=format_tree(tree).splitlines())
        if run.agent_pid:
            p = read_proc(run.agent_pid)
            if p:
                facts["agent"] = {
                    "pid": p.pid,
                    "comm": p.comm,
                    "pgrp": p.pgrp,
                    "tpgid": p.tpgid,
                    "in_foreground": p.in_foreground,
                }
        self.report.setdefault("procs", {})[label] = facts
        print(
            f"  procs[{label}]: {info['pane_current_command']} alt={info['alternate_on']}"
            f" title={info['pane_title']!r} agent={facts.get('agent')}"
        )
        return facts

    def boot(self):
        """``boot``: the last frame before the composer that shows more than the
        typed command (Claude: none, it goes from blank to the composer);
        ``boot_first_composer``: the first frame in which the composer is seen."""
        run = self.run
        frames = list(run.boot_frames)
        launch_line = frames[0][1].strip() if frames else "$"
        pre = [f for f in frames[:-1] if f[1].strip() and f[1].strip() not in ("$", launch_line)]
        chosen = pre[-1] if pre else frames[-2] if len(frames) > 1 else frames[-1]
        self.save("boot", chosen[1], chosen[2])
        self.save("boot_first_composer", frames[-1][1], frames[-1][2])
        self.report["boot"] = {
            "ready_after_s": round(run.ready_time - run.launch_time, 3),
            "frames": [[round(t - run.launch_time, 3), p.strip()[:200]] for t, p, _ in frames],
            "pre_composer_frames_with_content": len(pre),
        }
        print(f"  ready after {self.report['boot']['ready_after_s']} s; {len(pre)} pre-composer frame(s)")

    def erase(self, n: int):
        """Erase ``n`` characters with BSpace (C-u would leave Claude's
        ``Ctrl+Y to paste deleted text`` hint in the footer for a long time)."""
        self.run.keys("-N", str(n), "BSpace")

    def popup_after(self, name: str, timeout: float = 2.0) -> bool:
        """If a selection popup (``enter select · esc back``) shows up within
        ``timeout``, save it as ``<name>_popup`` and dismiss it with Esc."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "esc back" in self.run.capture():
                self.wait_quiet(0.4, 2)
                self.save(f"{name}_popup")
                self.run.esc()
                self.run.wait_not_screen("esc back", 5)
                return True
            time.sleep(0.1)
        return False

    def dismiss_popups(self):
        s = self.run.capture()
        if "esc back" in s or "Esc to cancel" in s or "esc dismiss" in s:
            self.run.esc()
            time.sleep(0.5)

    # -- shared steps ------------------------------------------------------------
    def fresh_idle_and_draft(self, suffix: str = ""):
        run = self.run
        run.wait_hook("SessionStart", timeout=10) if self.agent == "claude" else None
        if self.agent == "codex":
            run.wait_screen("for shortcuts", 10)
        self.wait_quiet(0.8, 6)
        self.save(f"idle_fresh{suffix}")
        run.keys_literal(DRAFT)
        run.wait_screen(DRAFT[-20:], 5)
        self.wait_quiet(0.4, 3)
        self.save(f"draft{suffix}")
        self.erase(len(DRAFT) + 2)
        run.wait_not_screen(DRAFT[-20:], 5)
        self.wait_quiet(0.3, 3)

    def working_and_esc(self):
        """Working screens; Esc before any output; Esc after some output."""
        run = self.run
        run.mock.set_mode("slow", seconds=120)
        t = run.submit("take your time")
        run.wait_screen("esc to interrupt", 10)
        time.sleep(0.3)
        self.save("working_1")
        self.proc_facts("working")
        time.sleep(1.0)
        self.save("working_2")
        time.sleep(1.0)
        te = run.esc()
        run.wait_not_screen("esc to interrupt", 5)
        self.wait_quiet(0.5, 3)
        self.save("interrupted_before_output")
        time.sleep(2.5)
        self.scenario("esc_before_output", t, esc_ms=round((te - t) * 1000), composer_after=self.composer_text())
        self.erase(len("take your time") + 2)
        self.wait_quiet(0.3, 2)
        run.mock.set_mode("slow", seconds=120, partial="I will take my time. ")
        t = run.submit("take your time but say something first")
        run.wait_screen("I will take my time", 10)
        time.sleep(1.0)
        self.save("working_partial")
        te = run.esc()
        run.wait_not_screen("esc to interrupt", 5)
        self.wait_quiet(0.5, 3)
        self.save("interrupted")
        time.sleep(2.5)
        self.scenario("esc_after_output", t, esc_ms=round((te - t) * 1000), composer_after=self.composer_text())
        self.wait_quiet(0.3, 2)

    def composer_text(self) -> str:
        """The composer's first line: the last line starting with the prompt glyph
        (transcript user lines start with it too, but sit above the composer)."""
        glyph = "❯" if self.agent == "claude" else "›"
        lines = [ln for ln in self.run.capture().splitlines() if ln.startswith(glyph)]
        return lines[-1] if lines else ""

    def ok_turn(self, name: str = "idle_after_turn", prompt: str = "say hello"):
        run = self.run
        run.mock.set_mode("ok")
        t = run.submit(prompt)
        run.wait_hook("Stop", since=t, timeout=20)
        run.wait_idle(10)
        self.wait_quiet(0.5, 4)
        self.save(name)
        return self.scenario(name, t)

    def reply_quoting(self, suffix: str = ""):
        """``reply_quoting<suffix>``: an idle agent whose last reply quotes every working,
        dialog and limit pattern rk knows (mocks.QUOTING_REPLY)."""
        run = self.run
        run.mock.set_mode("ok", text=mocks.QUOTING_REPLY)
        t = run.submit("quote the patterns")
        run.wait_hook("Stop", since=t, timeout=20)
        run.wait_idle(10)
        self.wait_quiet(0.8, 5)
        self.save(f"reply_quoting{suffix}")
        run.mock.set_mode("ok")
        return self.scenario(f"reply_quoting{suffix}", t)

    def quoting_session(self):
        """A short session of its own per size: one turn, then the quoting reply (120x40:
        the whole reply shows; 80x24: its end right above the composer, its start scrolled off)."""
        for suffix, width, height in (("", 120, 40), ("_80x24", 80, 24)):
            print(f"{self.out.name}: quoting session {width}x{height}")
            self.start(suffix=f"-quote{suffix}", width=width, height=height)
            try:
                if self.agent == "claude":
                    self.run.wait_hook("SessionStart", timeout=10)
                self.ok_turn(f"before_quoting{suffix}")
                self.reply_quoting(suffix)
            finally:
                self.stop()


# --------------------------------------------------------------------------
# Claude


def capture_claude(out: Path, report: dict, quick: bool, version: str = "", only_subscription: bool = False):
    c = Capturer("claude", out, report, "" if version in ("", CLAUDE_VERSION) else version)
    if not only_subscription:
        capture_claude_api_key(c, quick)
    capture_claude_subscription(c)


def capture_claude_api_key(c: Capturer, quick: bool):
    print(f"{c.out.name}: main session 120x40 (API key)")
    run = c.start()
    try:
        c.boot()
        c.fresh_idle_and_draft()
        c.scenario("session_start", run.launch_time)
        c.proc_facts("idle")
        c.ok_turn()

        c.working_and_esc()

        # draft while busy, then queue it
        run.mock.set_mode("slow", seconds=120)
        t = run.submit("take your time again")
        run.wait_screen("esc to interrupt", 10)
        run.keys_literal("draft typed while busy")
        run.wait_screen("draft typed while busy", 5)
        time.sleep(0.4)
        c.save("busy_draft")
        tq = run.enter()
        run.wait_screen("Press up to edit queued messages", 5)
        time.sleep(0.4)
        c.save("busy_queued")
        run.mock.set_mode("ok")
        tr = time.time()
        run.mock.release()
        run.wait_hook("Stop", since=t, timeout=20, count=2)
        run.wait_idle(10)
        c.wait_quiet(0.5, 3)
        c.save("after_queued_turns")
        c.scenario(
            "busy_queue",
            t,
            enter_queued_ms=round((tq - t) * 1000),
            release_ms=round((tr - t) * 1000),
            prompts=run.mock.prompts()[-2:],
        )

        # permission dialog -> approve
        run.mock.set_mode("tool", command="sleep 3 && touch made-by-tool.txt")
        t = run.submit("run the tool")
        run.wait_screen("Do you want to proceed", 10)
        c.wait_quiet(0.4, 3)
        c.save("permission_dialog")
        c.proc_facts("dialog")
        run.wait_hook("Notification", since=t, timeout=12)
        ta = run.enter()
        run.wait_screen("Running…|esc to interrupt", 5)  # 2.1.332 folds the tool into "Running 1 shell command"
        time.sleep(0.3)
        c.save("approved_running")
        run.wait_hook("Stop", since=t, timeout=20)
        run.wait_idle(10)
        c.wait_quiet(0.5, 3)
        c.save("after_approved_turn")
        c.scenario("permission_approve", t, approve_ms=round((ta - t) * 1000))

        # permission dialog -> deny with Esc, then with "3. No"
        run.mock.set_mode("tool", command="touch denied-by-esc.txt")
        t = run.submit("run the tool again")
        run.wait_screen("Do you want to proceed", 10)
        time.sleep(0.3)
        td = run.esc()
        run.wait_not_screen("Do you want to proceed", 5)
        c.wait_quiet(0.5, 3)
        c.save("denied_esc")
        time.sleep(2.5)
        c.scenario("permission_deny_esc", t, deny_ms=round((td - t) * 1000))
        run.mock.set_mode("tool", command="touch denied-by-no.txt")
        t = run.submit("run the tool a third time")
        run.wait_screen("Do you want to proceed", 10)
        time.sleep(0.3)
        td = time.time()
        run.keys(re.search(r"(\d)\. No\s*$", run.capture(), re.M).group(1))  # 3 in 2.1.197, 4 in 2.1.332
        run.wait_not_screen("Do you want to proceed", 5)
        c.wait_quiet(0.5, 3)
        c.save("denied_no")
        time.sleep(2.5)
        c.scenario("permission_deny_no", t, deny_ms=round((td - t) * 1000))
        if "Do you want to proceed" in run.capture() or not run.is_ready():
            run.esc()

        # API errors
        for mode, name in (
            ("error500", "error_500"),
            ("error429", "error_429"),
            ("error429_reset", "error_429_reset_text"),
            ("error529", "error_529"),
        ):
            run.mock.set_mode(mode)
            t = run.submit(f"trigger {mode}")
            run.wait_hook("StopFailure", since=t, timeout=20)
            run.wait_idle(10)
            c.wait_quiet(0.5, 3)
            c.save(name)
            c.scenario(name, t)
        run.mock.set_mode("error529", midstream=True)
        t = run.submit("trigger a mid-stream overloaded error")
        run.wait_hook("StopFailure", since=t, timeout=30)
        run.wait_idle(10)
        c.scenario(
            "error_529_midstream", t, mock_requests=len([r for r in run.mock.requests(main_only=True) if r["t"] >= t])
        )
        run.mock.set_mode("ok")

        # pastes
        run.paste(PASTE3)
        run.wait_screen("line three", 5)
        c.wait_quiet(0.4, 3)
        c.save("paste_multiline")
        t = run.enter()
        run.wait_hook("Stop", since=t, timeout=20)
        c.scenario("paste_multiline_submit", t)
        run.wait_idle(10)
        run.paste(PASTE40)
        run.wait_screen(r"\[Pasted text", 5)
        c.wait_quiet(0.4, 3)
        c.save("paste_long_chip")
        t = run.enter()
        run.wait_hook("Stop", since=t, timeout=20)
        c.scenario("paste_long_submit", t)
        run.wait_idle(10)

        # exit
        c.wait_quiet(0.3, 2)
        t = run.submit("/exit")
        run.wait_screen(r"^\$ ?$", 10)
        time.sleep(0.5)
        c.save("exited")
        c.scenario("exit", t)
        c.proc_facts("after_exit")
    finally:
        c.stop()

    print("claude: 80x24 session")
    run = c.start(suffix="-80", width=80, height=24)
    try:
        c.fresh_idle_and_draft(suffix="_80x24")
        if not quick:
            t = run.submit("say hello")
            stop = run.wait_hook("Stop", since=t, timeout=20)
            n = run.wait_hook("Notification", since=t, timeout=75)
            c.scenario("idle_prompt_notification", t, after_stop_ms=round((n["t"] - stop["t"]) * 1000))
    finally:
        c.stop()

    print("claude: direct launch (CLI as the pane's own command)")
    run = c.start(suffix="-direct", shell=False)
    try:
        c.proc_facts("direct_idle")
    finally:
        c.stop()


def capture_claude_subscription(c: Capturer):
    print(f"{c.out.name}: subscription session (CLAUDE_CODE_OAUTH_TOKEN, offline)")
    run = c.start(
        suffix="-sub",
        extra_env={"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-mock-token", "CLAUDE_CODE_SUBSCRIPTION_TYPE": "max"},
        drop_env=("ANTHROPIC_API_KEY",),
    )
    try:
        c.wait_quiet(0.5, 4)
        c.save("idle_fresh_subscription")
        run.mock.set_mode("usage_warning")
        t = run.submit("first turn with a usage warning header")
        run.wait_hook("Stop", since=t, timeout=20)
        t2 = run.submit("second turn with a usage warning header")
        run.wait_hook("Stop", since=t2, timeout=20)
        run.wait_screen("You've used", 10)
        c.wait_quiet(0.5, 3)
        c.save("usage_warning_banner")
        c.scenario("usage_warning", t)
        run.mock.set_mode("error429_reset")
        t = run.submit("trigger the subscription limit")
        run.wait_hook("StopFailure", since=t, timeout=20)
        # 2.1.197 opens "What do you want to do?"; 2.1.332 offers to continue by itself at the reset
        shown = run.wait_screen("What do you want to do|Continuing automatically", 10)
        c.wait_quiet(0.5, 3)
        c.save("limit_reached_dialog" if "What do you want to do" in shown else "limit_reached_autocontinue")
        te = run.esc()
        run.wait_idle(10)
        run.wait_not_screen("Continuing automatically", 5)
        c.wait_quiet(0.5, 3)
        c.save("limit_reached")
        time.sleep(1)
        c.scenario("limit_reached", t, esc_ms=round((te - t) * 1000))
        run.mock.set_mode("error429")
        t = run.submit("trigger a plain 429 as a subscriber")
        run.wait_hook("StopFailure", since=t, timeout=20)
        time.sleep(1)
        c.dismiss_popups()
        run.wait_idle(10)
        c.wait_quiet(0.5, 3)
        c.save("error_429_subscription")
        c.scenario("error_429_subscription", t)
    finally:
        c.stop()


# --------------------------------------------------------------------------
# Codex


def capture_codex(out: Path, report: dict, quick: bool):
    c = Capturer("codex", out, report)
    print("codex: main session 120x40")
    run = c.start()
    try:
        c.boot()
        c.fresh_idle_and_draft()
        c.scenario("launch", run.launch_time)
        c.proc_facts("idle")
        c.ok_turn()

        c.working_and_esc()

        # draft while busy, queue it with Tab
        run.mock.set_mode("slow", seconds=120)
        t = run.submit("take your time again")
        run.wait_screen("esc to interrupt", 10)
        run.keys_literal("draft typed while busy")
        run.wait_screen("draft typed while busy", 5)
        time.sleep(0.4)
        c.save("busy_draft")
        tq = time.time()
        run.keys("Tab")
        run.wait_screen("Queued follow-up", 5)
        time.sleep(0.4)
        c.save("busy_queued")
        run.mock.set_mode("ok")
        tr = time.time()
        run.mock.release()
        run.wait_hook("Stop", since=t, timeout=20, count=2)
        run.wait_idle(10)
        c.wait_quiet(0.5, 3)
        c.save("after_queued_turns")
        c.scenario(
            "busy_queue_tab",
            t,
            tab_ms=round((tq - t) * 1000),
            release_ms=round((tr - t) * 1000),
            prompts=run.mock.prompts()[-2:],
        )

        # Enter while busy: steers the running turn
        run.mock.set_mode("slow", seconds=4)
        t = run.submit("a slow turn to steer")
        run.wait_screen("esc to interrupt", 10)
        ts = run.submit("steering text sent with Enter")
        time.sleep(0.5)
        c.save("busy_steer")
        run.wait_hook("Stop", since=t, timeout=30)
        time.sleep(2)
        run.wait_idle(10)
        c.scenario("busy_steer_enter", t, steer_ms=round((ts - t) * 1000), prompts=run.mock.prompts()[-2:])
        run.mock.set_mode("ok")

        # permission dialog -> approve
        run.mock.set_mode("tool", command="sleep 3 && touch made-by-tool.txt")
        t = run.submit("run the tool")
        run.wait_screen("Would you like to run", 10)
        c.wait_quiet(0.4, 3)
        c.save("permission_dialog")
        c.proc_facts("dialog")
        time.sleep(1)
        ta = run.enter()
        run.wait_not_screen("Would you like to run", 5)
        time.sleep(0.8)
        c.save("approved_running")
        run.wait_hook("Stop", since=t, timeout=20)
        run.wait_idle(10)
        c.wait_quiet(0.5, 3)
        c.save("after_approved_turn")
        c.scenario("permission_approve", t, approve_ms=round((ta - t) * 1000))

        # permission dialog -> deny with Esc
        run.mock.set_mode("tool", command="touch denied-by-esc.txt")
        t = run.submit("run the tool again")
        run.wait_screen("Would you like to run", 10)
        time.sleep(0.3)
        td = run.esc()
        run.wait_not_screen("Would you like to run", 5)
        c.wait_quiet(0.5, 3)
        c.save("denied_esc")
        time.sleep(2.5)
        c.scenario("permission_deny_esc", t, deny_ms=round((td - t) * 1000))

        # API errors (usage-limit last: it leaves a limit banner and a popup)
        for mode, opts, name in (
            ("error500", {}, "error_500"),
            ("error529", {}, "error_503_capacity"),
            ("error429", {"kind": "rate_limit_exceeded"}, "error_429_retry_limit"),
            ("error429", {"kind": "insufficient_quota"}, "error_429_quota"),
        ):
            run.mock.set_mode(mode, **opts)
            t = run.submit(f"trigger {name}")
            run.wait_hook("PostModelRequest", since=t, timeout=20)
            run.wait_idle(10)
            c.wait_quiet(0.6, 3)
            c.save(name)
            time.sleep(1.5)
            c.scenario(name, t, model_switch_popup=c.popup_after(name, 0.5))
        run.mock.set_mode("error500", midstream=True)
        t = run.submit("trigger a mid-stream failure")
        run.wait_hook("PostModelRequest", since=t, timeout=20)
        run.wait_screen("stream disconnected", 10)
        time.sleep(1.5)
        c.scenario("error_midstream", t)
        run.mock.set_mode("ok")

        # pastes
        run.wait_idle(10)
        run.paste(PASTE3)
        run.wait_screen("line three", 5)
        c.wait_quiet(0.4, 3)
        c.save("paste_multiline")
        t = run.enter()
        run.wait_hook("Stop", since=t, timeout=20)
        c.scenario("paste_multiline_submit", t)
        run.wait_idle(10)
        run.paste(PASTE40)
        run.wait_screen(r"\[Pasted Content", 5)
        c.wait_quiet(0.4, 3)
        c.save("paste_long_chip")
        t = run.enter()
        run.wait_hook("Stop", since=t, timeout=20)
        c.scenario("paste_long_submit", t)
        run.wait_idle(10)

        # usage banners
        run.mock.set_mode("usage_warning")
        t = run.submit("a turn with usage headers")
        run.wait_hook("Stop", since=t, timeout=20)
        run.wait_screen("Heads up|enter select", 10)
        c.wait_quiet(0.6, 3)
        popup = c.popup_after("usage_warning")
        run.wait_screen("Heads up", 5)
        c.wait_quiet(0.5, 3)
        c.save("usage_warning")
        c.scenario("usage_warning", t, model_switch_popup=popup)
        run.mock.set_mode("error429")
        t = run.submit("trigger the usage limit")
        run.wait_hook("PostModelRequest", since=t, timeout=20)
        time.sleep(1.0)
        c.wait_quiet(0.6, 3)
        popup = c.popup_after("usage_limit")
        run.wait_idle(10)
        c.wait_quiet(0.5, 3)
        c.save("usage_limit")
        c.scenario("usage_limit", t, model_switch_popup=popup)
        run.mock.set_mode("ok")

        # exit
        t = run.submit("/exit")
        run.wait_screen(r"^\$ ?$", 10)
        time.sleep(0.5)
        c.save("exited")
        c.scenario("exit", t)
        c.proc_facts("after_exit")
    finally:
        c.stop()

    print("codex: 80x24 session")
    run = c.start(suffix="-80", width=80, height=24)
    try:
        c.fresh_idle_and_draft(suffix="_80x24")
    finally:
        c.stop()

    print("codex: direct launch (CLI as the pane's own command)")
    run = c.start(suffix="-direct", shell=False)
    try:
        c.proc_facts("direct_idle")
    finally:
        c.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", choices=("claude", "codex", "all"), default="all")
    ap.add_argument("--out", type=Path, default=FIXTURES)
    ap.add_argument("--report", type=Path, default=Path("/tmp/rk-agents-capture-report.json"))
    ap.add_argument("--quick", action="store_true", help="skip the 65 s wait for Claude's idle_prompt")
    ap.add_argument("--claude-version", default="", help="a Claude Code version of harness.CLAUDE_VERSIONS")
    ap.add_argument("--quoting", action="store_true", help="only the sessions whose reply quotes rk's patterns")
    ap.add_argument("--subscription", action="store_true", help="Claude: only the subscription session")
    args = ap.parse_args(argv)
    report: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    rc = 0
    for agent, fn in (("claude", capture_claude), ("codex", capture_codex)):
        if args.agent not in ("all", agent):
            continue
        try:
            if args.quoting:
                version = args.claude_version if agent == "claude" and args.claude_version != CLAUDE_VERSION else ""
                Capturer(agent, args.out, report, version).quoting_session()
            elif agent == "claude":
                capture_claude(args.out, report, args.quick, args.claude_version, args.subscription)
            else:
                fn(args.out, report, args.quick)
        except Exception:
            traceback.print_exc()
            report.setdefault(agent, {})["failed"] = traceback.format_exc()
            rc = 1
        args.report.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(f"report: {args.report}")
    return rc


if __name__ == "__main__":
    sys.exit(main())

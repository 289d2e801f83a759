"""Capture Qwen Code's screens as fixtures (tests/fixtures/screens-qwen/0.24.4): each a
`capture-pane -p -J` (.txt) and `-p -J -e` (.ansi) of the real CLI against the mock.

    .venv/bin/python tests/agents/qwen_capture.py [--fixtures DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qwen_launch import BUSY_RE, QWEN_VERSION, QwenSession, composer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "screens-qwen" / QWEN_VERSION
DRAFT = "a draft a human typed but did not send"


def capture(outdir: Path, log=print) -> list[str]:
    outdir.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    q = QwenSession()

    def save(name: str) -> None:
        (outdir / f"{name}.txt").write_text(q.capture())
        (outdir / f"{name}.ansi").write_text(q.capture(ansi=True))
        written.append(name)
        log(f"  saved {name} (title {q.info()['title']!r})")

    def at_rest(s: str) -> bool:
        return composer(s) is not None and not BUSY_RE.search(s)

    try:
        q.start()
        q.wait_ready()
        time.sleep(0.5)
        save("idle_fresh")
        q.mock.set_mode("slow", seconds=30)
        t = q.submit("take your time")
        q.wait_for(BUSY_RE.search, 10)
        time.sleep(0.5)
        save("working")
        tx = q.esc()
        q.wait_hook("Notification", since=tx, kind="idle_prompt")
        q.wait_for(at_rest, 5)
        time.sleep(0.3)
        save("after_esc")  # "Request cancelled." (or, before the request went out, the prompt put back)
        q.keys("C-u")
        q.wait_for(lambda s: composer(s) == "", 5)
        t = q.submit("take your time again")
        q.wait_for(BUSY_RE.search, 10)
        q.type(DRAFT)
        q.wait_composer_text(DRAFT)
        time.sleep(0.2)
        save("working_draft")
        q.keys("C-u")
        q.wait_for(lambda s: composer(s) == "", 5)
        tx = q.esc()
        q.wait_hook("Notification", since=tx, kind="idle_prompt")
        q.wait_for(at_rest, 5)
        q.keys("C-u")
        q.wait_for(lambda s: composer(s) == "", 5)
        q.mock.set_mode("ok")
        t = q.submit("hello")
        q.wait_hook("Stop", since=t)
        q.wait_for(at_rest, 5)
        time.sleep(0.3)
        save("idle_after_turn")
        q.type(DRAFT)
        q.wait_composer_text(DRAFT)
        time.sleep(0.2)
        save("draft")
        q.keys("C-u")
        q.wait_for(lambda s: composer(s) == "", 5)
        q.mock.set_mode("tool", tool_name="run_shell_command", command="touch x")
        t = q.submit("create the file x")
        q.wait_hook("PermissionRequest", since=t)
        q.wait_for("Allow execution of", 5)
        time.sleep(0.3)
        save("tool_confirm")
        ta = q.enter()
        q.wait_hook("Stop", since=ta)
        q.wait_for(at_rest, 5)
        time.sleep(0.3)
        save("tool_approved")
        q.mock.set_mode("error500", midstream=True)
        t = q.submit("this fails")
        q.wait_hook("StopFailure", since=t, timeout=60)
        q.wait_for(lambda s: "API Error" in s and at_rest(s), 10)
        time.sleep(0.3)
        save("error500")
        q.mock.set_mode("error429", midstream=True)
        t = q.submit("this hits a limit")
        q.wait_hook("StopFailure", since=t, timeout=60)
        q.wait_for(lambda s: s.count("API Error") >= 2 and at_rest(s), 10)
        time.sleep(0.3)
        save("error429")
        q.mock.set_mode("error429", retry_after=1)  # an HTTP 429: retried 7 times, as long as it asks, then shown
        t = q.submit("this hits a limit again")
        q.wait_hook("StopFailure", since=t, timeout=90)
        q.wait_for(lambda s: "Possible quota limitations" in s and at_rest(s), 10)
        time.sleep(0.3)
        save("error429_http")
        q.mock.set_mode("ok", text="That was the log:\n✕ [API Error: rate limit exceeded]\nRequest cancelled.")
        t = q.submit("what did the log say")
        q.wait_hook("Stop", since=t)
        q.wait_for(at_rest, 5)
        time.sleep(0.3)
        save("reply_quotes_error")
    finally:
        q.stop()
    return written


WRAPPED = "a draft a human typed but did not send and it is long enough to wrap the line at eighty columns"


def capture_narrow(outdir: Path, log=print) -> list[str]:
    """At 80x24: at rest, a draft that wraps, working."""
    outdir.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    q = QwenSession(cols=80, rows=24)

    def save(name: str) -> None:
        (outdir / f"{name}.txt").write_text(q.capture())
        (outdir / f"{name}.ansi").write_text(q.capture(ansi=True))
        written.append(name)
        log(f"  saved {name}")

    try:
        q.start()
        q.wait_ready()
        time.sleep(0.5)
        save("idle_fresh_80x24")
        q.type(WRAPPED)
        q.wait_for(lambda s: "eighty columns" in s, 10)
        time.sleep(0.3)
        save("draft_wrapped_80x24")
        q.keys("C-u")
        q.wait_for(lambda s: composer(s) == "", 5)
        q.mock.set_mode("slow", seconds=20)
        q.submit("take your time")
        q.wait_for(BUSY_RE.search, 10)
        time.sleep(0.5)
        save("working_80x24")
    finally:
        q.stop()
    return written


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fixtures", default=str(FIXTURES))
    where = Path(ap.parse_args().fixtures)
    capture(where)
    capture_narrow(where)

"""Capture Mistral Vibe's screens as fixtures (tests/fixtures/screens/vibe): each a
`capture-pane -p -J` (.txt) and `-p -J -e` (.ansi) of the real CLI against the mock.

    .venv/bin/python tests/agents/vibe_capture.py [--fixtures DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vibe_launch import BUSY_RE, VibeSession, composer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "vibe"
DRAFT = "a draft a human typed but did not send"


def capture(outdir: Path, log=print, cols: int = 120, rows: int = 40, suffix: str = "") -> list[str]:
    outdir.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    v = VibeSession(cols=cols, rows=rows)

    def save(name: str) -> None:
        name += suffix
        (outdir / f"{name}.txt").write_text(v.capture())
        (outdir / f"{name}.ansi").write_text(v.capture(ansi=True))
        written.append(name)
        log(f"  saved {name} (title {v.info()['title']!r})")

    def at_rest(s: str) -> bool:
        return composer(s) is not None and not BUSY_RE.search(s)

    def clear() -> None:
        v.keys("C-u")
        v.wait_for(lambda s: composer(s) == "", 5)

    try:
        v.start()
        v.wait_ready()
        time.sleep(1.0)
        save("idle_fresh")
        v.type(DRAFT)
        v.wait_composer_text(DRAFT)
        time.sleep(0.3)
        save("draft_fresh")
        clear()
        t = v.submit("say hello mock:slow=30")
        v.wait_for(BUSY_RE.search, 20)
        time.sleep(1.0)
        save("busy")
        v.type(DRAFT)
        v.wait_composer_text(DRAFT)
        time.sleep(0.3)
        save("busy_draft")
        clear()
        v.esc()
        v.wait_for(at_rest, 10)
        time.sleep(0.5)
        save("interrupted")
        t = v.submit("hello")
        v.wait_hook("post_agent", since=t, timeout=60)
        v.wait_for(at_rest, 10)
        time.sleep(0.5)
        save("idle")
        v.type(DRAFT)
        v.wait_composer_text(DRAFT)
        time.sleep(0.3)
        save("draft")
        clear()
        if suffix:  # the small size: only the rest, a draft and a working turn
            return written
        t = v.submit("make the file mock:bash=touch made-by-tool.txt")
        v.wait_hook("pre_tool", since=t, timeout=60)
        time.sleep(1.5)
        save("dialog")
        t = v.enter()
        v.wait_hook("post_agent", since=t, timeout=60)
        v.wait_for(at_rest, 10)
        time.sleep(0.5)
        save("after_dialog")
        v.submit("this fails mock:status=500")
        v.wait_for(lambda s: at_rest(s) and "500" in s, 90)
        time.sleep(0.5)
        save("error_500")
        v.submit("rate limit please mock:status=429")
        v.wait_for(lambda s: at_rest(s) and "429" in s.split("mock:status=429")[-1], 90)
        time.sleep(0.5)
        save("error_429")
    finally:
        v.stop()
    return written


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", type=Path, default=FIXTURES)
    args = ap.parse_args()
    print(f"capturing into {args.fixtures}")
    capture(args.fixtures)
    capture(args.fixtures, cols=80, rows=24, suffix="_80x24")
    return 0


if __name__ == "__main__":
    sys.exit(main())

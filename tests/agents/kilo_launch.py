"""Run the real Kilo Code CLI (`kilo`, npm `@kilocode/cli`) offline in a private tmux server,
against mock_opencode.py.

Kilo Code CLI is a fork of OpenCode: the same TUI, the same plugin API (version-1 plugins in
`{plugin,plugins}/*.{ts,js}` of each config dir, events with `properties`), the same
OpenAI-compatible custom providers. Only the names differ: the config dir is
`$XDG_CONFIG_HOME/kilo/` with `kilo.json`, and the switches are `KILO_*`. So this rig is
OpenCodeRun with those names (see KILO.md for what was measured).

    with KiloRun() as k:
        k.wait_screen(lambda s: classify(s) == "idle", timeout=120)
        t = k.send_prompt("hi")
        k.wait_event("session.idle", after=t)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

try:
    from opencode_launch import OpenCodeRun, process_tree
    from opencode_launch import classify as oc_classify
    from opencode_launch import composer_text as oc_composer_text
except ImportError:  # imported as tests.agents.kilo_launch
    from .opencode_launch import OpenCodeRun, process_tree
    from .opencode_launch import classify as oc_classify
    from .opencode_launch import composer_text as oc_composer_text

__all__ = ["KiloRun", "classify", "composer_text", "find_kilo"]

OFFLINE_ENV = {
    "KILO_DISABLE_MODELS_FETCH": "1",
    "KILO_DISABLE_AUTOUPDATE": "1",
    "KILO_DISABLE_LSP_DOWNLOAD": "1",
    "KILO_DISABLE_SHARE": "1",
    "KILO_DISABLE_TERMINAL_TITLE": "1",
    "KILO_DISABLE_SESSION_INGEST": "1",
    "KILO_DISABLE_CODEBASE_INDEXING": "1",
    "KILO_DISABLE_PRESENCE": "1",
    "KILO_DISABLE_CLAUDE_CODE": "1",
}


def find_kilo() -> str | None:
    return os.environ.get("KILO_BIN") or shutil.which("kilo")


class KiloRun(OpenCodeRun):
    """One Kilo Code TUI in a private tmux server (the OpenCode rig with Kilo's names)."""

    def __init__(self, *args, binary: str | None = None, **kw):
        binary = binary or find_kilo()
        if not binary:
            raise FileNotFoundError("kilo not found (npm install @kilocode/cli; set KILO_BIN)")
        super().__init__(*args, binary=binary, **kw)

    config_dir, config_file = "kilo", "kilo.json"
    offline_env = OFFLINE_ENV  # Kilo's KILO_* switches

    def config(self) -> dict:
        """OpenCode's config without its `$schema` (Kilo's schema is another)."""
        cfg = super().config()
        cfg.pop("$schema")
        return cfg


# -- the screen, as the rig reads it ------------------------------------------------------

#: Kilo's home view writes its placeholder with three dots (OpenCode: `…`).
PLACEHOLDER = re.compile(r'^Ask anything\.\.\. ".*"$')


def composer_text(screen: str) -> str | None:
    """OpenCode's composer reading (opencode_launch.composer_text), Kilo's placeholder read as empty."""
    text = oc_composer_text(screen)
    return "" if text is not None and PLACEHOLDER.match(text) else text


def classify(screen: str) -> str:
    """One of: dialog, busy, idle, draft, blank, unknown (OpenCode's classes)."""
    c = oc_classify(screen)
    return "idle" if c == "draft" and composer_text(screen) == "" else c


# -- recording the screen fixtures ------------------------------------------------------


def record_fixtures(fixtures: str, binary: str | None = None, rk: str | None = None, root: str | None = None) -> dict:
    """Drive one Kilo through the scenarios, writing <fixtures>/<name>.txt (capture-pane -p -J) and
    .ansi (-e) at 120x40, with rk's Kilo plugin when `rk` (the rk script) is given; returns what
    rk's pane state was after each scenario, the process tree and the pane's command."""
    extra = {}
    if rk:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from rk.agent.setup.kilo import kilo_plugin

        extra["rk.js"] = kilo_plugin(rk)
    out = Path(fixtures)
    out.mkdir(parents=True, exist_ok=True)
    result: dict = {}
    with KiloRun(root=root, binary=binary, extra_plugins=extra) as k:

        def cap(name: str) -> None:
            (out / f"{name}.txt").write_text(k.capture())
            (out / f"{name}.ansi").write_text(k.capture(ansi=True))
            result[name] = k.rk_state()

        def ended(t: float, timeout: float = 90.0) -> None:  # the turn's last idle, then a quiet second
            k.wait_event("session.status", after=t, timeout=timeout, pred=lambda e: e["p"]["status"]["type"] == "busy")
            k.wait_event("session.idle", after=t, timeout=timeout)
            time.sleep(1.5)

        def started(t: float) -> None:
            k.wait_event("session.status", after=t, timeout=30, pred=lambda e: e["p"]["status"]["type"] == "busy")
            time.sleep(1.5)

        k.wait_screen(lambda s: classify(s) == "idle", timeout=120)
        time.sleep(1.0)
        cap("idle_home")
        k.type_text("half-typed draft")
        time.sleep(1.0)
        cap("draft_home")
        k.send_keys("C-u")
        time.sleep(0.5)
        ended(k.send_prompt("say hello"))
        cap("idle")
        t = k.send_prompt("a slow one mock:slow=8")
        started(t)
        cap("busy")
        result["_process_tree"] = process_tree(k.pane_pid)
        result["_pane_current_command"] = k.display("#{pane_current_command}")
        ended(t)
        k.type_text("half-typed draft")
        time.sleep(1.0)
        cap("draft")
        k.send_keys("C-u")
        time.sleep(0.5)
        t = k.send_prompt("fail please mock:status=500 mock:retry-after-ms=2500")
        k.wait_event("session.status", after=t, timeout=30, pred=lambda e: e["p"]["status"]["type"] == "retry")
        time.sleep(1.0)
        cap("retry")
        t = time.time()
        k.wait_event("session.error", after=t, timeout=90)
        time.sleep(2.0)
        cap("error_500")
        t = k.send_prompt("rate limit please mock:status=429 mock:retry-after-ms=300")
        k.wait_event("session.error", after=t, timeout=90)
        time.sleep(2.0)
        cap("error_429")
        t = k.send_prompt("long one mock:slow=40")
        started(t)
        k.send_keys("Escape")
        time.sleep(0.7)
        cap("esc_once")
        k.send_keys("Escape")
        k.wait_event("session.idle", after=t, timeout=30)
        time.sleep(1.5)
        cap("interrupted")
        t = k.send_prompt("read it mock:read=/etc/hostname")
        k.wait_event("permission.asked", after=t, timeout=30)
        time.sleep(1.0)
        cap("dialog")
        k.send_keys("Enter")  # "Allow once" is selected
        k.wait_event("session.idle", after=t, timeout=60)
        time.sleep(1.5)
        cap("after_dialog")
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fixtures")
    ap.add_argument("--kilo", default=None)
    ap.add_argument("--rk", default=None)
    ap.add_argument("--root", default=None)
    a = ap.parse_args(argv)
    print(json.dumps(record_fixtures(a.fixtures, a.kilo, a.rk, a.root), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

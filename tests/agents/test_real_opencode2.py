"""rk's one plugin file for both OpenCode plugin APIs (`export default {id, server, setup}`)
under the real OpenCode 1.18.33, offline against a local mock.

1.18.33 loads it through `default.server`, and its built-in pass for version-2 plugins
calls `default.setup` too, with a registration-only context (no `event` domain: a probe
plugin beside rk's records it). rk's `setup` returns at once there, so each event of a
turn reaches rk once: the tokens rk's plugin sends are exactly those the events call for.
"""

from __future__ import annotations

import json
import time

import pytest

from agents.opencode_launch import OpenCodeRun, classify
from rk.agent.setup import opencode_plugin

pytestmark = pytest.mark.agents

#: Stands in for rk: logs the token of each call.
RECORDER = """#!/bin/sh
printf '%s\\n' "$5" >> "$0.log"
"""

#: A dual plugin that records how OpenCode calls each side.
PROBE = """import { appendFileSync } from "node:fs";
const LOG = __LOG__;
export default {
  id: "rk-probe",
  server: async () => { appendFileSync(LOG, "server\\n"); return {}; },
  setup: (ctx) => { appendFileSync(LOG, "setup " + Object.keys(ctx || {}).sort().join(",") + "\\n"); },
};
"""


def _expected(events: list[dict]) -> list[str]:
    """The tokens a turn's 1.x events call for (no errors here): stamp, active per busy, idle."""
    out = []
    for e in events:
        p = e.get("p") or {}
        if e["type"] == "session.created" and not (p.get("info") or {}).get("parentID"):
            out.append("stamp")
        elif e["type"] == "session.status" and (p.get("status") or {}).get("type") == "busy":
            out.append("active")
        elif e["type"] == "session.idle":
            out.append("idle")
    return out


def test_one_plugin_file_reports_each_event_once_under_opencode_1(tmp_path, agent_bin):
    recorder = tmp_path / "rk"
    recorder.write_text(RECORDER)
    recorder.chmod(0o755)
    log = tmp_path / "rk.log"
    probe_log = tmp_path / "probe.log"
    oc = OpenCodeRun(
        root=str(tmp_path / "oc"),
        binary=str(agent_bin / "opencode"),
        extra_plugins={
            "rk.js": opencode_plugin(str(recorder)),
            "probe.js": PROBE.replace("__LOG__", json.dumps(str(probe_log))),
        },
    )
    oc.start()
    try:
        oc.wait_screen(lambda s: classify(s) == "idle", timeout=90)
        oc.send_prompt("say hello mock:slow=1")
        oc.wait_event("session.idle", timeout=60)
        end = time.time() + 30
        while "idle" not in (log.read_text().split() if log.exists() else []):
            assert time.time() < end, f"rk's plugin never sent idle: {log.read_text() if log.exists() else ''}"
            time.sleep(0.1)
        expected = _expected(oc.events())
    finally:
        oc.stop()
    probe = probe_log.read_text().splitlines()
    assert "server" in probe
    setups = [line for line in probe if line.startswith("setup")]
    assert setups, f"1.18.33 did not call setup: {probe}"
    assert all("event" not in line.split(" ", 1)[1].split(",") for line in setups), setups
    assert expected[0] == "stamp" and expected[-1] == "idle"
    assert log.read_text().split() == expected

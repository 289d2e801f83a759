"""How rk's OpenCode plugin ends a turn: the token its session.idle sends after an
error, an abort, a retry wait or a rejected permission. The plugin runs under node
with `rk` replaced by a recorder, so only the plugin's mapping is tested (the hook's
token → turn end is `rk.core.pane.turn.hook_turn_end`, tested in test_await_events.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from rk.agent.setup import opencode_plugin

pytestmark = pytest.mark.shell

RECORDER = """#!/bin/sh
# argv: agent hook --agent opencode <token>; stdin: {"sessionID": ...}
printf '%s %s\\n' "$5" "$(cat)" >> "$RK_RECORD"
"""

DRIVER = r"""
import { readFileSync } from "node:fs";
const [plugin, script, record] = process.argv.slice(2);
const hooks = await (await import(plugin)).default.server({});
for (const [type, properties] of JSON.parse(readFileSync(script, "utf8")))
  await hooks.event({ event: { type, properties } });
const end = Date.now() + 20000;
while (!readFileSync(record, "utf8").includes('"sessionID":"done"')) {
  if (Date.now() > end) throw new Error("the plugin's hooks never finished");
  await new Promise((r) => setTimeout(r, 20));
}
"""


def busy(sid):
    return ["session.status", {"sessionID": sid, "status": {"type": "busy"}}]


def retry(sid):
    return ["session.status", {"sessionID": sid, "status": {"type": "retry", "attempt": 1, "message": "x"}}]


def idle(sid):
    return ["session.idle", {"sessionID": sid}]


def error(sid, name, **data):
    return ["session.error", {"sessionID": sid, "error": {"name": name, "data": data}}]


def assistant(sid, **info):
    return ["message.updated", {"sessionID": sid, "info": {"role": "assistant", "time": {"completed": 1}, **info}}]


def api_error(sid, status, message="mock error"):
    return error(sid, "APIError", statusCode=status, message=message, isRetryable=status >= 500)


#: (session, events, the tokens the plugin sends for that session, in order)
SCENARIOS = [
    ("ok", [busy("ok"), busy("ok"), idle("ok")], ["active", "active", "idle"]),
    # a 500 that OpenCode retried, then gave up on: session.idle comes twice after an error
    (
        "e500",
        [busy("e500"), retry("e500"), busy("e500"), api_error("e500", 500), idle("e500"), idle("e500")],
        ["active", "active", "failed", "failed"],
    ),
    ("e400", [busy("e400"), api_error("e400", 400), idle("e400")], ["active", "failed"]),
    ("auth", [busy("auth"), error("auth", "ProviderAuthError", message="bad key"), idle("auth")], ["active", "failed"]),
    (
        "e429",
        [busy("e429"), retry("e429"), busy("e429"), api_error("e429", 429), idle("e429")],
        ["active"] * 2 + ["limited"],
    ),
    (
        "quota",
        [busy("quota"), api_error("quota", 400, "You exceeded your current quota"), idle("quota")],
        ["active", "limited"],
    ),
    # Esc Esc while streaming: MessageAbortedError
    (
        "abort",
        [busy("abort"), error("abort", "MessageAbortedError", message="Aborted"), idle("abort"), idle("abort")],
        ["active", "interrupted", "interrupted"],
    ),
    # Esc Esc before the model answered: no session.error, the assistant message has the error
    (
        "early",
        [
            busy("early"),
            assistant("early", error={"name": "MessageAbortedError", "data": {"message": "Aborted"}}),
            idle("early"),
        ],
        ["active", "interrupted"],
    ),
    ("done-msg", [busy("done-msg"), assistant("done-msg"), idle("done-msg")], ["active", "idle"]),
    # Esc Esc while waiting to retry: no session.error, the retry is never followed by busy
    ("esc-retry", [busy("esc-retry"), retry("esc-retry"), idle("esc-retry")], ["active", "interrupted"]),
    ("retried", [busy("retried"), retry("retried"), busy("retried"), idle("retried")], ["active", "active", "idle"]),
    (
        "reject",
        [
            busy("reject"),
            ["permission.asked", {"sessionID": "reject"}],
            ["permission.replied", {"sessionID": "reject", "reply": "reject"}],
            idle("reject"),
        ],
        ["active", "waiting", "active", "interrupted"],
    ),
    (
        "allow",
        [
            busy("allow"),
            ["permission.asked", {"sessionID": "allow"}],
            ["permission.replied", {"sessionID": "allow", "reply": "once"}],
            busy("allow"),
            idle("allow"),
        ],
        ["active", "waiting", "active", "active", "idle"],
    ),
    # the turn after a failed one ends ok: its busy forgot the error
    (
        "again",
        [busy("again"), api_error("again", 500), idle("again"), busy("again"), idle("again")],
        ["active", "failed", "active", "idle"],
    ),
    # a subagent's error never reaches the root's pane
    (
        "child",
        [
            ["session.created", {"info": {"id": "child", "parentID": "root"}}],
            busy("child"),
            api_error("child", 500),
            idle("child"),
        ],
        [],
    ),
]


def test_the_plugin_ends_each_turn_with_the_token_its_events_call_for(tmp_path):
    node = shutil.which("node")
    assert node, "node is needed to run the OpenCode plugin"
    recorder = tmp_path / "rk"
    recorder.write_text(RECORDER)
    recorder.chmod(0o755)
    record = tmp_path / "record"
    record.write_text("")
    plugin = tmp_path / "rk-plugin.mjs"
    plugin.write_text(opencode_plugin(str(recorder)))
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    script = tmp_path / "events.json"
    script.write_text(json.dumps([e for _, events, _ in SCENARIOS for e in events] + [idle("done")]))
    env = {**os.environ, "TMUX_PANE": "%1", "RK_RECORD": str(record)}
    proc = subprocess.run(
        [node, str(driver), plugin.as_uri(), str(script), str(record)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    sent: dict[str, list[str]] = {}
    for line in record.read_text().splitlines():
        token, payload = line.split(" ", 1)
        sent.setdefault(json.loads(payload)["sessionID"], []).append(token)
    assert sent.pop("done") == ["idle"]
    assert sent == {sid: tokens for sid, _, tokens in SCENARIOS if tokens}

"""rk's OpenCode plugin under OpenCode 2's plugin API, driven under node with a fake
context: `setup(ctx)` subscribes to `ctx.event` and turns its events (payloads in
`data`) into the tokens `rk agent hook` takes; rk is replaced by a recorder.

The rules: one default export `{id, server, setup}` (1.x reads `server`, 2 reads `setup`);
1.18.33's registration-only context (no event domain) does nothing; execution
started/succeeded/failed/interrupted are active/idle/limited|failed/interrupted; a
permission or a form is waiting and its reply active again while the turn runs; a
child session and a "global" form report nothing; and nothing at all is reported from
a process that may not be the pane's (no TMUX_PANE, no controlling terminal, started
as a service), so no state ever lands on another pane."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import termios

import pytest

from rk.agent.setup import opencode_plugin

pytestmark = pytest.mark.shell

RECORDER = """#!/bin/sh
# argv: agent hook --agent opencode <token>; stdin: {"sessionID": ...}
printf '%s %s\\n' "$5" "$(cat)" >> "$RK_RECORD"
"""

DRIVER = r"""
import { readFileSync } from "node:fs";
const [plugin, script] = process.argv.slice(2);
const mod = (await import(plugin)).default;
const out = { id: mod.id, server: typeof mod.server, setup: typeof mod.setup, tui: "tui" in mod };
// OpenCode 1.18.33 calls setup with these domains only (@opencode-ai/plugin v2/promise/context.d.ts)
const registration = { options: {}, agent: {}, aisdk: {}, catalog: {}, command: {}, integration: {},
  plugin: {}, reference: {}, skill: {} };
out.registration = mod.setup(registration) === undefined;
const events = JSON.parse(readFileSync(script, "utf8"));
let ended;
const consumed = new Promise((resolve) => { ended = resolve; });
const ctx = { ...registration, event: { subscribe(...args) {
  out.subscribeArgs = args.length;
  return { async *[Symbol.asyncIterator]() { for (const e of events) yield e; ended(); } };
} } };
const stop = mod.setup(ctx);
out.cleanup = typeof stop;
await consumed;
await stop();
console.log(JSON.stringify(out));
"""


def ev(type_, **data):
    return {"id": f"evt_{type_}", "created": 1, "type": type_, "data": data}


def started(sid):
    return ev("session.execution.started", sessionID=sid)


def succeeded(sid):
    return ev("session.execution.succeeded", sessionID=sid)


def failed(sid, **error):
    return ev("session.execution.failed", sessionID=sid, error=error)


#: (session, events, the tokens rk gets for that session, in order)
SCENARIOS = [
    ("ok", [ev("session.created", sessionID="ok"), started("ok"), succeeded("ok")], ["stamp", "active", "idle"]),
    (
        "e429",
        [started("e429"), failed("e429", type="provider.invalid-request", message="x", status=429)],
        ["active", "limited"],
    ),
    ("rate", [started("rate"), failed("rate", type="provider.rate-limit", message="slow down")], ["active", "limited"]),
    ("quota", [started("quota"), failed("quota", type="provider.quota", message="x")], ["active", "limited"]),
    (
        "said",
        [started("said"), failed("said", type="provider.unknown", message="You exceeded your current quota")],
        ["active", "limited"],
    ),
    (
        "e500",
        [started("e500"), failed("e500", type="provider.internal", message="boom", status=500)],
        ["active", "failed"],
    ),
    (
        "esc",
        [started("esc"), ev("session.execution.interrupted", sessionID="esc", reason="user")],
        ["active", "interrupted"],
    ),
    (
        "down",
        [started("down"), ev("session.execution.interrupted", sessionID="down", reason="shutdown")],
        ["active", "idle"],
    ),
    (
        "perm",
        [
            started("perm"),
            ev("permission.asked", id="per_1", sessionID="perm", action="read", resources=["/x"]),
            ev("permission.replied", sessionID="perm", requestID="per_1", reply="once"),
            succeeded("perm"),
        ],
        ["active", "waiting", "active", "idle"],
    ),
    (
        "reject",
        [
            started("reject"),
            ev("permission.asked", id="per_2", sessionID="reject"),
            ev("permission.replied", sessionID="reject", requestID="per_2", reply="reject"),
            failed("reject", type="permission.rejected", message="rejected"),
        ],
        ["active", "waiting", "active", "interrupted"],
    ),
    (
        "form",
        [
            started("form"),
            ev("form.created", form={"id": "frm_1", "sessionID": "form", "mode": "form", "fields": []}),
            ev("form.replied", id="frm_1", sessionID="form", answer={}),
            succeeded("form"),
        ],
        ["active", "waiting", "active", "idle"],
    ),
    # a reply after the turn ended (it was cut short) does not make the pane active again
    (
        "late",
        [
            started("late"),
            ev("permission.asked", id="per_3", sessionID="late"),
            succeeded("late"),
            ev("permission.replied", sessionID="late", requestID="per_3", reply="reject"),
        ],
        ["active", "waiting", "idle"],
    ),
    ("global", [ev("form.created", form={"id": "frm_2", "sessionID": "global", "mode": "url", "url": "u"})], []),
    (
        "child",
        [
            ev("session.created", sessionID="child", parentID="ok"),
            started("child"),
            failed("child", type="unknown", message="x"),
            ev("permission.asked", id="per_4", sessionID="child"),
        ],
        [],
    ),
    ("kid", [ev("session.created", info={"id": "kid", "parentID": "ok"}), started("kid"), succeeded("kid")], []),
]


def _as_terminal():
    """In the child: make its stdin (a pty) its controlling terminal, as a pane's is."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _drive(tmp_path, events, *, pane: bool = True, terminal: bool = True, argv=()):
    """Run the plugin's setup on `events`: (what the driver saw, [(token, session)] rk got)."""
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
    script.write_text(json.dumps(events))
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env["RK_RECORD"] = str(record)
    if pane:
        env["TMUX_PANE"] = "%1"
    master, slave = os.openpty()
    try:
        proc = subprocess.run(
            [node, str(driver), plugin.as_uri(), str(script), *argv],
            env=env,
            stdin=slave if terminal else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            start_new_session=True,  # no controlling terminal unless _as_terminal gives it one
            preexec_fn=_as_terminal if terminal else None,
        )
    finally:
        os.close(master)
        os.close(slave)
    assert proc.returncode == 0, proc.stderr
    sent = []
    for line in record.read_text().splitlines():
        token, payload = line.split(" ", 1)
        sent.append((token, json.loads(payload)["sessionID"] if payload else None))
    return json.loads(proc.stdout), sent


def test_one_default_export_for_both_plugin_apis_and_setup_maps_each_v2_event(tmp_path):
    seen, sent = _drive(tmp_path, [e for _, events, _ in SCENARIOS for e in events])
    assert seen["id"] == "rk" and seen["server"] == seen["setup"] == "function" and not seen["tui"]
    assert seen["registration"]  # 1.18.33's context without events: setup returns at once
    assert seen["cleanup"] == "function" and seen["subscribeArgs"] == 0
    got: dict[str, list[str]] = {}
    for token, sid in sent:
        got.setdefault(sid, []).append(token)
    assert got == {sid: tokens for sid, _, tokens in SCENARIOS if tokens}


@pytest.mark.parametrize(
    "where",
    [
        pytest.param({"pane": False}, id="no-TMUX_PANE"),
        pytest.param({"terminal": False}, id="no-controlling-terminal"),
        pytest.param({"argv": ("serve", "--service")}, id="a-service"),
    ],
)
def test_a_process_that_may_not_be_the_panes_reports_nothing(tmp_path, where):
    events = [ev("session.created", sessionID="s"), started("s"), succeeded("s")]
    assert _drive(tmp_path, events)[1] == [("stamp", "s"), ("active", "s"), ("idle", "s")]
    assert _drive(tmp_path, events, **where)[1] == []

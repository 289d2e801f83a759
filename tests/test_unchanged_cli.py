"""`--only-if-changed` on the command line and over MCP: the bare flag, `scope`
for wake entries only, `off` on edit, `show`/`--json`, a hand-edited bad value
refusing only its own entry, and `simulate` saying it sees no screens."""

from __future__ import annotations

import json

import pytest
from cli_helpers import T0, json_ok, make_env, run_in, write_private
from ruamel.yaml import YAML
from test_mcp import caller, serve  # noqa: F401 (the fixture is used by name)

from rk.cli.flags import bare_only_if_changed

pytestmark = pytest.mark.shell


def _env(tmp_path):
    return make_env(tmp_path, RK_NOW=str(T0))


def _stored(env, entry_id: str) -> dict:
    from pathlib import Path

    doc = YAML(typ="safe").load((Path(env["RK_STATE_DIR"]) / "default.yaml").read_text())
    return next(e for e in doc["entries"] if e["id"] == entry_id)


def test_a_bare_flag_reads_as_pane_and_leaves_the_next_argument_alone():
    assert bare_only_if_changed(["cron", "add", "--only-if-changed", "hi"]) == [
        "cron",
        "add",
        "--only-if-changed=pane",
        "hi",
    ]
    assert bare_only_if_changed(["--only-if-changed"]) == ["--only-if-changed=pane"]
    assert bare_only_if_changed(["--only-if-changed", "scope"]) == ["--only-if-changed", "scope"]
    assert bare_only_if_changed(["--only-if-changed", "off"]) == ["--only-if-changed", "off"]
    assert bare_only_if_changed(["--", "--only-if-changed"]) == ["--", "--only-if-changed"]
    assert bare_only_if_changed(["cron", "edit", "x", "--only-if-changed", "--json"])[3] == "--only-if-changed=pane"
    assert bare_only_if_changed(["cron", "edit", "x", "--only-if-changed", "bogus"])[3:] == [
        "--only-if-changed",
        "bogus",
    ]


def test_add_show_json_and_edit_off(tmp_path):
    env = _env(tmp_path)
    rid = json_ok(
        run_in(["cron", "add", "--only-if-changed", "status?", "--every", "5m", "--pane", "%1", "--json"], env)
    )["id"]
    assert _stored(env, rid)["only_if_changed"] == "pane"
    assert _stored(env, rid)["payload"] == "status?"  # the prompt was not taken as the flag's value
    shown = run_in(["cron", "show", rid], env)
    assert "if changed: pane (skipped-unchanged when the target had no new turn" in shown.out
    assert json_ok(run_in(["cron", "show", rid, "--json"], env))["only_if_changed"] == "pane"
    (record,) = json_ok(run_in(["cron", "list", "--json"], env))
    assert record["only_if_changed"] == "pane"
    assert "if-changed:pane" in run_in(["cron", "list", "--full"], env).out
    assert run_in(["cron", "edit", rid, "--only-if-changed", "off"], env).code == 0
    assert "only_if_changed" not in _stored(env, rid)
    assert "only_if_changed" not in json_ok(run_in(["cron", "show", rid, "--json"], env))


def test_scope_needs_a_wake_entry(tmp_path):
    env = _env(tmp_path)
    res = run_in(["cron", "add", "hi", "--every", "5m", "--pane", "%1", "--only-if-changed", "scope"], env)
    assert res.code == 2 and "--only-if-changed scope needs --wake-on" in res.err
    woken = ["--wake-on", "agent-state-change", "--only-if-changed", "scope", "--json"]
    rid = json_ok(run_in(["cron", "add", "hi", "--every", "5m", "--pane", "%1", *woken], env))["id"]
    assert _stored(env, rid)["only_if_changed"] == "scope"
    res = run_in(["cron", "edit", rid, "--wake-on", "none"], env)  # scope without the panes it watches
    assert res.code == 2 and "needs --wake-on" in res.err
    assert _stored(env, rid)["wake_on"]["event"] == "agent-state-change"  # nothing written


def test_a_bad_value_is_a_usage_error(tmp_path):
    env = _env(tmp_path)
    res = run_in(["cron", "add", "hi", "--every", "5m", "--pane", "%1", "--only-if-changed=always"], env)
    assert res.code == 2 and res.err.strip().count("\n") == 0 and "must be pane or scope" in res.err
    res = run_in(["cron", "add", "hi", "--every", "5m", "--pane", "%1", "--only-if-changed=off"], env)
    assert res.code == 2  # off is for edit
    rid = json_ok(run_in(["cron", "add", "hi", "--every", "5m", "--pane", "%1", "--json"], env))["id"]
    res = run_in(["cron", "edit", rid, "--only-if-changed", "bogus"], env)
    assert res.code == 2 and "must be pane or scope (or off), not 'bogus'" in res.err
    assert run_in(["cron", "edit", rid, "--only-if-changed"], env).code == 0  # bare on edit: pane


def test_a_hand_edited_bad_value_refuses_only_its_entry(tmp_path):
    env = _env(tmp_path)
    write_private(
        tmp_path / "state" / "default.yaml",
        "entries:\n"
        "- {id: good, schedule: {kind: every, interval: 5m}, target: {kind: pane, pane: '%1'}, payload: a,"
        " only_if_changed: pane}\n"
        "- {id: bad, schedule: {kind: every, interval: 5m}, target: {kind: pane, pane: '%1'}, payload: b,"
        " only_if_changed: sometimes}\n",
    )
    listed = run_in(["cron", "list", "--json"], env)
    assert [r["id"] for r in json.loads(listed.out)["result"]] == ["good"]
    assert "only_if_changed must be pane or scope, not 'sometimes'" in listed.err


def test_simulate_says_it_sees_no_screens(tmp_path):
    env = _env(tmp_path)
    args = ["cron", "simulate", "--every", "5m", "--only-if-changed", "--for", "30m", "--start", str(T0)]
    out = run_in([*args, "--width", "120"], env)
    assert out.code == 0, out.err
    assert "the simulator sees no screens, so it delivers every fire as if the panes changed" in out.out
    assert "fire(s) came with no new turn since the last answer" in out.out
    assert "delivered (skipped-unchanged if the screen shows nothing new)" in out.out
    doc = json_ok(run_in([*args, "--json"], env))
    assert doc["entry"]["only_if_changed"] == "pane" and "sees no screens" in doc["screens"]
    fires = [e for e in doc["events"] if e["kind"] == "line"]
    assert all(e["outcome"] == "delivered" for e in fires)
    assert not fires[0].get("skipped_if_unchanged") and all(e.get("skipped_if_unchanged") for e in fires[1:])


@pytest.mark.tmux
def test_mcp_cron_add_and_edit_take_only_if_changed(caller):  # noqa: F811
    c = caller

    def body(s):
        tools = {t.name: t for t in s.tools()}
        assert "only_if_changed" in tools["cron_add"].input_schema["properties"]
        assert "only_if_changed" in tools["cron_edit"].input_schema["properties"]
        eid = s.call("cron_add", prompt="status?", every="10m", only_if_changed="pane").result()["id"]
        shown = s.call("cron_show", id=eid).result()
        s.call("cron_edit", id=eid, only_if_changed="off").result()
        return shown, s.call("cron_show", id=eid).result()

    shown, after = serve(c["env"], body)
    assert shown["only_if_changed"] == "pane"
    assert "only_if_changed" not in after

"""`rk doctor`'s checks of what `rk agent setup` wrote. Hooks: rk's own, as this rk writes
them, are ok wherever the user's own hooks sit (before or after rk's, in rk's groups or
their own); hooks that run another rk, or an older generation of rk's hooks, fail with
the fix. MCP: an entry that runs another rk fails; one of this rk set up by an older
setup warns; Codex's block is rk's wherever it sits (Codex appends its tables after it)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from rk.agent import setup
from rk.agent.setup.hooks import hooks_drift, install_hooks
from rk.cli.doctor import Level, check_hooks, check_mcp
from rk.cli.environment import Environment

RK = setup.find_rk(argv0="", executable=sys.executable, env={"PATH": ""})
USER_HOOK = {"type": "command", "command": "/home/me/bin/log-event.sh"}


def _env(tmp_path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "PATH": str(tmp_path / "bin"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def _doctor(tmp_path, agent: str, doc: dict) -> dict:
    env = _env(tmp_path)
    path = setup.config_path(agent, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    checks = check_hooks(Environment(environ=env, stdout=io.StringIO(), stderr=io.StringIO()))
    return {c.name: c for c in checks}[f"{agent} hooks"]


def _installed(agent: str) -> dict:
    return install_hooks({}, agent, RK)


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_users_hook_after_rks_is_theirs_and_doctor_says_ok(tmp_path, agent):
    doc = _installed(agent)
    event = next(iter(doc["hooks"]))
    doc["hooks"][event].append({"hooks": [USER_HOOK]})  # after rk's: a re-install would reorder it
    doc["hooks"]["SessionEnd"] = [{"hooks": [USER_HOOK]}, *doc["hooks"].get("SessionEnd", [])]
    check = _doctor(tmp_path, agent, doc)
    assert check.level == Level.OK, check
    assert check.detail == f"run {RK}"


def test_a_users_handler_inside_rks_group_is_theirs_too(tmp_path):
    doc = _installed("claude")
    doc["hooks"]["Stop"][0]["hooks"].append(USER_HOOK)
    doc["hooks"]["Stop"].insert(0, {"matcher": "x", "hooks": [USER_HOOK]})
    assert _doctor(tmp_path, "claude", doc).level == Level.OK


def test_an_old_generation_rk_hook_fails_with_the_fix(tmp_path):
    doc = _installed("claude")
    doc["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "rk agent-hook --agent claude idle"}]})
    check = _doctor(tmp_path, "claude", doc)
    assert check.level == Level.FAIL and "another version" in check.detail and check.fix == "rk agent setup claude"


def test_hooks_of_another_rk_binary_fail_naming_it(tmp_path):
    doc = install_hooks({"hooks": {"Stop": [{"hooks": [USER_HOOK]}]}}, "claude", "/opt/old/bin/rk")
    check = _doctor(tmp_path, "claude", doc)
    assert check.level == Level.FAIL and "runs another rk (/opt/old/bin/rk)" in check.detail


def test_a_missing_rk_hook_fails_and_none_at_all_warns(tmp_path):
    doc = _installed("gemini")
    del doc["hooks"]["AfterAgent"]
    assert _doctor(tmp_path, "gemini", doc).level == Level.FAIL
    none = _doctor(tmp_path, "gemini", {"hooks": {"AfterAgent": [{"hooks": [USER_HOOK]}]}})
    assert none.level == Level.WARN and none.detail.startswith("none in")


def test_the_drift_ignores_order_but_not_content():
    doc = _installed("codex")
    assert hooks_drift(doc, "codex", RK) is None
    doc["hooks"] = dict(reversed(list(doc["hooks"].items())))  # another order of events
    assert hooks_drift(doc, "codex", RK) is None
    doc["hooks"]["Stop"][0]["matcher"] = "something"  # rk's handler under another matcher
    assert hooks_drift(doc, "codex", RK) is not None


def test_the_opencode_plugin_is_checked_by_its_bytes(tmp_path):
    env = _env(tmp_path)
    path = setup.config_path("opencode", env)
    path.parent.mkdir(parents=True)
    path.write_text(setup.opencode_plugin(RK))
    doctor = Environment(environ=env, stdout=io.StringIO(), stderr=io.StringIO())
    assert {c.name: c for c in check_hooks(doctor)}["opencode hooks"].level == Level.OK
    path.write_text(setup.opencode_plugin("/opt/old/bin/rk"))
    assert {c.name: c for c in check_hooks(doctor)}["opencode hooks"].level == Level.FAIL


def _mcp(tmp_path, agent: str) -> dict:
    env = _env(tmp_path)
    out = io.StringIO()
    options = setup.SetupOptions(mcp=True, yes=True)
    stdin = io.StringIO()
    code = setup.run_setup(
        [agent], options, env=env, stdin=stdin, stdout=out, stderr=out, argv0="", executable=sys.executable
    )
    assert code == 0, out.getvalue()
    return env


def _mcp_check(env, agent: str):
    checks = check_mcp(Environment(environ=env, stdout=io.StringIO(), stderr=io.StringIO()))
    return {c.name: c for c in checks}[f"{agent} mcp"]


def test_codexs_own_tables_after_rks_block_leave_it_ok(tmp_path):
    env = _mcp(tmp_path, "codex")
    path = setup.mcp_config_path("codex", env)
    path.write_text(path.read_text() + '\n[projects."/home/me/proj"]\ntrust_level = "trusted"\n')
    assert _mcp_check(env, "codex").level == Level.OK
    path.write_text(path.read_text().replace('approval_mode = "approve"', 'approval_mode = "prompt"', 1))
    check = _mcp_check(env, "codex")
    assert check.level == Level.WARN and "older" in check.detail and check.fix == "rk agent setup codex --mcp"


def test_an_older_claude_set_up_warns_and_another_rk_fails(tmp_path):
    env = _mcp(tmp_path, "claude")
    assert _mcp_check(env, "claude").level == Level.OK
    path = setup.mcp_config_path("claude", env)
    doc = json.loads(path.read_text())
    del doc["projects"]  # set up before the operator's directory was trusted
    path.write_text(json.dumps(doc))
    assert _mcp_check(env, "claude").level == Level.WARN
    doc["mcpServers"]["rk"]["command"] = "/opt/old/bin/rk"
    path.write_text(json.dumps(doc))
    check = _mcp_check(env, "claude")
    assert check.level == Level.FAIL and "runs another rk (/opt/old/bin/rk)" in check.detail


def test_an_option_the_user_adds_to_rks_claude_entry_is_theirs(tmp_path):
    from rk.agent.setup.operator import operator_launch

    env = _mcp(tmp_path, "claude")
    path = setup.mcp_config_path("claude", env)
    doc = json.loads(path.read_text())
    doc["mcpServers"]["rk"]["alwaysLoad"] = True  # rk's tools up front in every pane
    path.write_text(json.dumps(doc))
    assert _mcp_check(env, "claude").level == Level.OK
    _mcp(tmp_path, "claude")  # a re-run keeps it
    assert json.loads(path.read_text())["mcpServers"]["rk"]["alwaysLoad"] is True
    assert "--mcp-config" not in operator_launch(["claude"], env)[0]  # loaded up front already

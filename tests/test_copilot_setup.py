"""`rk agent setup copilot`: rk's hooks in `$COPILOT_HOME/hooks/rk.json` (a file of
rk's own in the folder Copilot loads every `*.json` of), the events they map to
states, and their removal; the MCP server in `$COPILOT_HOME/mcp-config.json`.
The real CLI loading this file is tests/agents/test_real_copilot.py."""

from __future__ import annotations

import json
import subprocess

from rk.agent.setup import copilot
from rk.agent.setup.hooks import install_hooks, wrapper_command
from tests.test_agent_setup import RK, run

HOOKS = {
    ("sessionStart", None): "stamp",
    ("userPromptSubmitted", None): "active",
    ("preToolUse", None): "active",
    ("postToolUse", None): "active",
    ("postToolUseFailure", None): "active",
    ("notification", "permission_prompt|elicitation_dialog"): "waiting",
    ("agentStop", None): "idle",
}


def tokens(doc) -> dict:
    out = {}
    for event, groups in doc["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                assert handler["type"] == "command"
                out[(event, group.get("matcher"))] = (
                    handler["command"].split(" agent hook --agent copilot ")[1].split()[0]
                )
    return out


def test_the_hooks_and_what_each_event_means():
    """agentStop is the turn end; sessionEnd (once per session, not per turn), errorOccurred
    (also each retry of a 429) and permissionRequest (before the rules decide, also for
    calls they allow) would each say a wrong state, so none is hooked."""
    assert tokens(install_hooks({}, "copilot", RK)) == HOOKS


def test_install_under_copilot_home_idempotent_and_removed(tmp_path):
    home = tmp_path / "cphome"
    env = {"COPILOT_HOME": str(home)}
    path = home / "hooks" / "rk.json"
    code, out, _ = run(tmp_path, "copilot", env=env, yes=True)
    assert code == 0 and str(path) in out
    assert tokens(json.loads(path.read_text())) == HOOKS
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    code, out, _ = run(tmp_path, "copilot", env=env, yes=True)
    assert code == 0 and "already up to date" in out
    code, out, _ = run(tmp_path, "copilot", env=env, yes=True, uninstall=True)
    assert code == 0 and "removed 7 rk hook(s)" in out
    assert "hooks" not in json.loads(path.read_text())


def test_default_home_is_dot_copilot_and_dry_run_writes_nothing(tmp_path):
    code, out, _ = run(tmp_path, "copilot", dry_run=True)
    path = tmp_path / "home" / ".copilot" / "hooks" / "rk.json"
    assert code == 0 and f"+++ {path}" in out and '"agentStop"' in out
    assert not path.exists()


def test_a_users_own_hooks_in_rks_file_are_kept(tmp_path):
    path = tmp_path / "home" / ".copilot" / "hooks" / "rk.json"
    path.parent.mkdir(parents=True)
    mine = {"type": "command", "bash": "echo mine"}
    path.write_text(json.dumps({"version": 1, "hooks": {"agentStop": [mine]}}))
    assert run(tmp_path, "copilot", yes=True)[0] == 0
    doc = json.loads(path.read_text())
    assert doc["version"] == 1 and doc["hooks"]["agentStop"][0] == mine and len(doc["hooks"]["agentStop"]) == 2
    assert run(tmp_path, "copilot", yes=True, uninstall=True)[0] == 0
    assert json.loads(path.read_text()) == {"version": 1, "hooks": {"agentStop": [mine]}}


def test_the_pre_tool_hook_never_fails_so_copilot_never_denies_a_tool(tmp_path):
    """Copilot denies the tool when a preToolUse hook fails: rk's wrapper exits 0 when rk
    itself fails (here a script that exits 2, as a denial would)."""
    failing = tmp_path / "rk"
    failing.write_text("#!/bin/sh\nexit 2\n")
    failing.chmod(0o755)
    cmd = wrapper_command(str(failing), "copilot", "active")
    done = subprocess.run(
        ["/bin/sh", "-c", cmd], env={"TMUX_PANE": "%1", "PATH": "/usr/bin:/bin"}, input="{}", text=True
    )
    assert done.returncode == 0


def test_mcp_server_in_mcp_config(tmp_path):
    env = {"COPILOT_HOME": str(tmp_path / "cphome")}
    code, _, _ = run(tmp_path, "copilot", env=env, yes=True, mcp=True)
    doc = json.loads((tmp_path / "cphome" / "mcp-config.json").read_text())
    assert code == 0 and doc["mcpServers"]["rk"] == copilot.mcp_server(RK) | {
        "command": doc["mcpServers"]["rk"]["command"]
    }
    assert doc["mcpServers"]["rk"]["args"] == ["mcp"]


def test_the_hook_finds_copilots_native_binary_by_its_comm(tmp_path):
    """npm's `copilot` is a node loader that runs the native binary, whose comm is its main
    thread's name, MainThread: the hook's walk stops there, at the pane's agent process."""
    from rk.agent import hook_event
    from tests.test_agent_hook import fake_proc

    root = fake_proc(
        tmp_path / "proc",
        {50: ("sh", 40), 40: ("MainThread", 30), 30: ("node", 20), 20: ("bash", 1)},
    )
    assert hook_event.find_agent_pid("copilot", 50, proc_root=root) == 40
    assert hook_event.find_agent_pid("claude", 50, proc_root=root) == 0  # only Copilot's

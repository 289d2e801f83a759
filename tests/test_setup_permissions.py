"""`rk agent setup --mcp` writes the allow rules of the tools rk scopes itself, in every
CLI's own place, and removes exactly those; `rk operator` launches its agent with the
server-wide tools allowed for that one process (rk.agent.setup.permissions)."""

from __future__ import annotations

import io
import json
import sys
import tomllib

import pytest
from conftest import wait_for

from rk.agent import setup
from rk.agent.setup.operator import operator_launch
from rk.agent.setup.permissions import OPERATOR_TOOLS, WORKER_TOOLS
from rk.core.channels.mcpguard import UNATTENDED

#: What a user had before rk: their own rules, which rk must leave as they are.
CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)", "mcp__rk__cron_add"], "deny": ["mcp__rk__send"], "defaultMode": "default"},
    "theme": "dark",
}
OPENCODE = {"permission": {"bash": "ask", "rk_send": "deny"}, "theme": "x"}
GEMINI = {"tools": {"allowed": ["run_shell_command(git status)"]}, "ui": {"theme": "y"}}
CODEX = 'model = "o4"\n\n[mcp_servers.other]\ncommand = "other"\n'


def _env(tmp_path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "PATH": str(tmp_path / "bin"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def _setup(tmp_path, *agents, **flags):
    out, err = io.StringIO(), io.StringIO()
    code = setup.run_setup(
        agents or setup.PROVIDERS,
        setup.SetupOptions(mcp=True, **flags),
        env=_env(tmp_path),
        stdin=io.StringIO(),
        stdout=out,
        stderr=err,
        argv0="",
        executable=sys.executable,
    )
    return code, out.getvalue(), err.getvalue()


def _files(tmp_path):
    home = tmp_path / "home"
    return {
        "claude": home / ".claude" / "settings.json",
        "claude.json": home / ".claude.json",
        "codex": home / ".codex" / "config.toml",
        "gemini": home / ".gemini" / "settings.json",
        "opencode": tmp_path / "xdg" / "opencode" / "opencode.json",
    }


def _seed(tmp_path):
    files = _files(tmp_path)
    for name, content in (
        ("claude", json.dumps(CLAUDE_SETTINGS)),
        ("codex", CODEX),
        ("gemini", json.dumps(GEMINI)),
        ("opencode", json.dumps(OPENCODE)),
    ):
        files[name].parent.mkdir(parents=True, exist_ok=True)
        files[name].write_text(content)
    return files


def _json(path):
    return json.loads(path.read_text())


def test_the_roles_tools_split_into_scoped_ones_and_the_operators_server_tools():
    assert set(WORKER_TOOLS) | set(OPERATOR_TOOLS) == set(UNATTENDED["operator"])
    assert OPERATOR_TOOLS == ("cron_pause", "cron_resume") and not set(OPERATOR_TOOLS) & set(WORKER_TOOLS)


@pytest.mark.shell
def test_setup_mcp_allows_exactly_the_scoped_tools_in_each_clis_own_place(tmp_path):
    files = _seed(tmp_path)
    code, out, err = _setup(tmp_path, yes=True)
    assert code == 0, err

    allow = _json(files["claude"])["permissions"]["allow"]
    assert allow[:2] == ["Bash(ls:*)", "mcp__rk__cron_add"]  # the user's, first and once
    assert sorted(allow[1:]) == sorted(f"mcp__rk__{t}" for t in WORKER_TOOLS)
    assert not {"mcp__rk__cron_pause", "mcp__rk__cron_resume", "mcp__rk"} & set(allow)
    assert _json(files["claude"])["permissions"]["deny"] == ["mcp__rk__send"]  # a deny still wins over allow
    assert "rk" in _json(files["claude.json"])["mcpServers"]

    tools = tomllib.loads(files["codex"].read_text())["mcp_servers"]["rk"]["tools"]
    assert tools == {t: {"approval_mode": "approve"} for t in WORKER_TOOLS}

    gemini = _json(files["gemini"])
    assert gemini["tools"]["allowed"] == ["run_shell_command(git status)", *(f"mcp_rk_{t}" for t in WORKER_TOOLS)]
    assert gemini["ui"] == {"theme": "y"} and "rk" in gemini["mcpServers"]

    permission = _json(files["opencode"])["permission"]
    assert permission["bash"] == "ask" and permission["rk_send"] == "deny"  # the user's choice stays
    assert {k: v for k, v in permission.items() if k not in ("bash", "rk_send")} == {
        **{f"rk_{t}": "allow" for t in WORKER_TOOLS if t != "send"},
        "rk_cron_pause": "ask",  # OpenCode runs every tool unasked unless told
        "rk_cron_resume": "ask",
    }
    assert f"allowed {len(WORKER_TOOLS) - 1} rk tool(s) without a dialog" in out  # claude: cron_add was there


@pytest.mark.shell
def test_setup_mcp_rules_are_idempotent_shown_first_and_removed_exactly(tmp_path):
    files = _seed(tmp_path)
    seeded = {name: path.read_bytes() for name, path in files.items() if path.exists()}
    code, out, _ = _setup(tmp_path, dry_run=True)
    assert code == 0 and '+      "mcp__rk__send"' in out and "mcp_rk_agent_await" in out and "dry run" in out
    assert {name: path.read_bytes() for name, path in files.items() if path.exists()} == seeded

    assert _setup(tmp_path, yes=True)[0] == 0
    written = {name: path.read_bytes() for name, path in files.items()}
    code, out, _ = _setup(tmp_path, yes=True)
    assert code == 0 and "nothing to change" in out
    assert {name: path.read_bytes() for name, path in files.items()} == written

    code, out, err = _setup(tmp_path, uninstall=True, yes=True)
    assert code == 0, err
    claude = _json(files["claude"])
    assert claude == {**CLAUDE_SETTINGS, "permissions": {**CLAUDE_SETTINGS["permissions"], "allow": ["Bash(ls:*)"]}}
    assert files["codex"].read_text() == CODEX
    assert _json(files["gemini"]) == {**GEMINI, "mcpServers": {}}  # the emptied server map, as before rk had rules
    assert _json(files["opencode"]) == {**OPENCODE, "mcp": {"servers": {}}}
    code, out, _ = _setup(tmp_path, uninstall=True, yes=True)
    assert code == 0 and "nothing to change" in out


@pytest.mark.shell
def test_an_uninstall_prunes_only_what_it_emptied(tmp_path):
    assert _setup(tmp_path, "claude", "gemini", "opencode", yes=True)[0] == 0
    assert _setup(tmp_path, "claude", "gemini", "opencode", uninstall=True, yes=True)[0] == 0
    files = _files(tmp_path)
    assert _json(files["claude"]) == {}
    assert _json(files["gemini"]) == {"mcpServers": {}}
    assert _json(files["opencode"]) == {"mcp": {"servers": {}}}


@pytest.mark.shell
def test_a_wider_rule_is_kept_and_said(tmp_path):
    files = _files(tmp_path)
    files["claude"].parent.mkdir(parents=True)
    files["claude"].write_text(json.dumps({"permissions": {"allow": ["mcp__rk"]}}))
    code, out, _ = _setup(tmp_path, "claude", yes=True)
    assert code == 0
    assert "permissions.allow has mcp__rk: it lets every pane run cron_pause, cron_resume without a dialog" in out
    assert _json(files["claude"])["permissions"]["allow"][0] == "mcp__rk"


@pytest.mark.shell
@pytest.mark.parametrize(
    ("agent", "doc", "what"),
    [
        ("claude", {"permissions": {"allow": "mcp__rk"}}, '"permissions.allow" is not a list'),
        ("claude", {"permissions": []}, '"permissions" is not an object'),
        ("gemini", {"tools": {"allowed": {}}}, '"tools.allowed" is not a list'),
        ("opencode", {"permission": "allow"}, '"permission" is not an object'),
    ],
)
def test_rules_of_an_unexpected_shape_stop_the_whole_run(tmp_path, agent, doc, what):
    files = _files(tmp_path)
    files[agent].parent.mkdir(parents=True, exist_ok=True)
    files[agent].write_text(json.dumps(doc))
    code, _, err = _setup(tmp_path, agent, "codex", yes=True)
    assert code == 1 and what in err and "nothing was written" in err
    assert _json(files[agent]) == doc and not files["codex"].exists() and not files["claude.json"].exists()


def test_the_operator_is_launched_with_the_server_tools_allowed_for_it_alone(tmp_path):
    env = _env(tmp_path)
    pause = ",".join(f"mcp__rk__{t}" for t in OPERATOR_TOOLS)
    assert operator_launch(["claude"], env) == (["claude", "--allowedTools", pause], {})
    assert operator_launch(["/opt/bin/claude", "--model", "opus", "--", "hi"], env) == (
        ["/opt/bin/claude", "--model", "opus", "--allowedTools", pause, "--", "hi"],
        {},
    )
    assert operator_launch(["gemini"], env)[0] == ["gemini", "--allowed-tools", "mcp_rk_cron_pause,mcp_rk_cron_resume"]
    # rk registered for Claude: its entry again, loaded up front (not behind Claude's ToolSearch)
    assert _setup(tmp_path, "claude", yes=True)[0] == 0
    argv = operator_launch(["claude", "--", "hi"], env)[0]
    assert argv[:3] == ["claude", "--allowedTools", pause] and argv[3] == "--mcp-config" and argv[-2:] == ["--", "hi"]
    registered = json.loads((tmp_path / "home" / ".claude.json").read_text())["mcpServers"]["rk"]
    assert json.loads(argv[4]) == {"mcpServers": {"rk": {**registered, "alwaysLoad": True}}}
    assert operator_launch(["codex", "--no-daemon"], env) == (["codex", "--no-daemon"], {})  # rk not registered
    assert _setup(tmp_path, "codex", yes=True)[0] == 0
    assert operator_launch(["codex"], env)[0] == [
        "codex",
        *("-c", 'mcp_servers.rk.tools.cron_pause.approval_mode="approve"'),
        *("-c", 'mcp_servers.rk.tools.cron_resume.approval_mode="approve"'),
    ]
    argv, variables = operator_launch(["opencode"], {**env, "OPENCODE_PERMISSION": '{"bash": "ask"}'})
    assert argv == ["opencode"]
    assert json.loads(variables["OPENCODE_PERMISSION"]) == {
        "bash": "ask",
        "rk_cron_pause": "allow",
        "rk_cron_resume": "allow",
    }
    assert operator_launch(["aider", "--yes"], env) == (["aider", "--yes"], {})


@pytest.mark.shell
def test_rk_operator_starts_claude_with_the_flag_and_opencode_with_the_variable(tmp_path, tmux_server):
    import os
    import subprocess

    seen = tmp_path / "seen"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for program in ("claude", "opencode"):
        script = bindir / program
        script.write_text(
            f'#!/bin/sh\nprintf "%s\\n" "$0" "$@" "OPENCODE_PERMISSION=$OPENCODE_PERMISSION" > {seen}.{program}\n'
            "exec sleep 300\n"
        )
        script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW", "OPENCODE_PERMISSION")}
    env.update(RK_STATE_DIR=str(tmp_path / "state"), HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"))

    def operator(program: str) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "rk", "operator", "-L", tmux_server.name, "--command", str(bindir / program)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        first = proc.stdout.splitlines()[0]
        assert first.endswith("(cron_pause and cron_resume run there without a dialog)"), proc.stdout
        wait_for(lambda: (seen.parent / f"seen.{program}").exists(), timeout=10, message=f"{program} started")

    operator("claude")
    lines = (tmp_path / "seen.claude").read_text().splitlines()
    assert lines[1:] == ["--allowedTools", "mcp__rk__cron_pause,mcp__rk__cron_resume", "OPENCODE_PERMISSION="]
    window = tmux_server.run("list-windows", "-a", "-F", "#{window_id} #{@rk_win_role}")
    tmux_server.run("kill-window", "-t", next(w.split()[0] for w in window.splitlines() if w.endswith("operator")))
    operator("opencode")
    lines = (tmp_path / "seen.opencode").read_text().splitlines()
    assert lines[1] == 'OPENCODE_PERMISSION={"rk_cron_pause":"allow","rk_cron_resume":"allow"}'

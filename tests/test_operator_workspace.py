"""`rk operator` starts its agent in rk's own directory, `<state dir>/operator` (private,
never a symbolic link), which `rk agent setup claude --mcp` marks trusted in
`~/.claude.json` (and `--uninstall --mcp` / `rk uninstall` unmark), and which Gemini CLI
is told to trust for that process: no trust screen (whose default in `~` was "No,
exit") stands in the operator's way."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys

import pytest
from conftest import wait_for

from rk.agent import setup
from rk.agent.setup.removal import removal_plans
from rk.agent.setup.workspace import CLAUDE_TRUST, claude_trusts, operator_dir, trust_claude, untrust_claude


def _env(tmp_path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "RK_NOW", "GEMINI_CLI_TRUST_WORKSPACE")
    }
    env.update(RK_STATE_DIR=str(tmp_path / "state"), HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def _fake(tmp_path, program: str) -> str:
    """An agent CLI that writes its working directory and environment, then waits."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / program
    script.write_text(f"#!/bin/sh\n{{ pwd; env; }} > {tmp_path}/seen.{program}\nexec sleep 300\n")
    script.chmod(0o755)
    return str(script)


def _operator(tmux_server, env, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rk", "operator", "-L", tmux_server.name, "--command", command, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _close_operator(tmux_server) -> None:
    out = tmux_server.run("list-windows", "-a", "-F", "#{window_id} #{@rk_win_role}")
    tmux_server.run("kill-window", "-t", next(w.split()[0] for w in out.splitlines() if w.endswith("operator")))


def _setup_mcp(env, uninstall: bool = False) -> None:
    out = io.StringIO()
    code = setup.run_setup(
        ["claude"],
        setup.SetupOptions(mcp=True, yes=True, uninstall=uninstall),
        env=env,
        stdin=io.StringIO(),
        stdout=out,
        stderr=io.StringIO(),
        argv0="",
        executable=sys.executable,
    )
    assert code == 0, out.getvalue()


@pytest.mark.shell
def test_the_operator_starts_in_rks_directory_which_setup_marks_trusted_for_claude(tmp_path, tmux_server):
    env = _env(tmp_path)
    claude = _fake(tmp_path, "claude")
    where = operator_dir(env)

    first = _operator(tmux_server, env, claude)
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)["result"]
    assert result["cwd"] == str(where) and "asks once whether to trust" in result["first_screen"]
    seen = tmp_path / "seen.claude"
    wait_for(seen.exists, timeout=10, message="the operator's claude started")
    assert seen.read_text().splitlines()[0] == str(where)
    assert stat.S_IMODE(os.lstat(where).st_mode) == 0o700

    _setup_mcp(env)
    doc = json.loads((tmp_path / "home" / ".claude.json").read_text())
    assert doc["projects"] == {str(where): {CLAUDE_TRUST: True}} and "rk" in doc["mcpServers"]
    assert claude_trusts(env)
    _close_operator(tmux_server)
    again = json.loads(_operator(tmux_server, env, claude).stdout)["result"]
    assert again["created"] and "first_screen" not in again  # trusted: nothing asked

    _setup_mcp(env, uninstall=True)
    assert not claude_trusts(env)
    assert "projects" not in json.loads((tmp_path / "home" / ".claude.json").read_text())


@pytest.mark.shell
def test_gemini_is_told_to_trust_the_operators_directory_for_that_process_alone(tmp_path, tmux_server):
    env = _env(tmp_path)
    out = _operator(tmux_server, env, _fake(tmp_path, "gemini"))
    assert out.returncode == 0, out.stderr
    assert "first_screen" not in json.loads(out.stdout)["result"]
    seen = tmp_path / "seen.gemini"
    wait_for(seen.exists, timeout=10, message="the operator's gemini started")
    lines = seen.read_text().splitlines()
    assert lines[0] == str(operator_dir(env)) and "GEMINI_CLI_TRUST_WORKSPACE=true" in lines


@pytest.mark.shell
def test_a_symbolic_link_in_the_operators_place_is_refused(tmp_path, tmux_server):
    env = _env(tmp_path)
    (tmp_path / "state").mkdir(mode=0o700)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "state" / "operator")
    out = _operator(tmux_server, env, _fake(tmp_path, "claude"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "symbolic link" in json.loads(out.stdout)["error"]["message"], out.stdout
    assert "operator" not in tmux_server.run("list-windows", "-a", "-F", "#{@rk_win_role}")


def test_the_trust_is_rks_alone_claudes_keys_and_other_projects_stay(tmp_path):
    env = _env(tmp_path)
    key = str(operator_dir(env))
    doc = {"projects": {"/home/me/proj": {CLAUDE_TRUST: True}, key: {"allowedTools": []}}}
    assert trust_claude(doc, env) and not trust_claude(doc, env)
    assert doc["projects"][key] == {"allowedTools": [], CLAUDE_TRUST: True}
    assert untrust_claude(doc, env) and not untrust_claude(doc, env)
    assert doc == {"projects": {"/home/me/proj": {CLAUDE_TRUST: True}, key: {"allowedTools": []}}}
    assert not trust_claude({"projects": []}, env)  # another shape: left alone


def test_a_parent_the_user_trusts_covers_the_operators_directory(tmp_path):
    env = _env(tmp_path)
    path = tmp_path / "home" / ".claude.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"projects": {str(tmp_path): {CLAUDE_TRUST: True}}}))
    assert claude_trusts(env)
    path.write_text("{not json")
    assert not claude_trusts(env)


def test_rk_uninstall_takes_the_trust_out_with_the_server(tmp_path):
    env = _env(tmp_path)
    _setup_mcp(env)
    plans = {str(p.path): p for p in removal_plans(env, None).plans}
    claude_json = plans[str(tmp_path / "home" / ".claude.json")]
    assert claude_json.new is None and "trust" in claude_json.summary  # all it held: deleted

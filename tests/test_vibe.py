"""Mistral Vibe 3.0.2, pure parts: `rk agent setup vibe` (rk's block of `[[hooks]]` tables in
`$VIBE_HOME/hooks.toml`, the user's hooks around it, its removal), its process (`vibe-rs`), the
hook's subagent events, `rk doctor`'s checks and version line."""

from __future__ import annotations

import os
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from rk.agent import hook_event, setup
from rk.agent.hook_event import expected_comms
from rk.agent.setup import toml_block, vibe
from rk.agent.setup.health import Probe, load_problems
from rk.agent.setup.hooks import hooks_state
from rk.agent.setup.plan import SetupError
from rk.agent.setup.removal import removal_plans
from rk.cli.doctor import cli_version
from rk.core.pane.facts import PaneFact
from rk.core.pane.look import needs_look
from rk.core.pane.program import PaneKind, Proc, judge
from rk.core.pane.screen import TESTED_VERSIONS
from rk.core.pane.turn import screen_turn_end
from tests.test_agent_hook import hook_env, option, pane_of, run_hook
from tests.test_agent_setup import RK, run

MINE = '[[hooks]]\nname = "lint"\ntype = "post_agent"\ncommand = "make lint"\n'


def hooks_file(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".vibe" / "hooks.toml"


def rk_hooks(path: Path) -> dict[str, tuple[str, str]]:
    """rk's hooks in the file as Vibe reads it: name → (type, token)."""
    hooks = tomllib.loads(path.read_text())["hooks"]
    return {
        h["name"]: (h["type"], h["command"].split(" agent hook --agent vibe ")[1].split()[0])
        for h in hooks
        if setup.is_rk_command(h["command"])
    }


# -- rk agent setup vibe ----------------------------------------------------------------------


def test_setup_vibe_writes_its_block_beside_the_users_hooks_and_removes_only_it(tmp_path):
    path = hooks_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(MINE)
    code, out, err = run(tmp_path, "vibe", yes=True)
    assert (code, err) == (0, ""), err
    assert "vibe: installed 3 hooks" in out and "restart running Mistral Vibe sessions" in out
    text = path.read_text()
    assert text.startswith(MINE) and text.count(vibe.MARKERS.begin) == 1
    assert rk_hooks(path) == {
        "rk-pre-tool": ("pre_tool", "active"),
        "rk-post-tool": ("post_tool", "active"),
        "rk-post-agent": ("post_agent", "idle"),  # the turn's end
    }
    assert {h["name"]: h.get("timeout") for h in tomllib.loads(text)["hooks"]}["rk-post-agent"] == 10.0
    assert path.stat().st_mode & 0o777 == 0o600
    code, out, err = run(tmp_path, "vibe", yes=True)
    assert (code, "hooks already up to date" in out) == (0, True), out
    code, out, err = run(tmp_path, "vibe", yes=True, uninstall=True)
    assert code == 0, err
    assert path.read_text() == MINE


def test_a_block_in_the_middle_is_replaced_where_it_stands(tmp_path):
    path = hooks_file(tmp_path)
    path.parent.mkdir(parents=True)
    after = '\n[[hooks]]\nname = "after"\ntype = "pre_tool"\ncommand = "true"\n'
    old = '[[hooks]]\nname = "rk-old"\ntype = "post_agent"\ncommand = "x"\n'
    old_block = f"{vibe.MARKERS.begin}\n{old}{vibe.MARKERS.end}\n"
    path.write_text(MINE + "\n" + old_block + after)
    assert run(tmp_path, "vibe", yes=True)[0] == 0
    text = path.read_text()
    assert text.startswith(MINE + "\n" + vibe.MARKERS.begin) and text.endswith(vibe.MARKERS.end + "\n" + after)
    assert "rk-old" not in text and set(rk_hooks(path)) == {"rk-pre-tool", "rk-post-tool", "rk-post-agent"}


def test_a_file_of_rks_hooks_alone_is_deleted_on_removal(tmp_path):
    assert run(tmp_path, "vibe", yes=True)[0] == 0
    path = hooks_file(tmp_path)
    assert path.read_text().startswith(vibe.MARKERS.begin)
    code, out, _ = run(tmp_path, "vibe", yes=True, uninstall=True)
    assert code == 0 and not path.exists(), out
    plans = removal_plans({"HOME": str(tmp_path / "home")}, None)
    assert not plans.errors and [p for p in plans.plans if p.agent == "vibe" and p.changed] == []


def test_rk_uninstall_removes_the_block_and_leaves_config_toml_alone(tmp_path):
    home = tmp_path / "home"
    assert run(tmp_path, "vibe", yes=True)[0] == 0
    config = home / ".vibe" / "config.toml"
    config.write_text('active_model = "devstral"\n')  # TOML: never read as a JSON MCP list
    plans = removal_plans({"HOME": str(home)}, None)
    assert plans.errors == []
    changed = [p for p in plans.plans if p.changed]
    assert [(p.agent, p.path, p.new) for p in changed] == [("vibe", hooks_file(tmp_path), None)]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[[hooks]\nname = 1\n", "not valid TOML"),
        ('hooks = "none"\n', "not a list of tables"),
        ('[[hooks]]\nname = "rk-post-agent"\ntype = "post_agent"\ncommand = "x"\n', "as rk's is"),
        (f"{vibe.MARKERS.begin}\n", "rk's block is broken"),
        (f"{vibe.MARKERS.end}\n{vibe.MARKERS.begin}\n", "rk's block is broken"),
    ],
)
def test_a_file_rk_cannot_edit_safely_is_left_as_it_is(tmp_path, text, why):
    path = hooks_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    code, _, err = run(tmp_path, "vibe", yes=True)
    assert code == 1 and why in err and "nothing was written" in err, err
    assert path.read_text() == text


def test_the_block_is_recognised_as_rks_and_its_drift_said(tmp_path):
    env = {"HOME": str(tmp_path / "home")}
    assert hooks_state("vibe", env, RK) == (False, "has another rk's plugin, or an old one")
    assert run(tmp_path, "vibe", yes=True)[0] == 0
    assert hooks_state("vibe", env, RK) == (True, None)
    present, drift = hooks_state("vibe", env, "/elsewhere/rk")
    assert present and drift


def test_vibe_home_moves_the_file(tmp_path):
    assert vibe.config_path({"HOME": "/h"}) == Path("/h/.vibe/hooks.toml")
    assert vibe.config_path({"HOME": "/h", "VIBE_HOME": "/v"}) == Path("/v/hooks.toml")
    code, _, err = run(tmp_path, "vibe", yes=True, env={"VIBE_HOME": str(tmp_path / "vh")})
    assert code == 0, err
    assert (tmp_path / "vh" / "hooks.toml").exists()


def test_no_mcp_server_is_written_for_vibe(tmp_path):
    config = tmp_path / "home" / ".vibe" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('active_model = "mock"\n')
    for uninstall in (False, True):
        code, out, err = run(tmp_path, "vibe", yes=True, mcp=True, uninstall=uninstall)
        assert (code, err) == (0, ""), err
        assert "rk registers no MCP server with Mistral Vibe" in out
    assert config.read_text() == 'active_model = "mock"\n'


def test_the_toml_block_keeps_the_users_bytes():
    markers = toml_block.Markers("# b", "# e")
    text = "a = 1  # mine\r\n\n[t]\nx = 2\n"
    new = toml_block.with_block(text, "# b\n[[h]]\nk = 1\n# e\n", markers)
    assert new.startswith(text.rstrip("\n")) and toml_block.without(new, markers) == (text.rstrip("\n") + "\n", True)
    with pytest.raises(SetupError):
        toml_block.with_block("h = 1\n", "# b\n[h]\nk = 1\n# e\n", markers)  # not TOML together


# -- the process, the hook, doctor -------------------------------------------------------------


def test_a_pane_running_vibe_rs_is_a_vibe_agent():
    binary = "/home/u/.local/share/uv/tools/mistral-vibe/lib/python3.12/site-packages/vibe/_bin/vibe-rs"
    server = "/home/u/.local/share/uv/tools/mistral-vibe/bin/vibe-app-server"
    table = {
        10: Proc(10, 1, 10, tty=5, tpgid=20, comm="bash", argv=("-bash",)),
        20: Proc(20, 10, 20, tty=5, tpgid=20, comm="vibe-rs", argv=(binary,)),
        30: Proc(30, 20, 20, tty=5, tpgid=20, comm="vibe-app-server", argv=("/usr/bin/python3.12", server)),
    }
    got = judge(table, 10)
    assert got is not None and (got.kind, got.agent, got.pid) == (PaneKind.AGENT, "vibe", 20)


def test_the_hook_looks_for_vibes_app_server():
    assert expected_comms("vibe") == ("vibe-rs",)  # the TUI, above the app server that runs the hooks


def test_a_subagents_event_is_none_of_the_panes():
    assert hook_event.from_subagent("vibe", {"session_id": "s2", "parent_session_id": "s1"})
    assert not hook_event.from_subagent("vibe", {"session_id": "s1", "parent_session_id": None})
    assert not hook_event.from_subagent("claude", {"parent_session_id": "s1"})


@pytest.mark.shell
def test_a_subagents_post_agent_leaves_the_pane_active(tmux_server, tmp_path):
    pane = pane_of(tmux_server)
    env = hook_env(tmux_server, pane, tmp_path, RK_NOW="1751790000")
    run_hook(["--agent", "vibe", "active"], env, tmp_path, {"session_id": "s1", "hook_event_name": "pre_tool"})
    env["RK_NOW"] = "1751790100"
    sub = {"session_id": "s2", "parent_session_id": "s1", "hook_event_name": "post_agent"}
    run_hook(["--agent", "vibe", "idle"], env, tmp_path, sub)
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "active:1751790000"
    assert option(tmux_server, pane, "@rk_pane_agent_session") == "vibe:s1"
    run_hook(["--agent", "vibe", "idle"], env, tmp_path, {**sub, "parent_session_id": None, "session_id": "s1"})
    assert option(tmux_server, pane, "@rk_pane_agent_state") == "idle:1751790100"


def _rk_script(path: Path) -> str:
    path.write_text("#!/bin/sh\n# rk.__main__\n")
    path.chmod(0o755)
    return str(path)


def test_doctor_says_when_vibe_cannot_load_rks_hooks(tmp_path):
    env = {"HOME": str(tmp_path / "home")}
    probe = Probe(env, lambda cli: None, RK)
    assert load_problems("vibe", probe) == []  # no file: nothing to say
    rk = _rk_script(tmp_path / "rk")
    path = hooks_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(vibe.hooks_block(rk))
    assert load_problems("vibe", Probe(env, lambda cli: None, rk)) == []
    os.unlink(rk)
    (missing,) = load_problems("vibe", Probe(env, lambda cli: None, rk))
    assert "does not exist" in missing.detail and missing.fatal
    path.write_text(vibe.hooks_block(RK) + "[[hooks]\n")
    (broken,) = load_problems("vibe", probe)
    assert "not valid TOML" in broken.detail and "loads none of its hooks" in broken.detail


def test_doctor_reads_vibes_version_from_its_dist_info(tmp_path):
    venv = tmp_path / "venv"
    (venv / "lib" / "python3.12" / "site-packages" / "mistral_vibe-3.0.2.dist-info").mkdir(parents=True)
    (venv / "bin").mkdir()
    _rk_script(venv / "bin" / "vibe")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "vibe").symlink_to(venv / "bin" / "vibe")  # pipx, uv tool
    assert cli_version("vibe", {"PATH": str(tmp_path / "bin")}) == ("3.0.2", str(tmp_path / "bin" / "vibe"))
    assert TESTED_VERSIONS["vibe"] == ("3.0.2",)


def test_an_idle_vibe_pane_is_looked_at_no_hook_says_a_turn_began():
    now = 10_000
    idle = PaneFact("%1", state="idle", epoch=now - 3600, pid=42, source="hook", kind=PaneKind.AGENT, agent="vibe")
    assert needs_look(idle, now)
    assert not needs_look(replace(idle, agent="claude"), now)  # its UserPromptSubmit says so
    assert not needs_look(replace(idle, state="limited", epoch=now - 5, reset_at=now + 600), now)


def test_an_esc_read_on_vibes_screen_ends_the_turn_interrupted():
    text = (Path(__file__).parent / "fixtures" / "screens" / "vibe" / "interrupted.txt").read_text()
    assert screen_turn_end("active", "idle", text) == "interrupted"
    idle = (Path(__file__).parent / "fixtures" / "screens" / "vibe" / "idle_fresh.txt").read_text()
    assert screen_turn_end("active", "idle", idle) == "ok"

"""`rk agent setup`: the JSON merge (idempotent, only rk's entries), uninstall,
refusals (malformed files, non-terminals), file modes, dry-run, which agents,
the rk path, the OpenCode plugin (run under node), and the end-to-end test:
the real installer, then the installed command run the way Claude Code runs it
against a private tmux server."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rk.agent import setup

REPO = Path(__file__).resolve().parent.parent
RK = str(Path(sys.executable).parent / "rk")  # the console script `make venv` installs


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(tmp_path, *agents, env=None, stdin=None, **flags):
    env = {"HOME": str(tmp_path / "home"), "PATH": str(tmp_path / "bin"), **(env or {})}
    out, err = io.StringIO(), io.StringIO()
    code = setup.run_setup(
        agents,
        setup.SetupOptions(**flags),
        env=env,
        stdin=stdin if stdin is not None else io.StringIO(),
        stdout=out,
        stderr=err,
        argv0="",
        executable=sys.executable,
    )
    return code, out.getvalue(), err.getvalue()


def settings(tmp_path) -> Path:
    return tmp_path / "home" / ".claude" / "settings.json"


def commands(doc, event):
    return [h["command"] for g in doc["hooks"].get(event, []) for h in g["hooks"]]


def rk_groups(doc):
    return {
        (event, g.get("matcher")): [h["command"] for h in g["hooks"]]
        for event, groups in doc["hooks"].items()
        for g in groups
        if any(setup.is_rk_command(h.get("command")) for h in g["hooks"])
    }


# -- pure parts ----------------------------------------------------------------


def test_wrapper_command_shape():
    assert setup.wrapper_command("/opt/rk/bin/rk", "claude", "idle") == (
        '/bin/sh -c \'[ -n "$TMUX_PANE" ] || exit 0; "/opt/rk/bin/rk" agent hook --agent claude idle'
        " 2>/dev/null || true'"
    )


@pytest.mark.shell
def test_wrapper_is_a_noop_outside_tmux(tmp_path):
    marker = tmp_path / "ran"
    fake = tmp_path / "rk"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 3\n")
    fake.chmod(0o755)
    command = setup.wrapper_command(str(fake), "claude", "idle")
    env = {k: v for k, v in os.environ.items() if k != "TMUX_PANE"}
    assert subprocess.run(["/bin/sh", "-c", command], env=env).returncode == 0
    assert not marker.exists()
    # inside tmux it runs rk, and a failing rk still exits 0 (never blocks the agent)
    assert subprocess.run(["/bin/sh", "-c", command], env={**env, "TMUX_PANE": "%1"}).returncode == 0
    assert marker.exists()


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        (setup.wrapper_command("/x/rk", "codex", "active"), True),
        ("/usr/local/bin/rk agent-hook idle", True),  # generation 2 (Go run-kit)
        ('tmux set-option -p @rk_agent_state "idle:$(date +%s)"', True),  # generation 1
        ("~/bin/notify-me --agent hook", False),
        ("say agent hooks are fun", False),
        ("", False),
        (None, False),
    ],
)
def test_rk_owned_markers(command, ours):
    assert setup.is_rk_command(command) is ours


@pytest.mark.shell
def test_config_paths(tmp_path):
    env = {"HOME": "/h"}
    assert setup.config_path("claude", env) == Path("/h/.claude/settings.json")
    assert setup.config_path("codex", env) == Path("/h/.codex/hooks.json")
    assert setup.config_path("codex", {**env, "CODEX_HOME": "/c"}) == Path("/c/hooks.json")
    assert setup.config_path("gemini", env) == Path("/h/.gemini/settings.json")
    assert setup.config_path("opencode", env) == Path("/h/.config/opencode/plugins/rk.js")
    assert setup.config_path("opencode", {**env, "XDG_CONFIG_HOME": "/x"}) == Path("/x/opencode/plugins/rk.js")


# -- install / merge -------------------------------------------------------------------

USER_DOC = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-send done"}]},
            {"hooks": [{"type": "command", "command": 'tmux set-option -p @rk_agent_state "idle:$(date +%s)"'}]},
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": "guard.sh"},
                    {"type": "command", "command": "/old/rk agent-hook active"},
                ],
            },
        ],
        "SubagentStop": [{"hooks": [{"type": "command", "command": "/old/rk agent hook --agent claude idle"}]}],
        "PreCompact": [],
    },
}


def write_settings(tmp_path, doc, mode=0o644) -> Path:
    path = settings(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=4))
    path.chmod(mode)
    return path


@pytest.mark.shell
def test_install_merges_into_existing_settings_and_replaces_older_rk_entries(tmp_path):
    path = write_settings(tmp_path, USER_DOC)
    code, out, err = run(tmp_path, "claude", yes=True)
    assert (code, err) == (0, "")
    doc = json.loads(path.read_text())
    assert doc["model"] == "opus" and doc["permissions"] == {"allow": ["Bash(ls:*)"]}
    # user hooks untouched, in place
    assert doc["hooks"]["Stop"][0] == {"hooks": [{"type": "command", "command": "notify-send done"}]}
    assert doc["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}
    assert doc["hooks"]["PreCompact"] == []
    # every old-generation rk entry is gone, including from events we no longer hook
    assert "SubagentStop" not in doc["hooks"]
    assert not any("agent-hook" in c or "@rk_agent_state" in c for e in doc["hooks"] for c in commands(doc, e))
    w = lambda token: setup.wrapper_command(RK, "claude", token)  # noqa: E731
    assert rk_groups(doc) == {
        ("SessionStart", None): [w("stamp")],
        ("UserPromptSubmit", None): [w("active")],
        ("PreToolUse", None): [w("active")],
        ("PostToolUse", None): [w("active")],
        ("PostToolUseFailure", None): [w("active")],
        ("PermissionRequest", None): [w("waiting")],
        ("Elicitation", None): [w("waiting")],
        ("ElicitationResult", None): [w("active")],
        ("Notification", "elicitation_dialog|agent_needs_input"): [w("waiting")],
        ("Notification", "idle_prompt"): [w("idle-notice")],
        ("Stop", None): [w("idle")],
        ("StopFailure", None): [w("failed")],
    }
    assert "claude: installed 12 hooks" in out


@pytest.mark.shell
def test_second_run_changes_nothing_and_says_so(tmp_path):
    path = write_settings(tmp_path, USER_DOC)
    assert run(tmp_path, "claude", yes=True)[0] == 0
    first = path.read_bytes()
    code, out, err = run(tmp_path, "claude", yes=True)
    assert (code, err) == (0, "")
    assert "already up to date" in out and "nothing to change" in out
    assert path.read_bytes() == first
    doc = json.loads(first)
    assert len(rk_groups(doc)) == len(setup.HOOKS["claude"]) == 12  # no duplicates


@pytest.mark.shell
def test_new_rk_path_replaces_the_old_entries_in_place(tmp_path):
    path = write_settings(tmp_path, {})
    assert run(tmp_path, "claude", yes=True)[0] == 0
    doc = json.loads(path.read_text())
    doc2 = setup.install_hooks(doc, "claude", "/new/place/rk")
    assert len(rk_groups(doc2)) == 12
    assert all('"/new/place/rk"' in c for cs in rk_groups(doc2).values() for c in cs)


@pytest.mark.shell
def test_rerunning_setup_upgrades_an_older_install_in_place(tmp_path):
    """What the previous rk wrote (six Claude events, the permission Notification
    mapped to waiting) becomes today's mapping: no duplicates, nothing stale left,
    the user's own hooks where they were."""
    w = lambda token: setup.wrapper_command(RK, "claude", token)  # noqa: E731
    older = {
        "hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": w("stamp")}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": w("active")}]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]},
                {"hooks": [{"type": "command", "command": w("active")}]},
            ],
            "Notification": [
                {
                    "matcher": "permission_prompt|elicitation_dialog|agent_needs_input",
                    "hooks": [{"type": "command", "command": w("waiting")}],
                },
                {"matcher": "idle_prompt", "hooks": [{"type": "command", "command": w("idle")}]},
            ],
            "Stop": [{"hooks": [{"type": "command", "command": w("idle")}]}],
        }
    }
    path = write_settings(tmp_path, older)
    code, out, err = run(tmp_path, "claude", yes=True)
    assert (code, err) == (0, "") and "claude: installed 12 hooks" in out
    doc = json.loads(path.read_text())
    assert rk_groups(doc) == rk_groups(setup.install_hooks({}, "claude", RK))
    assert ("Notification", "permission_prompt|elicitation_dialog|agent_needs_input") not in rk_groups(doc)
    assert doc["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}
    again = run(tmp_path, "claude", yes=True)
    assert again[0] == 0 and "already up to date" in again[1]


def test_gemini_handlers_carry_a_short_name():
    """Gemini draws a running hook's name; without one it draws the whole command line."""
    doc = setup.install_hooks({}, "gemini", RK)
    handlers = [h for groups in doc["hooks"].values() for g in groups for h in g["hooks"]]
    assert handlers and all(h.get("name") == "rk" for h in handlers)
    claude = setup.install_hooks({}, "claude", RK)
    assert all("name" not in h for groups in claude["hooks"].values() for g in groups for h in g["hooks"])


def test_mixed_group_keeps_the_users_handler():
    doc = {
        "hooks": {
            "Stop": [
                {
                    "matcher": "x",
                    "hooks": [
                        {"type": "command", "command": "mine"},
                        {"type": "command", "command": "/r/rk agent hook --agent claude idle"},
                    ],
                }
            ]
        }
    }
    out, removed = setup.strip_rk_hooks(doc)
    assert removed == 1
    assert out == {"hooks": {"Stop": [{"matcher": "x", "hooks": [{"type": "command", "command": "mine"}]}]}}


# -- uninstall ------------------------------------------------------------------------


@pytest.mark.shell
def test_uninstall_removes_only_rk_entries_and_prunes_what_it_emptied(tmp_path):
    path = write_settings(tmp_path, USER_DOC)
    assert run(tmp_path, "claude", yes=True)[0] == 0
    code, out, err = run(tmp_path, "claude", yes=True, uninstall=True)
    assert (code, err) == (0, "")
    doc = json.loads(path.read_text())
    assert doc == {
        "model": "opus",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
            "PreCompact": [],  # the user's own empty list is not ours to prune
        },
    }
    assert "removed 12 rk hook(s)" in out


@pytest.mark.shell
def test_uninstall_drops_the_hooks_object_it_emptied(tmp_path):
    path = write_settings(tmp_path, {"theme": "dark"})
    assert run(tmp_path, "claude", yes=True)[0] == 0
    assert run(tmp_path, "claude", yes=True, uninstall=True)[0] == 0
    assert json.loads(path.read_text()) == {"theme": "dark"}
    code, out, _ = run(tmp_path, "claude", yes=True, uninstall=True)
    assert code == 0 and "nothing to change" in out


@pytest.mark.shell
def test_uninstall_without_names_covers_every_agent_and_needs_no_binary(tmp_path):
    env = {"CODEX_HOME": str(tmp_path / "codex")}
    assert run(tmp_path, "claude", "codex", "opencode", env=env, yes=True)[0] == 0
    code, out, _ = run(tmp_path, env=env, yes=True, uninstall=True)  # PATH has none of them
    assert code == 0
    assert "rk agent hook" not in settings(tmp_path).read_text()
    assert json.loads((tmp_path / "codex" / "hooks.json").read_text()) == {}
    assert not (tmp_path / "home/.config/opencode/plugins/rk.js").exists()
    assert "gemini: no rk hooks" in out


# -- refusals, modes, dry-run, consent ------------------------------------------------------


@pytest.mark.shell
@pytest.mark.parametrize("content", ['{"hooks": {', "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}'])
def test_malformed_config_is_refused_and_nothing_is_written(tmp_path, content):
    path = settings(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    before = path.stat()
    env = {"CODEX_HOME": str(tmp_path / "codex")}
    code, _out, err = run(tmp_path, "codex", "claude", env=env, yes=True)
    assert code == 1
    assert str(path) in err and err.count("\n") == 1
    assert path.read_text() == content and path.stat().st_mtime_ns == before.st_mtime_ns
    assert not (tmp_path / "codex").exists()  # the other agent of the run was not written either
    code, _, _ = run(tmp_path, "claude", yes=True, uninstall=True)
    assert code == 1 and path.read_text() == content


@pytest.mark.shell
def test_empty_file_is_an_empty_object(tmp_path):
    path = settings(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("  \n")
    assert run(tmp_path, "claude", yes=True)[0] == 0
    assert len(rk_groups(json.loads(path.read_text()))) == 12


@pytest.mark.shell
def test_written_with_mode_0600(tmp_path):
    code, _, _ = run(tmp_path, "claude", yes=True)
    assert code == 0
    assert stat.S_IMODE(settings(tmp_path).stat().st_mode) == 0o600
    other = tmp_path / "other"
    path = write_settings(other, {"x": 1}, mode=0o644)
    assert run(other, "claude", yes=True)[0] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.shell
def test_a_symlinked_settings_file_stays_a_symlink(tmp_path):
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text('{"a": 1}')
    link = settings(tmp_path)
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    assert run(tmp_path, "claude", yes=True)[0] == 0
    assert link.is_symlink()
    assert len(rk_groups(json.loads(real.read_text()))) == 12


@pytest.mark.shell
def test_dry_run_prints_a_diff_and_writes_nothing(tmp_path):
    code, out, err = run(tmp_path, "claude", dry_run=True, yes=True)
    assert (code, err) == (0, "")
    assert not settings(tmp_path).exists()
    assert not settings(tmp_path).parent.exists()
    assert out.startswith("--- /dev/null\n+++ " + str(settings(tmp_path)))
    assert '+            "command": "/bin/sh -c' in out and "dry run: nothing written" in out
    path = write_settings(tmp_path, USER_DOC)
    before = path.read_bytes()
    code, out, _ = run(tmp_path, "claude", dry_run=True)
    assert code == 0 and path.read_bytes() == before
    assert re.search(r"^-.*agent-hook active", out, re.M)  # the old entry's removal is shown


@pytest.mark.shell
def test_non_terminal_without_yes_is_refused(tmp_path):
    code, _out, err = run(tmp_path, "claude")
    assert code == 2
    assert "--yes" in err and err.count("\n") == 1
    assert not settings(tmp_path).exists()


@pytest.mark.shell
def test_terminal_asks_and_honours_the_answer(tmp_path):
    code, out, err = run(tmp_path, "claude", stdin=Tty("n\n"))
    assert code == 1 and "aborted" in err and "[y/N]" in out
    assert not settings(tmp_path).exists()
    code, out, err = run(tmp_path, "claude", stdin=Tty(""))  # EOF: no
    assert code == 1 and not settings(tmp_path).exists()
    code, out, err = run(tmp_path, "claude", stdin=Tty("y\n"))
    assert (code, err) == (0, "")
    assert "+++ " in out  # the diff was shown before asking
    assert len(rk_groups(json.loads(settings(tmp_path).read_text()))) == 12


@pytest.mark.shell
def test_unknown_agent_is_a_usage_error(tmp_path):
    code, _, err = run(tmp_path, "claude", "aider", yes=True)
    assert code == 2 and "aider" in err
    assert not settings(tmp_path).exists()


# -- which agents ----------------------------------------------------------------------------


@pytest.mark.shell
def test_without_names_installs_only_agents_on_path(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "codex").write_text("#!/bin/sh\n")
    (bindir / "codex").chmod(0o755)
    env = {"CODEX_HOME": str(tmp_path / "codex")}
    code, out, err = run(tmp_path, env=env, yes=True)
    assert (code, err) == (0, "")
    doc = json.loads((tmp_path / "codex" / "hooks.json").read_text())
    assert set(doc["hooks"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreModelRequest",
        "PreToolUse",
        "PostToolUse",
        "PermissionRequest",
        "PostModelRequest",
        "Interrupt",
        "Stop",
        "SessionEnd",
    }
    assert not settings(tmp_path).exists()
    assert "claude: skipped" in out and "gemini: skipped" in out and "opencode: skipped" in out
    assert "/hooks" in out  # codex needs its entries trusted


@pytest.mark.shell
def test_no_agent_on_path_installs_nothing(tmp_path):
    code, out, _ = run(tmp_path, yes=True)
    assert code == 0 and "nothing to install" in out
    assert not (tmp_path / "home").exists()


@pytest.mark.shell
def test_named_agent_installs_without_its_binary(tmp_path):
    code, _, _ = run(tmp_path, "gemini", yes=True)
    assert code == 0
    doc = json.loads((tmp_path / "home/.gemini/settings.json").read_text())
    assert rk_groups(doc).keys() == {
        ("SessionStart", None),
        ("BeforeAgent", None),
        ("BeforeModel", None),
        ("BeforeTool", None),
        ("AfterTool", None),
        ("Notification", "ToolPermission"),
        ("AfterAgent", None),
        ("SessionEnd", None),
    }


# -- the rk path --------------------------------------------------------------------------


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


RK_SCRIPT = "#!/usr/bin/python3\nimport sys\nfrom rk.__main__ import main\nsys.exit(main())\n"


@pytest.mark.shell
def test_find_rk_prefers_the_script_that_is_running(tmp_path):
    mine = script(tmp_path / "a" / "rk", RK_SCRIPT)
    venv = script(tmp_path / "venv" / "bin" / "rk", RK_SCRIPT)
    assert setup.find_rk(str(mine), str(venv.parent / "python"), {"PATH": ""}) == str(mine)
    assert setup.find_rk("/x/rk/__main__.py", str(venv.parent / "python"), {"PATH": ""}) == str(venv)
    on_path = script(tmp_path / "p" / "rk", RK_SCRIPT)
    assert setup.find_rk("", str(tmp_path / "none" / "python"), {"PATH": str(on_path.parent)}) == str(on_path)


@pytest.mark.shell
def test_find_rk_skips_another_tool_named_rk(tmp_path):
    other = script(tmp_path / "go" / "rk", "#!/bin/sh\necho run-kit\n")
    with pytest.raises(setup.SetupError, match="cannot find"):
        setup.find_rk(str(other), str(tmp_path / "none" / "python"), {"PATH": str(other.parent)})


@pytest.mark.shell
@pytest.mark.parametrize("bad", ["it's", 'a"b', "$HOME", "a`b", "a\\b"])
def test_find_rk_rejects_paths_a_hook_cannot_carry(tmp_path, bad):
    path = script(tmp_path / bad / "rk", RK_SCRIPT)
    with pytest.raises(setup.SetupError, match="contains"):
        setup.find_rk(str(path), str(tmp_path / "none" / "python"), {"PATH": ""})


@pytest.mark.shell
def test_missing_rk_is_an_operational_error(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    code = setup.run_setup(
        ["claude"],
        setup.SetupOptions(yes=True),
        env={"HOME": str(tmp_path), "PATH": ""},
        stdin=io.StringIO(),
        stdout=out,
        stderr=err,
        argv0="",
        executable=str(tmp_path / "python"),
    )
    assert code == 1 and "cannot find" in err.getvalue()
    assert not (tmp_path / ".claude").exists()


# -- OpenCode -------------------------------------------------------------------------------


def opencode_path(tmp_path) -> Path:
    return tmp_path / "home" / ".config" / "opencode" / "plugins" / "rk.js"


@pytest.mark.shell
def test_opencode_plugin_install_idempotence_and_uninstall(tmp_path):
    code, out, _ = run(tmp_path, "opencode", yes=True)
    assert code == 0
    path = opencode_path(tmp_path)
    text = path.read_text()
    assert text.startswith("// rk agent hook plugin")
    assert f"const RK = {json.dumps(RK)};" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    code, out, _ = run(tmp_path, "opencode", yes=True)
    assert code == 0 and "nothing to change" in out and path.read_text() == text
    assert run(tmp_path, "opencode", yes=True, uninstall=True)[0] == 0
    assert not path.exists()


@pytest.mark.shell
def test_opencode_foreign_plugin_is_left_byte_exact(tmp_path):
    path = opencode_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({});\n")
    code, _, err = run(tmp_path, "opencode", yes=True)
    assert code == 1 and "not written by rk" in err
    code, out, _ = run(tmp_path, "opencode", yes=True, uninstall=True)
    assert code == 0 and "left as is" in out
    assert path.read_text() == "export const Mine = async () => ({});\n"


NODE_DRIVER = r"""
import { execFileSync } from "node:child_process";

const [plugin, sock, pane] = process.argv.slice(2);
const mod = await import(plugin);
const hooks = await mod.default.server({});
const env = { ...process.env };
delete env.TMUX; delete env.TMUX_PANE;
const show = (opt) => execFileSync("tmux", ["-S", sock, "show-options", "-pqv", "-t", pane, opt], { env }).toString().trim();
async function until(opt, pred) {
  const end = Date.now() + 10000;
  for (;;) {
    const v = show(opt);
    if (pred(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting on ${opt}: ${v}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const S = "@rk_pane_agent_state", ID = "@rk_pane_agent_session";
const send = (type, properties) => hooks.event({ event: { type, properties } });
const out = { pid: process.pid };
await send("session.created", { info: { id: "ses_root" } });
out.stamp = await until(ID, (v) => v === "opencode:ses_root");
out.boot = await until(S, (v) => v.startsWith("idle:"));
await send("session.status", { sessionID: "ses_root", status: { type: "busy" } });
out.busy = await until(S, (v) => v.startsWith("active:"));
await send("session.created", { info: { id: "ses_child", parentID: "ses_root" } });
await send("session.idle", { sessionID: "ses_child" });
await send("permission.updated", { sessionID: "ses_root" });
out.waiting = await until(S, (v) => v.startsWith("waiting:"));
out.afterChild = show(ID);
await send("session.idle", { sessionID: "ses_root" });
out.idle = await until(S, (v) => v.startsWith("idle:"));
console.log(JSON.stringify(out));
"""


@pytest.mark.shell
def test_opencode_plugin_drives_the_pane_under_node(tmux_server, tmp_path):
    node = shutil.which("node")
    assert node, "node is needed to run the OpenCode plugin"
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    assert run(tmp_path, "opencode", env=env, yes=True)[0] == 0
    plugin = tmp_path / "cfg" / "opencode" / "plugins" / "rk.js"
    mjs = tmp_path / "rk-plugin.mjs"  # node needs the ESM extension outside an opencode project
    shutil.copy(plugin, mjs)
    driver = tmp_path / "driver.mjs"
    driver.write_text(NODE_DRIVER)
    pane = tmux_server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()
    penv = {**os.environ, "TMUX": f"{tmux_server.path},1,0", "TMUX_PANE": pane, "RK_STATE_DIR": str(tmp_path / "state")}
    penv["RK_NOW"] = "1751790000"
    proc = subprocess.run(
        [node, str(driver), mjs.as_uri(), str(tmux_server.path), pane],
        env=penv,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    pid = out["pid"]  # the hook's parent is node itself: the agent pid
    assert out["stamp"] == "opencode:ses_root"
    assert out["boot"] == f"idle:1751790000:{pid}"
    assert out["busy"] == f"active:1751790000:{pid}"
    assert out["waiting"] == f"waiting:1751790000:{pid}"
    assert out["afterChild"] == "opencode:ses_root"  # the child session never stamped or wrote
    assert out["idle"] == f"idle:1751790000:{pid}"


# -- end to end: the real installer, the installed command, a real tmux server ------------------


def fake_claude(directory: Path) -> Path:
    """A process named `claude` that runs the hook command as Claude Code does
    (`/bin/sh -c <command>`, payload on stdin), so the pid walk has an agent to find."""
    path = directory / "claude"
    path.write_text(
        f"#!{sys.executable}\nimport subprocess, sys\n"
        "sys.exit(subprocess.run(['/bin/sh', '-c', sys.argv[1]]).returncode)\n"
    )
    path.chmod(0o755)
    return path


@pytest.mark.shell
def test_end_to_end_claude(tmux_server, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "RK_STATE_DIR": str(tmp_path / "state")}
    env.pop("TMUX", None)
    env.pop("TMUX_PANE", None)
    assert Path(RK).exists(), "the rk console script is missing: run `make venv`"
    setup_argv = [sys.executable, "-m", "rk", "agent", "setup", "claude", "--yes"]
    first = subprocess.run(
        setup_argv, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL
    )
    assert first.returncode == 0, first.stderr
    path = home / ".claude" / "settings.json"
    written = path.read_bytes()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = json.loads(written)

    def command_for(event, subject=None):
        found = [
            h["command"]
            for g in doc["hooks"][event]
            if subject is None or re.search(g.get("matcher") or "", subject)
            for h in g["hooks"]
        ]
        assert len(found) == 1, (event, subject, found)
        assert f'"{RK}" agent hook --agent claude' in found[0]  # the absolute console script
        return found[0]

    pane = tmux_server.run("display-message", "-p", "-t", "main", "#{pane_id}").strip()
    agent = fake_claude(tmp_path)
    hook_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMUX": f"{tmux_server.path},{os.getpid()},0",
        "TMUX_PANE": pane,
        "RK_STATE_DIR": str(tmp_path / "state"),
    }
    session = "6f0d9e2a-1c3b-4f7e-9a2d-8b5c4e1f0a37"

    def fire(command, event, now, **payload):
        """Run the installed command as Claude Code would; the pid of the `claude` process."""
        body = json.dumps(
            {
                "session_id": session,
                "transcript_path": f"/x/{session}.jsonl",
                "cwd": str(tmp_path),
                "hook_event_name": event,
                **payload,
            }
        )
        proc = subprocess.Popen(
            [str(agent), command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**hook_env, "RK_NOW": str(now)},
        )
        out, err = proc.communicate(body, timeout=30)
        assert (proc.returncode, out, err) == (0, "", "")
        return proc.pid

    def show(name):
        return tmux_server.run("show-options", "-pqv", "-t", pane, name).strip()

    pid = fire(command_for("SessionStart"), "SessionStart", 1751790000, source="startup")
    assert show("@rk_pane_agent_session") == f"claude:{session}"
    assert show("@rk_pane_agent_state") == f"idle:1751790000:{pid}"
    pid = fire(command_for("UserPromptSubmit"), "UserPromptSubmit", 1751790010, prompt="hello")
    assert show("@rk_pane_agent_state") == f"active:1751790010:{pid}"
    active = show("@rk_pane_agent_state")
    fire(command_for("SessionStart"), "SessionStart", 1751790015, source="compact", session_id="after-compact")
    assert show("@rk_pane_agent_state") == active  # compaction mid-turn leaves `active`
    assert show("@rk_pane_agent_session") == "claude:after-compact"
    pid = fire(command_for("PreToolUse"), "PreToolUse", 1751790020, tool_name="Bash", tool_input={"command": "ls"})
    assert show("@rk_pane_agent_state") == f"active:1751790020:{pid}"
    pid = fire(
        command_for("PermissionRequest"),
        "PermissionRequest",
        1751790030,
        tool_name="Bash",
        tool_input={"command": "touch x"},
    )  # the dialog is up: waiting at once
    assert show("@rk_pane_agent_state") == f"waiting:1751790030:{pid}"
    pid = fire(command_for("PostToolUse"), "PostToolUse", 1751790033, tool_name="Bash")  # approved, the tool ran
    assert show("@rk_pane_agent_state") == f"active:1751790033:{pid}"
    pid = fire(command_for("Stop"), "Stop", 1751790040, stop_hook_active=False)
    assert show("@rk_pane_agent_state") == f"idle:1751790040:{pid}"
    pid = fire(command_for("UserPromptSubmit"), "UserPromptSubmit", 1751790045, prompt="over the limit")
    pid = fire(
        command_for("StopFailure"),
        "StopFailure",
        1751790046,
        error="rate_limit",
        last_assistant_message="API Error: Request rejected (429)",
    )  # only StopFailure ends such a turn
    assert show("@rk_pane_agent_state") == f"limited:1751790046:{pid}"
    limited = show("@rk_pane_agent_state")
    fire(command_for("Notification", "idle_prompt"), "Notification", 1751790106, notification_type="idle_prompt")
    assert show("@rk_pane_agent_state") == limited  # the idle notice 60 s later keeps the limit
    pid = fire(command_for("StopFailure"), "StopFailure", 1751790047, error="server_error")
    assert show("@rk_pane_agent_state") == f"idle:1751790047:{pid}"
    pid = fire(command_for("UserPromptSubmit"), "UserPromptSubmit", 1751790050, prompt="again")
    pid = fire(
        command_for("Notification", "idle_prompt"), "Notification", 1751790100, notification_type="idle_prompt"
    )  # the backstop after an Esc-interrupt (no Stop)
    assert show("@rk_pane_agent_state") == f"idle:1751790100:{pid}"
    assert show("@rk_agent_state") == f"idle:1751790100:{pid}"

    second = subprocess.run(
        setup_argv, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL
    )
    assert second.returncode == 0, second.stderr
    assert "nothing to change" in second.stdout
    assert path.read_bytes() == written

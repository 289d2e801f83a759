"""`rk doctor` on an installed rk hook or plugin that its agent CLI does not load
(`rk.agent.setup.health`): each case is one line with the fix, for every CLI. A tmp HOME,
fake binaries where a version matters; node imports OpenCode's plugin; no real CLI."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from rk.agent import setup
from rk.agent.setup import health
from rk.agent.setup.agents import PROVIDERS
from rk.agent.setup.health import LOAD_CHECKS
from rk.agent.setup.hooks import install_hooks
from rk.cli.doctor import Level, check_hooks
from rk.cli.environment import Environment

RK = setup.find_rk(argv0="", executable=sys.executable, env={"PATH": ""})
NODE = shutil.which("node")


def _env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    path = [str(bin_dir)] + ([os.path.dirname(NODE)] if NODE else [])
    return {"HOME": str(tmp_path / "home"), "PATH": os.pathsep.join(path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def _write(env: dict[str, str], agent: str, text: str) -> Path:
    path = setup.config_path(agent, env)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _checks(env: dict[str, str], name: str) -> list:
    checks = check_hooks(Environment(environ=env, stdout=io.StringIO(), stderr=io.StringIO()))
    return [c for c in checks if c.name == name]


def _one(env: dict[str, str], name: str):
    found = _checks(env, name)
    assert len(found) == 1, found
    return found[0]


def _fake_binary(env: dict[str, str], name: str, version: str) -> None:
    path = Path(env["PATH"].split(os.pathsep)[0]) / name
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)


def test_every_cli_rk_sets_up_has_a_load_checker():
    assert set(LOAD_CHECKS) == set(PROVIDERS)


def test_settings_that_do_not_parse_fail_with_the_fix(tmp_path):
    env = _env(tmp_path)
    path = _write(env, "claude", '{"hooks": {')
    check = _one(env, "claude hooks")
    assert check.level == Level.FAIL and "not valid JSON" in check.detail and "loads none" in check.detail
    assert check.fix == f"fix {path}"


def test_gemini_settings_rk_cannot_parse_only_warn_as_gemini_reads_comments(tmp_path):
    env = _env(tmp_path)
    _write(env, "gemini", "// mine\n" + json.dumps(install_hooks({}, "gemini", RK)))
    check = _one(env, "gemini hooks")
    assert check.level == Level.WARN and "not plain JSON" in check.detail


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "copilot", "qwen"])
def test_hooks_whose_rk_script_is_missing_or_not_executable_fail(tmp_path, agent):
    env = _env(tmp_path)
    gone = str(tmp_path / "old" / "rk")
    _write(env, agent, json.dumps(install_hooks({}, agent, gone)))
    check = _one(env, f"{agent} hooks")
    assert check.level == Level.FAIL and f"runs another rk ({gone}), which does not exist" in check.detail
    assert check.fix == f"rk agent setup {agent}"
    Path(gone).parent.mkdir()
    Path(gone).write_text("#!/bin/sh\n")  # there, but not executable
    check = _one(env, f"{agent} hooks")
    assert check.level == Level.FAIL and "not an executable file" in check.detail


def test_claudes_disable_all_hooks_fails(tmp_path):
    env = _env(tmp_path)
    path = _write(env, "claude", json.dumps({**install_hooks({}, "claude", RK), "disableAllHooks": True}))
    check = _one(env, "claude hooks")
    assert check.level == Level.FAIL and "disableAllHooks" in check.detail and str(path) in check.fix
    _write(env, "claude", json.dumps(install_hooks({}, "claude", RK)))
    assert _one(env, "claude hooks").level == Level.OK


def test_qwens_disable_all_hooks_fails(tmp_path):
    env = _env(tmp_path)
    path = _write(env, "qwen", json.dumps({**install_hooks({}, "qwen", RK), "disableAllHooks": True}))
    check = _one(env, "qwen hooks")
    assert check.level == Level.FAIL and "disableAllHooks" in check.detail and str(path) in check.fix
    _write(env, "qwen", json.dumps(install_hooks({}, "qwen", RK)))
    assert _one(env, "qwen hooks").level == Level.OK


def test_copilots_disable_all_hooks_in_its_config_fails(tmp_path):
    env = _env(tmp_path)
    path = _write(env, "copilot", json.dumps(install_hooks({}, "copilot", RK)))
    assert _one(env, "copilot hooks").level == Level.OK
    config = path.parent.parent / "config.json"
    config.write_text(json.dumps({"disableAllHooks": True}))
    check = _one(env, "copilot hooks")
    assert check.level == Level.FAIL and "disableAllHooks" in check.detail and str(config) in check.fix


def test_claudes_managed_settings_that_allow_only_their_own_hooks_fail(tmp_path, monkeypatch):
    env = _env(tmp_path)
    _write(env, "claude", json.dumps(install_hooks({}, "claude", RK)))
    managed = tmp_path / "managed-settings.json"
    monkeypatch.setattr(health, "MANAGED_CLAUDE", (managed,))
    managed.write_text(json.dumps({"allowManagedHooksOnly": False}))
    assert _one(env, "claude hooks").level == Level.OK
    managed.write_text(json.dumps({"allowManagedHooksOnly": True}))
    check = _one(env, "claude hooks")
    assert check.level == Level.FAIL and str(managed) in check.detail


@pytest.mark.parametrize(
    "switches, words",
    [({"enabled": False}, "hooksConfig.enabled"), ({"disabled": ["rk"]}, "hooksConfig.disabled")],
)
def test_gemini_hooks_switched_off_fail(tmp_path, switches, words):
    env = _env(tmp_path)
    _write(env, "gemini", json.dumps({**install_hooks({}, "gemini", RK), "hooksConfig": switches}))
    check = _one(env, "gemini hooks")
    assert check.level == Level.FAIL and words in check.detail
    _write(env, "gemini", json.dumps({**install_hooks({}, "gemini", RK), "hooksConfig": {"disabled": ["other"]}}))
    assert _one(env, "gemini hooks").level == Level.OK


def _trust(env: dict[str, str], extra: str = "", skip: int = 0) -> Path:
    """config.toml trusting rk's Codex hooks (all but the first `skip`), keyed as Codex 0.171.0 writes
    them when its "Trust all and continue" is chosen: `<hooks.json>:<event in snake case>:<group>:<handler>`."""
    hooks_json = setup.config_path("codex", env)
    doc = json.loads(hooks_json.read_text())
    lines = []
    for event in doc["hooks"]:
        snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in event).lstrip("_")
        lines.append(f'[hooks.state."{hooks_json}:{snake}:0:0"]\ntrusted_hash = "sha256:00"\n{extra}')
    config = setup.mcp_config_path("codex", env)
    config.write_text("\n".join(lines[skip:]))
    return config


def test_codex_hooks_not_trusted_warn_and_disabled_ones_fail(tmp_path):
    env = _env(tmp_path)
    _write(env, "codex", json.dumps(install_hooks({}, "codex", RK)))
    total = len(setup.HOOKS["codex"])
    trust = _one(env, "codex hook trust")
    assert trust.level == Level.WARN and f"trusts 0 of rk's {total} hooks" in trust.detail and "/hooks" in trust.fix
    assert _one(env, "codex hooks").level == Level.OK  # the hooks themselves are this rk's
    _trust(env, skip=1)
    assert f"trusts {total - 1} of rk's {total}" in _one(env, "codex hook trust").detail
    _trust(env)
    assert _checks(env, "codex hook trust") == []
    _trust(env, extra="enabled = false\n")
    check = _one(env, "codex hooks")
    assert check.level == Level.FAIL and f"disables {total} of rk's {total} hooks" in check.detail


def test_codex_with_its_hooks_feature_off_fails(tmp_path):
    env = _env(tmp_path)
    _write(env, "codex", json.dumps(install_hooks({}, "codex", RK)))
    config = _trust(env)
    config.write_text(config.read_text() + "\n[features]\ncodex_hooks = false\n")
    check = _one(env, "codex hooks")
    assert check.level == Level.FAIL and "codex_hooks" in check.detail


#: rk's plugin before it served OpenCode 2: one named export, OpenCode 1 only.
V1_PLUGIN = setup.opencode.OPENCODE_HEADER + "\nexport const RkAgentState = async () => ({ event: async () => {} });\n"


@pytest.mark.shell
def test_a_version_1_plugin_beside_opencode_2_fails(tmp_path):
    env = _env(tmp_path)
    path = _write(env, "opencode", V1_PLUGIN)
    _fake_binary(env, "opencode2", "2.0.32")
    check = _one(env, "opencode hooks")
    assert check.level == Level.FAIL and "OpenCode 1 plugin; OpenCode 2" in check.detail and str(path) in check.detail
    assert check.fix == "rk agent setup opencode"


@pytest.mark.shell
def test_an_opencode_of_version_2_is_opencode_2(tmp_path):
    env = _env(tmp_path)
    _write(env, "opencode", V1_PLUGIN)
    _fake_binary(env, "opencode", "2.2.0")
    assert "OpenCode 2" in _one(env, "opencode hooks").detail
    _fake_binary(env, "opencode", "1.18.33")  # OpenCode 1 reads it: only the drift is said
    assert "OpenCode 2" not in _one(env, "opencode hooks").detail


@pytest.mark.shell
def test_kilos_plugin_is_checked_as_opencodes(tmp_path):
    from rk.agent.setup.kilo import kilo_plugin

    env = _env(tmp_path)
    path = _write(env, "kilo", kilo_plugin(RK))
    assert [c.level for c in _checks(env, "kilo hooks")] == [Level.OK]
    path.write_text(kilo_plugin(RK).replace("function setup(ctx) {", "function setup(ctx) {{"))
    check = _one(env, "kilo hooks")
    assert check.level == Level.FAIL and "Kilo Code does not load it" in check.detail
    assert check.fix == "rk agent setup kilo"


@pytest.mark.shell
def test_the_current_plugin_beside_opencode_2_warns_what_it_can_see(tmp_path):
    env = _env(tmp_path)
    _write(env, "opencode", setup.opencode_plugin(RK))
    assert [c.level for c in _checks(env, "opencode hooks")] == [Level.OK]
    _fake_binary(env, "opencode2", "2.0.32")
    check = _one(env, "opencode plugin under OpenCode 2")
    assert check.level == Level.WARN and "shared service" in check.detail
    assert _one(env, "opencode hooks").level == Level.OK


@pytest.mark.shell
@pytest.mark.parametrize(
    "edit, words",
    [
        (
            lambda t: t.replace('export default { id: "rk", server, setup };', 'export default { id: "rk", server };'),
            "without setup()",
        ),
        (
            lambda t: t.replace('export default { id: "rk", server, setup };', "export default { server, setup };"),
            "without an id",
        ),
        (
            lambda t: t.replace('export default { id: "rk", server, setup };', 'export default { id: "rk", setup };'),
            "without server()",
        ),
        (lambda t: t.replace("export default {", "export default { tui: () => {},"), "with tui"),
        (lambda t: t.replace("function setup(ctx) {", "function setup(ctx) {{"), "does not import"),
    ],
)
def test_a_plugin_node_cannot_load_fails(tmp_path, edit, words):
    assert NODE, "node is needed to import the plugin"
    env = _env(tmp_path)
    text = setup.opencode_plugin(RK)
    assert edit(text) != text
    _write(env, "opencode", edit(text))
    check = _one(env, "opencode hooks")
    assert check.level == Level.FAIL and words in check.detail and "OpenCode does not load it" in check.detail
    assert check.fix == "rk agent setup opencode"


@pytest.mark.shell
def test_a_plugin_whose_rk_script_is_gone_fails(tmp_path):
    env = _env(tmp_path)
    gone = str(tmp_path / "old" / "rk")
    _write(env, "opencode", setup.opencode_plugin(gone))
    check = _one(env, "opencode hooks")
    assert check.level == Level.FAIL and f"runs another rk ({gone}), which does not exist" in check.detail

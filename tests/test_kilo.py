"""Kilo Code CLI (`kilo`, npm `@kilocode/cli`): rk's OpenCode plugin under Kilo's names
(setup with consent, a foreign file left alone, removal), the pane's program (npm's node
launcher and its native `.kilo`), Esc Esc, doctor's package, and the screen read only with
the pane's program as the hint (Kilo draws OpenCode's TUI)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rk.agent.hook_event import expected_comms
from rk.agent.setup import agents
from rk.agent.setup.kilo import kilo_plugin
from rk.agent.setup.operator import operator_launch
from rk.agent.setup.permissions import OPERATOR_TOOLS, RULES, wanted
from rk.cli.doctor import PACKAGES
from rk.core.cost.turn_timeout import INTERRUPT_KEYS
from rk.core.pane.program import PaneKind, Program, judge
from rk.core.pane.screen import LAYOUTS, TESTED_VERSIONS, classify
from tests.agents import harness
from tests.cli_helpers import make_env
from tests.test_agent_setup import RK, run
from tests.test_program import ROOT, fg_job
from tests.test_screen_doctor import doctor_checks, fake_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "screens" / "kilo"
NOW = 1764597600


def plugin_path(tmp_path) -> Path:
    return tmp_path / "home" / ".config" / "kilo" / "plugins" / "rk.js"


def test_the_plugin_is_opencodes_reporting_as_kilo():
    text = kilo_plugin("/opt/rk")
    assert text.startswith("// rk agent hook plugin: written by `rk agent setup kilo`")
    assert '["agent", "hook", "--agent", "kilo", token]' in text
    assert '"opencode"' not in text and "--agent opencode" not in text
    assert 'const RK = "/opt/rk";' in text
    assert 'export default { id: "rk", server, setup };' in text  # Kilo 7.7 loads its `server`


def test_kilo_is_a_cli_setup_knows():
    env = {"HOME": "/h"}
    assert agents.config_path("kilo", env) == Path("/h/.config/kilo/plugins/rk.js")
    assert agents.mcp_config_path("kilo", {**env, "XDG_CONFIG_HOME": "/x"}) == Path("/x/kilo/kilo.json")
    assert agents.BINARIES["kilo"] == "kilo"


@pytest.mark.shell
def test_setup_shows_a_diff_and_writes_only_with_consent(tmp_path):
    code, out, _ = run(tmp_path, "kilo", dry_run=True)
    assert code == 0 and "+// rk agent hook plugin" in out
    assert not plugin_path(tmp_path).exists()
    code, out, _ = run(tmp_path, "kilo", yes=True)
    path = plugin_path(tmp_path)
    assert code == 0 and path.read_text() == kilo_plugin(RK)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    code, out, _ = run(tmp_path, "kilo", yes=True)
    assert code == 0 and "nothing to change" in out
    assert run(tmp_path, "kilo", yes=True, uninstall=True)[0] == 0
    assert not path.exists()


@pytest.mark.shell
def test_a_foreign_plugin_file_is_never_replaced_nor_removed(tmp_path):
    path = plugin_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({});\n")
    code, _, err = run(tmp_path, "kilo", yes=True)
    assert code == 1 and "not written by rk" in err
    code, out, _ = run(tmp_path, "kilo", yes=True, uninstall=True)
    assert code == 0 and "left as is" in out
    assert path.read_text() == "export const Mine = async () => ({});\n"


@pytest.mark.shell
def test_the_mcp_server_goes_into_kilo_json(tmp_path):
    code, _, err = run(tmp_path, "kilo", yes=True, mcp=True)
    assert code == 0, err
    doc = json.loads((tmp_path / "home" / ".config" / "kilo" / "kilo.json").read_text())
    assert doc["mcp"]["rk"] == {"type": "local", "command": [RK, "mcp"], "enabled": True}
    # Kilo, like OpenCode, runs every tool unasked unless told: the operator's tools ask
    assert doc["permission"] == wanted(RULES["kilo"]) and "ask" in doc["permission"].values()
    assert run(tmp_path, "kilo", yes=True, mcp=True, uninstall=True)[0] == 0
    left = json.loads((tmp_path / "home" / ".config" / "kilo" / "kilo.json").read_text())
    assert "rk" not in left.get("mcp", {}) and not left.get("permission"), left


def test_the_pane_runs_kilo_through_npms_node_launcher():
    """npm's `kilo` is a node script that spawns the native binary as `.kilo` (seen in a real pane)."""
    tree = fg_job(
        (200, ROOT, ("node", "/home/u/.npm-global/bin/kilo"), "node"),
        (201, 200, ("/home/u/.npm-global/lib/node_modules/@kilocode/cli/bin/.kilo",), ".kilo"),
    )
    assert judge(tree, ROOT) == Program(PaneKind.AGENT, 201, ".kilo", ".kilo", "kilo")
    assert ".kilo" in expected_comms("kilo")  # the hook's process check finds the agent


def test_esc_esc_interrupts_as_in_opencode():
    assert INTERRUPT_KEYS["kilo"] == ("Escape", "Escape")


def test_doctor_and_the_suite_know_the_version():
    assert PACKAGES["kilo"] == "@kilocode/cli"
    assert TESTED_VERSIONS["kilo"] == (harness.KILO_VERSION,) == ("7.7.7",)


@pytest.mark.parametrize(("version", "level"), [("7.7.7", "ok"), ("7.8.1", "warn")])
def test_doctor_reads_kilos_version_from_its_npm_package(tmp_path, version, level):
    """npm links `kilo` to @kilocode/cli/bin/kilo: the package.json beside it names the version."""
    package = tmp_path / "npm" / "node_modules" / "@kilocode" / "cli"
    script = fake_cli(package / "bin", "kilo", "0.0.0")
    (package / "package.json").write_text(json.dumps({"name": "@kilocode/cli", "version": version}))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(script, bindir / "kilo")
    check = doctor_checks(dict(make_env(tmp_path), PATH=f"{bindir}:/usr/bin:/bin"))["kilo version"]
    assert check["level"] == level and f"{version} (" in check["detail"], check


def test_without_the_hint_kilos_home_placeholder_is_never_an_empty_composer():
    """Read as OpenCode's screen (the pane's program unknown), Kilo's grey example is a draft: rk holds."""
    home = (FIXTURES / "idle_home.ansi").read_text()
    unhinted = classify(home, LAYOUTS, now=NOW, since=NOW, zone=None, hint="")  # type: ignore[arg-type]
    assert unhinted.draft
    hinted = classify(home, LAYOUTS, now=NOW, since=NOW, zone=None, hint="kilo")  # type: ignore[arg-type]
    assert (hinted.agent, hinted.state, hinted.draft) == ("kilo", "idle", "")


def test_the_operators_kilo_runs_pause_and_resume_unasked():
    """As OpenCode's: the grants go in KILO_PERMISSION (read by Kilo 7.7.7), the user's own kept."""
    argv, variables = operator_launch(["kilo", "--continue"], {"KILO_PERMISSION": '{"bash": "ask"}'})
    assert argv == ["kilo", "--continue"]
    assert json.loads(variables["KILO_PERMISSION"]) == {
        "bash": "ask",
        **{RULES["kilo"].name(t): "allow" for t in OPERATOR_TOOLS},
    }


@pytest.mark.shell
def test_setup_with_no_names_configures_kilo_when_it_is_on_path(tmp_path):
    code, out, _ = run(tmp_path, yes=True)
    assert code == 0 and "nothing to install: none of" in out and "kilo" in out
    fake_cli(tmp_path / "bin", "kilo", "7.7.7")
    code, out, _ = run(tmp_path, yes=True)
    assert code == 0 and "opencode: skipped" in out
    assert plugin_path(tmp_path).read_text() == kilo_plugin(RK)

"""`rk doctor` on the agent CLIs: a version rk is not tested with, and an agent pane whose
screen rk cannot read, each one warning line (and the versions the suite runs are the ones
rk says it is tested with)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from agents import harness
from cli_helpers import make_env, run_in
from conftest import wait_for

from rk.core.pane.screen import TESTED_VERSIONS


def fake_cli(bindir: Path, name: str, prints: str) -> Path:
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / name
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' '{prints}'\n")
    script.chmod(0o755)
    return script


def doctor_checks(env: dict[str, str]) -> dict[str, dict]:
    res = run_in(["doctor", "--json"], env)
    return {c["name"]: c for c in res.json()["result"]}


def test_the_suite_runs_the_versions_rk_says_it_is_tested_with():
    assert set(TESTED_VERSIONS["claude"]) == set(harness.CLAUDE_VERSIONS)
    assert TESTED_VERSIONS["codex"] == (harness.CODEX_VERSION,)
    assert TESTED_VERSIONS["gemini"] == (harness.GEMINI_VERSION,)
    assert TESTED_VERSIONS["opencode"] == (harness.OPENCODE_VERSION,)


def test_doctor_warns_once_about_an_agent_cli_of_an_untested_version(tmp_path):
    bindir = tmp_path / "bin"
    fake_cli(bindir, "claude", "9.9.9 (Claude Code)")
    fake_cli(bindir, "gemini", "no version here")
    # an npm install: the package.json beside the resolved binary names the version (the CLI is not run)
    package = tmp_path / "npm" / "node_modules" / "@openai" / "codex"
    script = fake_cli(package / "bin", "codex.js", "6.6.6")
    (package / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": TESTED_VERSIONS["codex"][0]}))
    os.symlink(script, bindir / "codex")
    env = dict(make_env(tmp_path), PATH=f"{bindir}:/usr/bin:/bin")
    checks = doctor_checks(env)
    claude = checks["claude version"]
    assert claude["level"] == "warn" and "claude 9.9.9" in claude["detail"], claude
    assert all(v in claude["detail"] for v in TESTED_VERSIONS["claude"])
    assert checks["codex version"]["level"] == "ok" and checks["codex version"]["detail"].startswith("0.171.0 ")
    gemini = checks["gemini version"]
    assert gemini["level"] == "warn" and "could not read" in gemini["detail"], gemini
    assert "opencode version" not in checks  # not installed: nothing to say
    human = run_in(["doctor"], env).out.splitlines()
    assert len([line for line in human if line.startswith("warn  claude version:")]) == 1


def test_doctor_is_quiet_about_a_tested_version(tmp_path):
    bindir = tmp_path / "bin"
    for version in TESTED_VERSIONS["claude"]:
        fake_cli(bindir, "claude", f"{version} (Claude Code)")
        env = dict(make_env(tmp_path), PATH=f"{bindir}:/usr/bin:/bin")
        assert doctor_checks(env)["claude version"]["level"] == "ok"


@pytest.mark.tmux
def test_doctor_warns_about_an_agent_pane_whose_screen_no_layout_reads(tmp_path, tmux_server):
    """A pane running `claude` whose screen is none of Claude's: one warning naming it; once
    it shows Claude's composer, none."""
    bindir = tmp_path / "bin"
    drawn = tmp_path / "screen.txt"
    drawn.write_text("a menu rk has never seen\n  > pick one\n")
    bindir.mkdir()
    (bindir / "claude").symlink_to("/bin/sh")  # a process named claude (a script would be `sh`)
    pane = tmux_server.run("list-panes", "-t", "main", "-F", "#{pane_id}").split()[0]
    loop = f"while :; do clear; cat {drawn}; sleep 0.2; done"
    tmux_server.run("respawn-pane", "-k", "-t", pane, f"{bindir / 'claude'} -c '{loop}'")
    wait_for(lambda: "never seen" in tmux_server.capture(pane), message="the fake claude's screen")
    env = dict(make_env(tmp_path), TMUX_TMPDIR=os.environ["TMUX_TMPDIR"], PATH=f"{bindir}:/usr/bin:/bin")
    env.pop("RK_NOW", None)
    res = run_in(["doctor", "--json", "-L", tmux_server.name], env)
    found = [c for c in res.json()["result"] if c["name"] == f"screens on {tmux_server.name}"]
    assert len(found) == 1 and found[0]["level"] == "warn" and f"{pane} (claude)" in found[0]["detail"], found
    bar = "─" * 40
    drawn.write_text(f"{bar}\n❯ \n{bar}\n  ? for shortcuts\n")
    wait_for(lambda: "for shortcuts" in tmux_server.capture(pane), message="Claude's composer")
    res = run_in(["doctor", "--json", "-L", tmux_server.name], env)
    assert [c for c in res.json()["result"] if c["name"].startswith("screens on")] == []

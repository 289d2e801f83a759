"""The real-agent suite fails loudly when it cannot install the agent CLIs: it
never skips to green (`make test-agents`)."""

from __future__ import annotations

import pytest
from agents import harness


def test_no_npm_is_an_install_error_not_a_skip(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm here
    with pytest.raises(harness.AgentInstallError, match="npm not found"):
        harness.ensure_agents(tmp_path / "cache")


def test_a_failing_npm_is_an_install_error_with_its_output(tmp_path, monkeypatch):
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir()
    npm.write_text("#!/bin/sh\necho 'npm ERR! network unreachable' >&2\nexit 1\n")
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{npm.parent}:/usr/bin:/bin")
    with pytest.raises(harness.AgentInstallError, match="network unreachable"):
        harness.ensure_agents(tmp_path / "cache")

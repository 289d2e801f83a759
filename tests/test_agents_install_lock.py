"""Parallel workers of the real-agent suite (`make test-agents` runs on several) never
install into one cache at once: each install runs under the cache's lock."""

from __future__ import annotations

import threading

import pytest
from agents import harness


def test_two_installs_into_one_cache_never_overlap(tmp_path, monkeypatch):
    log = tmp_path / "npm.log"
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir()
    # an npm that takes a while and fails: each caller then runs its own install
    npm.write_text(f"#!/bin/sh\necho start >> {log}\nsleep 0.3\necho end >> {log}\nexit 1\n")
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{npm.parent}:/usr/bin:/bin")
    errors: list[BaseException] = []

    def install() -> None:
        with pytest.raises(harness.AgentInstallError) as e:
            harness.ensure_agents(tmp_path / "cache")
        errors.append(e.value)

    workers = [threading.Thread(target=install) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    assert len(errors) == 3
    assert log.read_text().split() == ["start", "end"] * 3  # one at a time

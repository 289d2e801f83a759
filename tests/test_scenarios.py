"""Every case of every scenario file in specs/scenarios/ must hold."""

from __future__ import annotations

import pytest
from scenario_runner import load_cases, run_case

CASES = load_cases()


def test_there_are_scenarios_for_every_rule_file():
    files = {c.file for c in CASES}
    for name in (
        "every.yaml",
        "cron.yaml",
        "cron-dst.yaml",
        "backoff.yaml",
        "backoff-regressions.yaml",
        "wake.yaml",
        "wake-from.yaml",
        "compose.yaml",
        "deliver.yaml",
        "replace.yaml",
        "placeholders.yaml",
        "caps.yaml",
        "caps-dst.yaml",
        "caps-due.yaml",
        "dormant.yaml",
    ):
        assert name in files, f"missing scenario file {name}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_scenario(case):
    problems = run_case(case)
    assert not problems, "\n".join(problems)

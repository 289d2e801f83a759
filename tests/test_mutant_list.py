"""Every mutant in tools/mutants.py still applies: its file exists and its snippet
occurs exactly once, so a refactor that moves or rewords a rule cannot silently turn
a mutant into a no-op (`make mutants` would then report it killed by nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import mutants  # noqa: E402


@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=lambda m: m.name)
def test_each_mutant_applies_exactly_once(mutant):
    path = ROOT / mutant.path
    assert path.exists(), mutant.path
    assert path.read_text().count(mutant.old) == 1, (
        f"{mutant.path}: the snippet occurs {path.read_text().count(mutant.old)} times"
    )
    assert mutant.old != mutant.new


def test_the_names_are_unique():
    names = [m.name for m in mutants.MUTANTS]
    assert len(names) == len(set(names))

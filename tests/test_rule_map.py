"""Every rule one step away: each name in specs/cron.md's "Where each rule lives"
and each path in the module map (docs/internals.md) exists.

A name that a refactor moved or renamed fails here, so the map cannot go stale.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOKEN = re.compile(r"`([^`]+)`")
DOTTED = re.compile(r"^rk(\.\w+)+$")


def _table(path: Path, heading: str) -> list[list[str]]:
    text = path.read_text()
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        if line.startswith("| ") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:]  # the header


def _names() -> list[str]:
    names = []
    for row in _table(ROOT / "specs" / "cron.md", "## Where each rule lives"):
        for cell in row[1:]:
            names += [t for t in TOKEN.findall(cell) if "." in t and " " not in t and not t.endswith("()")]
    return names


def resolve(name: str) -> object:
    """The object a dotted name names: the longest importable module, then attributes
    (a dataclass field without a class-level default counts as present)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            fields = getattr(obj, "__dataclass_fields__", {}) if isinstance(obj, type) else {}
            if attr in fields and not hasattr(obj, attr):
                obj = fields[attr]
                continue
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def test_the_rule_table_names_enough_rules():
    rows = _table(ROOT / "specs" / "cron.md", "## Where each rule lives")
    assert len(rows) >= 50, rows
    for needle in ("MCP", "notification", "caps", "budget", "nothing changed", "who a pane is"):
        assert any(needle in row[0] for row in rows), needle


@pytest.mark.parametrize("name", _names())
def test_each_name_in_the_rule_table_exists(name):
    assert DOTTED.match(name) or name.startswith("rk/"), f"{name}: write the full dotted name (rk.…)"
    if name.startswith("rk/"):
        assert "<" in name or (ROOT / name).exists(), name
        return
    try:
        resolve(name)
    except (AttributeError, ModuleNotFoundError) as exc:
        pytest.fail(f"{name} does not resolve: {exc}")


def test_each_path_in_the_module_map_exists():
    text = (ROOT / "docs" / "internals.md").read_text()
    section = text[text.index("## Development") :]
    rows = [line for line in section.splitlines() if line.lstrip().startswith("| ")]
    paths = set()
    for row in rows:
        package = where = ""  # a row's package; `where`: the sub-package a `name/` token opened
        for token in TOKEN.findall(row):
            if token.startswith("rk/"):
                paths.add(token.rstrip("/"))
                package = where = token if token.endswith("/") else package
            elif re.match(r"^\w+/$", token) and package:
                where = package + token
                paths.add(where.rstrip("/"))
            elif re.match(r"^\w+\.py$", token) and where:
                paths.add(where + token)
    assert len(paths) >= 8, paths
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, missing


def test_resolve_finds_a_dataclass_field_and_refuses_a_made_up_name():
    assert isinstance(resolve("rk.core.settings.Settings.tick_interval"), (int, dataclasses.Field))
    with pytest.raises(AttributeError):
        resolve("rk.core.settings.no_such_rule")

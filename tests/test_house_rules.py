"""The house's size rules, checked on every module of rk/: no module over 600 lines,
no function over 100 lines or over 10 parameters (a command with many flags takes an
options object), and nothing of the shell flat in rk/ beside the layer packages.

A module that grows past a rule fails here with its name and size; split it by rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RK = Path(__file__).resolve().parent.parent / "rk"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100
MAX_PARAMETERS = 10
LAYERS = {"core", "host", "store", "tmux", "act", "agent", "channels", "engine", "cli"}

MODULES = sorted(RK.rglob("*.py"))


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    count = len(names) + (args.vararg is not None) + (args.kwarg is not None)
    return count - 1 if names and names[0].arg in ("self", "cls") else count


def oversized(path: Path) -> list[str]:
    """What in one module breaks a size rule, one line each."""
    text = path.read_text()
    found = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"module: {lines} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{node.name} (line {node.lineno}): {length} lines")
            if _parameters(node) > MAX_PARAMETERS:
                found.append(f"{node.name} (line {node.lineno}): {_parameters(node)} parameters")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(RK.parent)))
def test_each_module_keeps_the_size_rules(path):
    assert oversized(path) == []


def test_the_shell_lives_in_layer_packages():
    flat = sorted(p.name for p in RK.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert flat == []
    assert {p.name for p in RK.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == LAYERS


def test_the_checker_sees_a_long_function_and_many_parameters(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    params = ", ".join(f"a{i}" for i in range(MAX_PARAMETERS + 1))
    source = tmp_path / "big.py"
    method = f"class C:\n    def m(self, {params[:-5]}):\n        pass\n"
    source.write_text(f"def long():\n{body}\n\n\ndef wide({params}):\n    pass\n\n\n{method}")
    assert oversized(source) == [
        f"long (line 1): {MAX_FUNCTION_LINES + 1} lines",
        f"wide (line {MAX_FUNCTION_LINES + 4}): {MAX_PARAMETERS + 1} parameters",
    ]

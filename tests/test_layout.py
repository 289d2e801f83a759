"""The package's shape: no import cycle among rk's modules.

The graph is read with `ast` from the sources, so function-level (lazy)
imports count: a cycle hidden behind one is still a cycle. A package's
`__init__` is not counted as imported by its submodules (every package would
otherwise be a cycle with itself).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "rk"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module → the rk modules it imports, anywhere in its body."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}

    def known(name: str) -> str | None:  # the longest prefix that is one of our modules
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import sub` imports the module pkg.sub; `from mod import name`, mod
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            for target in targets:
                found = known(target) if target.split(".")[0] == root.name else None
                if found and found != name:
                    graph[name].add(found)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, …, a], or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_no_import_cycle():
    graph = import_graph()
    assert "rk.cli.root" in graph and "rk.core.schedule.edits" in graph["rk.cli.entries"]  # the graph is read at all
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_sees_lazy_imports(tmp_path):
    pkg = tmp_path / "rk"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from rk.sub import a\n")
    (pkg / "sub" / "a.py").write_text("from . import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from rk.sub.a import x\n")
    graph = import_graph(pkg)
    assert graph["rk.sub"] == {"rk.sub.a"} and graph["rk.sub.a"] == {"rk.sub.b"}
    assert find_cycle(graph) == ["rk.sub.a", "rk.sub.b", "rk.sub.a"]
    (pkg / "sub" / "b.py").write_text("import os\n")
    assert find_cycle(import_graph(pkg)) is None


def test_the_core_imports_only_the_core():
    leaks = sorted(
        f"{a} -> {b}"
        for a, bs in import_graph().items()
        if a.startswith("rk.core")
        for b in bs
        if not b.startswith("rk.core")
    )
    assert leaks == []

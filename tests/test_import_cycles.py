"""No import cycles in python/suse: the modules' imports, read with `ast`, form no cycle.

Every import counts: module-level, function-local (which only postpones a cycle) and those
under `if TYPE_CHECKING:` (a cycle of types is still a cycle of layers). `from a import b`
points at the module `a.b` when there is one, else at `a`; a package's `__init__` is not
implied by importing one of its modules.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "python"
PACKAGE = "suse"



def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Source modules, and native ones by their stubs (`suse._core`)."""
    files = sorted((ROOT / PACKAGE).rglob("*.py"))
    files += [p for p in sorted((ROOT / PACKAGE).rglob("*.pyi")) if not p.with_suffix(".py").exists()]
    return {_module_name(p): p for p in files}


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module `name` imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package, one level up per extra dot
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import suse.spark.batch.x`: the module part
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for succ in edges:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.add(frozenset(component))
    return found


def _show(cycle: frozenset[str]) -> str:
    return "{" + ", ".join(sorted(cycle)) + "}"


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles in python/suse: " + "; ".join(map(_show, sorted(found, key=sorted)))


def test_the_reader_sees_function_local_and_relative_imports(tmp_path, monkeypatch):
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from suse.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("from . import b\n")
    (pkg / "sub" / "b.py").write_text("from ..a import f\nimport suse.c\n")
    (pkg / "c.py").write_text("x = 1\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    graph = import_graph()
    assert graph == {"suse": set(), "suse.a": {"suse.sub.b"}, "suse.sub": {"suse.sub.b"},
                     "suse.sub.b": {"suse.a", "suse.c"}, "suse.c": set()}
    assert cycles(graph) == {frozenset({"suse.a", "suse.sub.b"})}

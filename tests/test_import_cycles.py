"""No import circle between the product's modules: every import counts, the
ones inside functions too (a circle broken by importing late is still a
circle in the design), except those under `if TYPE_CHECKING:` (annotations
only, never run). Beside test_layering, which checks the order of the apps."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

APPS = [
    "core",
    "config",
    "users",
    "runs",
    "llm",
    "corpus",
    "generation",
    "judging",
    "annotator",
    "analysis",
    "adaptive",
    "webhooks",
    "console",
    "demo",
]


def product_modules(root: Path) -> dict[str, Path]:
    modules = {}
    for app in APPS:
        for path in (root / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = getattr(test, "id", None) or getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skipped |= {id(inner) for inner in ast.walk(child)}
    return skipped


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The product modules `module` imports (a name imported from a package
    counts as its submodule when there is one)."""

    def known(name: str) -> str | None:
        while name:
            if name in modules:
                return name
            name = name.rpartition(".")[0]
        return None

    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {m for alias in node.names if (m := known(alias.name))}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if (m := (target if target in modules else known(base))) is not None:
                    found.add(m)
    found.discard(module)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = product_modules(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_no_import_circle_between_product_modules():
    found = circles(import_graph(REPO))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_check_sees_a_circle_made_by_a_late_import(tmp_path):
    app = tmp_path / "judging"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "a.py").write_text("from judging.b import f\n")
    (app / "b.py").write_text("def f():\n    from judging import a\n")
    (app / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from judging.a import f\n"
    )
    (app / "d.py").write_text("from judging.c import x\n")
    for other in APPS:
        (tmp_path / other).mkdir(exist_ok=True)
    assert circles(import_graph(tmp_path)) == [["judging.a", "judging.b"]]

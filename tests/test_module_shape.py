"""Product modules stay small and typed: none over 600 lines (the report's
typed schema, only that, may be longer), and every function has a return
type (at least 95% of them: today all)."""

from __future__ import annotations

import ast

from tests.conftest import REPO
from tests.test_import_cycles import APPS

MAX_LINES = 600
LONGER_ALLOWED = {"analysis/report/report_types.py"}  # the report as typed models, nothing else


def product_files() -> list:
    return sorted(
        path
        for app in APPS
        for path in (REPO / app).rglob("*.py")
        if "migrations" not in path.parts
    )


def test_no_product_module_is_over_600_lines():
    long = [
        f"{path.relative_to(REPO)}: {count} lines"
        for path in product_files()
        if (count := len(path.read_text().splitlines())) > MAX_LINES
        and str(path.relative_to(REPO)) not in LONGER_ALLOWED
    ]
    assert not long, "\n".join(long)


def test_functions_have_return_types():
    functions = missing = 0
    names = []
    for path in product_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions += 1
                if node.returns is None:
                    missing += 1
                    names.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert functions > 1000
    assert missing <= 0.05 * functions, "\n".join(names)

"""Data flows one way (docs/architecture.md): an app imports from the apps to
its left, never from those to its right."""

import ast
from pathlib import Path

from tests.conftest import REPO

ORDER = [
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
]


def imported_apps(path: Path) -> set[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {(node.lineno, alias.name.split(".")[0]) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add((node.lineno, node.module.split(".")[0]))
    return found


def test_no_app_imports_from_the_apps_to_its_right():
    wrong = []
    for index, app in enumerate(ORDER):
        right = set(ORDER[index + 1 :])
        for path in sorted((REPO / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            wrong += [
                f"{path.relative_to(REPO)}:{line} imports {name}"
                for line, name in sorted(imported_apps(path))
                if name in right
            ]
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_a_wrong_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from analysis.report import build_report\n")
    assert (2, "analysis") in imported_apps(module)

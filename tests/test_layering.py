"""Data flows one way (docs/architecture.md): a package imports from the
packages to its left, never from those to its right; every package of the
product is in the order, the ground floor (core) first and config last."""

import ast
from pathlib import Path

from tests.conftest import REPO

ORDER = [
    "core",  # the ground floor: errors, the API's shared rules, CSV safety, ...
    "users",  # accounts, roles, projects: who sees what
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
    "demo",  # the demo's set-up: it may use every app
    "config",  # settings, URLs and the Celery app, on top of everything
]

# The one kind of import that runs up the order: a tasks module binds its
# tasks to the Celery app, and a sender imports it to send one (late, so that
# a command does not pay for Celery at start-up).
UPWARD_ALLOWED = {"config.celery"}


def imported_apps(path: Path) -> set[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {
                (node.lineno, alias.name.split(".")[0])
                for alias in node.names
                if alias.name not in UPWARD_ALLOWED
            }
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module not in UPWARD_ALLOWED
        ):
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
    module.write_text("def f():\n    from analysis.report.build import build_report\n")
    assert (2, "analysis") in imported_apps(module)


def test_every_package_of_the_product_has_its_place():
    import tomllib

    included = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = {name.rstrip("*") for name in included["packages"]["find"]["include"]}
    assert packages == set(ORDER), sorted(packages ^ set(ORDER))

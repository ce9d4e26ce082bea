"""Every third-party module the code imports belongs to a distribution that
pyproject.toml declares, so that a fresh install (`make install`, a worker's
image) has it and no import works only because another package happened to
pull it in."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from tests.conftest import REPO

# The code Concord ships (pyproject's packages) and the code that checks it.
PRODUCT = ["core", "config", "users", "runs", "llm", "corpus", "generation", "judging", "annotator"]
PRODUCT += ["analysis", "adaptive", "webhooks", "console", "demo"]
CHECKED = [*PRODUCT, "tests", "benchmarks"]
FIRST_PARTY = {*CHECKED, "manage"}


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_names(specs: list[str]) -> set[str]:
    """The distributions that requirement specifiers name (without versions,
    markers or the extras *they* ask for)."""
    return {normalise(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", s).group(1)) for s in specs}


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def declared_distributions(project: dict) -> set[str]:
    """The dependencies and every extra."""
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    return distribution_names(specs)


def type_checking_nodes(tree: ast.AST) -> set[int]:
    """The nodes under `if TYPE_CHECKING:` (read by mypy, never run)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            name = getattr(node.test, "id", None) or getattr(node.test, "attr", None)
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skipped |= {id(inner) for inner in ast.walk(child)}
    return skipped


def third_party_imports(path: Path, *, runtime_only: bool = False) -> set[tuple[int, str]]:
    """(line, top-level module) for every absolute import that is neither the
    standard library nor Concord's own code (imports inside functions count;
    with `runtime_only`, those under `if TYPE_CHECKING:` do not)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = type_checking_nodes(tree) if runtime_only else set()
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in FIRST_PARTY | {"__future__"}:
                found.add((node.lineno, top))
    return found


def distributions_of(module: str, installed: dict[str, list[str]]) -> set[str]:
    """The distributions that provide `module` here; for one not installed here
    (torch on a web-only machine) its own name, the usual case."""
    return {normalise(d) for d in installed.get(module, [module])}


def undeclared_imports(
    roots: list[Path], declared: set[str], *, runtime_only: bool = False
) -> list[str]:
    installed = packages_distributions()
    wrong = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.relative_to(root).parts[:1] == ("data",) and root.name == "tests":
                continue  # tests/data: others' code kept as published (RULER's scripts)
            for line, module in sorted(third_party_imports(path, runtime_only=runtime_only)):
                if root.name == "tests" and list((root / "data").glob(f"*/{module}/__init__.py")):
                    continue  # a package kept in tests/data as published (confseq)
                provided_by = distributions_of(module, installed)
                if not provided_by & declared:
                    wrong.append(
                        f"{path.relative_to(root.parent)}:{line} imports {module}, from "
                        f"{' or '.join(sorted(provided_by))}, which pyproject.toml does not declare"
                    )
    return wrong


def test_every_imported_library_is_declared():
    declared = declared_distributions(pyproject())
    wrong = undeclared_imports([REPO / name for name in CHECKED], declared)
    assert not wrong, "\n".join(wrong)


def test_the_product_needs_nothing_from_the_dev_extra():
    """Shipped code imports what the web install or the `gpu` extra brings (the
    demo's screenshot tool, a developer's command, may use `dev`; so may the
    imports only mypy reads, under `if TYPE_CHECKING:`)."""
    project = pyproject()
    runtime = distribution_names(project["dependencies"] + project["optional-dependencies"]["gpu"])
    wrong = undeclared_imports(
        [REPO / name for name in PRODUCT if name != "demo"], runtime, runtime_only=True
    )
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_an_undeclared_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        "import json\nfrom annotator import errors\n\n\ndef f():\n    import sklearn.metrics\n"
    )
    wrong = undeclared_imports([package], {"numpy"})
    assert wrong == [
        "pkg/m.py:6 imports sklearn, from scikit-learn, which pyproject.toml does not declare"
    ]
    assert undeclared_imports([package], {"scikit-learn"}) == []


def test_imports_only_mypy_reads_are_not_runtime_needs(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import sklearn\n"
    )
    assert undeclared_imports([package], set(), runtime_only=True) == []
    assert undeclared_imports([package], set()) == [
        "pkg/m.py:3 imports sklearn, from scikit-learn, which pyproject.toml does not declare"
    ]


def test_declared_names_are_read_without_versions_or_extras():
    project = {
        "dependencies": ["celery[redis]>=5.4,<6", "Django>=5.2", "rouge_score"],
        "optional-dependencies": {"gpu": ["torch>=2.4"]},
    }
    assert declared_distributions(project) == {"celery", "django", "rouge-score", "torch"}

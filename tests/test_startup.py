"""Starting a process stays quick: pandas, scipy, openai, torch and the like load
where they are used, never when manage.py, the web server or the worker starts."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO
from tests.importtime import HEAVY_PACKAGES, heavy_imports, parse

# What the web server and the worker load before their first request or task.
START_UP = """
import json, sys
import django
django.setup()
from django.core.management import call_command
from django.urls import get_resolver
get_resolver().url_patterns  # the URL modules and every view
call_command("check")
from config.celery import app
app.loader.import_default_modules()  # every app's tasks module
print(json.dumps(sorted(sys.modules)))
"""


def run_with_importtime(*arguments: str, cwd=REPO) -> subprocess.CompletedProcess:
    """One start-up in a fresh interpreter; its -X importtime report is in stderr."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def who_imported(heavy: set[str], report: str) -> str:
    chains = {entry.module: entry for entry in heavy_imports(report)}
    return "imported at start-up:\n" + "\n".join(
        chains[name].describe() if name in chains else f"{name} (importer not in the report)"
        for name in sorted(heavy)
    )


def test_manage_py_check_imports_no_heavy_package():
    report = run_with_importtime("manage.py", "check").stderr
    # the report covers the start-up: the URLs were loaded, and their views
    assert {"django.urls", "analysis.views"} <= {entry.module for entry in parse(report)}
    heavy = {entry.module for entry in heavy_imports(report)}
    assert not heavy, who_imported(heavy, report)


def test_server_and_worker_start_up_imports_no_heavy_package():
    done = run_with_importtime("-c", START_UP)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    expected = {"config.urls", "analysis.views", "annotator.tasks", "generation.tasks"}
    assert expected <= loaded and "judging.tasks" in loaded
    heavy = {name for name in loaded if name in HEAVY_PACKAGES}
    assert not heavy, who_imported(heavy, done.stderr)


def test_a_heavy_import_is_named_with_its_importers(tmp_path):
    """When a check above fails, it says which package and by whom."""
    (tmp_path / "reports.py").write_text("import json\nimport pandas\n")
    (tmp_path / "views.py").write_text("import reports\n")
    report = run_with_importtime("-c", "import views", cwd=tmp_path).stderr
    found = {entry.module: entry for entry in heavy_imports(report)}
    assert {"pandas", "numpy"} <= set(found) and "torch" not in found
    assert found["pandas"].chain == ("pandas", "reports", "views")
    assert found["pandas"].describe().endswith(" s), imported by reports <- views")
    assert found["pandas"].seconds > 0
    # numpy comes in through pandas, deeper down the same chain
    assert found["numpy"].chain[-3:] == ("pandas", "reports", "views")
    assert who_imported({"pandas"}, report).endswith("imported by reports <- views")


def test_parse_follows_the_nesting():
    report = "\n".join(
        [
            "import time: self [us] | cumulative | imported package",
            "import time:        10 |         10 |     leaf",
            "import time:        20 |         30 |   middle",
            "import time:         5 |          5 |   sibling",
            "import time:        40 |         75 | top",
            "import time:         7 |          7 | other",
        ]
    )
    chains = {entry.module: entry.chain for entry in parse(report)}
    assert chains == {
        "leaf": ("leaf", "middle", "top"),
        "middle": ("middle", "top"),
        "sibling": ("sibling", "top"),
        "top": ("top",),
        "other": ("other",),
    }

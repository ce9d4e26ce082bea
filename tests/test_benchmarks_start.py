"""Every benchmark script, and `make screenshots` on a few pages, at its
smallest size, so that one that no longer starts fails the build. Each runs as
a subprocess, as a person runs it, and must exit 0 and write its JSON (into a
temporary folder, never benchmarks/results/). Their figures are the
benchmarks' business, not the tests': no number is asserted.

Run elsewhere at CI size: benchmarks/coverage (tests/analysis/
test_coverage_harness.py), benchmarks/cluster.py (tests/cluster/test_cluster.py);
benchmarks/crowd_web.py is the others' helper. The commands of the README's
`manage.py` lines run in the tests of their apps, `make demo` in
tests/test_demo.py (and here, interrupted, by demo_interrupt.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM, ELITR_DATA, REPO, port_open, require


def postgres_admin_url() -> str:
    """The server's maintenance database: each script makes its own scratch one."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        return url.rsplit("/", 1)[0] + "/postgres"
    require(port_open("127.0.0.1", 5432), "PostgreSQL is not on 127.0.0.1:5432 (DATABASE_URL)")
    return "postgres://postgres@127.0.0.1:5432/postgres"


def scratch(name: str) -> str:
    """A scratch database of this process's own, beside other runs on the server."""
    return f"concord_start_{name}_{os.getpid()}"


# A limit that catches a script that hangs, not one slowed by the parallel
# suite: console_pages takes 80 s alone and timed out at 240 s under the load of
# four workers on two cores.
def run_script(args: list[str], timeout: int = 480) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "CONCORD_TEST_SQLITE")
    }
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def assert_ran(done: subprocess.CompletedProcess, output: Path) -> dict:
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return json.loads(output.read_text())


def elitr() -> Path:
    require(
        (ELITR_DATA / "data.zip").is_file(),
        f"the real ELITR-Bench archives are not at {ELITR_DATA} (set CONCORD_ELITR_DATA)",
    )
    return ELITR_DATA


# (script, its smallest arguments, needs: "postgres" and/or "elitr")
SCRIPTS = {
    "startup_time": (["--runs", "1"], ()),
    "adaptive_study": (["--replays", "2"], ("elitr",)),
    "import_speed": (["--rounds", "1"], ("elitr", "postgres")),
    "analysis_scale": (
        ["--sizes", "1000", "--rounds", "1", "--resamples", "10", "--pingouin-max", "1000"],
        ("elitr", "postgres"),
    ),
    "console_pages": (
        ["--requests", "1", "--cold-requests", "1", "--rounds", "1", "--warmups", "1"],
        ("elitr", "postgres"),
    ),
    "rating_load": (
        ["--participants", "2", "--seconds", "1", "--workers", "1"],
        ("elitr", "postgres"),
    ),
    "judge_throughput": (
        ["--latency", "0.01", "--concurrency", "4", "--scale-seeds", "0"],
        ("elitr", "postgres"),
    ),
    "demo_interrupt": (["--runs", "1", "--burners", "0"], ()),
    "bt_length_multipliers": (
        ["--datasets", "sim-heavy-tailed", "--clusters", "10"]
        + ["--replays", "2", "--resamples", "50"],
        (),
    ),
}
SCRATCH_OPTION = {
    "analysis_scale": "--scratch",
    "console_pages": "--scratch-db",
    "rating_load": "--scratch-db",
    "judge_throughput": "--scratch-db",
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_script_runs_at_its_smallest_size(name, tmp_path):
    args, needs = SCRIPTS[name]
    args = list(args)
    if "elitr" in needs:
        args += ["--data", str(elitr())]
    if "postgres" in needs:
        args += ["--postgres", postgres_admin_url()]
        if name in SCRATCH_OPTION:
            args += [SCRATCH_OPTION[name], scratch(name)]
    output = tmp_path / f"{name}.json"
    done = run_script([f"benchmarks/{name}.py", *args, "--output", str(output)])
    assert assert_ran(done, output)


def test_arrival_burst_runs_at_its_smallest_size(tmp_path):
    """A tiny burst; it exits 1 when a target is missed, and only its timing
    target may be missed on a loaded machine."""
    output = tmp_path / "arrival_burst.json"
    done = run_script(
        ["benchmarks/arrival_burst.py", "--postgres", postgres_admin_url()]
        + ["--scratch-db", scratch("arrival_burst"), "--output", str(output)]
        + ["--tasks", "2", "--places", "1", "--late", "1", "--alone", "1"]
        + ["--window", "0.2", "--late-window", "0.1", "--big-tasks", "2", "--big-window", "0.2"]
        + ["--workers", "1", "--clients", "4"]
    )
    assert done.returncode in (0, 1), done.stdout[-4000:] + done.stderr[-4000:]
    result = json.loads(output.read_text())
    missed = [t for t in result["targets"] if not t["met"]]
    assert all(" ms" in t["target"] for t in missed), missed


def test_adaptive_alt_test_runs_on_data_of_its_shape(tmp_path):
    """The authors' SummEval data is not shipped (no licence): made-up scores
    in its two files' shape, 12 articles of 16 summaries."""
    import random

    rng = random.Random(0)
    items = [f"a{a}__s{s}" for a in range(12) for s in range(16)]

    def table(raters: list[str]) -> dict:
        return {who: {f"{i}__coherence": rng.randint(1, 5) for i in items} for who in raters}

    data = tmp_path / "summeval"
    data.mkdir()
    (data / "human_annotations.json").write_text(json.dumps(table(["e0", "e1", "e2"])))
    (data / "llm_annotations.json").write_text(json.dumps(table(["judge-a", "judge-b"])))
    output = tmp_path / "adaptive_alt_test.json"
    done = run_script(
        ["benchmarks/adaptive_alt_test.py", "--data", str(data), "--output", str(output)]
        + ["--replays", "2", "--aspects", "coherence", "--articles", "2", "--looks", "2"]
    )
    assert set(assert_ran(done, output)["aspects"]) == {"coherence"}


def test_generation_prefix_cache_runs_on_the_tiny_model(tmp_path):
    require(
        importlib.util.find_spec("torch") is not None
        and importlib.util.find_spec("transformers") is not None,
        "torch and transformers are not installed (make install-gpu)",
    )
    output = tmp_path / "generation_prefix_cache.json"
    done = run_script(
        ["benchmarks/generation_prefix_cache.py", "--data", str(elitr())]
        + ["--models", "tiny", "--questions", "2", "--new-tokens", "2", "--repeats", "1"]
        + ["--output", str(output)]
    )
    assert_ran(done, output)


def test_make_screenshots_on_a_few_pages(tmp_path):
    require(CHROMIUM.exists(), f"Chromium is not at {CHROMIUM} (apt-get install chromium)")
    pages = ["login", "run-monitor", "report"]
    done = run_script(
        ["-m", "demo.screenshots", "--output", str(tmp_path)]
        + ["--pages", ",".join(pages), "--devices", "desktop"]
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(
        f"{page}-desktop.png" for page in pages
    )

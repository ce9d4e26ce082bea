"""How long `manage.py check` takes to start and finish (target: under 1 s).

Runs the command --runs times in a fresh interpreter and reports the median
wall time, next to the bare interpreter's start, and which heavy packages
(pandas, scipy, openai, torch...) the start-up imported and by whom (one more
run under `python -X importtime`). With --compare DIR (another checkout, e.g.
a clone of an older commit) the two are run alternately, round by round, so
that both see the same load on the machine.

Bytecode: by default each checkout's modules are compiled once before the
timed runs, into a scratch PYTHONPYCACHEPREFIX (nothing is written into the
checkouts), as a deployment has them: the image compiles /app when it is
built (Dockerfile), and a checkout writes its __pycache__ at its first run.
`--bytecode source` times a start that compiles every module of the project
again (PYTHONDONTWRITEBYTECODE=1 with no bytecode in the tree), which is
what a fresh clone's every start costs where that variable is set.

    .venv/bin/python benchmarks/startup_time.py [--runs 5] [--compare DIR] [--bytecode source]

Prints a table and writes benchmarks/results/startup_time.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.importtime import heavy_imports, top_level_seconds  # noqa: E402

TARGET_SECONDS = 1.0


def environment(bytecode_folder: Path | None) -> dict[str, str]:
    """The timed processes' environment: bytecode read from (and written once
    to) `bytecode_folder`, or compiled at every start when it is None."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX",)}
    if bytecode_folder is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode_folder)
    return env


def timed(arguments: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *arguments], cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def import_report(command: list[str], cwd: Path, env: dict[str, str]) -> dict:
    stderr = subprocess.run(
        [sys.executable, "-X", "importtime", *command],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    return {
        "import_seconds": round(top_level_seconds(stderr), 3),
        "heavy_packages": {entry.module: entry.describe() for entry in heavy_imports(stderr)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--compare", type=Path, help="another checkout to measure alongside")
    parser.add_argument("--command", default="manage.py check", help="arguments to python")
    parser.add_argument(
        "--bytecode",
        choices=("compiled", "source"),
        default="compiled",
        help="compiled: modules compiled once before timing (as deployed); "
        "source: every start compiles the project's modules",
    )
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "startup_time.json"
    )
    args = parser.parse_args()
    command = args.command.split()
    checkouts = {"this checkout": REPO}
    if args.compare:
        checkouts = {f"compared ({args.compare})": args.compare.resolve(), **checkouts}
    times: dict[str, list[float]] = {name: [] for name in ["python -c pass", *checkouts]}
    with tempfile.TemporaryDirectory(prefix="concord-bytecode-") as folder:
        env = environment(Path(folder) if args.bytecode == "compiled" else None)
        for path in checkouts.values():
            timed(command, path, env)  # untimed: compiles every module once ("compiled")
        for _ in range(args.runs):
            times["python -c pass"].append(timed(["-c", "pass"], REPO, env))
            for name, path in checkouts.items():
                times[name].append(timed(command, path, env))
        reports = {name: import_report(command, path, env) for name, path in checkouts.items()}

    print(
        f"python {args.command}: {args.runs} runs each, alternating ({os.cpu_count()} CPUs), "
        f"bytecode {args.bytecode}"
    )
    header = f"{'what':<48}{'median s':>10}{'min s':>8}{'max s':>8}{'imports s':>11}"
    print(header)
    print("-" * len(header))
    for name, values in times.items():
        imports = reports[name]["import_seconds"] if name in reports else None
        print(
            f"{name[:47]:<48}{statistics.median(values):>10.2f}{min(values):>8.2f}"
            f"{max(values):>8.2f}{'' if imports is None else f'{imports:.2f}':>11}"
        )
    for name, report in reports.items():
        heavy = report["heavy_packages"]
        print(f"Heavy packages at start-up, {name}: {', '.join(heavy) or 'none'}")
        for description in heavy.values():
            print(f"  {description}")
    ours = statistics.median(times["this checkout"])
    print(
        f"Target: under {TARGET_SECONDS:.0f} s -> {'met' if ours < TARGET_SECONDS else 'NOT met'}"
        f" (median {ours:.2f} s)"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "startup_time",
                "command": "python benchmarks/startup_time.py " + " ".join(sys.argv[1:]),
                "measured": f"python {args.command}",
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                    "load_average_1min": os.getloadavg()[0],
                },
                "bytecode": args.bytecode,
                "runs": args.runs,
                "seconds": times,
                "medians": {name: statistics.median(v) for name, v in times.items()},
                "start_up_imports": reports,
                "target_seconds": TARGET_SECONDS,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()

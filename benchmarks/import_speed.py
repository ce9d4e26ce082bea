"""How long the full ELITR-Bench import takes (target: under 30 s).

Measures, on a fresh database each round: parsing alone, the first import of
everything (corpus, Czech, 6,775 responses, 7,945 judgments) and a second,
idempotent import. SQLite always; PostgreSQL too when one answers at
--postgres (a throwaway database is created there and dropped after).

    .venv/bin/python benchmarks/import_speed.py [--rounds 3] [--postgres URL] [--data DIR]

Prints a table and writes benchmarks/results/import_speed.json.
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
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"


def measure(data: Path, rounds: int) -> dict:
    """Runs inside a child process whose DATABASE_URL is already set."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from corpus.importers.elitr_bench import parse_elitr_bench
    from judging.importing import import_elitr_bench

    call_command("migrate", verbosity=0)
    times: dict[str, list[float]] = {"parse only": [], "first import": [], "second import": []}
    for _ in range(rounds):
        call_command("flush", interactive=False, verbosity=0)
        started = time.perf_counter()
        parse_elitr_bench(data, with_responses=True)
        times["parse only"].append(time.perf_counter() - started)
        first = import_elitr_bench(data, with_responses=True)
        assert first.changed and len(first.bundle.responses) == 6775
        times["first import"].append(first.seconds)
        second = import_elitr_bench(data, with_responses=True)
        assert not second.changed
        times["second import"].append(second.seconds)
    return {"vendor": connection.vendor, "times": times}


def run_child(database_url: str, data: Path, rounds: int) -> dict:
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(REPO)}
    output = subprocess.run(
        [sys.executable, __file__, "--child", "--data", str(data), "--rounds", str(rounds)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def postgres_scratch(url: str):
    import psycopg

    name = "concord_import_bench"
    admin = psycopg.connect(url, autocommit=True)
    admin.execute(f"DROP DATABASE IF EXISTS {name}")
    admin.execute(f"CREATE DATABASE {name}")
    return admin, name, url.rsplit("/", 1)[0] + f"/{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CONCORD_ELITR_DATA") or DEFAULT_DATA)
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "import_speed.json"
    )
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.data, args.rounds)))
        return
    if not (args.data / "data.zip").exists():
        sys.exit(f"No ELITR-Bench archives at {args.data}; pass --data DIR.")

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        results.append(run_child(f"sqlite:///{tmp}/bench.sqlite3", args.data, args.rounds))
    try:
        admin, name, url = postgres_scratch(args.postgres)
    except Exception as error:  # no PostgreSQL here: report SQLite alone
        print(f"PostgreSQL not measured ({error.__class__.__name__}: {error})")
    else:
        try:
            results.append(run_child(url, args.data, args.rounds))
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.close()

    header = f"{'database':<12}{'step':<16}{'median s':>10}{'min s':>8}{'max s':>8}"
    print(f"ELITR-Bench import, {args.rounds} rounds, fresh database each round")
    print(header)
    print("-" * len(header))
    for result in results:
        for step, values in result["times"].items():
            print(
                f"{result['vendor']:<12}{step:<16}{statistics.median(values):>10.2f}"
                f"{min(values):>8.2f}{max(values):>8.2f}"
            )
    slowest = max(statistics.median(r["times"]["first import"]) for r in results)
    print(
        f"Target: first import under 30 s -> {'met' if slowest < 30 else 'NOT met'} "
        f"(slowest median {slowest:.2f} s)"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "import_speed",
                "command": "python benchmarks/import_speed.py",
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "rounds": args.rounds,
                "results": results,
                "target_seconds": 30,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()

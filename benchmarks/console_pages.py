"""Server time of each console page on the paper's data, on PostgreSQL.

Imports the real ELITR-Bench archives with the paper's responses and scores
(6,775 responses) into a scratch database, then builds the scene the
screenshots show (demo.screenshots.build_data: the demo's crowd study over
test2 with 13 participants, a ROUGE run and a half-done LLM judge run over
the 1,170 test2 single-turn responses, worker heartbeats), signs in as the
admin and requests each page N times through Django's full middleware stack
(DEBUG off). Server time is the `Server-Timing` header that
config.middleware adds to every answer, as benchmarks/rating_load.py reads it.

    .venv/bin/python benchmarks/console_pages.py [--requests 30] [--postgres URL]
        [--scratch-db NAME] [--data DIR]

Prints a table (p50, p95, max, queries per request) and writes
benchmarks/results/console_pages.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30, help="timed requests per page")
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--scratch-db", default="concord_console_bench")
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CONCORD_ELITR_DATA") or DEFAULT_DATA)
    )
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "console_pages.json"
    )
    args = parser.parse_args()
    if not (args.data / "data.zip").is_file():
        sys.exit(f"The ELITR-Bench archives are not at {args.data} (--data or CONCORD_ELITR_DATA).")

    import psycopg

    admin = psycopg.connect(args.postgres, autocommit=True)
    admin.execute(f"DROP DATABASE IF EXISTS {args.scratch_db} WITH (FORCE)")
    admin.execute(f"CREATE DATABASE {args.scratch_db}")
    tmp = tempfile.mkdtemp(prefix="concord-console-bench-")
    os.environ.update(
        {
            "DATABASE_URL": args.postgres.rsplit("/", 1)[0] + f"/{args.scratch_db}",
            "DJANGO_DEBUG": "0",
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "CONCORD_VAR_DIR": tmp,
            "CONCORD_ELITR_DATA": str(args.data),
            "DJANGO_LOG_LEVEL": "WARNING",
            "DJANGO_STATIC_ROOT": str(Path(tmp) / "static"),
            "CELERY_BROKER_URL": "filesystem://",
        }
    )
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from corpus.models import Document
    from demo.screenshots import beat_workers, build_data
    from generation.models import Response

    try:
        started = time.perf_counter()
        ids = build_data(lambda line: None)
        beat_workers()
        setup_seconds = time.perf_counter() - started
        biggest = Document.objects.filter(split="test2").order_by("-word_count").first()
        client = Client(HTTP_HOST="127.0.0.1")
        assert client.login(username="admin", password="screenshots-pw-1")
        pages = [
            ("home", "/console/"),
            ("runs", "/console/runs/"),
            ("runs, with imported", "/console/runs/?imported=1"),
            ("judging run monitor (LLM)", f"/console/runs/judging/{ids['run']}/"),
            ("judging run, live part", f"/console/runs/judging/{ids['run']}/live/"),
            ("judging run monitor (metric)", f"/console/runs/judging/{ids['metric_run']}/"),
            ("study monitor", f"/console/studies/{ids['study']}/"),
            ("study, live part", f"/console/studies/{ids['study']}/live/"),
            ("workers", "/console/workers/"),
            ("documents", "/console/documents/"),
            (
                f"document viewer ({biggest.word_count:,} words)",
                f"/console/documents/{biggest.pk}/",
            ),
            ("new study form", "/console/studies/new/"),
            ("new judging run form", "/console/runs/judging/new/"),
            ("admin index (for comparison)", "/admin/"),
        ]
        rows = []
        for label, path in pages:
            for _ in range(3):  # warm-up: templates, first queries
                assert client.get(path).status_code == 200, path
            times, queries = [], []
            for _ in range(args.requests):
                reset_queries()
                with CaptureQueriesContext(connection) as captured:
                    answer = client.get(path)
                assert answer.status_code == 200, (path, answer.status_code)
                times.append(float(re.search(r"app;dur=([\d.]+)", answer["Server-Timing"])[1]))
                queries.append(len(captured))
            rows.append(
                {
                    "page": label,
                    "path": path,
                    "requests": args.requests,
                    "p50_ms": statistics.median(times),
                    "p95_ms": percentile(times, 95),
                    "max_ms": max(times),
                    "queries": max(queries),
                    "bytes": len(answer.content),
                }
            )
        responses = Response.objects.count()
    finally:
        connection.close()
        admin.execute(f"DROP DATABASE IF EXISTS {args.scratch_db} WITH (FORCE)")
        admin.close()

    print(
        f"Console pages on the paper's data ({responses:,} responses), PostgreSQL, DEBUG off, "
        f"{args.requests} requests each after 3 warm-ups, {os.cpu_count()} CPUs"
    )
    header = f"{'page':<42}{'p50':>8}{'p95':>8}{'max':>8}{'queries':>9}{'KiB':>8}  (ms)"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['page']:<42}{r['p50_ms']:>8.1f}{r['p95_ms']:>8.1f}{r['max_ms']:>8.1f}"
            f"{r['queries']:>9}{r['bytes'] / 1024:>8.0f}"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "console_pages",
                "command": "python benchmarks/console_pages.py",
                "requests_per_page": args.requests,
                "setup_seconds": setup_seconds,
                "responses": responses,
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "rows": rows,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()

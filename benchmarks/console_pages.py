"""Server time of each console page and of the agreement report on the paper's
data, on PostgreSQL.

Imports the real ELITR-Bench archives with the paper's responses and scores
(6,775 responses) into a scratch database, then builds the scene the
screenshots show (demo.screenshots.build_data: the demo's crowd study over
test2 with 13 participants, a ROUGE run and a half-done LLM judge run over
the 1,170 test2 single-turn responses, worker heartbeats), signs in as the
admin and requests each page N times through Django's full middleware stack
(DEBUG off). Server time is the `Server-Timing` header that
core.middleware adds to every answer, as benchmarks/rating_load.py reads it.

The agreement report (the product's main page) is timed in a fresh process
per checkout, against the same database: the first request of the process,
then "cold" requests (the report cache emptied before each: what a new
selection or new data costs), then "warm" ones (the same selection again).
With `--compare DIR` another checkout (e.g. a `git worktree` of the code
before) is timed the same way, alternately, round by round.

    .venv/bin/python benchmarks/console_pages.py [--requests 30] [--postgres URL]
        [--scratch-db NAME] [--data DIR] [--compare DIR] [--rounds 2]
        [--cold-requests 5] [--skip-console]

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"
PAPER_SYSTEMS = "GPT-4,Vicuna-13B-v1.5,LongAlpaca-7B"
PAPER_EVALUATORS = "gold-human-eval,gpt-4-eval,prometheus-eval,silver-human-eval"
# The report links people follow: the demo's (the paper's human-evaluation
# setting, Table 4 and Fig. 2) and the console home's (the paper's four
# evaluators over every test2 system).
REPORT_PAGES = [
    (
        "report HTML, paper's human-evaluation setting",
        f"/analysis/report/?dataset_version=qa&split=test2&mode=st&systems={PAPER_SYSTEMS}",
    ),
    (
        "report JSON, paper's human-evaluation setting",
        f"/analysis/report/?dataset_version=qa&split=test2&mode=st&systems={PAPER_SYSTEMS}"
        "&format=json",
    ),
    (
        "report HTML, paper's 4 evaluators, all test2 systems",
        f"/analysis/report/?dataset_version=qa&split=test2&mode=st&evaluators={PAPER_EVALUATORS}",
    ),
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def configure(checkout: Path, database_url: str, var_dir: str, data: Path) -> None:
    """Django settings for the scratch database, from `checkout`'s code."""
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "DJANGO_DEBUG": "0",
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "CONCORD_VAR_DIR": var_dir,
            "CONCORD_ELITR_DATA": str(data),
            "DJANGO_LOG_LEVEL": "WARNING",
            "DJANGO_STATIC_ROOT": str(Path(var_dir) / "static"),
            "CELERY_BROKER_URL": "filesystem://",
        }
    )
    sys.path.insert(0, str(checkout))
    import django

    django.setup()


def server_ms(answer) -> float:
    return float(re.search(r"app;dur=([\d.]+)", answer["Server-Timing"])[1])


def summary(times: list[float], cpu: list[float] | None = None) -> dict:
    out = {
        "requests": len(times),
        "p50_ms": statistics.median(times),
        "p95_ms": percentile(times, 95),
        "max_ms": max(times),
    }
    if cpu:
        # the process's own CPU time: what the request costs whatever else runs
        out["cpu_p50_ms"] = statistics.median(cpu)
    return out


def timed_get(client, path: str) -> tuple[float, float]:
    """Server time (the Server-Timing header) and this process's CPU time, ms."""
    started = time.process_time()
    answer = client.get(path)
    cpu = (time.process_time() - started) * 1000
    assert answer.status_code == 200, (path, answer.status_code)
    return server_ms(answer), cpu


def clear_report_cache() -> bool:
    """Empty the report cache of the code being timed (none before it had one)."""
    from django.conf import settings
    from django.core.cache import caches

    if "reports" not in settings.CACHES:
        return False
    caches["reports"].clear()
    return True


def time_reports(requests: int, cold_requests: int, warmups: int = 3) -> list[dict]:
    """In this process (fresh): each report page's first request, cold requests
    (cache emptied before each) and warm ones (after `warmups` warm-ups)."""
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    assert client.login(username="admin", password="screenshots-pw-1")
    has_cache = clear_report_cache()
    rows = []
    for label, path in REPORT_PAGES:
        clear_report_cache()
        first, _ = timed_get(client, path)
        cold, cold_cpu = [], []
        for _ in range(cold_requests):
            clear_report_cache()
            server, cpu = timed_get(client, path)
            cold.append(server)
            cold_cpu.append(cpu)
        for _ in range(warmups):
            client.get(path)
        warm, warm_cpu = [], []
        for _ in range(requests):
            server, cpu = timed_get(client, path)
            warm.append(server)
            warm_cpu.append(cpu)
        rows.append(
            {
                "page": label,
                "path": path,
                "report_cache": has_cache,
                "first_ms": first,
                "cold": summary(cold, cold_cpu),
                "warm": summary(warm, warm_cpu),
                "bytes": len(client.get(path).content),
            }
        )
    return rows


def time_reports_in(checkout: Path, args, database_url: str, var_dir: str) -> list[dict]:
    """time_reports in a fresh process running `checkout`'s code."""
    result = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--serve-reports",
            str(checkout),
            "--database-url",
            database_url,
            "--var-dir",
            var_dir,
            "--requests",
            str(args.requests),
            "--cold-requests",
            str(args.cold_requests),
            "--data",
            str(args.data),
            "--warmups",
            str(args.warmups),
        ],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
    )
    if result.returncode:
        sys.exit(f"timing the reports in {checkout} failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def console_rows(ids: dict, requests: int, warmups: int = 3) -> list[dict]:
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from corpus.models import Document

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
        (f"document viewer ({biggest.word_count:,} words)", f"/console/documents/{biggest.pk}/"),
        ("new study form", "/console/studies/new/"),
        ("new judging run form", "/console/runs/judging/new/"),
        ("benchmarks", "/console/benchmarks/"),
        ("import a benchmark form", "/console/benchmarks/upload/"),
        ("import responses form", "/console/runs/generation/import/"),
        ("judges", "/console/judges/"),
        ("judge page, its prompt filled", f"/console/judges/{ids['judge']}/"),
        ("admin index (for comparison)", "/admin/"),
    ]
    rows = []
    for label, path in pages:
        for _ in range(warmups):  # warm-up: templates, first queries
            assert client.get(path).status_code == 200, path
        times, queries = [], []
        for _ in range(requests):
            reset_queries()
            with CaptureQueriesContext(connection) as captured:
                answer = client.get(path)
            assert answer.status_code == 200, (path, answer.status_code)
            times.append(server_ms(answer))
            queries.append(len(captured))
        rows.append(
            {
                "page": label,
                "path": path,
                **summary(times),
                "queries": max(queries),
                "bytes": len(answer.content),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30, help="timed requests per page")
    parser.add_argument(
        "--cold-requests", type=int, default=5, help="report requests with an emptied cache"
    )
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--scratch-db", default="concord_console_bench")
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CONCORD_ELITR_DATA") or DEFAULT_DATA)
    )
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "console_pages.json"
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="another checkout whose report pages are timed beside this one's, alternately",
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of report timings")
    parser.add_argument(
        "--warmups", type=int, default=3, help="untimed requests per page before the timed ones"
    )
    parser.add_argument("--skip-console", action="store_true", help="time the report pages only")
    # internal: time the report pages in this process with CHECKOUT's code
    parser.add_argument("--serve-reports", type=Path, metavar="CHECKOUT", help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    parser.add_argument("--var-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve_reports:
        configure(args.serve_reports, args.database_url, args.var_dir, args.data)
        print(json.dumps(time_reports(args.requests, args.cold_requests, args.warmups)))
        return

    if not (args.data / "data.zip").is_file():
        sys.exit(f"The ELITR-Bench archives are not at {args.data} (--data or CONCORD_ELITR_DATA).")
    if args.compare and not (args.compare / "manage.py").is_file():
        sys.exit(f"--compare {args.compare}: not a checkout (no manage.py).")

    import psycopg

    admin = psycopg.connect(args.postgres, autocommit=True)
    admin.execute(f"DROP DATABASE IF EXISTS {args.scratch_db} WITH (FORCE)")
    admin.execute(f"CREATE DATABASE {args.scratch_db}")
    tmp = tempfile.mkdtemp(prefix="concord-console-bench-")
    database_url = args.postgres.rsplit("/", 1)[0] + f"/{args.scratch_db}"
    configure(REPO, database_url, tmp, args.data)
    from django.db import connection

    from demo.screenshots import beat_workers, build_data
    from generation.models import Response

    checkouts = [("this checkout", REPO)]
    if args.compare:
        checkouts.insert(0, (f"compared: {args.compare}", args.compare.resolve()))
    try:
        started = time.perf_counter()
        ids = build_data(lambda line: None)
        beat_workers()
        setup_seconds = time.perf_counter() - started
        rows = [] if args.skip_console else console_rows(ids, args.requests, args.warmups)
        responses = Response.objects.count()
        connection.close()
        reports = []
        for round_number in range(1, args.rounds + 1):
            for name, checkout in checkouts:
                # each checkout's cache in its own folder, new for every process
                var_dir = tempfile.mkdtemp(prefix="reports-", dir=tmp)
                for row in time_reports_in(checkout, args, database_url, var_dir):
                    reports.append({"round": round_number, "code": name, **row})
                    print(json.dumps(reports[-1]), flush=True)
    finally:
        connection.close()
        admin.execute(f"DROP DATABASE IF EXISTS {args.scratch_db} WITH (FORCE)")
        admin.close()

    print(
        f"Console pages on the paper's data ({responses:,} responses), PostgreSQL, DEBUG off, "
        f"{args.requests} requests each after {args.warmups} warm-ups, {os.cpu_count()} CPUs"
    )
    if rows:
        header = f"{'page':<42}{'p50':>8}{'p95':>8}{'max':>8}{'queries':>9}{'KiB':>8}  (ms)"
        print(header)
        print("-" * len(header))
        for r in rows:
            print(
                f"{r['page']:<42}{r['p50_ms']:>8.1f}{r['p95_ms']:>8.1f}{r['max_ms']:>8.1f}"
                f"{r['queries']:>9}{r['bytes'] / 1024:>8.0f}"
            )
    print(
        f"\nAgreement report: first request of a fresh process, {args.cold_requests} cold "
        f"(report cache emptied before each), {args.requests} warm (ms)"
    )
    header = (
        f"{'round':<6}{'code':<22}{'page':<54}{'first':>8}{'cold p50':>10}{'cold p95':>10}"
        f"{'cold cpu':>10}{'warm p50':>10}{'warm p95':>10}{'warm cpu':>10}{'KiB':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in reports:
        print(
            f"{r['round']:<6}{r['code'][:21]:<22}{r['page']:<54}{r['first_ms']:>8.0f}"
            f"{r['cold']['p50_ms']:>10.0f}{r['cold']['p95_ms']:>10.0f}"
            f"{r['cold']['cpu_p50_ms']:>10.0f}{r['warm']['p50_ms']:>10.0f}"
            f"{r['warm']['p95_ms']:>10.0f}{r['warm']['cpu_p50_ms']:>10.0f}{r['bytes'] / 1024:>6.0f}"
        )
    print("(cpu: the median CPU time of the web process per request, whatever else runs)")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "console_pages",
                "command": "python " + " ".join(sys.argv),
                "requests_per_page": args.requests,
                "cold_requests": args.cold_requests,
                "setup_seconds": setup_seconds,
                "responses": responses,
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "rows": rows,
                "reports": reports,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()

"""Concurrent participants on the rating pages, on PostgreSQL behind gunicorn.

Each simulated participant arrives from a Prolific-style link, consents, then
loops: load an item page, submit its rating (as the page's JavaScript does).
Server time is what Django spent on a request (its Server-Timing header);
client latency adds queueing and the network. Target: p95 server time under
50 ms with no errors.

    .venv/bin/python benchmarks/rating_load.py [--participants 50] [--seconds 30]
        [--workers 4] [--postgres URL] [--data DIR]

Prints a table and writes benchmarks/results/rating_load.json.
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
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.crowd_web import (  # noqa: E402
    REPO,
    consent,
    gunicorn,
    percentile,
    scratch_database,
    server_ms,
    study_link,
    web_env,
)

DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"
SCRATCH_DB = "concord_rating_bench"


def prepare(env: dict, data: Path, places: int) -> str:
    """Migrate the scratch database, import data and open a crowd study; print its id."""
    code = f"""
import django, sys
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from pathlib import Path
from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from annotator.models import Study
from annotator.actions.items import check_build_items
from annotator.actions.status import check_set_study_status
from corpus.models import Dataset
from generation.models import System
data = Path({str(data)!r})
if (data / "data.zip").exists():
    import_elitr_bench(data, with_responses=True)
    systems = ["GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"]
else:
    import_elitr_bench(write_synthetic_elitr({str(data)!r} + "-synthetic", meetings=8),
                       with_responses=True, languages=("en",))
    systems = list(System.objects.values_list("name", flat=True))
study = Study.objects.create(name="Load test", dataset=Dataset.objects.get(
    benchmark__slug="elitr-bench", version="qa", language="en", split="test2"),
    raters_per_task={places})
study.systems.set(System.objects.filter(name__in=systems))
check_build_items(study)
check_set_study_status(study, Study.Status.OPEN)
print(study.public_id)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True, text=True
    ).stdout
    return out.strip().splitlines()[-1]


class Participant(threading.Thread):
    def __init__(self, base: str, study: str, number: int, stop_at: float, results: dict):
        super().__init__(daemon=True)
        self.base, self.study, self.number = base, study, number
        self.stop_at, self.results = stop_at, results

    def record(self, kind: str, answer: requests.Response, started: float) -> None:
        latency = (time.perf_counter() - started) * 1000
        timing = server_ms(answer)
        with LOCK:
            self.results["client_ms"][kind].append(latency)
            if timing is not None:
                self.results["server_ms"][kind].append(timing)
            if answer.status_code >= 400:
                self.results["errors"].append(f"{kind} {answer.status_code}")

    def run(self) -> None:
        session = requests.Session()
        pid = f"LOADTEST{self.number:04d}"
        entry = study_link(self.base, self.study, pid, "load", f"s{self.number}")
        try:
            page = session.get(entry, timeout=30)
            arrived = consent(session, self.base, page)
            match = re.search(r"/r/([^/]+)/item/(\d+)/", arrived.url) if arrived else None
            if not match:
                with LOCK:
                    ended = arrived or page
                    self.results["errors"].append(
                        f"arrival ended at {ended.url} ({ended.status_code})"
                    )
                return
            token, position = match[1], 1
            csrf = session.cookies.get("csrftoken", "")
            while time.perf_counter() < self.stop_at:
                url = f"{self.base}/r/{token}/item/{position}/"
                started = time.perf_counter()
                self.record("load item", session.get(url, timeout=30), started)
                started = time.perf_counter()
                answer = session.post(
                    url,
                    data={"score": 1 + (position % 10), "seconds": "2.0"},
                    headers={"Accept": "application/json", "X-CSRFToken": csrf, "Referer": url},
                    timeout=30,
                )
                self.record("submit rating", answer, started)
                position = position % self.results["items_per_task"] + 1
        except requests.RequestException as error:
            with LOCK:
                self.results["errors"].append(repr(error))


LOCK = threading.Lock()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument(
        "--scratch-db", default=SCRATCH_DB, help="its own name when others benchmark beside you"
    )
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CONCORD_ELITR_DATA") or DEFAULT_DATA)
    )
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "rating_load.json"
    )
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="concord-load-")
    places = -(-args.participants // 8) + 1  # test2 has 8 meetings: room for everyone
    with scratch_database(args.postgres, args.scratch_db) as database_url:
        env = web_env(database_url, tmp)
        study = prepare(env, args.data, places)
        with gunicorn(env, args.workers) as base:
            items_per_task = 36  # the smallest test2 task (12 questions x 3 systems)
            results = {
                "client_ms": {"load item": [], "submit rating": []},
                "server_ms": {"load item": [], "submit rating": []},
                "errors": [],
                "items_per_task": items_per_task,
            }
            started = time.perf_counter()
            stop_at = started + args.seconds
            threads = [
                Participant(base, study, n, stop_at, results) for n in range(args.participants)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - started

    rows = []
    for kind in ("load item", "submit rating"):
        server, client_ms = results["server_ms"][kind], results["client_ms"][kind]
        rows.append(
            {
                "request": kind,
                "count": len(client_ms),
                "server_p50_ms": statistics.median(server),
                "server_p95_ms": percentile(server, 95),
                "server_max_ms": max(server),
                "client_p50_ms": statistics.median(client_ms),
                "client_p95_ms": percentile(client_ms, 95),
            }
        )
    total = sum(r["count"] for r in rows)
    all_server = results["server_ms"]["load item"] + results["server_ms"]["submit rating"]
    p95 = percentile(all_server, 95)
    print(
        f"{args.participants} participants, {args.seconds:.0f} s, gunicorn {args.workers} "
        f"workers, PostgreSQL, {os.cpu_count()} CPUs"
    )
    header = (
        f"{'request':<15}{'count':>7}{'srv p50':>9}{'srv p95':>9}{'srv max':>9}"
        f"{'cli p50':>9}{'cli p95':>9}  (ms)"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['request']:<15}{r['count']:>7}{r['server_p50_ms']:>9.1f}{r['server_p95_ms']:>9.1f}"
            f"{r['server_max_ms']:>9.1f}{r['client_p50_ms']:>9.1f}{r['client_p95_ms']:>9.1f}"
        )
    print(f"throughput {total / elapsed:.0f} requests/s; errors: {len(results['errors'])}")
    verdict = "met" if p95 < 50 and not results["errors"] else "NOT met"
    print(f"Target: p95 server time < 50 ms, no errors -> {verdict} (p95 {p95:.1f} ms)")
    if results["errors"]:
        print("first errors:", results["errors"][:5])
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "rating_load",
                "command": "python benchmarks/rating_load.py",
                "participants": args.participants,
                "seconds": args.seconds,
                "gunicorn_workers": args.workers,
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "rows": rows,
                "server_p95_ms": p95,
                "errors": results["errors"][:20],
                "requests_per_second": total / elapsed,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()

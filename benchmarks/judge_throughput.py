"""The paper's 390 all-eval responses judged against a local OpenAI-compatible
server that answers after 200 ms:

(a) one request at a time, as the authors' eval script does;
(b) a Concord judging run with 32, then 64, concurrent requests (each with a
    ledger of its own: another model name, so that nothing is answered from
    the ledger);
(c) the 32-request run again: answered wholly from the call ledger;
(d) at scale: the 390 responses judged with K seeds each (`--scale-seeds`,
    each seed a request of its own: 390 x K items, 5,070 at the default 13)
    at 256 concurrent requests, the worker's resident memory sampled through
    the run;
(e) the machine's floor for (d): the same number of requests with the same
    bodies, sent by as many threads, each with an httpx client of its own and
    nothing else (no Concord, no database): what this machine's Python client
    side allows at that concurrency.

Targets: (b) at least 20x faster than (a) at 32, and within 1.2x of the ideal
390 x 0.2 s / concurrency at 32 and at 64; (c) makes 0 requests in under 0.5 s;
(d) within 1.3x of the ideal, memory flat (the growth over the run, against
the items judged).
"waves" is the floor that whole requests allow: 389 requests (two prompts are
identical) take ceil(389 / concurrency) rounds of 0.2 s, 1.40 s at 64 (1.15x
the ideal) and 2.60 s at 32.

The worker's settings are production's in this respect: DEBUG off (with DEBUG
on, Django keeps every query's text and times it).

    .venv/bin/python benchmarks/judge_throughput.py [--latency 0.2] [--concurrency 32,64]
        [--scale-seeds 13] [--scale-concurrency 256] [--postgres URL] [--data DIR]

Prints a table and writes benchmarks/results/judge_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"
SCRATCH_DB = "concord_judge_bench"
PAPER_SYSTEMS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")


class RemoteFake:
    """The fake server in its own process, read through its /stats page."""

    def __init__(self, url: str) -> None:
        self.url = url

    def stats(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(self.url.rsplit("/v1", 1)[0] + "/stats") as answer:
            return json.loads(answer.read())

    @property
    def count(self) -> int:
        return self.stats()["count"]

    @property
    def max_in_flight(self) -> int:
        return self.stats()["max_in_flight"]


def bare_floor(server, bodies: list[dict], concurrency: int, latency: float) -> dict:
    """(e): `bodies` posted by `concurrency` threads, one httpx client each."""
    import queue
    import threading

    import httpx

    work: queue.Queue = queue.Queue()
    for body in bodies:
        work.put(body)
    url = server.url.rstrip("/") + "/chat/completions"

    def send() -> None:
        with httpx.Client(timeout=30) as client:
            while True:
                try:
                    body = work.get_nowait()
                except queue.Empty:
                    return
                client.post(url, json=body).raise_for_status()

    threads = [threading.Thread(target=send) for _ in range(concurrency)]
    before = server.count
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    ideal = len(bodies) * latency / concurrency
    return {
        "requests": server.count - before,
        "concurrency": concurrency,
        "seconds": seconds,
        "ideal_s": ideal,
        "over_ideal": seconds / ideal,
    }


def scale_run(args, judge_config, server, dataset, systems, create_judging_run) -> dict:
    """(d): 390 x K items at `--scale-concurrency`, the process's resident
    memory sampled by a thread through the run."""
    import threading

    import psutil

    from judging.model_judging import run_llm_judging
    from judging.models import Evaluator

    concurrency, seeds = args.scale_concurrency, args.scale_seeds
    judge = Evaluator.objects.create(
        name=f"bench judge scale {seeds}",
        kind="llm_rubric",
        config=judge_config(concurrency, seeds, f"judge-scale-{seeds}").as_dict(),
    )
    run = create_judging_run(judge, dataset, "st", systems)
    process = psutil.Process()
    samples = [process.memory_info().rss]
    running = threading.Event()
    running.set()

    def sample() -> None:
        while running.is_set():
            samples.append(process.memory_info().rss)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    before = server.count
    sampler.start()
    started = time.perf_counter()
    try:
        run = run_llm_judging(run.pk)
    finally:
        seconds = time.perf_counter() - started
        running.clear()
        sampler.join()
    items = 390 * seeds
    ideal = items * args.latency / concurrency
    return {
        "items": items,
        "concurrency": concurrency,
        "seconds": seconds,
        "ideal_s": ideal,
        "over_ideal": seconds / ideal,
        "requests": server.count - before,
        "done": run.done,
        "status": run.status,
        "rss_start_mib": samples[0] / 2**20,
        "rss_growth_mib": (max(samples) - samples[0]) / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", default="32,64", help="comma-separated: one run for each")
    parser.add_argument(
        "--scale-seeds", type=int, default=13, help="(d): seeds per response; 0 skips (d)"
    )
    parser.add_argument("--scale-concurrency", type=int, default=256)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument(
        "--scratch-db", default=SCRATCH_DB, help="its own name when others benchmark beside you"
    )
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CONCORD_ELITR_DATA") or DEFAULT_DATA)
    )
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "judge_throughput.json"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))

    tmp = tempfile.mkdtemp(prefix="concord-judge-")
    admin = None
    try:
        import psycopg

        admin = psycopg.connect(args.postgres, autocommit=True)
        admin.execute(f"DROP DATABASE IF EXISTS {args.scratch_db} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {args.scratch_db}")
        database_url = args.postgres.rsplit("/", 1)[0] + f"/{args.scratch_db}"
    except Exception as error:  # no PostgreSQL: SQLite
        print(f"PostgreSQL not available ({error}); using SQLite")
        database_url = f"sqlite:///{tmp}/bench.sqlite3"
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        CONCORD_VAR_DIR=tmp,
        DATABASE_URL=database_url,
        DJANGO_LOG_LEVEL="WARNING",
        DJANGO_DEBUG="0",
    )
    import django

    django.setup()
    import openai
    from django.core.management import call_command

    from corpus.models import Dataset, QuestionText
    from generation.models import Response
    from judging.evaluators import judge_for as protocol_for
    from judging.evaluators.config import JudgeConfig
    from judging.importing import import_elitr_bench
    from judging.judging_runs import create_judging_run
    from judging.model_judging import run_llm_judging
    from judging.models import Evaluator

    call_command("migrate", verbosity=0)
    import_elitr_bench(args.data, with_responses=True, languages=("en",))
    dataset = Dataset.objects.get(
        benchmark__slug="elitr-bench", version="qa", language="en", split="test2"
    )
    from generation.models import System

    systems = list(System.objects.filter(name__in=PAPER_SYSTEMS))
    responses = list(
        Response.objects.filter(
            run__dataset=dataset, run__mode="st", run__system__in=systems
        ).select_related("question")
    )
    assert len(responses) == 390, len(responses)
    texts = dict(
        (q, (t, r))
        for q, t, r in QuestionText.objects.filter(dataset=dataset).values_list(
            "question_id", "text", "reference_answer"
        )
    )
    results = {}
    # The server runs in a process of its own, as a real one would: in this
    # process it would compete with the client for the interpreter.
    server_process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", str(args.latency)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    server = RemoteFake(server_process.stdout.readline().strip())
    try:
        concurrencies = [int(c) for c in args.concurrency.split(",")]

        def judge_config(concurrency: int, seeds: int = 1, name: str = "") -> JudgeConfig:
            return JudgeConfig.from_dict(
                {
                    "base_url": server.url,
                    "model": name or f"judge-{concurrency}",  # a ledger of its own
                    "server": "vllm",
                    "seeds": [2023 + k for k in range(seeds)],
                    "max_concurrency": concurrency,
                    "timeout_s": 30,
                }
            )

        # (a) the authors' way: one call after the other
        config = judge_config(1)
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        started = time.perf_counter()
        for response in responses:
            question, reference = texts[response.question_id]
            client.chat.completions.create(
                model="judge",
                messages=protocol_for(config).messages(question, response.text, reference),
                **config.sampling(2023),
            )
        results["a_sequential_s"] = time.perf_counter() - started
        sequential_requests = server.count
        # (b) Concord runs
        results["b"] = {}
        judges = {}
        for concurrency in concurrencies:
            judges[concurrency] = Evaluator.objects.create(
                name=f"bench judge {concurrency}",
                kind="llm_rubric",
                config=judge_config(concurrency).as_dict(),
            )
            run = create_judging_run(judges[concurrency], dataset, "st", systems)
            before = server.count
            started = time.perf_counter()
            run = run_llm_judging(run.pk)
            seconds = time.perf_counter() - started
            ideal = 390 * args.latency / concurrency
            waves = math.ceil((server.count - before) / concurrency) * args.latency
            results["b"][str(concurrency)] = {
                "seconds": seconds,
                "ideal_s": ideal,
                "over_ideal": seconds / ideal,
                "waves_s": waves,
                "over_waves": seconds / waves,
                "requests": server.count - before,
                "done": run.done,
                "status": run.status,
            }
        results["max_in_flight"] = server.max_in_flight
        # (c) again: the ledger answers
        first = concurrencies[0]
        rerun = create_judging_run(judges[first], dataset, "st", systems)
        before = server.count
        started = time.perf_counter()
        again = run_llm_judging(rerun.pk)
        results["c_again_s"] = time.perf_counter() - started
        results["c_requests"] = server.count - before
        results["c_cache_hits"] = again.cache_hits
        results["c_done"] = again.done
        # (d) at scale, resident memory sampled every 50 ms
        if args.scale_seeds:
            results["d"] = scale_run(
                args, judge_config, server, dataset, systems, create_judging_run
            )
            rubric = protocol_for(config)
            question_of = {r.pk: texts[r.question_id][0] for r in responses}
            reference_of = {r.pk: texts[r.question_id][1] for r in responses}
            bodies = [
                {
                    "model": "floor",
                    "messages": rubric.messages(question_of[r.pk], r.text, reference_of[r.pk]),
                    **config.sampling(2023 + k),
                }
                for k in range(args.scale_seeds)
                for r in responses
            ]
            results["e"] = bare_floor(server, bodies, args.scale_concurrency, args.latency)
    finally:
        server_process.terminate()
        server_process.wait(timeout=10)
        from django.db import connections

        connections.close_all()
        if admin is not None:
            admin.execute(f"DROP DATABASE IF EXISTS {args.scratch_db} WITH (FORCE)")
            admin.close()

    first = str(concurrencies[0])
    speedup = results["a_sequential_s"] / results["b"][first]["seconds"]
    print(
        f"390 responses, server latency {args.latency * 1000:.0f} ms, "
        f"database {database_url.split(':')[0]}"
    )
    print(f"{'run':<36}{'seconds':>9}{'requests':>10}{'x ideal':>9}{'x waves':>9}")
    print("-" * 73)
    print(
        f"{'(a) one at a time (paper script)':<36}{results['a_sequential_s']:>9.2f}"
        f"{sequential_requests:>10}{'':>9}"
    )
    for concurrency, row in results["b"].items():
        label = f"(b) Concord run, {concurrency} concurrent"
        print(
            f"{label:<36}{row['seconds']:>9.2f}{row['requests']:>10}"
            f"{row['over_ideal']:>9.2f}{row['over_waves']:>9.2f}"
        )
    print(
        f"{'(c) the 32 run again (ledger)':<36}{results['c_again_s']:>9.2f}"
        f"{results['c_requests']:>10}{'':>9}"
    )

    def verdict(met: bool) -> str:
        return "met" if met else "NOT met"

    within = {c: row["over_ideal"] <= 1.2 for c, row in results["b"].items()}
    print(f"speed-up (a)/(b at {first}): {speedup:.1f}x (target >= 20x: {verdict(speedup >= 20)})")
    for concurrency, met in within.items():
        row = results["b"][concurrency]
        print(
            f"(b) at {concurrency}: {row['over_ideal']:.2f}x the ideal "
            f"{row['ideal_s']:.2f} s, {row['over_waves']:.2f}x the whole waves "
            f"{row['waves_s']:.2f} s (target <= 1.2x the ideal: {verdict(met)})"
        )
    rerun_met = results["c_requests"] == 0 and results["c_again_s"] < 0.5
    print(
        f"(c) {results['c_requests']} requests in {results['c_again_s']:.2f} s "
        f"(target: 0 in under 0.5 s: {verdict(rerun_met)})"
    )
    if "d" in results:
        row = results["d"]
        print(
            f"(d) {row['items']} items at {row['concurrency']} concurrent: "
            f"{row['seconds']:.2f} s, {row['over_ideal']:.2f}x the ideal {row['ideal_s']:.2f} s "
            f"(target <= 1.3x: {verdict(row['over_ideal'] <= 1.3)}); {row['requests']} "
            f"requests; resident memory {row['rss_start_mib']:.0f} MiB at the start, "
            f"peak +{row['rss_growth_mib']:.0f} MiB "
            f"({row['rss_growth_mib'] * 1024 / row['items']:.1f} KiB per item)"
        )
        floor = results["e"]
        print(
            f"(e) the machine's floor: {floor['requests']} bare requests from "
            f"{floor['concurrency']} threads (an httpx client each, nothing else) took "
            f"{floor['seconds']:.2f} s, {floor['over_ideal']:.2f}x the ideal; (d) is "
            f"{row['seconds'] / floor['seconds']:.2f}x that floor"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "judge_throughput",
                "command": "python benchmarks/judge_throughput.py " + " ".join(sys.argv[1:]),
                "sequential_requests": sequential_requests,
                "latency_s": args.latency,
                "concurrency": concurrencies,
                "speedup": speedup,
                "database": database_url.split(":")[0],
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                **results,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()

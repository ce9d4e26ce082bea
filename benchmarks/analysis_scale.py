"""How the agreement report scales: 10^3 ... 10^6 crowd ratings in PostgreSQL.

Synthetic data in a scratch PostgreSQL database: meetings of 25 questions
answered by 4 systems (100 responses per meeting), each response rated by the
meeting's 10 crowd raters (different raters per meeting), plus one gold and
one LLM judge score per response, so the table has 1.2x as many rows as
crowd ratings. Each size is its own dataset (split "n<size>") in the same
database. Times, each the best of --rounds, side by side in one run:

- load: the tidy score table read from PostgreSQL, streamed with COPY
  (analysis.report.scores.copied_score_table), and, for comparison, fetched row by
  row through the ORM's cursor (the loader before issue 11);
- report: the whole report from the loaded table (every statistic, the
  judge-trust section with 1,000 meeting resamples, PPI, planner,
  diagnostics; no plots); load + report is the target's figure;
- ICC: Concord's analysis.statistics.icc (six forms, F, p, CIs) against the bare numpy
  two-way ANOVA it needs (the lower bound), and pingouin's intraclass_corr
  (the reference), pingouin imported and called once before it is timed;
- the clustered bootstrap: 1,000 meeting resamples of the trust statistics on
  the paper's 390 test2 responses (the real ones when the ELITR-Bench
  archives are found, else synthetic ones of the same shape), vectorised, and
  a direct loop (concatenate the drawn meetings, scipy.stats.pearsonr) for the
  correlation alone.

Targets: load + report on 10^6 ratings under 5 s; 1,000 clustered resamples
on 390 responses under 1 s; ICC within 2x of the numpy bound.

    .venv/bin/python benchmarks/analysis_scale.py [--sizes 1000,10000,100000,1000000]
        [--postgres postgres://postgres@127.0.0.1:5432/postgres] [--scratch NAME]
        [--compare OTHER_CHECKOUT]

The scratch database (default concord_analysis_scale) is dropped and created
again, and dropped at the end. Prints a table and writes
benchmarks/results/analysis_scale.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
RATERS = 10
QUESTIONS_PER_MEETING = 25
SYSTEMS = ("sys-a", "sys-b", "sys-c", "sys-d")
ITEMS_PER_MEETING = QUESTIONS_PER_MEETING * len(SYSTEMS)
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"


def best_of(function, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def copy_rows(table: str, columns: list[str], frame: pd.DataFrame) -> None:
    """COPY a DataFrame into a table (CSV through psycopg)."""
    from django.db import connection

    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, header=False)
    quoted = ", ".join(f'"{c}"' for c in columns)
    # empty fields are empty strings, not NULL (no column written here is null)
    statement = f"COPY {table} ({quoted}) FROM STDIN (FORMAT csv, NULL '\\N')"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        copy.write(buffer.getvalue())


def fill(size: int, seed: int = 0) -> str:
    """Store `size` crowd ratings (plus gold and judge scores) as the dataset
    of split n<size>; returns the split."""
    from django.db import connection
    from django.utils import timezone

    from corpus.models import Benchmark, Dataset, Document
    from generation.models import GenerationRun, System
    from judging.models import Evaluator

    rng = np.random.default_rng(seed)
    split = f"n{size}"
    items = size // RATERS
    meetings = max(1, items // ITEMS_PER_MEETING)
    items = meetings * ITEMS_PER_MEETING
    benchmark, _ = Benchmark.objects.get_or_create(slug="scale", defaults={"name": "Scale"})
    dataset = Dataset.objects.create(benchmark=benchmark, version="qa", language="en", split=split)
    documents = Document.objects.bulk_create(
        Document(
            benchmark=benchmark,
            external_id=f"{split}-meeting-{m:05d}",
            split=split,
            text="",
            word_count=0,
        )
        for m in range(meetings)
    )
    systems = [System.objects.get_or_create(name=name, model_name=name)[0] for name in SYSTEMS]
    runs = [GenerationRun.objects.create(system=s, dataset=dataset, mode="st") for s in systems]
    crowd, _ = Evaluator.objects.get_or_create(name="crowd", kind="crowd_human")
    gold, _ = Evaluator.objects.get_or_create(name="gold", kind="gold_human")
    judge, _ = Evaluator.objects.get_or_create(name="judge", kind="llm_rubric")

    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM corpus_question")
        first_question = cursor.fetchone()[0] + 1
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM generation_response")
        first_response = cursor.fetchone()[0] + 1
    number = np.arange(meetings * QUESTIONS_PER_MEETING)
    copy_rows(
        "corpus_question",
        ["id", "external_id", "order", "question_type", "answer_position", "document_id"],
        pd.DataFrame(
            {
                "id": first_question + number,
                "external_id": (number % QUESTIONS_PER_MEETING + 1).astype(str),
                "order": number % QUESTIONS_PER_MEETING + 1,
                "question_type": np.array(["who", "what", "when", "howmany"])[number % 4],
                "answer_position": np.array(["B", "M", "E", "S"])[(number // 4) % 4],
                "document_id": np.array([d.pk for d in documents])[number // QUESTIONS_PER_MEETING],
            }
        ),
    )
    item = np.arange(items)
    question = first_question + item // len(SYSTEMS)
    system = item % len(SYSTEMS)
    meeting = item // ITEMS_PER_MEETING
    quality = rng.normal(6, 2, items) + 0.8 * (1.5 - system)
    lengths = rng.integers(50, 800, items)
    now = timezone.now().isoformat()
    copy_rows(
        "generation_response",
        [
            "id",
            "text",
            "created_at",
            "question_id",
            "run_id",
            "finish_reason",
            "length_instruction",
            "removed_tokens",
            "trim_notice",
        ],  # fmt: skip
        pd.DataFrame(
            {
                "id": first_response + item,
                "text": ["x" * n for n in lengths],
                "created_at": now,
                "question_id": question,
                "run_id": np.array([r.pk for r in runs])[system],
                "finish_reason": "",
                "length_instruction": "",
                "removed_tokens": 0,
                "trim_notice": "",
            }
        ),
    )
    crowd_scores = np.clip(
        np.round(quality[:, None] + rng.normal(0, 1.2, size=(items, RATERS))), 1, 10
    )
    frames = [
        pd.DataFrame(
            {
                "response_id": np.repeat(first_response + item, RATERS),
                "evaluator_id": crowd.pk,
                "rater": np.char.add(
                    np.char.add(np.repeat(meeting, RATERS).astype(str), ":r"),
                    np.tile(np.arange(RATERS), items).astype(str),
                ),
                "score": crowd_scores.ravel(),
            }
        )
    ]
    for evaluator, noise, bias in ((gold, 0.7, 0.0), (judge, 1.8, 0.02)):
        frames.append(
            pd.DataFrame(
                {
                    "response_id": first_response + item,
                    "evaluator_id": evaluator.pk,
                    "rater": "",
                    "score": np.clip(
                        np.round(quality + bias * lengths / 100 + rng.normal(0, noise, items)),
                        1,
                        10,
                    ),
                }
            )
        )
    judgments = pd.concat(frames, ignore_index=True)
    judgments = judgments.assign(
        order=0,
        raw_score=judgments["score"],
        raw_scale_min=1.0,
        raw_scale_max=10.0,
        feedback="",
        created_at=now,
    )
    copy_rows(
        "judging_judgment",
        [
            "response_id",
            "evaluator_id",
            "rater",
            "score",
            "order",
            "raw_score",
            "raw_scale_min",
            "raw_scale_max",
            "feedback",
            "created_at",
        ],  # fmt: skip
        judgments,
    )
    with connection.cursor() as cursor:
        for table in ("corpus_question", "generation_response"):
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT MAX(id) FROM {table}))"
            )
        cursor.execute("ANALYZE")
    return split


def numpy_anova_bound(matrix: np.ndarray) -> tuple[float, float, float]:
    """The mean squares a two-way ICC needs, and nothing else."""
    n, k = matrix.shape
    grand = matrix.mean()
    row_means, col_means = matrix.mean(axis=1), matrix.mean(axis=0)
    ss_rows = k * ((row_means - grand) ** 2).sum()
    ss_cols = n * ((col_means - grand) ** 2).sum()
    ss_error = ((matrix - grand) ** 2).sum() - ss_rows - ss_cols
    return ss_rows / (n - 1), ss_cols / (k - 1), ss_error / ((n - 1) * (k - 1))


def icc_times(size: int, rounds: int, pingouin_max: int) -> dict:
    from analysis.statistics.icc import icc_table, pingouin_icc

    items = size // RATERS
    matrix = np.clip(
        np.round(
            np.random.default_rng(1).normal(6, 2, (items, 1))
            + np.random.default_rng(2).normal(0, 1, (items, RATERS))
        ),
        1,
        10,
    )
    out = {
        "icc_s": best_of(lambda: icc_table(matrix), rounds),
        "numpy_bound_s": best_of(lambda: numpy_anova_bound(matrix), rounds),
        "pingouin_s": None,
    }
    if size <= pingouin_max:
        long = pd.DataFrame(
            {
                "t": np.repeat(np.arange(items), RATERS),
                "r": np.tile(np.arange(RATERS), items),
                "s": matrix.ravel(),
            }
        )
        reference = {r.form: r.icc for r in pingouin_icc(long, "t", "r", "s")}  # warm, and check
        mine = {r.form: r.icc for r in icc_table(matrix)}
        assert all(abs(mine[f] - reference[f]) < 1e-9 for f in mine)
        out["pingouin_s"] = best_of(lambda: pingouin_icc(long, "t", "r", "s"), rounds)
    return out


def paper_bootstrap(data: Path, rounds: int, resamples: int) -> dict:
    """1,000 meeting resamples of the trust statistics on the paper's 390
    responses: the whole trust section (vectorised) and a direct loop for the
    correlation with gold alone."""
    from scipy import stats

    from analysis.report import trust
    from analysis.report.scope import resolve
    from analysis.report.scores import response_scores
    from analysis.report.selection import Selection

    systems = ("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5")
    if (data / "data.zip").exists():
        from judging.importing import import_elitr_bench

        import_elitr_bench(data, with_responses=True, languages=("en",))
        source = "the ELITR-Bench release"
    else:
        from corpus.importers.synthetic import write_synthetic_elitr
        from judging.importing import import_elitr_bench

        folder = Path(tempfile.mkdtemp()) / "synthetic"
        import_elitr_bench(write_synthetic_elitr(folder, meetings=8), with_responses=True)
        systems = ()
        source = "synthetic meetings (no ELITR-Bench archives found)"
    selection = Selection(dataset_version="qa", split="test2", mode="st", systems=systems)
    scope = resolve(selection)
    rs = response_scores(scope.table)
    wide = rs.pivot(index="response_id", columns="evaluator", values="score")
    wide.columns = [str(c) for c in wide.columns]
    gold = scope.reference

    def vectorised():
        return trust.build(scope, rs, wide, {}, resamples=resamples)

    frame = trust.response_frame(rs, wide)
    judge = "gpt-4-eval" if "gpt-4-eval" in frame else frame.columns[0]
    meetings = sorted(frame["meeting"].astype(str).unique())
    groups = {m: g for m, g in frame.groupby(frame["meeting"].astype(str))}
    draws = np.random.default_rng(0).integers(0, len(meetings), (resamples, len(meetings)))

    def loop():
        return [
            stats.pearsonr(*pd.concat([groups[meetings[m]] for m in draw])[[judge, gold]].T.values)
            for draw in draws
        ]

    vectorised()  # warm: imports
    return {
        "source": source,
        "responses": int(len(frame)),
        "meetings": len(meetings),
        "resamples": resamples,
        "judges": vectorised()["trust"]["judges"],
        "trust_section_s": best_of(vectorised, rounds),
        "direct_loop_correlation_s": best_of(loop, 1),
    }


# Timed in a checkout of its own (--compare): the report from the in-memory
# table that both checkouts can load (the ORM's rows), best of 3.
COMPARE_SCRIPT = """
import json, os, sys, time
sys.path.insert(0, os.getcwd())
import django
django.setup()
try:
    from analysis.report import scores
    from analysis.report.build import build_report
    from analysis.report.selection import Selection
except ImportError:  # a checkout from before analysis/ had sub-packages
    from analysis import scores
    from analysis.report import build_report
    from analysis.selection import Selection
selection = Selection(split=sys.argv[1])
table = getattr(scores, "fetched_score_table", scores.score_table)(selection)
build_report(selection, table=table)
times = []
for _ in range(3):
    started = time.perf_counter()
    report = build_report(selection, table=table)
    times.append(time.perf_counter() - started)
print(json.dumps({"report_s": min(times), "trust": "trust" in report.to_dict()}))
"""


def compare(checkouts: list[str], split: str, rounds: int) -> list[dict]:
    """Alternately, round by round: each checkout's report on the same table."""
    import subprocess

    out = []
    for round_number in range(1, rounds + 1):
        for checkout in checkouts:
            result = subprocess.run(
                [sys.executable, "-c", COMPARE_SCRIPT, split],
                cwd=checkout,
                env={**os.environ, "PYTHONPATH": checkout},
                capture_output=True,
                text=True,
                check=True,
            )
            measured = json.loads(result.stdout.strip().splitlines()[-1])
            out.append({"round": round_number, "checkout": checkout, **measured})
            print(json.dumps(out[-1]), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--pingouin-max", type=int, default=100_000, help="largest size pingouin is timed at"
    )
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--scratch", default="concord_analysis_scale", help="scratch database")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument(
        "--keep", action="store_true", help="keep the scratch database (to profile it)"
    )
    parser.add_argument(
        "--compare",
        metavar="DIR",
        help="another checkout: its report and this one's on the largest size's table "
        "(fetched by the ORM), alternately, two rounds",
    )
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CONCORD_ELITR_DATA") or DEFAULT_DATA)
    )
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "analysis_scale.json"
    )
    args = parser.parse_args()

    import psycopg

    admin = psycopg.connect(args.postgres, autocommit=True)
    admin.execute(f"DROP DATABASE IF EXISTS {args.scratch} WITH (FORCE)")
    admin.execute(f"CREATE DATABASE {args.scratch}")
    sys.path.insert(0, str(REPO))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        DATABASE_URL=args.postgres.rsplit("/", 1)[0] + f"/{args.scratch}",
    )
    try:
        rows, bootstrap = measure(args)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            admin.execute(f"DROP DATABASE IF EXISTS {args.scratch} WITH (FORCE)")
        admin.close()
    report(args, rows, bootstrap)


def measure(args) -> tuple[list[dict], dict]:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from analysis.report.build import build_report
    from analysis.report.scores import copied_score_table, fetched_score_table
    from analysis.report.selection import Selection

    sizes = [int(s) for s in args.sizes.split(",")]
    splits = {}
    for size in sizes:
        started = time.perf_counter()
        splits[size] = fill(size)
        print(f"stored {size:,} crowd ratings in {time.perf_counter() - started:.1f} s", flush=True)
    rows = []
    for size in sizes:
        selection = Selection(split=splits[size])
        table = copied_score_table(selection)
        build_report(selection, table=table)  # warm: imports, caches
        load_copy = best_of(lambda s=selection: copied_score_table(s), args.rounds)
        load_fetch = best_of(
            lambda s=selection: fetched_score_table(s), 1 if size > 10**5 else args.rounds
        )
        report_s = best_of(lambda s=selection, t=table: build_report(s, table=t), args.rounds)
        end_to_end = best_of(lambda s=selection: build_report(s), args.rounds)
        built = build_report(selection, table=table)
        assert built.counts.judgments == len(table)
        rows.append(
            {
                "ratings": int(size),
                "table_rows": int(len(table)),
                "load_copy_s": load_copy,
                "load_fetch_s": load_fetch,
                "report_s": report_s,
                "load_plus_report_s": end_to_end,
                "trust_rows": len(built.trust.rows),
                **icc_times(size, args.rounds, args.pingouin_max),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    bootstrap = paper_bootstrap(args.data, args.rounds, args.resamples)
    if args.compare:
        from django.db import connections

        connections.close_all()
        bootstrap["compare"] = compare([args.compare, str(REPO)], splits[sizes[-1]], 2)
    return rows, bootstrap


def report(args, rows: list[dict], bootstrap: dict) -> None:
    print()
    print(
        "Agreement report from PostgreSQL, synthetic data (10 crowd raters per response, "
        "100 responses per meeting, plus gold and judge)"
    )
    header = (
        f"{'crowd ratings':>13}{'table rows':>12}{'load COPY s':>12}{'load ORM s':>11}"
        f"{'report s':>10}{'load+report s':>14}{'ICC ms':>9}{'numpy ms':>10}{'ICC/np':>8}"
        f"{'pingouin ms':>13}{'pg/ICC':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        pg = (
            f"{r['pingouin_s'] * 1000:>13.1f}{r['pingouin_s'] / r['icc_s']:>8.0f}"
            if r["pingouin_s"]
            else f"{'-':>13}{'-':>8}"
        )
        print(
            f"{r['ratings']:>13,}{r['table_rows']:>12,}{r['load_copy_s']:>12.2f}"
            f"{r['load_fetch_s']:>11.2f}{r['report_s']:>10.2f}{r['load_plus_report_s']:>14.2f}"
            f"{r['icc_s'] * 1000:>9.2f}{r['numpy_bound_s'] * 1000:>10.2f}"
            f"{r['icc_s'] / r['numpy_bound_s']:>8.2f}{pg}"
        )
    b = bootstrap
    print(
        f"\nClustered bootstrap, {b['resamples']} meeting resamples on {b['responses']} responses "
        f"in {b['meetings']} meetings ({b['source']}; judges {', '.join(b['judges'])}):\n"
        f"  the whole trust section (vectorised): {b['trust_section_s']:.3f} s\n"
        f"  the correlation alone, direct loop over resamples: "
        f"{b['direct_loop_correlation_s']:.3f} s"
    )
    for entry in b.get("compare", []):
        print(
            f"  round {entry['round']}: {entry['checkout']}: report {entry['report_s']:.2f} s "
            f"({'with' if entry['trust'] else 'without'} the trust section)"
        )
    largest = rows[-1]
    print(
        f"Targets: load + report on {largest['ratings']:,} ratings under 5 s -> "
        f"{'met' if largest['load_plus_report_s'] < 5 else 'NOT met'} "
        f"({largest['load_plus_report_s']:.2f} s); {b['resamples']} clustered resamples under "
        f"1 s -> {'met' if b['trust_section_s'] < 1 else 'NOT met'} "
        f"({b['trust_section_s']:.3f} s)"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "analysis_scale",
                "command": "python benchmarks/analysis_scale.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "rows": rows,
                "bootstrap": bootstrap,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()

"""How the agreement report scales: 10^3 ... 10^6 ratings.

Synthetic data: items of 100 per meeting, each rated by the meeting's 10 crowd
raters (different raters per meeting), plus one gold and one judge score per
item, 3 systems. Times, side by side in one run:
- the whole report from the tidy table (all statistics, no plots);
- ICC: Concord's analysis.icc (six forms, F, p, CIs) versus the bare
  vectorised numpy two-way ANOVA it needs (the lower bound), and pingouin's
  intraclass_corr (the reference) where it finishes in reasonable time.
Target: the report on 10^6 ratings under 5 s; ICC within 2x of the numpy bound.

    .venv/bin/python benchmarks/analysis_scale.py [--sizes 1000,10000,100000,1000000]

Prints a table and writes benchmarks/results/analysis_scale.json.
"""

from __future__ import annotations

import argparse
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
ITEMS_PER_MEETING = 100


def synthetic_table(ratings: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    items = ratings // RATERS
    item_ids = np.arange(items)
    meetings = item_ids // ITEMS_PER_MEETING
    quality = rng.normal(6, 2, size=items)
    systems = np.array(["sys-a", "sys-b", "sys-c"])[item_ids % 3]
    types = np.array(["who", "what", "when", "howmany"])[item_ids % 4]
    positions = np.array(["B", "M", "E", "S"])[(item_ids // 4) % 4]
    crowd = np.clip(np.round(quality[:, None] + rng.normal(0, 1.2, size=(items, RATERS))), 1, 10)
    rater_ids = np.char.add(
        np.char.add(np.repeat(meetings, RATERS).astype(str), ":r"),
        np.tile(np.arange(RATERS), items).astype(str),
    )
    frames = [
        pd.DataFrame(
            {
                "response_id": np.repeat(item_ids, RATERS),
                "evaluator": "crowd",
                "rater": rater_ids,
                "score": crowd.ravel(),
            }
        )
    ]
    for name, noise in (("gold", 0.7), ("judge", 1.8)):
        frames.append(
            pd.DataFrame(
                {
                    "response_id": item_ids,
                    "evaluator": name,
                    "rater": "",
                    "score": np.clip(np.round(quality + rng.normal(0, noise, items)), 1, 10),
                }
            )
        )
    table = pd.concat(frames, ignore_index=True)
    meta = pd.DataFrame(
        {
            "response_id": item_ids,
            "system": systems,
            "meeting": meetings.astype(str),
            "question_type": types,
            "answer_position": positions,
            "question_pk": item_ids,
            "question_id": item_ids.astype(str),
            "response_chars": rng.integers(50, 800, size=items),
        }
    )
    table = table.merge(meta, on="response_id")
    table = table.assign(
        evaluator_kind="imported",
        judgment_seed=np.nan,
        order=0,
        mode="st",
        run_seed=np.nan,
        run_id=1,
        dataset_version="qa",
        language="en",
        split="test2",
        benchmark="synthetic",
    )
    for column in (
        "evaluator",
        "system",
        "mode",
        "dataset_version",
        "split",
        "meeting",
        "question_type",
        "answer_position",
        "evaluator_kind",
        "language",
    ):
        table[column] = table[column].astype("category")
    return table


def numpy_anova_bound(matrix: np.ndarray) -> tuple[float, float, float]:
    """The mean squares a two-way ICC needs, and nothing else."""
    n, k = matrix.shape
    grand = matrix.mean()
    row_means, col_means = matrix.mean(axis=1), matrix.mean(axis=0)
    ss_rows = k * ((row_means - grand) ** 2).sum()
    ss_cols = n * ((col_means - grand) ** 2).sum()
    ss_error = ((matrix - grand) ** 2).sum() - ss_rows - ss_cols
    return ss_rows / (n - 1), ss_cols / (k - 1), ss_error / ((n - 1) * (k - 1))


def best_of(function, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument(
        "--pingouin-max",
        type=int,
        default=100_000,
        help="largest size at which pingouin is timed too",
    )
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "analysis_scale.json"
    )
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    tmp = tempfile.mkdtemp(prefix="concord-analysis-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        CONCORD_VAR_DIR=tmp,
        DATABASE_URL=f"sqlite:///{tmp}/bench.sqlite3",
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from analysis.icc import icc_table, pingouin_icc
    from analysis.report import build_report
    from analysis.selection import Selection

    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        table = synthetic_table(size)
        started = time.perf_counter()
        report = build_report(Selection(), table=table)
        report_s = time.perf_counter() - started
        assert report.counts.judgments == len(table)
        matrix = np.clip(
            np.round(
                np.random.default_rng(1).normal(6, 2, (size // RATERS, 1))
                + np.random.default_rng(2).normal(0, 1, (size // RATERS, RATERS))
            ),
            1,
            10,
        )
        icc_s = best_of(lambda m=matrix: icc_table(m))
        bound_s = best_of(lambda m=matrix: numpy_anova_bound(m))
        pingouin_s = None
        if size <= args.pingouin_max:
            long = pd.DataFrame(
                {
                    "t": np.repeat(np.arange(matrix.shape[0]), RATERS),
                    "r": np.tile(np.arange(RATERS), matrix.shape[0]),
                    "s": matrix.ravel(),
                }
            )
            pingouin_s = best_of(lambda frame=long: pingouin_icc(frame, "t", "r", "s"), repeat=1)
            mine = {r.form: r.icc for r in icc_table(matrix)}
            ref = {r.form: r.icc for r in pingouin_icc(long, "t", "r", "s")}
            assert all(abs(mine[f] - ref[f]) < 1e-9 for f in mine)
        rows.append(
            {
                "ratings": len(table) - 2 * (size // RATERS),
                "table_rows": len(table),
                "report_s": report_s,
                "icc_s": icc_s,
                "numpy_bound_s": bound_s,
                "icc_over_bound": icc_s / bound_s,
                "pingouin_s": pingouin_s,
                "pingouin_over_icc": pingouin_s / icc_s if pingouin_s else None,
            }
        )

    header = (
        f"{'crowd ratings':>13}{'table rows':>12}{'report s':>10}{'ICC ms':>9}"
        f"{'numpy ms':>10}{'ICC/np':>8}{'pingouin ms':>13}{'pg/ICC':>8}"
    )
    print("Agreement report and ICC, synthetic data (10 raters per item, 100 items per meeting)")
    print(header)
    print("-" * len(header))
    for r in rows:
        pg = (
            f"{r['pingouin_s'] * 1000:>13.1f}{r['pingouin_over_icc']:>8.1f}"
            if r["pingouin_s"]
            else f"{'-':>13}{'-':>8}"
        )
        print(
            f"{r['ratings']:>13}{r['table_rows']:>12}{r['report_s']:>10.2f}"
            f"{r['icc_s'] * 1000:>9.2f}{r['numpy_bound_s'] * 1000:>10.2f}"
            f"{r['icc_over_bound']:>8.2f}{pg}"
        )
    largest = rows[-1]
    icc_met = all(r["icc_over_bound"] <= 2 for r in rows if r["ratings"] >= 100_000)
    print(
        f"Targets: report on {largest['ratings']} ratings under 5 s -> "
        f"{'met' if largest['report_s'] < 5 else 'NOT met'} ({largest['report_s']:.2f} s); "
        f"ICC within 2x of numpy -> "
        f"{'met' if icc_met else 'NOT met'} (from 10^5 ratings on)"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "analysis_scale",
                "command": "python benchmarks/analysis_scale.py",
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
    print(f"Wrote {args.output.relative_to(REPO)}")


if __name__ == "__main__":
    main()

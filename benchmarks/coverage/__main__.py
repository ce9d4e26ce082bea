"""The coverage harness: every interval and decision Concord reports, replayed
over the library of datasets (benchmarks/coverage/datasets.py), with the
coverage (worst group, and all at once where intervals are read together),
width and cost of each, as a table and JSON.

    .venv/bin/python -m benchmarks.coverage [--small] [--alttest DIR]
        [--replays N] [--families ppi,weighted,...] [--datasets NAME,...]
        [--jobs 2] [--output FILE] [--markdown FILE] [--check]

`--small` is the CI mode (the paper's data and three simulated populations,
few replays: a few minutes); without it, every dataset (SummEval and MT-bench
with `--alttest`, the folder holding AltTest's data/: fetch nitaytech/AltTest,
it has no licence and is never committed) at 1,000 replays. `--check` exits
with 1 when a judged row is below its target (or costs more than it may).
Writes benchmarks/results/coverage.json (coverage_small.json with --small).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# family: the function giving its rows for one dataset
FAMILIES = {
    "ppi": "benchmarks.coverage.rows_ppi:sample_rows",
    "weighted": "benchmarks.coverage.rows_ppi:weighted_rows",
    "bootstrap": "benchmarks.coverage.rows_bootstrap:rows",
    "alt-predictions": "benchmarks.coverage.rows_alt:prediction_rows",
    "alt-looks": "benchmarks.coverage.rows_alt:look_rows",
    "designs": "benchmarks.coverage.rows_adaptive:means_rows",
    "ranking": "benchmarks.coverage.rows_adaptive:ranking_rows",
    "sequence": "benchmarks.coverage.rows_adaptive:sequence_rows",
    "bradley-terry": "benchmarks.coverage.rows_bradley_terry:rows",
    "bt-length": "benchmarks.coverage.rows_bt_length:rows",
    "deferral": "benchmarks.coverage.rows_deferral:rows",
    "self-preference": "benchmarks.coverage.rows_self_preference:rows",
    "ppr": "benchmarks.coverage.rows_ppr:rows",
    "savings": "benchmarks.coverage.rows_savings:rows",
    "cluster-means": "benchmarks.coverage.rows_cluster_means:rows",
}


def _django() -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()


def _task(family: str, index: int, alttest: str | None, settings: dict) -> tuple[list[dict], float]:
    """One family on one dataset (in a worker process): its rows as dicts."""
    _django()
    from benchmarks.coverage import datasets
    from benchmarks.coverage.harness import Settings

    started = time.perf_counter()
    _, loader = datasets.library(Path(alttest) if alttest else None, small=settings["small"])[index]
    module, name = FAMILIES[family].split(":")
    rows = getattr(importlib.import_module(module), name)(loader(), Settings(**settings))
    return [row.as_dict() for row in rows], time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the CI mode")
    parser.add_argument("--alttest", type=Path, help="AltTest's data folder (data/)")
    parser.add_argument("--replays", type=int)
    parser.add_argument("--families", help=f"comma-separated, of {', '.join(FAMILIES)}")
    parser.add_argument("--datasets", help="comma-separated dataset names")
    parser.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 4))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--check", action="store_true", help="exit 1 if a judged row fails")
    args = parser.parse_args(argv)
    families = args.families.split(",") if args.families else list(FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown families {unknown}: choose from {', '.join(FAMILIES)}")
    if args.alttest is not None and not (args.alttest / "summeval").is_dir():
        parser.error(f"{args.alttest}: no summeval/ folder (AltTest's data/ folder is wanted)")
    _django()
    from benchmarks.coverage import datasets
    from benchmarks.coverage.harness import NOT_REPORTED, Row, ci_slack, table

    replays = args.replays or (60 if args.small else 1000)
    settings = {"replays": replays, "seed": args.seed, "small": args.small, "resamples": 400}
    names = [name for name, _ in datasets.library(args.alttest, small=args.small)]
    wanted = set(args.datasets.split(",")) if args.datasets else set(names)
    missing = wanted - set(names)
    if missing:
        parser.error(f"unknown datasets {sorted(missing)}: choose from {', '.join(names)}")
    tasks = [(f, i) for f in families for i, n in enumerate(names) if n in wanted]
    started = time.perf_counter()
    alttest = str(args.alttest) if args.alttest else None
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        futures = [pool.submit(_task, f, i, alttest, settings) for f, i in tasks]
        results = [future.result() for future in futures]
    seconds = time.perf_counter() - started
    fields = Row.__dataclass_fields__
    rows = [
        Row(**{k: v for k, v in found.items() if k in fields})
        for found_rows, _ in results
        for found in found_rows
    ]
    rows.sort(key=lambda r: (r.family, r.statistic, names.index(r.dataset)))
    if args.small:
        for row in rows:
            row.slack = ci_slack(row)
    text = table(rows)
    print(text)
    failing = [r for r in rows if r.judged and r.status not in ("holds", NOT_REPORTED)]
    print(
        f"\n{len(rows)} rows over {len(wanted)} datasets, {replays} replays "
        f"({'small' if args.small else 'full'} mode), {seconds:.0f} s; "
        f"{len(failing)} judged rows fail" + (":" if failing else ".")
    )
    for r in failing:
        print(f"  {r.statistic} | {r.dataset} | {r.setting}: {r.status}")
    output = args.output or REPO / "benchmarks" / "results" / (
        "coverage_small.json" if args.small else "coverage.json"
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(
        json.dumps(
            {
                "benchmark": "coverage",
                "command": "python -m benchmarks.coverage " + " ".join(argv or sys.argv[1:]),
                "settings": settings | {"families": families, "datasets": sorted(wanted)},
                "seconds": seconds,
                "task_seconds": {
                    f"{f}/{names[i]}": s for (f, i), (_, s) in zip(tasks, results, strict=True)
                },
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "rows": [r.as_dict() for r in rows],
            },
            indent=2,
        )
    )
    if args.markdown:
        args.markdown.write_text(text + "\n")
    print(f"Wrote {output}")
    return 1 if args.check and failing else 0


if __name__ == "__main__":
    sys.exit(main())

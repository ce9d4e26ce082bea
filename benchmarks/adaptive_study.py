"""Replays of an adaptive human study on the paper's data: does an
anytime-valid, judge-assisted, actively sampled study stop with intervals that
cover, and with how many human ratings against a fixed uniform design?

The pool: the 390 single-turn test2 responses of the paper's all-eval file
(GPT-4, Vicuna-13B-v1.5, LongAlpaca-7B). The goal: every system's mean human
score within +-`--width` (95%). The judge: GPT-4's scores on every response.
A simulated crowd rater gives a response its gold score plus a difference
drawn from the real silver-minus-gold differences of the file (clipped to
1-10); `--dropout` of the participants sent an item return nothing (the place
is paid and offered again). The truth a replay must cover is each system's
mean of those ratings' expectations over its responses.

Each replay draws each system's responses at random (with replacement), one
after another, for as long as that system's interval is wider than the goal
(the loop sends its places to the systems still open); a response goes to a
human with probability pi fixed before
the study (`analysis.planning.items_for_humans.inclusion_probabilities` on the
disagreement between GPT-4 and Prometheus, a uniform floor mixed in, an
expected share `--rate` of the draws); each system's increments
(`analysis.statistics.anytime.active_increments`, lambda tuned predictably) feed its
confidence sequence (`analysis.statistics.anytime.confidence_sequence`); a system stops
the first time its interval is narrow enough (after `--min-labels` ratings),
and the study is answered when all have, unless `--budget` paid places ran
out first.

Reported: coverage at stop (per system, and all three at once), human ratings
at stop against the fixed uniform design that reaches the same width with a
plain 95% interval on humans alone, and how often the budget ran out first.
Also, as the control that shows why the sequence is needed: the same loop
stopping on the fixed-n normal interval of the same increments.

    .venv/bin/python benchmarks/adaptive_study.py [--replays 1000] [--width 0.6]
        [--rate 0.3] [--budget 1500] [--dropout 0.1] [--raters crowd]
        [--min-labels 30] [--t-opt 800] [--scale 3] [--seed 0] [--data DIR] [--output FILE]

Prints a table and writes benchmarks/results/adaptive_study.json. The
alt-test goal's replay, on the authors' SummEval data, is its sibling
benchmarks/adaptive_alt_test.py.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "elitr-bench"
SYSTEMS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")
Z95 = 1.959963984540054


def paper_pool(data: Path) -> dict[str, np.ndarray]:
    from corpus.importers.elitr_bench import parse_elitr_bench

    bundle = parse_elitr_bench(data, versions=["qa"], languages=["en"], with_responses=True)
    rows = [
        r for r in bundle.responses if r.split == "test2" and r.mode == "st" and r.system in SYSTEMS
    ]
    if len(rows) != 390:
        sys.exit(f"Expected the paper's 390 test2 single-turn responses, found {len(rows)}.")
    names = ("gold-human-eval", "silver-human-eval", "gpt-4-eval", "prometheus-eval")
    pool = {name: np.array([r.scores[name] for r in rows], float) for name in names}
    pool["system"] = np.array([SYSTEMS.index(r.system) for r in rows])
    return pool


def replay(rng, pool, probability, residuals, args) -> dict:
    """One study (analysis.planning.study_plan.run_system per system): each system is
    drawn from until its own interval is narrow enough, then the study is
    answered if all of them stopped within the budget. Returns, per way of
    stopping, what it found and paid."""
    from analysis.planning.study_plan import Goal, run_system

    goal = Goal(
        width=args.width,
        min_labels=args.min_labels,
        t_opt=args.t_opt,
        scale=args.scale,
        max_draws=args.max_draws,
    )
    gold = pool["gold-human-eval"]

    def crowd(item: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.clip(gold[item] + rng.choice(residuals, len(item)), 1, 10)

    per_system = [
        run_system(
            rng,
            np.flatnonzero(pool["system"] == s),
            pool["gpt-4-eval"],
            probability,
            crowd,
            goal,
            args.dropout,
        )
        for s in range(len(SYSTEMS))
    ]
    result: dict = {}
    for name, way in (("sequence", "sequence"), ("fixed", "peeked")):
        stops = [found[way] for found in per_system]
        paid = sum(stop.paid for stop in stops)
        answered = all(stop.stopped for stop in stops) and paid <= args.budget
        result[name] = {
            "stopped": "answered" if answered else "budget",
            "labels": sum(stop.labels for stop in stops),
            "paid": paid,
            "covered": [
                bool(stop.lower <= args.truth[s] <= stop.upper) for s, stop in enumerate(stops)
            ],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--width", type=float, default=0.6, help="half-width goal, 1-10 scale")
    parser.add_argument("--rate", type=float, default=0.3, help="expected share of draws sent")
    parser.add_argument("--floor", type=float, default=0.3, help="uniform share of pi")
    parser.add_argument("--budget", type=int, default=1500, help="human ratings paid at most")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument(
        "--raters",
        choices=("crowd", "experts"),
        default="crowd",
        help="crowd: gold plus a real silver-minus-gold difference; experts: gold itself",
    )
    parser.add_argument(
        "--min-labels", type=int, default=30, help="human ratings per system before a stop"
    )
    parser.add_argument("--max-draws", type=int, default=6000)
    parser.add_argument("--t-opt", type=float, default=800)
    parser.add_argument("--scale", type=float, default=3.0, help="a guess of z's sd")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CONCORD_ELITR_DATA") or DEFAULT_DATA)
    )
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "adaptive_study.json"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    import django
    import pandas as pd

    # analysis.planning.items_for_humans reads the project's selection rules (Django's apps)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    django.setup()
    from analysis.planning.items_for_humans import inclusion_probabilities

    started = time.perf_counter()
    pool = paper_pool(args.data)
    residuals = pool["silver-human-eval"] - pool["gold-human-eval"]
    if args.raters == "experts":  # the gold annotator's own score, no rater noise
        residuals = np.zeros(1)
    gold = pool["gold-human-eval"]
    # the expected simulated rating of each response, over the residuals
    expected = np.clip(gold[:, None] + residuals[None, :], 1, 10)
    truth = np.array([expected[pool["system"] == s].mean() for s in range(len(SYSTEMS))])
    sd = np.array([expected[pool["system"] == s].std() for s in range(len(SYSTEMS))])
    args.truth = truth
    disagreement = np.abs(pool["gpt-4-eval"] - pool["prometheus-eval"])
    probability = inclusion_probabilities(
        pd.Series(disagreement), count=args.rate * len(gold), floor=args.floor
    ).to_numpy()
    # the fixed uniform design on humans alone: n per system for a 95% interval
    # of the same half-width, paid with the same dropout
    uniform_n = np.ceil((Z95 * sd / args.width) ** 2)
    uniform_paid = float(uniform_n.sum() / (1 - args.dropout))
    rng = np.random.default_rng(args.seed)
    runs = [replay(rng, pool, probability, residuals, args) for _ in range(args.replays)]
    seconds = time.perf_counter() - started

    def summary(name: str) -> dict:
        rows = [r[name] for r in runs]
        answered = [r for r in rows if r["stopped"] == "answered"]
        covered = np.array([r["covered"] for r in rows])
        paid = np.array([r["paid"] for r in answered]) if answered else np.array([np.nan])
        labels = np.array([r["labels"] for r in answered]) if answered else np.array([np.nan])
        return {
            "coverage_per_system": covered.mean(axis=0).tolist(),
            "coverage_all": float(covered.all(axis=1).mean()),
            "answered": len(answered) / len(rows),
            "budget_ran_out": 1 - len(answered) / len(rows),
            "labels_median": float(np.median(labels)),
            "paid_median": float(np.median(paid)),
            "paid_mean": float(np.mean(paid)),
            "paid_vs_uniform": float(np.median(paid) / uniform_paid),
        }

    results = {"sequence": summary("sequence"), "fixed": summary("fixed")}
    mc_error = math.sqrt(0.95 * 0.05 / args.replays)
    print(
        f"{args.replays} replays on the paper's 390 responses: goal +-{args.width} per system "
        f"(95%), GPT-4 as the judge, pi from its disagreement with Prometheus (rate {args.rate}, "
        f"floor {args.floor}), dropout {args.dropout}, budget {args.budget} ratings; "
        f"{seconds:.1f} s"
    )

    def saving(ratio: float) -> str:
        return f"{1 - ratio:.0%} fewer" if ratio <= 1 else f"{ratio - 1:.0%} more"

    print(
        f"truth (a system's expected {args.raters} rating): "
        + ", ".join(f"{s} {t:.2f}" for s, t in zip(SYSTEMS, truth, strict=True))
    )
    print(
        f"{'stopping on':<34}{'coverage per system':>24}{'all 3':>7}{'answered':>10}"
        f"{'paid (median)':>15}{'vs uniform':>12}"
    )
    print("-" * 102)
    for name, label in (
        ("sequence", "the confidence sequence"),
        ("fixed", "a fixed-n interval, peeked at"),
    ):
        row = results[name]
        per = " ".join(f"{c:.3f}" for c in row["coverage_per_system"])
        print(
            f"{label:<34}{per:>24}{row['coverage_all']:>7.3f}{row['answered']:>10.3f}"
            f"{row['paid_median']:>15.0f}{row['paid_vs_uniform']:>11.2f}x"
        )
    print(
        f"fixed uniform design on humans alone for the same width: {uniform_n.astype(int).tolist()}"
        f" ratings per system, {uniform_paid:.0f} paid places with the dropout"
    )
    row = results["sequence"]
    worst = min(row["coverage_per_system"])
    print(
        f"targets: coverage at stop >= 0.94 ({worst:.3f}: "
        f"{'met' if worst >= 0.94 else 'NOT met'}; Monte-Carlo error {mc_error:.3f}); "
        f"at least 40% fewer ratings than the uniform design "
        f"({saving(row['paid_vs_uniform'])}: "
        f"{'met' if row['paid_vs_uniform'] <= 0.6 else 'NOT met'}); "
        f"stopped on budget without an answer in {row['budget_ran_out']:.1%}"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k not in ("truth", "data", "output")}
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "adaptive_study",
                "command": "python benchmarks/adaptive_study.py " + " ".join(sys.argv[1:]),
                "settings": settings,
                "truth": dict(zip(SYSTEMS, truth.tolist(), strict=True)),
                "uniform_ratings_per_system": uniform_n.tolist(),
                "uniform_paid": uniform_paid,
                "monte_carlo_error": mc_error,
                "seconds": seconds,
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

"""Replays of the adaptive study's alt-test goal (adaptive.alt_goal) on the
authors' SummEval data: does looking after every wave, at the goal's share
of q per look, keep the verdict right, and how many expert ratings does it take against a fixed
design?

Data: SummEval's four aspects (coherence, consistency, fluency, relevance;
`--aspects` to choose) as the alt-test's authors publish them
(`nitaytech/AltTest`, data/summeval: three expert raters e0, e1, e2 and six
LLM judges on 1,600 summaries of 100 news articles, 1-5). The repository has
no licence, so the data is not copied here: fetch it and pass its folder
(`--data .../AltTest/data/summeval`).

Each replay orders the 100 articles at random. A wave is `--articles` more
articles (every summary of them, 16 each), rated by the three experts (their
real ratings; each rating missing with probability `--dropout`, as a rater
who skipped an item). After each wave the alt-test runs on all the ratings
so far at the look's share of q (adaptive.alt_goal.q_at_look: look k at
q * k / (1 + ... + looks); `--split equal` for q / looks at every look, the
goal's split until issue 29; analysis.statistics.alt_test, Benjamini-Yekutieli within a
look), and the replay stops at the first look that passes or fails (the
reverse test, analysis.report.verdicts.reverse_rejections), or after `--looks`
looks. For each aspect and each of the six judges, reported:

- how often the stopped verdict contradicts the verdict on all 1,600
  summaries at q (the error the split of q over the looks must keep down);
- how often the replay stops without a verdict (out of looks: the budget);
- expert ratings at the stop, against the fixed design: the fewest waves at
  which one test at q reaches a verdict at least as often as the loop does.

    .venv/bin/python benchmarks/adaptive_alt_test.py --data DIR [--replays 1000]
        [--aspects coherence ...] [--epsilon 0.2] [--articles 4] [--looks 6]
        [--split growing|equal] [--dropout 0.05] [--seed 0] [--output FILE]

Prints a table and writes benchmarks/results/adaptive_alt_test.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
EXPERTS = ("e0", "e1", "e2")


ASPECTS = ("coherence", "consistency", "fluency", "relevance")


def load(folder: Path, aspect: str = "coherence") -> tuple[pd.DataFrame, pd.DataFrame]:
    """One aspect: the experts' scores (item x expert) and the judges' (item x judge)."""
    humans = json.loads((folder / "human_annotations.json").read_text())
    judges = json.loads((folder / "llm_annotations.json").read_text())

    suffix = f"__{aspect}"

    def scores_of(table: dict) -> pd.DataFrame:
        return pd.DataFrame(
            {
                who: {k[: -len(suffix)]: v for k, v in scores.items() if k.endswith(suffix)}
                for who, scores in table.items()
            }
        )

    experts, llms = scores_of(humans), scores_of(judges)
    common = experts.index.intersection(llms.index).sort_values()
    return experts.loc[common, list(EXPERTS)], llms.loc[common]


def verdict(wins: object, epsilon: float, q: float) -> str:
    """passes / fails / inconclusive, as analysis.report.verdicts reads the alt-test."""
    from analysis.report.verdicts import reverse_rejections
    from analysis.statistics import alt_test

    if isinstance(wins, dict):
        return "inconclusive"
    test = alt_test.alt_test(
        pd.DataFrame(), pd.Series(dtype=float), epsilon=epsilon, q=q, wins=wins
    )
    if test.get("computable") is False:
        return "inconclusive"
    if test["passed"]:
        return "passes"
    tested = wins.items_per_rater >= alt_test.MIN_ITEMS_PER_HUMAN
    share = float(reverse_rejections(wins, tested, epsilon, q)[tested].mean())
    return "fails" if share > 0.5 else "inconclusive"


def long_form(experts: pd.DataFrame, items: list[str], missing: np.ndarray) -> pd.DataFrame:
    block = experts.loc[items].to_numpy(float)
    block = np.where(missing[: len(items)], np.nan, block)
    return pd.DataFrame(
        {
            "item": np.repeat(items, len(EXPERTS)),
            "rater": np.tile(EXPERTS, len(items)),
            "score": block.ravel(),
        }
    ).dropna()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="AltTest's data/summeval")
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--aspects", nargs="+", choices=ASPECTS, default=list(ASPECTS))
    parser.add_argument("--epsilon", type=float, default=0.2)
    parser.add_argument("--articles", type=int, default=4, help="articles per wave (16 each)")
    parser.add_argument("--looks", type=int, default=6)
    parser.add_argument("--split", choices=("growing", "equal"), default="growing")
    parser.add_argument("--dropout", type=float, default=0.05)
    parser.add_argument("--q", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "adaptive_alt_test.json"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()  # adaptive.alt_goal's split of q
    started = time.perf_counter()
    aspects = {aspect: replay(args, aspect) for aspect in args.aspects}
    seconds = time.perf_counter() - started
    worst = max(r["wrong"] for judges in aspects.values() for r in judges.values())
    where = [
        f"{aspect}/{judge}"
        for aspect, judges in aspects.items()
        for judge, r in judges.items()
        if r["wrong"] == worst
    ]
    print(
        f"targets: a verdict at stop that contradicts all the data's in at most {args.q:.0%} "
        f"of replays ({worst:.3f}, {', '.join(where)}: "
        f"{'met' if worst <= args.q else 'NOT met'}); {seconds:.0f} s"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    settings.pop("output")
    args.output.write_text(
        json.dumps(
            {
                "benchmark": "adaptive_alt_test",
                "command": "python benchmarks/adaptive_alt_test.py " + " ".join(sys.argv[1:]),
                "settings": settings,
                "ratings_per_wave": args.articles * 16 * len(EXPERTS),
                "seconds": seconds,
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                },
                "worst_contradiction_rate": worst,
                "aspects": aspects,
            },
            indent=2,
        )
    )
    print(f"Wrote {args.output}")


def replay(args: argparse.Namespace, aspect: str) -> dict:
    """One aspect's replays: per judge, the stopped verdicts against all the data's."""
    from analysis.statistics import alt_test

    started = time.perf_counter()
    experts, llms = load(args.data, aspect)
    articles = sorted({item.split("__")[0] for item in experts.index})
    by_article = {a: [i for i in experts.index if i.split("__")[0] == a] for a in articles}
    judges = list(llms.columns)
    everything = long_form(experts, list(experts.index), np.zeros((len(experts), 3), bool))
    truth = {
        j: verdict(alt_test.win_table(everything, llms[j]), args.epsilon, args.q) for j in judges
    }
    rng = np.random.default_rng(args.seed)
    from adaptive.alt_goal import q_at_look

    q_looks = [
        args.q / args.looks if args.split == "equal" else q_at_look(k, args.looks, args.q)
        for k in range(1, args.looks + 1)
    ]
    # per judge: (look at stop or None, verdict at stop) and, per number of waves,
    # the fixed design's verdict at q
    stops: dict[str, list[tuple[int, str]]] = {j: [] for j in judges}
    fixed: dict[str, np.ndarray] = {j: np.zeros((args.replays, args.looks), bool) for j in judges}
    fixed_wrong: dict[str, np.ndarray] = {
        j: np.zeros((args.replays, args.looks), bool) for j in judges
    }
    for r in range(args.replays):
        order = rng.permutation(articles)
        missing = rng.random((len(experts), len(EXPERTS))) < args.dropout
        tables = []
        for look in range(1, args.looks + 1):
            chosen = order[: look * args.articles]
            items = [i for a in chosen for i in by_article[a]]
            tables.append(long_form(experts, items, missing))
        for j in judges:
            stopped = None
            for look, humans in enumerate(tables, 1):
                wins = alt_test.win_table(humans, llms[j])
                at_look = verdict(wins, args.epsilon, q_looks[look - 1])
                one_test = verdict(wins, args.epsilon, args.q)
                fixed[j][r, look - 1] = one_test != "inconclusive"
                fixed_wrong[j][r, look - 1] = one_test != "inconclusive" and one_test != truth[j]
                if stopped is None and at_look != "inconclusive":
                    stopped = (look, at_look)
            stops[j].append(stopped or (args.looks, "inconclusive"))
    seconds = time.perf_counter() - started

    per_wave = args.articles * 16 * len(EXPERTS)
    results = {}
    print(
        f"{args.replays} replays, SummEval {aspect}, epsilon {args.epsilon}, waves of "
        f"{args.articles} articles ({args.articles * 16} summaries x 3 experts), at most "
        f"{args.looks} looks at q {' '.join(f'{q:.4f}' for q in q_looks)} ({args.split}), "
        f"dropout {args.dropout}; {seconds:.0f} s"
    )
    print(
        f"{'judge':<14}{'all data':>13}{'decided':>9}{'wrong':>8}{'unbacked':>10}{'no verdict':>12}"
        f"{'ratings at stop':>17}{'fixed design':>14}{'ratio':>8}"
    )
    print("-" * 105)
    for j in judges:
        looks = np.array([look for look, _ in stops[j]])
        verdicts = [v for _, v in stops[j]]
        decided = np.array([v != "inconclusive" for v in verdicts])
        wrong = np.array(
            [v != "inconclusive" and truth[j] != "inconclusive" and v != truth[j] for v in verdicts]
        )
        ratings = looks * per_wave
        reach = decided.mean()
        # where all the data leave it undecided, any verdict at a stop is one the
        # data cannot back: counted apart, and no fixed design to compare with
        unbacked = float(decided.mean()) if truth[j] == "inconclusive" else 0.0
        unbacked_as = sorted({v for v in verdicts if v != "inconclusive"}) if unbacked else []
        # the fewest waves at which one test at q decides at least as often
        rates = fixed[j].mean(axis=0)
        enough = np.flatnonzero(rates >= reach - 1e-12)
        fixed_waves = int(enough[0]) + 1 if len(enough) and truth[j] != "inconclusive" else None
        fixed_ratings = fixed_waves * per_wave if fixed_waves else None
        ratio = float(np.mean(ratings) / fixed_ratings) if fixed_ratings else None
        results[j] = {
            "all_data_verdict": truth[j],
            "decided": float(reach),
            "wrong": float(wrong.mean()),
            "decided_where_all_data_do_not": unbacked,
            "decided_where_all_data_do_not_as": unbacked_as,
            "no_verdict": float(1 - reach),
            "ratings_at_stop_mean": float(np.mean(ratings)),
            "fixed_waves": fixed_waves,
            "fixed_ratings": fixed_ratings,
            "ratio_to_fixed": ratio,
            "fixed_decided_by_waves": rates.tolist(),
            "fixed_wrong_by_waves": fixed_wrong[j].mean(axis=0).tolist(),
        }
        print(
            f"{j:<14}{truth[j]:>13}{reach:>9.3f}{wrong.mean():>8.3f}{unbacked:>10.3f}"
            f"{1 - reach:>12.3f}"
            f"{np.mean(ratings):>17.0f}{fixed_ratings or float('nan'):>14.0f}"
            f"{ratio if ratio is not None else float('nan'):>7.2f}x"
        )
    return results


if __name__ == "__main__":
    main()

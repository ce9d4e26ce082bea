"""Why the length-controlled Bradley-Terry intervals are widened
(analysis.statistics.bradley_terry.controlled_widening): on the coverage
harness's populations, replays of the harness's `bt-length` studies (K
meetings drawn with replacement, the truth the whole pool's controlled fit,
benchmarks/coverage/rows_bt_length.py), and per study:

- the study's own largest |t| over the contrasts: |estimate - truth| over
  the meeting-jackknife standard error, the quantity the interval's
  multiplier must exceed in 95% of studies;
- the multiplier the studentized bootstrap gives (the 95th percentile of its
  resamples' largest |t*|, never below Student's t on K - 1 degrees of
  freedom), and that multiplier widened by Student's t over the normal;
- whether each interval held.

For the ratings (all systems at once), the differences (all pairs at once)
and the length weight, per population, K and side (gold, judge): the 95th
percentile of the studies' |t|, the mean multiplier, and the coverage with
and without the widening, side by side on the same replays.

    .venv/bin/python benchmarks/bt_length_multipliers.py
        [--datasets sim-heavy-tailed,sim-biased-judge] [--clusters 12,20]
        [--replays 400] [--resamples 400] [--seed 7] [--output FILE]

Prints a table and writes benchmarks/results/bt_length_multipliers.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

KINDS = ("ratings", "differences", "weight")


def replay(pool, drawn: np.ndarray, resamples: int, seed: int) -> dict[str, tuple] | None:
    """One study: per kind, (the study's largest |t|, the bootstrap's multiplier)."""
    from analysis.statistics import bradley_terry as bt
    from analysis.statistics import style_control as sc
    from analysis.statistics.bootstrap import ClusterBootstrap

    k, clusters = pool.k, len(drawn)
    rows = [pool.by_cluster[c] for c in drawn]
    index = np.concatenate(rows)
    codes = np.repeat(np.arange(clusters), [len(r) for r in rows])
    boot = ClusterBootstrap(codes, clusters, resamples, seed)
    feature = sc.length_feature(pool.len_first[index], pool.len_second[index])
    found = sc.fits(
        boot, pool.first[index], pool.second[index], pool.outcome[index], feature[:, None], codes, k
    )
    if not np.isfinite(found.data).all():
        return None
    _, _, pair_weights = bt.pairs(k)
    contrasts = {
        "ratings": np.hstack([np.eye(k), np.zeros((k, 1))]),
        "differences": np.hstack([pair_weights, np.zeros((len(pair_weights), 1))]),
        "weight": np.hstack([np.zeros((1, k)), np.ones((1, 1))]),
    }
    # the truth's weight on the study's scale of the feature (rows_bt_length.Pool.replay)
    scale = float(np.sqrt(np.mean(pool.ratio[index] ** 2)))
    truth = {
        "ratings": pool.theta,
        "differences": pair_weights @ pool.theta,
        "weight": np.array([pool.weight_per_ratio * scale]),
    }
    out = {}
    for kind, weights in contrasts.items():
        estimate, se, t = bt.contrast_t(found, weights)
        q = bt.multipliers(t, clusters, simultaneous=kind != "weight")
        if not (np.isfinite(se).all() and np.isfinite(q).all()) or (se <= 0).any():
            return None
        out[kind] = (float(np.max(np.abs(estimate - truth[kind]) / se)), float(q[0]))
    return out


def measure(name: str, clusters: list[int], replays: int, resamples: int, seed: int) -> list[dict]:
    from analysis.statistics.bradley_terry import controlled_widening
    from benchmarks.coverage.datasets import library
    from benchmarks.coverage.rows_bt_length import Pool

    dataset = dict(library())[name]()
    rng = np.random.default_rng(seed)
    sides = {"gold": Pool(dataset, dataset.gold), "judge": Pool(dataset, dataset.judge)}
    rows = []
    for k in clusters:
        widening = controlled_widening(k)
        for side, pool in sides.items():
            started = time.perf_counter()
            found: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
            for _ in range(replays):
                drawn = rng.integers(0, len(dataset.clusters), k)
                study = replay(pool, drawn, resamples, int(rng.integers(2**31)))
                for kind, value in (study or {}).items():
                    found[kind].append(value)
            for kind in KINDS:
                if not found[kind]:
                    continue
                t, q = np.array(found[kind]).T
                rows.append(
                    {
                        "dataset": name,
                        "clusters": k,
                        "side": side,
                        "kind": kind,
                        "studies": len(t),
                        "study_t_95th": float(np.percentile(t, 95)),
                        "multiplier_mean": float(q.mean()),
                        "widening": widening,
                        "coverage_unwidened": float(np.mean(t <= q)),
                        "coverage_widened": float(np.mean(t <= widening * q)),
                        "seconds": time.perf_counter() - started,
                    }
                )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="sim-heavy-tailed,sim-biased-judge")
    parser.add_argument("--clusters", default="12,20", help="study sizes K, comma-separated")
    parser.add_argument("--replays", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks/results/bt_length_multipliers.json"
    )
    args = parser.parse_args()
    clusters = [int(k) for k in args.clusters.split(",")]
    started = time.perf_counter()
    rows = []
    for name in args.datasets.split(","):
        rows += measure(name, clusters, args.replays, args.resamples, args.seed)
    print(
        "| dataset | K | side | contrasts | studies | study's |t| (95th) | multiplier (mean) "
        "| coverage | widened (x factor) |"
    )
    print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['dataset']} | {r['clusters']} | {r['side']} | {r['kind']} | {r['studies']} "
            f"| {r['study_t_95th']:.2f} | {r['multiplier_mean']:.2f} "
            f"| {r['coverage_unwidened']:.3f} | {r['coverage_widened']:.3f} "
            f"(x {r['widening']:.3f}) |"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "settings": {
                    "datasets": args.datasets,
                    "clusters": clusters,
                    "replays": args.replays,
                    "resamples": args.resamples,
                    "seed": args.seed,
                },
                "machine": {"python": platform.python_version(), "platform": platform.platform()},
                "seconds": time.perf_counter() - started,
                "rows": rows,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

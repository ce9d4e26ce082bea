"""The alt-test's promises, replayed (analysis.report.verdicts, adaptive.alt_goal).

- `prediction_rows`: an inconclusive verdict says "about N more items per
  rater would decide it: a verdict in 80% or more of studies that size", or
  that the ratings are too few to say (no promise: the rows' `extra` count
  it, and how often a study 32 times as large decided it). A replay is a study of `n` items drawn
  at random from the pool, rated by 3 raters (picked at random where the
  dataset has more, as a study would recruit them), its verdict computed as
  the report computes it (analysis.report.verdicts.alt_test_verdict, the judge's
  scores, negative RMSE). Where it predicts, the larger study it proposes is
  run: N more items from the pool, the same raters, and the verdict read
  again. The row's coverage is the share of predictions that came true (a
  pass or a fail), its target the rate the words promise. The promise is
  judged per dataset, over its judges and settings; each judge and
  setting's own row is shown beside it. How close the judge is to the margin is recorded per
  prediction: on every item of the pool, with the same raters, each rater's
  (mean(W_h - W_f) - epsilon) / sd, the middle of the three (a pass needs 2
  of 3 raters, so does a fail); the rows' `extra` break the coverage down by
  it.
- `look_rows`: the adaptive alt-test goal (adaptive.alt_goal): waves of whole
  clusters (about 64 items), rated by 3 raters (each rating missing with
  probability 0.05, a rater who skipped an item), the three-valued verdict
  after each wave at the goal's share of q for that look
  (adaptive.alt_goal.q_at_look), the stop at the first that passes or fails.
  A contradiction is a stopped verdict opposite to the verdict on every item
  of the pool with the same raters at q. Coverage is 1 - the contradiction
  rate over the replays whose all-data verdict is decided; its target 1 -
  the documented bound (docs/adaptive-studies.md). Replayed for the
  dataset's judge and for its second judge.

Datasets with fewer than 3 raters on the same items return no rows (the
paper's gold, one rater; MT-bench, two raters on most pairs), and so does
the paper's crowd: its "raters" are the gold plus one fixed difference each,
the same on every item, which is no model of a rater.

    .venv/bin/python -m benchmarks.coverage --families alt-predictions,alt-looks
        [--alttest DIR] [--small] [--replays N]
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings

RATERS = 3
SIZES = (30, 60)
SMALL_SIZES = (40,)
EPSILONS = (0.1, 0.2)
SMALL_EPSILONS = (0.2,)
# |middle rater's standardised distance to the margin| bands for the breakdown
NEAR, FAR = 0.1, 0.25
WAVE_ITEMS = 64  # SummEval: 4 articles of 16 summaries, the benchmark's wave
MAX_LOOKS = 6
DROPOUT = 0.05
# the contradiction rate docs/adaptive-studies.md promises for the goal's stop
DOCUMENTED_CONTRADICTIONS = 0.015
NOT_RATERS = {
    "paper-crowd": "its raters are the gold plus one fixed difference each, the same on every item"
}


def rater_pool(dataset: Dataset) -> tuple[np.ndarray, np.ndarray] | None:
    """The raters (columns) and the items all of them rated, or None when
    fewer than 3 raters rate the same 120 or more items."""
    if dataset.name in NOT_RATERS:
        return None
    full = np.isfinite(dataset.raters)
    columns = np.flatnonzero(full.sum(axis=0) >= 120)
    if len(columns) < RATERS:
        return None
    return columns, full[:, columns]


def pick(dataset: Dataset, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray] | None:
    """3 raters at random and the items all three rated (None if too few)."""
    found = rater_pool(dataset)
    if found is None:
        return None
    columns, full = found
    chosen = np.sort(rng.choice(len(columns), RATERS, replace=False))
    items = np.flatnonzero(full[:, chosen].all(axis=1))
    return (columns[chosen], items) if len(items) >= 120 else None


def long_form(dataset: Dataset, raters: np.ndarray, items: np.ndarray, ids=None) -> pd.DataFrame:
    """(item, rater, score) rows; `ids` names the items (default: their index),
    so that an item drawn twice counts as two items."""
    ids = items if ids is None else ids
    block = dataset.raters[np.ix_(items, raters)]
    frame = pd.DataFrame(
        {
            "item": np.repeat(ids, len(raters)),
            "rater": np.tile([f"r{c}" for c in raters], len(items)),
            "score": block.ravel(),
        }
    ).dropna()
    frame["rater"] = frame["rater"].astype("category")
    return frame


def verdict(
    dataset: Dataset,
    judge: np.ndarray,
    humans: pd.DataFrame,
    epsilon: float,
    q: float | None = None,
) -> dict:
    """The report's verdict (analysis.report.verdicts.alt_test_verdict) on these ratings."""
    from analysis.report.verdicts import alt_test_verdict
    from analysis.statistics import alt_test

    items = np.unique(humans["item"].to_numpy())
    return alt_test_verdict(
        humans,
        pd.Series(judge[items % dataset.size], index=items),
        population="experts",
        evaluators=[],
        described={},
        epsilon=epsilon,
        epsilon_rule="the harness's",
        alignment="neg_rmse",
        q=alt_test.Q_FDR if q is None else q,
    )


def margin_distance(
    dataset: Dataset, judge: np.ndarray, raters: np.ndarray, items: np.ndarray, epsilon: float
) -> float:
    """On every item the raters rated: the middle rater's (mean(d) - epsilon) / sd(d)."""
    from analysis.statistics import alt_test

    humans = long_form(dataset, raters, items)
    wins = alt_test.win_table(humans, pd.Series(judge[items], index=items))
    if isinstance(wins, dict):
        return math.nan
    d = wins.differences
    z = []
    for j in range(len(wins.rater_codes)):
        mine = d[wins.rater_index == j]
        sd = mine.std(ddof=1)
        z.append(
            (mine.mean() - epsilon) / sd
            if sd > 0
            else math.copysign(math.inf, mine.mean() - epsilon)
        )
    return float(np.median(z))


def _band(z: float) -> str:
    if not math.isfinite(z) or abs(z) >= FAR:
        return f"|z| >= {FAR:g}"
    return f"|z| < {NEAR:g}" if abs(z) < NEAR else f"{NEAR:g} <= |z| < {FAR:g}"


def predictions(
    dataset: Dataset, judge: np.ndarray, n: int, epsilon: float, replays: int, seed: int
) -> list[dict]:
    """One entry per replay: the verdict at n items, and where it predicts,
    the prediction, whether it came true, and the judge's distance to the margin."""
    from analysis.report.verdicts import POWER_FACTORS

    rng = np.random.default_rng(seed)
    margins: dict[tuple, float] = {}
    out = []
    for _ in range(replays):
        chosen = pick(dataset, rng)
        if chosen is None:
            return []
        raters, pool = chosen
        start = rng.choice(pool, n, replace=False)
        first = verdict(dataset, judge, long_form(dataset, raters, start), epsilon)
        entry: dict = {"verdict": first["verdict"], "predicted": False, "beyond": False}
        more, promised = first["more_items"], first.get("promised_probability")
        predicted = first["verdict"] == "inconclusive" and more and promised is not None
        # "too few ratings to say": no size up to 32 times the data decides it
        beyond = first["verdict"] == "inconclusive" and (first["decide"] or "").startswith(
            "too few ratings"
        )
        if not (predicted or beyond):
            out.append(entry)
            continue
        more = int(more) if predicted else int(n * (POWER_FACTORS[-1] - 1))
        rest = np.setdiff1d(pool, start)
        # the larger study draws from the pool; past its end, with replacement
        # (fresh names: a copy of an item is another item of the population)
        extra = (
            rng.choice(rest, more, replace=False)
            if more <= len(rest)
            else rng.choice(pool, more, replace=True)
        )
        items = np.r_[start, extra]
        ids = np.r_[start, dataset.size * (1 + np.arange(more)) + extra]
        second = verdict(dataset, judge, long_form(dataset, raters, items, ids), epsilon)
        key = tuple(raters)
        if key not in margins:
            margins[key] = margin_distance(dataset, judge, raters, pool, epsilon)
        entry |= {
            "predicted": bool(predicted),
            "beyond": bool(beyond),
            "more_items": more,
            "promised": float(promised) if predicted else None,
            "came_true": second["verdict"] in ("passes", "fails"),
            "margin": margins[key],
            "with_replacement": bool(more > len(rest)),
        }
        out.append(entry)
    return out


def prediction_row(dataset: Dataset, judge_name: str, setting: str, found: list[dict]) -> Row:
    made = [e for e in found if e["predicted"]]
    replays = len(found)
    bands: dict[str, dict] = {}
    for e in made:
        band = bands.setdefault(
            _band(e["margin"]), {"predictions": 0, "came_true": 0, "promised": 0.0}
        )
        band["predictions"] += 1
        band["came_true"] += e["came_true"]
        band["promised"] += e["promised"]
    for band in bands.values():
        band["coverage"] = band["came_true"] / band["predictions"]
        band["promised"] = band["promised"] / band["predictions"]
    promised = float(np.mean([e["promised"] for e in made])) if made else 0.8
    return Row(
        family="alt-test",
        statistic=f"alt-test: N more items decide it ({judge_name})",
        dataset=dataset.name,
        setting=setting,
        replays=replays,
        coverage=float(np.mean([e["came_true"] for e in made])) if made else None,
        reported=len(made) / replays if replays else 0.0,
        target=promised,
        promise=f"a verdict in {promised:.0%} of the larger studies (the stated rate, mean)",
        extra={
            "verdicts_at_start": {
                v: sum(e["verdict"] == v for e in found) / replays
                for v in ("passes", "fails", "inconclusive")
            },
            # "too few ratings to say": the share of replays that said so (no promise),
            # and how often the study at 32 times the data reached a verdict
            "beyond": sum(e["beyond"] for e in found) / replays,
            "beyond_decided_at_32x": (
                float(np.mean([e["came_true"] for e in found if e["beyond"]]))
                if any(e["beyond"] for e in found)
                else None
            ),
            "more_items_median": float(np.median([e["more_items"] for e in made]))
            if made
            else None,
            "with_replacement": float(np.mean([e["with_replacement"] for e in made]))
            if made
            else None,
            "by_margin": bands,
        },
    )


def prediction_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    """Per dataset, every prediction of its judges and settings together (the
    promise the words make: a predictive statement over what the ratings so
    far leave uncertain); beside it, each judge and setting's own row, shown
    and not judged: for a judge that sits on the margin no prediction from a
    few dozen items can come true at the promised rate (its rows say how
    near the margin it is)."""
    if rater_pool(dataset) is None:
        return []
    rows, everything = [], []
    for n in SMALL_SIZES if settings.small else SIZES:
        for epsilon in SMALL_EPSILONS if settings.small else EPSILONS:
            for name, judge in (("judge", dataset.judge), ("second", dataset.second)):
                found = predictions(dataset, judge, n, epsilon, settings.replays, settings.seed)
                if found:
                    setting = f"{n} items x 3 raters, ε {epsilon:g}"
                    row = prediction_row(dataset, name, setting, found)
                    row.judged = False
                    rows.append(row)
                    everything += found
    if everything:
        pooled = prediction_row(dataset, "every judge and setting", "all of the below", everything)
        rows.insert(0, pooled)
    return rows


def waves_of(dataset: Dataset, rng: np.random.Generator) -> list[np.ndarray]:
    """Clusters in a random order, grouped into waves of about WAVE_ITEMS items
    (whole clusters, at least one), as adaptive.alt_goal.choose_meetings groups meetings."""
    waves, current, size = [], [], 0
    for c in rng.permutation(len(dataset.clusters)):
        members = np.flatnonzero(dataset.cluster == c)
        current.append(members)
        size += len(members)
        if size >= WAVE_ITEMS:
            waves.append(np.concatenate(current))
            current, size = [], 0
    return waves


def stopped_verdicts(
    dataset: Dataset, judge: np.ndarray, epsilon: float, replays: int, seed: int, q: float
) -> list[dict]:
    """Per replay: the verdict at the stop (the first look that decides, at the
    goal's share of q for that look), the look, and the all-data verdict with
    the same raters."""
    from adaptive.alt_goal import q_at_look

    rng = np.random.default_rng(seed)
    truths: dict[tuple, str] = {}
    out = []
    for _ in range(replays):
        chosen = pick(dataset, rng)
        if chosen is None:
            return []
        raters, pool = chosen
        key = tuple(raters)
        if key not in truths:
            truths[key] = verdict(dataset, judge, long_form(dataset, raters, pool), epsilon, q)[
                "verdict"
            ]
        waves = [np.intersect1d(w, pool) for w in waves_of(dataset, rng)]
        looks = min(MAX_LOOKS, len(waves))
        missing = rng.random((dataset.size, len(raters))) < DROPOUT
        stop = (looks, "inconclusive")
        for look in range(1, looks + 1):
            items = np.concatenate(waves[:look])
            humans = _drop(long_form(dataset, raters, items), raters, missing)
            found = verdict(dataset, judge, humans, epsilon, q_at_look(look, looks, q))["verdict"]
            if found != "inconclusive":
                stop = (look, found)
                break
        out.append({"look": stop[0], "verdict": stop[1], "truth": truths[key], "looks": looks})
    return out


def _drop(humans: pd.DataFrame, raters: np.ndarray, missing: np.ndarray) -> pd.DataFrame:
    column = {f"r{c}": j for j, c in enumerate(raters)}
    which = humans["rater"].astype(str).map(column).to_numpy()
    return humans[~missing[humans["item"].to_numpy(), which]]


def look_row(dataset: Dataset, judge_name: str, setting: str, found: list[dict]) -> Row:
    replays = len(found)
    backed = [e for e in found if e["truth"] != "inconclusive"]
    wrong = [e for e in backed if e["verdict"] not in ("inconclusive", e["truth"])]
    unbacked = [e for e in found if e["truth"] == "inconclusive" and e["verdict"] != "inconclusive"]
    return Row(
        family="alt-test",
        statistic=f"alt-test goal: stopped verdict agrees with all data ({judge_name})",
        dataset=dataset.name,
        setting=setting,
        replays=replays,
        coverage=1 - len(wrong) / len(backed) if backed else None,
        reported=len(backed) / replays if replays else 0.0,
        target=1 - DOCUMENTED_CONTRADICTIONS,
        promise=f"contradicts all the data in at most {DOCUMENTED_CONTRADICTIONS:.0%} of replays",
        extra={
            "all_data": {
                v: sum(e["truth"] == v for e in found) / replays
                for v in ("passes", "fails", "inconclusive")
            },
            "decided_at_stop": sum(e["verdict"] != "inconclusive" for e in found) / replays,
            "decided_where_all_data_do_not": len(unbacked) / replays,
            "contradictions": len(wrong),
            "looks_mean": float(np.mean([e["look"] for e in found])),
            "looks_most": max(e["looks"] for e in found),
        },
    )


def look_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.statistics.alt_test import Q_FDR

    if rater_pool(dataset) is None:
        return []
    rows = []
    for name, judge in (("judge", dataset.judge), ("second", dataset.second)):
        for epsilon in SMALL_EPSILONS if settings.small else EPSILONS:
            found = stopped_verdicts(
                dataset, judge, epsilon, settings.replays, settings.seed, Q_FDR
            )
            if found:
                setting = (
                    f"waves of ~{WAVE_ITEMS} items x 3 raters, ≤{MAX_LOOKS} looks, ε {epsilon:g}"
                )
                rows.append(look_row(dataset, name, setting, found))
    return rows

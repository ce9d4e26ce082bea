"""Rater models: how reliable each crowd rater is, estimated from the ratings
themselves, and the items' labels that weigh raters by it.

The categorical models are crowd-kit's (a well-kept library of crowdsourcing
aggregation; pinned in pyproject.toml, imported here only), on the rubric's
levels: a 1-10 score is binned to the level of the rubric its anchor names
(ELITR-Bench's judge rubric: 1, 2, 3-4, 5-6, 7-8, 9, 10), a pairwise verdict
is its outcome (win, tie, loss):

- Dawid-Skene (1979): each rater has a confusion matrix; their reliability is
  the chance they give the true level, sum over levels of prior x diagonal;
- MACE (Hovy et al. 2013): each rater is, item by item, either competent (the
  true label) or spamming (a label from their own habit); their reliability is
  the posterior chance of competence;
- GLAD (Whitehill et al. 2009): each rater has an expertise alpha (0: chance,
  higher: better; negative: adversarial) and each item a difficulty.

For the 1-10 scores themselves a categorical model throws away the order, so
the scores get an additive rater-offset model: score = item quality + rater
offset + noise, fitted by least squares (alternating means, the offsets
summing to zero over the raters' ratings): each rater's offset (points more
generous than the crowd) and residual standard deviation, and the items'
offset-corrected means (quality + the mean offset).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# the ELITR-Bench rubric's anchors (shared/protocols, gpt_judge_prompt.english)
RUBRIC_LEVELS: tuple[tuple[int, int], ...] = (
    (1, 1),
    (2, 2),
    (3, 4),
    (5, 6),
    (7, 8),
    (9, 9),
    (10, 10),
)
LEVELS_TEXT = (
    "the rubric's levels 1, 2, 3-4, 5-6, 7-8, 9, 10 for Dawid-Skene, MACE and GLAD; "
    "the 1-10 scores for the offsets"
)
MIN_RATERS_PER_ITEM = 2  # a model learns a rater's reliability from items others rated too
OFFSET_STEPS = 500
OFFSET_TOLERANCE = 1e-10


def rubric_level(score: float) -> str:
    """The rubric level a 1-10 score falls in ("1", "3-4", ...); a score
    between two levels (a mean) goes to the nearest integer's level."""
    point = int(np.clip(np.floor(score + 0.5), 1, 10))
    for low, high in RUBRIC_LEVELS:
        if low <= point <= high:
            return str(low) if low == high else f"{low}-{high}"
    raise AssertionError(point)  # the levels cover 1-10


def as_labels(ratings: pd.DataFrame) -> pd.DataFrame:
    """crowd-kit's layout (worker, task, label) from one rating per (response,
    rater): the rubric level of each score, the items rated by
    MIN_RATERS_PER_ITEM raters or more."""
    per_item = ratings.groupby("response_id")["rater"].transform("nunique")
    kept = ratings[per_item >= MIN_RATERS_PER_ITEM]
    return pd.DataFrame(
        {
            "worker": kept["rater"].astype(str).to_numpy(),
            "task": kept["response_id"].to_numpy(),
            "label": [rubric_level(s) for s in kept["score"].to_numpy(float)],
        }
    )


def dawid_skene(
    labels: pd.DataFrame, n_iter: int = 100, tol: float = 1e-5
) -> tuple[dict[str, float], pd.Series]:
    """Each rater's chance of giving the true label, and each item's label
    (crowd-kit's EM from the majority vote, to `tol` in its evidence bound
    per label or n_iter steps)."""
    from crowdkit.aggregation import DawidSkene

    model = DawidSkene(n_iter=n_iter, tol=tol)
    found = model.fit_predict(labels)
    errors, priors = model.errors_, model.priors_
    assert errors is not None and priors is not None  # set by fit
    reliability = {}
    for worker in labels["worker"].unique():
        # rows: the label given (only those the rater gave); columns: the true label
        matrix = errors.loc[worker]
        reliability[str(worker)] = float(
            sum(
                priors[level] * matrix.loc[level, level]
                for level in priors.index
                if level in matrix.index
            )
        )
    return reliability, found


def mace(labels: pd.DataFrame) -> tuple[dict[str, float], pd.Series]:
    """Each rater's posterior chance of being competent, and each item's label."""
    from crowdkit.aggregation import MACE

    model = MACE(n_restarts=5, n_iter=50, random_state=0)
    found = model.fit_predict(labels)
    _, workers = pd.factorize(labels["worker"])
    # spamming_[:, 1]: the chance the rater gives the true label (crowdkit's E-step)
    competence = {str(w): float(model.spamming_[i, 1]) for i, w in enumerate(workers)}
    return competence, found


def glad(labels: pd.DataFrame) -> tuple[dict[str, float], pd.Series]:
    """Each rater's expertise alpha, and each item's label."""
    from crowdkit.aggregation import GLAD

    model = GLAD(n_iter=100)
    found = model.fit_predict(labels)
    return {str(w): float(a) for w, a in model.alphas_.items()}, found


def rater_offsets(ratings: pd.DataFrame) -> tuple[dict[str, dict[str, float]], pd.Series]:
    """The additive model score = quality[item] + offset[rater] + noise by
    least squares: {rater: {"offset", "noise_sd", "ratings"}} and each item's
    corrected score, its quality (the offsets sum to zero over the ratings,
    so the scale stays the crowd's). Alternating means on the items rated by two raters or
    more (an item rated once says nothing of its rater's offset)."""
    per_item = ratings.groupby("response_id")["rater"].transform("nunique")
    kept = ratings[per_item >= MIN_RATERS_PER_ITEM]
    items, item_codes = np.unique(kept["response_id"].to_numpy(), return_inverse=True)
    raters, rater_codes = np.unique(kept["rater"].astype(str).to_numpy(), return_inverse=True)
    score = kept["score"].to_numpy(float)
    item_n = np.bincount(item_codes, minlength=len(items))
    rater_n = np.bincount(rater_codes, minlength=len(raters))
    offset = np.zeros(len(raters))
    quality = np.zeros(len(items))
    for _ in range(OFFSET_STEPS):
        quality = np.bincount(item_codes, score - offset[rater_codes], len(items)) / item_n
        new = np.bincount(rater_codes, score - quality[item_codes], len(raters)) / rater_n
        new -= np.average(new, weights=rater_n)
        change = float(np.abs(new - offset).max()) if len(new) else 0.0
        offset = new
        if change < OFFSET_TOLERANCE:
            break
    quality = np.bincount(item_codes, score - offset[rater_codes], len(items)) / item_n
    residual = score - quality[item_codes] - offset[rater_codes]
    # residual degrees of freedom per rater: their share of n - items - raters + 1
    dof = max(len(score) - len(items) - len(raters) + 1, 1)
    share = rater_n / max(len(score), 1) * dof
    spread = np.bincount(rater_codes, residual**2, len(raters))
    noise = np.sqrt(np.divide(spread, share, out=np.full(len(raters), np.nan), where=share > 0))
    return (
        {
            str(r): {
                "offset": float(offset[i]),
                "noise_sd": float(noise[i]),
                "ratings": int(rater_n[i]),
            }
            for i, r in enumerate(raters)
        },
        pd.Series(quality, index=items, name="score"),
    )


def rater_reliability(ratings: pd.DataFrame) -> dict:
    """Every model on one evaluator's ratings (one per response and rater:
    analysis.statistics.ratings.individual_ratings): per rater, their ratings
    and each model's reliability; per model, how many items' labels differ
    from the level of the item's mean score (where weighing raters changes
    the answer). Not computable without items rated by two raters or more."""
    labels = as_labels(ratings)
    items = int(labels["task"].nunique()) if len(labels) else 0
    raters = int(labels["worker"].nunique()) if len(labels) else 0
    if items == 0 or raters < 2:
        return {
            "computable": False,
            "reason": f"{items} responses rated by {MIN_RATERS_PER_ITEM} raters or more; "
            "a rater model needs some",
        }
    kept = ratings[ratings["response_id"].isin(labels["task"].unique())]
    mean_level = kept.groupby("response_id")["score"].mean().map(rubric_level)
    found = {}
    differing = {}
    for name, model in (("dawid_skene", dawid_skene), ("mace", mace), ("glad", glad)):
        reliability, labelled = model(labels)
        found[name] = reliability
        differing[name] = int((labelled.reindex(mean_level.index) != mean_level).sum())
    offsets, corrected = rater_offsets(kept)
    differing["offsets"] = int((corrected.map(rubric_level) != mean_level).sum())
    counts = kept["rater"].astype(str).value_counts()
    return {
        "items": items,
        "raters": raters,
        "per_rater": {
            rater: {
                "ratings": int(counts[rater]),
                "dawid_skene": found["dawid_skene"][rater],
                "mace": found["mace"][rater],
                "glad": found["glad"][rater],
                "offset": offsets[rater]["offset"],
                "noise_sd": offsets[rater]["noise_sd"],
            }
            for rater in sorted(found["dawid_skene"])
        },
        "labels_differing_from_mean": differing,
    }


def pairwise_reliability(per_rater: pd.DataFrame) -> dict:
    """Dawid-Skene, MACE and GLAD on one human pairwise study's verdicts
    (analysis.statistics.pairwise.rater_outcomes: one outcome per pair and
    rater, win, tie or loss of the response against its opponent): per rater
    their verdicts and each model's reliability; per model, the pairs whose
    label differs from the raters' majority (a tie where the vote ties).
    Pairs judged by MIN_RATERS_PER_ITEM raters or more."""
    from analysis.statistics.pairwise import majority_outcome

    task = per_rater["response_id"].astype(str) + "|" + per_rater["opponent_id"].astype(str)
    labels = pd.DataFrame(
        {
            "worker": per_rater["rater"].astype(str).to_numpy(),
            "task": task.to_numpy(),
            "label": per_rater["outcome"].astype(str).to_numpy(),
        }
    )
    per_task = labels.groupby("task")["worker"].transform("nunique")
    labels = labels[per_task >= MIN_RATERS_PER_ITEM]
    items = int(labels["task"].nunique()) if len(labels) else 0
    raters = int(labels["worker"].nunique()) if len(labels) else 0
    if items == 0 or raters < 2:
        return {
            "computable": False,
            "reason": f"{items} pairs judged by {MIN_RATERS_PER_ITEM} raters or more; "
            "a rater model needs some",
        }
    majority = labels.groupby("task")["label"].agg(majority_outcome)
    found, differing = {}, {}
    for name, model in (("dawid_skene", dawid_skene), ("mace", mace), ("glad", glad)):
        reliability, labelled = model(labels)
        found[name] = reliability
        differing[name] = int((labelled.reindex(majority.index) != majority).sum())
    counts = labels["worker"].value_counts()
    return {
        "items": items,
        "raters": raters,
        "per_rater": {
            rater: {
                "verdicts": int(counts[rater]),
                "dawid_skene": found["dawid_skene"][rater],
                "mace": found["mace"][rater],
                "glad": found["glad"][rater],
            }
            for rater in sorted(found["dawid_skene"])
        },
        "labels_differing_from_majority": differing,
    }

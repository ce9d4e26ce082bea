"""The alternative annotator test: can this judge replace the human raters?

Calderon, Reichart & Dror, "The Alternative Annotator Test for LLM-as-a-Judge:
How to Statistically Justify Replacing Human Annotators with LLMs" (ACL 2025);
the procedure of their reference code (`nitaytech/AltTest`,
`alt_test_example.ipynb`), vectorised:

1. Keep the items that at least 2 human raters and the judge scored.
2. Leave one rater j out at a time. On each item j rated, score how well the
   judge and how well j align with the remaining raters (the alignment
   function, e.g. negative RMSE); the judge "wins" the item if its alignment
   is at least j's (W_f = 1), j wins it if j's is at least the judge's (W_h = 1).
3. For each rater with 30 or more such items, a one-sided one-sample t-test
   of d = W_h - W_f against the cost-benefit margin epsilon
   (H1: mean(d) < epsilon, i.e. the judge is at least as good as j up to epsilon).
4. Benjamini-Yekutieli correction over the raters' p-values at q = 0.05.
   The winning rate omega is the share of raters whose null is rejected; the
   judge passes at omega >= 0.5. The advantage probability rho is the mean
   over raters of mean(W_f): the chance the judge is as good as or better
   than a random rater (for comparing judges).

Alignment functions (one value per item from a prediction and the remaining
raters' scores): `neg_rmse` (the reference's, squared distance),
`neg_mae` (absolute distance), `accuracy` (scores as labels: the share of
remaining raters giving the same score), and `rank` (only the order matters:
each rater's and the judge's scores are replaced by their percentile ranks,
average rank / number of items ranked, over the items kept, then `neg_rmse`;
the authors' FAQ "What if I care about ranking rather than exact scores?").

Vectorised by grouping items with the same number k of raters: one dense
(items x k) block per k, with the pairwise terms of a k x k mask (no loop over
raters or items), so that 10^5 items take a fraction of a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from analysis.statistics.stats import not_computable

ALIGNMENTS = ("neg_rmse", "neg_mae", "accuracy", "rank")
ALIGNMENT_DESCRIPTIONS = {
    "neg_rmse": "negative root mean squared distance to the remaining raters (scores)",
    "neg_mae": "negative mean absolute distance to the remaining raters (scores)",
    "accuracy": "share of the remaining raters giving the same score (labels)",
    "rank": "negative RMSE of percentile ranks (only the order of the items matters)",
}
Q_FDR = 0.05
MIN_HUMANS_PER_ITEM = 2
MIN_ITEMS_PER_HUMAN = 30
RECOMMENDED_HUMANS = 3
# Alignments closer than this are a tie (both win the item): the same
# distances summed in another order can differ in the last bit.
TIE_TOLERANCE = 1e-9


def benjamini_yekutieli(p_values: np.ndarray, q: float = Q_FDR) -> np.ndarray:
    """Which nulls are rejected (a boolean per p-value), controlling the false
    discovery rate at q under any dependence. A NaN p-value is never rejected."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    rejected = np.zeros(m, dtype=bool)
    if m == 0:
        return rejected
    order = np.argsort(p)  # NaN last
    harmonic = np.sum(1.0 / np.arange(1, m + 1))
    thresholds = np.arange(1, m + 1) / m * (q / harmonic)
    below = np.flatnonzero(p[order] <= thresholds)
    if len(below):
        rejected[order[: below[-1] + 1]] = True
    return rejected


def one_sided_t_pvalues(values: np.ndarray, groups: np.ndarray, popmean: float) -> tuple:
    """Per group: n, mean, and the p-value of scipy.stats.ttest_1samp(values,
    popmean, alternative="less"), for all groups at once."""
    n = np.bincount(groups).astype(float)
    means = np.bincount(groups, weights=values) / n
    squares = np.bincount(groups, weights=(values - means[groups]) ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(squares / (n - 1))
        t = (means - popmean) / (sd / np.sqrt(n))
        p = special.stdtr(n - 1, t)
    return n, means, p


def percentile_ranks(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Average ranks (1 = lowest) within each group, divided by the group's size."""
    frame = pd.DataFrame({"g": groups, "v": values})
    ranks = frame.groupby("g")["v"].rank(method="average").to_numpy()
    return ranks / np.bincount(groups)[groups]


def _alignment(
    prediction: np.ndarray, others: np.ndarray, mask: np.ndarray, how: str
) -> np.ndarray:
    """prediction: (items, k) or (items, 1); others: (items, k) raters' scores;
    mask: (k, k), True where rater l counts as a remaining rater for column j.
    Returns (items, k): the alignment of prediction[:, j] with the remaining raters."""
    if how == "accuracy":
        terms = (prediction[:, :, None] == others[:, None, :]).astype(float)
    elif how == "neg_mae":
        terms = np.abs(prediction[:, :, None] - others[:, None, :])
    else:  # neg_rmse, and rank (on ranks)
        terms = (prediction[:, :, None] - others[:, None, :]) ** 2
    count = mask.sum(axis=1)
    mean = np.where(mask[None, :, :], terms, 0.0).sum(axis=2) / count
    if how == "accuracy":
        return mean
    if how == "neg_mae":
        return -mean
    return -np.sqrt(mean)


@dataclass(frozen=True)
class Wins:
    """Who won each (item, left-out rater) comparison: the judge (W_f) and the
    left-out rater (W_h), both on a tie; one entry per rating kept."""

    rater_codes: np.ndarray  # rater labels, by rater index
    rater_index: np.ndarray  # per kept rating
    judge_wins: np.ndarray  # per kept rating, 0 or 1
    human_wins: np.ndarray  # per kept rating, 0 or 1
    human_scores: np.ndarray  # per kept rating (ranks for the rank alignment)
    items: int
    raters_per_item: tuple[int, int]

    @property
    def items_per_rater(self) -> np.ndarray:
        return np.bincount(self.rater_index, minlength=len(self.rater_codes))

    @property
    def differences(self) -> np.ndarray:
        """d = W_h - W_f per kept rating: -1 (the judge won alone), 0, 1."""
        return self.human_wins - self.judge_wins


def win_table(
    humans: pd.DataFrame,
    judge: pd.Series,
    *,
    alignment: str = "neg_rmse",
    min_humans_per_item: int = MIN_HUMANS_PER_ITEM,
) -> Wins | dict:
    """Steps 1 and 2 of the procedure: the items at least `min_humans_per_item`
    raters and the judge scored, and who wins each leave-one-out comparison.
    A dict (not computable, with the reason) when no item qualifies."""
    if alignment not in ALIGNMENTS:
        raise ValueError(f"alignment {alignment!r}: choose from {', '.join(ALIGNMENTS)}")
    judge = judge.dropna()
    # integer codes throughout (hashing, no sort of strings): 10^6 ratings in well under a second
    items = humans["item"].to_numpy()
    known = (pd.Index(judge.index).get_indexer(items) >= 0) & humans["score"].notna().to_numpy()
    item_index, item_codes = pd.factorize(items[known])
    per_item = np.bincount(item_index)
    kept = per_item[item_index] >= min_humans_per_item
    if not kept.any():
        most = int(per_item.max()) if len(per_item) else 0
        return not_computable(
            f"fewer than {min_humans_per_item} human raters on every item the judge scored "
            f"(at most {most})"
        )
    raters = humans["rater"]
    if isinstance(raters.dtype, pd.CategoricalDtype):  # codes: no string per rating
        rater_index, used = pd.factorize(raters.cat.codes.to_numpy()[known][kept])
        rater_codes = np.asarray(raters.cat.categories).astype(str)[used]
    else:
        rater_index, rater_codes = pd.factorize(raters.to_numpy()[known][kept])
        rater_codes = np.asarray(rater_codes).astype(str)
    item_index, item_codes = pd.factorize(item_codes[item_index[kept]])
    human = humans["score"].to_numpy(float)[known][kept]
    order = np.lexsort((rater_index, item_index))  # grouped by item
    item_index, rater_index, human = item_index[order], rater_index[order], human[order]
    machine = judge.reindex(item_codes).to_numpy(float)
    how = alignment
    if alignment == "rank":
        human = percentile_ranks(human, rater_index)
        machine = percentile_ranks(machine, np.zeros(len(machine), dtype=int))
        how = "neg_rmse"

    sizes = np.bincount(item_index)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    judge_wins = np.empty(len(human))
    human_wins = np.empty(len(human))
    for k in np.unique(sizes):
        mask = ~np.eye(k, dtype=bool)
        with_k = np.flatnonzero(sizes == k)
        # a block of items at a time: (items x k x k) terms stay within ~50 MB
        step = max(1, 6_000_000 // (k * k))
        for block in (with_k[i : i + step] for i in range(0, len(with_k), step)):
            positions = starts[block][:, None] + np.arange(k)[None, :]  # (items, k) row numbers
            others = human[positions]
            human_score = _alignment(others, others, mask, how)
            judge_score = _alignment(
                np.repeat(machine[block][:, None], k, axis=1), others, mask, how
            )
            judge_wins[positions] = judge_score >= human_score - TIE_TOLERANCE
            human_wins[positions] = human_score >= judge_score - TIE_TOLERANCE
    return Wins(
        rater_codes=rater_codes,
        rater_index=rater_index,
        judge_wins=judge_wins,
        human_wins=human_wins,
        human_scores=human,
        items=int(len(item_codes)),
        raters_per_item=(int(sizes.min()), int(sizes.max())),
    )


def alt_test(
    humans: pd.DataFrame,
    judge: pd.Series,
    *,
    epsilon: float,
    alignment: str = "neg_rmse",
    q: float = Q_FDR,
    min_humans_per_item: int = MIN_HUMANS_PER_ITEM,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
    wins: Wins | dict | None = None,
) -> dict:
    """`humans`: one row per (item, rater) with columns item, rater, score;
    `judge`: the judge's score per item (a Series indexed by item). `wins`:
    their win_table, when the caller has it already.

    Returns the winning rate, advantage probability, verdict and per-rater
    results, or why the test cannot be computed."""
    if wins is None:
        wins = win_table(
            humans, judge, alignment=alignment, min_humans_per_item=min_humans_per_item
        )
    if isinstance(wins, dict):
        return wins
    rater_codes, rater_index = wins.rater_codes, wins.rater_index
    items_per_rater = wins.items_per_rater
    tested = items_per_rater >= min_items_per_human
    if not tested.any():
        return not_computable(
            f"fewer than {min_items_per_human} items per human rater (at most "
            f"{int(items_per_rater.max())}): the t-test needs {min_items_per_human} or more "
            "(the authors suggest more items per rater, or a Wilcoxon signed-rank test)"
        )
    n, mean_diff, p = one_sided_t_pvalues(wins.differences, rater_index, epsilon)
    advantage = np.bincount(rater_index, weights=wins.judge_wins) / n
    tested_index = np.flatnonzero(tested)
    tested_index = tested_index[np.argsort(rater_codes[tested_index], kind="stable")]
    rejected = np.zeros(len(rater_codes), dtype=bool)
    rejected[tested_index] = benjamini_yekutieli(p[tested_index], q)
    winning_rate = float(rejected[tested_index].mean())
    advantage_probability = float(advantage[tested_index].mean())
    raters_per_item = list(wins.raters_per_item)
    warnings = []
    if raters_per_item[1] < RECOMMENDED_HUMANS:
        warnings.append(
            "only 2 human raters per item: the test then only asks which of the two the judge "
            "is closer to; the authors recommend 3 or more"
        )
    skipped = int((~tested).sum())
    if skipped:
        warnings.append(
            f"{skipped} rater(s) with fewer than {min_items_per_human} items left out of the tests"
        )
    return {
        "epsilon": float(epsilon),
        "alignment": alignment,
        "q_fdr": q,
        "winning_rate": winning_rate,
        "advantage_probability": advantage_probability,
        "passed": winning_rate >= 0.5,
        "items": wins.items,
        "raters_per_item": raters_per_item,
        "raters_tested": int(tested.sum()),
        "raters_skipped": skipped,
        "warnings": warnings,
        "raters": [
            {
                "rater": rater,
                "items": items,
                "advantage": share,
                "mean_difference": difference,
                "p": p_value if math.isfinite(p_value) else None,
                "rejected": rejected_j,
            }
            for rater, items, share, difference, p_value, rejected_j in zip(
                rater_codes[tested_index].tolist(),
                n[tested_index].astype(int).tolist(),
                advantage[tested_index].tolist(),
                mean_diff[tested_index].tolist(),
                p[tested_index].tolist(),
                rejected[tested_index].tolist(),
                strict=True,
            )
        ],
    }

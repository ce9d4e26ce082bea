"""How each evaluator spreads its scores over the 1-10 scale: responses per
score bin.

A response counts once per evaluator, with its score as the rest of the report
uses it (analysis.report.scores.response_scores: a crowd evaluator's score is the mean
of its raters, a judge scored with several seeds the mean of its samples).
Those means and the automatic metrics (ROUGE as 1 + 9 x value) are continuous,
so every score is binned by the rule the gold bins use (analysis.statistics.stats.gold_bins):
rounded to the nearest integer, a half to the even neighbour, then kept within
1-10. An integer score lands in its own bin, so a rubric judge's counts are
exact, and the gold evaluator's counts are the gold bins' sizes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.statistics.stats import not_computable

LEVELS = range(1, 11)
BINNING = (
    "bin k (1-10) holds the scores nearest to k: integer scores their own bin, continuous "
    "ones (a mean of raters or seeds, a metric) rounded to the nearest integer, a score "
    "halfway between two going to the even one, as in the gold bins"
)
UNIT = (
    "responses; a response's score is the one the report uses everywhere (the mean of an "
    "evaluator's raters, seeds and orders)"
)


def score_bin(scores: np.ndarray) -> np.ndarray:
    """The 1-10 bin of each score (see BINNING)."""
    return np.clip(np.round(np.asarray(scores, dtype=float)), 1, 10).astype(int)


def score_distributions(rs: pd.DataFrame) -> dict:
    """Per evaluator: responses per bin 1-10 (every bin listed, zeros
    included), how many responses, whether its scores are continuous and how
    many distinct values they take."""
    if rs.empty:
        return not_computable("empty selection: no judgment matches it")
    evaluators = {}
    for name, group in rs.groupby("evaluator", observed=True, sort=True):
        scores = group["score"].to_numpy(float)
        scores = scores[np.isfinite(scores)]
        counts = np.bincount(score_bin(scores), minlength=11)
        evaluators[str(name)] = {
            "n": int(len(scores)),
            "continuous": bool(np.any(scores != np.round(scores))),
            "distinct": int(len(np.unique(scores))),
            "counts": {str(level): int(counts[level]) for level in LEVELS},
        }
    return {"unit": UNIT, "binning": BINNING, "evaluators": evaluators}

"""Human pairwise studies beside the LLM pairwise judges: position effect,
agreement among the raters, and agreement of each study with each judge.

Reads the verdict table of analysis.statistics.pairwise (one row per verdict). Outcomes
are those of the judged response (win, tie, loss), whatever order it was
shown in. Returns JSON-ready values, with analysis.statistics.stats.not_computable where
a statistic cannot be computed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from analysis.statistics.pairwise import (
    OUTCOMES,
    PAIR,
    human_rows,
    judge_pair_outcomes,
    majority_outcomes,
    rater_outcomes,
)
from analysis.statistics.stats import _finite, not_computable


def position_effect(verdicts: pd.DataFrame) -> dict:
    """Share of the non-tie verdicts won by the answer shown first (A), with a
    two-sided exact binomial test against 0.5 and its Clopper-Pearson 95% CI;
    and the share of ties among all verdicts."""
    n = int(len(verdicts))
    if n == 0:
        return not_computable("no verdicts")
    first = int((verdicts["winner"] == "first").sum())
    ties = int((verdicts["winner"] == "tie").sum())
    decided = n - ties
    out: dict[str, object] = {
        "verdicts": n,
        "decided": decided,
        "first_wins": first,
        "ties": ties,
        "tie_rate": ties / n,
    }
    if decided == 0:
        reason = "every verdict is a tie: no answer won"
        out.update(
            {
                "first_position_win_rate": not_computable(reason),
                "binomial_test": not_computable(reason),
            }
        )
        return out
    test = binomtest(first, decided, 0.5, alternative="two-sided")
    ci = test.proportion_ci(confidence_level=0.95, method="exact")
    out["first_position_win_rate"] = first / decided
    out["binomial_test"] = {
        "p": _finite(test.pvalue),
        "alternative": "two-sided",
        "null": 0.5,
        "ci95": [_finite(ci.low), _finite(ci.high)],
    }
    return out


def inter_rater(per_rater: pd.DataFrame) -> dict:
    """Agreement among the raters of one study on the same pair: the share of
    pairs (with 2+ raters) whose raters all give the same outcome, and
    Krippendorff's alpha (nominal) over raters x pairs."""
    counts = per_rater.groupby(PAIR)["outcome"].agg(["size", "nunique"])
    shared = counts[counts["size"] >= 2]
    out: dict = {"pairs": int(len(shared))}
    if shared.empty:
        reason = "no pair was judged by 2 or more raters"
        out.update(
            {
                "all_agree": not_computable(reason),
                "krippendorff_alpha_nominal": not_computable(reason),
            }
        )
        return out
    agree = int((shared["nunique"] == 1).sum())
    out["all_agree"] = agree
    out["all_agree_share"] = agree / len(shared)
    out["krippendorff_alpha_nominal"] = _alpha_nominal(per_rater)
    return out


def _alpha_nominal(per_rater: pd.DataFrame) -> dict:
    """From the pairs x outcomes count matrix (the same coincidences as the
    raters x pairs reliability data, without a cell for every rater of every
    meeting)."""
    import krippendorff

    if per_rater["rater"].nunique() < 2:
        return not_computable("a single rater")
    values = per_rater["outcome"].map({o: i for i, o in enumerate(OUTCOMES)}).to_numpy()
    if len(np.unique(values)) < 2:
        return not_computable(
            f"every verdict has the same outcome ({per_rater['outcome'].iloc[0]})"
        )
    unit_index = per_rater.groupby(PAIR, sort=True).ngroup().to_numpy()
    matrix = np.zeros((unit_index.max() + 1, len(OUTCOMES)))
    np.add.at(matrix, (unit_index, values), 1)
    try:
        alpha = krippendorff.alpha(
            value_counts=matrix,
            value_domain=list(range(len(OUTCOMES))),
            level_of_measurement="nominal",
        )
    except (ValueError, ZeroDivisionError) as error:
        return not_computable(str(error))
    return {
        "alpha": _finite(alpha),
        "raters": int(per_rater["rater"].nunique()),
        "units": int(matrix.shape[0]),
    }


def cohen_kappa(a: list[str], b: list[str]) -> dict | float:
    """Cohen's kappa of two labelings of the same items (sklearn); not
    computable with fewer than 2 items or a single category in all."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) < 2:
        return not_computable(f"fewer than 2 pairs judged by both ({len(a)})")
    used = set(a) | set(b)
    if len(used) < 2:
        return not_computable(
            f"one category only: every pair is a {used.pop()} for both, so chance agreement is 1"
        )
    return float(cohen_kappa_score(a, b, labels=list(OUTCOMES)))


def outcome_agreement(human: pd.Series, judge: pd.Series) -> dict:
    """Per pair both judged (Series indexed by (response_id, opponent_id)):
    n, raw agreement, Cohen's kappa and the confusion counts
    confusion[human outcome][judge outcome]."""
    both = pd.concat([human.rename("human"), judge.rename("judge")], axis=1, join="inner")
    a, b = list(both["human"]), list(both["judge"])
    out: dict = {"pairs": len(both)}
    out["agreement"] = (
        float(np.mean([x == y for x, y in zip(a, b, strict=True)]))
        if a
        else not_computable("no pair judged by both")
    )
    out["cohen_kappa"] = cohen_kappa(a, b)
    out["confusion"] = {
        h: {j: int(((both["human"] == h) & (both["judge"] == j)).sum()) for j in OUTCOMES}
        for h in OUTCOMES
    }
    return out


def human_pairwise(table: pd.DataFrame) -> dict:
    """{study: {"verdicts", "pairs", "raters", "position_effect", "inter_rater",
    "agreement_with_judges": {judge: ...}}} for each human evaluator of the
    verdict table; not computable when it has none."""
    humans = human_rows(table)
    if humans.empty:
        return not_computable("no human pairwise verdicts in the selection")
    per_rater = rater_outcomes(humans)
    majority = majority_outcomes(humans).set_index(PAIR)
    judges = judge_pair_outcomes(table).set_index(PAIR)
    out: dict = {}
    for evaluator, verdicts in humans.groupby("evaluator", sort=True):
        mine = majority[majority["evaluator"] == evaluator]["outcome"]
        out[evaluator] = {
            "verdicts": int(len(verdicts)),
            "pairs": int(len(mine)),
            "raters": int(verdicts["rater"].nunique()),
            "position_effect": position_effect(verdicts),
            "inter_rater": inter_rater(per_rater[per_rater["evaluator"] == evaluator]),
            "agreement_with_judges": {
                judge: outcome_agreement(mine, judged["outcome"])
                for judge, judged in judges.groupby("evaluator", sort=True)
            },
        }
    return out

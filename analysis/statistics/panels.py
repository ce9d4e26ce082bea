"""Judge panels: one evaluator's score made from several judges' scores.

A panel of small, diverse judges can beat one large judge at a fraction of its
cost (PoLL: Verga et al. 2024, arXiv 2404.18796, which pools by average for
scores and by majority vote for verdicts). A panel here scores a response only
where every member scored it, by one of four rules:

- ``mean`` and ``median`` of the members' scores;
- ``majority``: the score most members gave, each member's score rounded to the
  nearest whole point; where no single score has the most votes, the median of
  the members' scores (so two members who disagree give their midpoint);
- ``learned``: weights learned on the human-labelled responses by least squares
  with non-negative weights and a free intercept (a member can be down-weighted
  to nothing, never subtracted), clipped to the 1-10 scale.

A learned panel judged on the labels it was fitted to would flatter itself, so
each labelled response's score comes from weights fitted without its meeting
(K folds by meeting), and every other response's from the mean of the K folds'
weights: cross-prediction-powered inference (Zrnic & Candès 2024, arXiv
2309.16598), so that the alt-test, the correlations and PPI read a panel that
never saw the label it is compared with. The weights the report shows are fitted
on every labelled response.

A panel of pairwise judges pools verdicts (first, second, tie) by majority, as
PoLL does: in each presentation order of a pair, each member's verdict (the
majority over its seeds), then the verdict most members gave, a tie where no
verdict has the most votes. The panel's two orders are kept, so that its
consistency, position bias and win rates are counted as any pairwise judge's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import lsq_linear

from judging.panel_rules import PAIRWISE_RULE_TEXT, PAIRWISE_RULES, RULE_TEXT, RULES

__all__ = [
    "PAIRWISE_RULES",
    "PAIRWISE_RULE_TEXT",
    "RULES",
    "RULE_TEXT",
]  # re-exported: the statistics' callers read them here

MAX_FOLDS = 5
SCALE = (1.0, 10.0)


class PanelError(ValueError):
    """A panel that cannot be computed on these data (the message says why)."""


@dataclass(frozen=True)
class LearnedWeights:
    intercept: float
    weights: np.ndarray  # one per member, each >= 0


def combine(scores: np.ndarray, rule: str) -> np.ndarray:
    """The panel's score of each row of `scores` (responses x members, no NaN)
    by a fixed rule (mean, median or majority)."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise PanelError("a panel needs a table of responses by members")
    if rule == "mean":
        return scores.mean(axis=1)
    if rule == "median":
        return np.median(scores, axis=1)
    if rule == "majority":
        return majority(scores)
    raise PanelError(f"unknown rule {rule!r}: one of {', '.join(RULES)}")


def majority(scores: np.ndarray) -> np.ndarray:
    """Per row: the rounded score with the most votes; the median of the row's
    (unrounded) scores where two or more scores tie for the most votes."""
    votes = np.rint(scores).astype(np.int64)
    low = int(votes.min()) if votes.size else 0
    shifted = votes - low
    width = int(shifted.max()) + 1 if votes.size else 1
    counts = np.zeros((len(votes), width), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(len(votes)), votes.shape[1]), shifted.ravel()), 1)
    top = counts.max(axis=1)
    winners = (counts == top[:, None]).sum(axis=1)
    out = np.median(scores, axis=1)
    single = winners == 1
    out[single] = counts[single].argmax(axis=1) + low
    return out


def fit_weights(members: np.ndarray, labels: np.ndarray) -> LearnedWeights:
    """Least squares of the labels on the members' scores and an intercept, with
    every member's weight at least 0 (scipy's bounded least squares)."""
    members = np.asarray(members, dtype=float)
    labels = np.asarray(labels, dtype=float)
    if len(labels) < members.shape[1] + 2:
        raise PanelError(
            f"{len(labels)} labelled responses: learning {members.shape[1]} weights and an "
            f"intercept takes at least {members.shape[1] + 2}"
        )
    design = np.column_stack([np.ones(len(labels)), members])
    lower = np.r_[-np.inf, np.zeros(members.shape[1])]
    solved = lsq_linear(
        design, labels, bounds=(lower, np.full(design.shape[1], np.inf)), method="bvls"
    )
    return LearnedWeights(float(solved.x[0]), solved.x[1:].copy())


def predict(weights: LearnedWeights, members: np.ndarray) -> np.ndarray:
    return np.clip(weights.intercept + members @ weights.weights, *SCALE)


def meeting_folds(groups: np.ndarray, folds: int) -> np.ndarray:
    """Each labelled row's fold: the meetings in order of first appearance, dealt
    round-robin (deterministic, so a report is reproducible)."""
    _, first, codes = np.unique(groups, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # the meetings' order of first appearance
    return order[codes] % folds


@dataclass(frozen=True)
class LearnedPanel:
    scores: np.ndarray  # every response's panel score
    weights: LearnedWeights  # fitted on every labelled response (shown)
    folds: int


def learned(
    members: np.ndarray, labels: np.ndarray, groups: np.ndarray, folds: int = MAX_FOLDS
) -> LearnedPanel:
    """The learned panel's scores: cross-fitted on the labelled responses (NaN
    label: unlabelled), the folds' mean weights elsewhere. `groups`: each
    response's meeting, the unit a fold holds out whole."""
    members = np.asarray(members, dtype=float)
    labels = np.asarray(labels, dtype=float)
    labelled = ~np.isnan(labels)
    meetings = np.unique(groups[labelled])
    k = min(folds, len(meetings))
    if k < 2:
        raise PanelError(
            f"human labels on {len(meetings)} meeting(s): learning weights that are judged "
            "on meetings they were not fitted to takes labels on at least 2"
        )
    fold_of = meeting_folds(groups[labelled], k)
    x, y = members[labelled], labels[labelled]
    fitted = [fit_weights(x[fold_of != f], y[fold_of != f]) for f in range(k)]
    scores = np.empty(len(members))
    held = np.empty(len(y))
    for f, weights in enumerate(fitted):
        held[fold_of == f] = predict(weights, x[fold_of == f])
    scores[labelled] = held
    if (~labelled).any():
        averaged = LearnedWeights(
            float(np.mean([w.intercept for w in fitted])),
            np.mean([w.weights for w in fitted], axis=0),
        )
        scores[~labelled] = predict(averaged, members[~labelled])
    return LearnedPanel(scores, fit_weights(x, y), k)


# --- Panels of pairwise judges ------------------------------------------------------------------

VERDICT_KEYS = ["response_id", "opponent_id", "order"]


def top_or_tie(votes: pd.DataFrame) -> pd.Series:
    """Per row of vote counts (one column per verdict): the verdict with the
    most votes, or "tie" where two or more share the most."""
    top = votes.max(axis=1)
    leaders = votes.eq(top, axis=0).sum(axis=1)
    return votes.idxmax(axis=1).where(leaders == 1, "tie")


def majority_verdicts(verdicts: pd.DataFrame, members: list[str]) -> pd.DataFrame:
    """The panel's verdict on each pair (response_id, opponent_id) in each
    order that every member judged: columns response_id, opponent_id, order,
    winner, system, baseline. `verdicts`: the members' rows of a verdict table
    (analysis.statistics.pairwise.verdict_table's columns)."""
    columns = [*VERDICT_KEYS, "winner", "system", "baseline"]
    mine = verdicts[verdicts["evaluator"].astype(str).isin(members)]
    if mine.empty:
        return pd.DataFrame(columns=columns)
    mine = mine.assign(evaluator=mine["evaluator"].astype(str))
    per_seed = mine.groupby(["evaluator", *VERDICT_KEYS, "winner"]).size()
    each_member = top_or_tie(per_seed.unstack("winner", fill_value=0)).rename("winner")
    counts = each_member.reset_index().groupby([*VERDICT_KEYS, "winner"]).size()
    votes = counts.unstack("winner", fill_value=0)
    complete = votes[votes.sum(axis=1) == len(members)]
    if complete.empty:
        return pd.DataFrame(columns=columns)
    winners = top_or_tie(complete).rename("winner").reset_index()
    systems = mine.drop_duplicates(VERDICT_KEYS)[[*VERDICT_KEYS, "system", "baseline"]]
    joined = winners.merge(systems, on=VERDICT_KEYS, how="left")
    return joined[columns].sort_values(VERDICT_KEYS, ignore_index=True)

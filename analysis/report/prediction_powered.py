"""The report's prediction-powered rankings: per judge, the systems ranked
from a few of the reference's battles and all of the judge's, with
rank-sets (analysis.statistics.prediction_powered_ranking), beside the
reference's battles alone.

Battles come from scores as the Bradley-Terry rankings make them (on each
question every two systems meet, the higher score wins). The population is
the questions both the judge and the reference scored; as PPI's "sample"
design, a seeded random sample of `labelled` of them (at most half) keeps
its reference outcomes and the others are hidden, so that the report shows
what the rank-sets would have been with that many labelled questions, and
whether each holds the system's rank by all the reference's battles."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.statistics import bradley_terry as bt
from analysis.statistics import prediction_powered_ranking as ppr
from analysis.statistics.stats import not_computable


def _codes(values: pd.Series) -> np.ndarray:
    codes, _ = pd.factorize(values.astype(str), sort=True)
    return codes


def judge_ranking(
    rs: pd.DataFrame, reference: str, judge: str, labelled_questions: int, seed: int
) -> dict:
    """One judge's prediction-powered ranking against the reference."""
    mine = rs[rs["evaluator"].isin([reference, judge])]
    wide = mine.pivot_table(
        index=["question_key", "system"], columns="evaluator", values="score", observed=True
    )
    if reference not in wide or judge not in wide:
        return not_computable(f"{judge} and {reference} score no question in common")
    wide = wide[[reference, judge]].dropna().reset_index()
    meeting_of = mine.drop_duplicates("question_key").set_index("question_key")["meeting"]
    names = sorted(wide["system"].astype(str).unique())
    system = np.searchsorted(names, wide["system"].astype(str).to_numpy())
    question = wide["question_key"].to_numpy()
    # the question itself as the battles' cluster: each battle then carries its question
    first, second, gold, on = bt.battles_from_scores(
        system, question, question, wide[reference].to_numpy(float)
    )
    _, _, judged, _ = bt.battles_from_scores(
        system, question, question, wide[judge].to_numpy(float)
    )
    if len(first) == 0:
        return not_computable("no question answered by two or more systems both scored")
    meetings = _codes(meeting_of.loc[on].reset_index(drop=True))
    return powered(first, second, gold, judged, on, meetings, names, labelled_questions, seed)


def powered(
    first: np.ndarray,
    second: np.ndarray,
    gold: np.ndarray,
    judged: np.ndarray,
    on: np.ndarray,
    meetings: np.ndarray,
    names: list[str],
    labelled_questions: int,
    seed: int,
) -> dict:
    """The ranking from battles (system codes into `names`; per battle the
    reference's and the judge's points, its question `on` and meeting code):
    a seeded sample of `labelled_questions` questions (at most half) keeps the
    reference's outcomes, and each rank-set is checked against the ranks by
    all the reference's battles."""
    questions = np.unique(on)
    size = min(labelled_questions, len(questions) // 2)
    rng = np.random.default_rng(seed)
    labelled = np.isin(on, rng.choice(questions, size=size, replace=False))
    found = ppr.ranking(first, second, gold, judged, labelled, meetings, names)
    if not found.get("computable", True):
        return found
    truth = ppr.win_rates(first, second, gold, len(names))
    above = (truth[None, :] > truth[:, None] + 1e-12).sum(axis=1)
    level = (np.abs(truth[None, :] - truth[:, None]) <= 1e-12).sum(axis=1)
    for side in ("prediction_powered", "humans_alone"):
        for row in found[side]["systems"]:
            s = names.index(row["system"])
            best, worst = int(1 + above[s]), int(above[s] + level[s])
            row["all_labels_win_rate"] = float(truth[s])
            row["all_labels_rank"] = best if best == worst else [best, worst]
            sets = row["rank_set"]
            row["holds"] = None if sets is None else bool(sets[0] <= worst and sets[1] >= best)
    found["labelled_questions"] = size
    found["questions"] = len(questions)
    return found


def prediction_powered_part(
    rs: pd.DataFrame, reference: str | None, judges: list[str], labelled_questions: int, seed: int
) -> dict:
    """{"reference", "labelled", "judges": {judge: ranking or reason}}."""
    if reference is None:
        return not_computable("no reference: no human evaluator scores the selection")
    if not judges:
        return not_computable("no judge in the selection besides the human evaluators")
    rs = rs.assign(
        question_key=rs.groupby(["question_pk", "mode", "dataset_version"], observed=True)
        .ngroup()
        .to_numpy()
    )
    return {
        "reference": reference,
        "labelled": {
            "questions": labelled_questions,
            "seed": seed,
            "description": f"of the questions both the judge and {reference} scored, a seeded "
            f"random sample of {labelled_questions} (at most half) keeps its {reference} "
            "outcomes and the rest are hidden; each rank-set is checked against the ranks "
            f"by all of {reference}'s battles",
        },
        "judges": {
            judge: judge_ranking(rs, reference, judge, labelled_questions, seed) for judge in judges
        },
    }

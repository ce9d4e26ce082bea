"""The report's prediction-powered rank-sets from pairwise verdicts: per LLM
pairwise judge (and panel of them), the systems ranked from a few of a human
pairwise study's comparisons and all of the judge's, the setting of Chatzi
et al. 2024 (analysis.statistics.prediction_powered_ranking).

A pair (a response against the baseline's answer to the same question) is
one battle: first the judged response's system, second the baseline. Its
human outcome is the study's majority over its raters; the judge's is its
consistent outcome over both orders (the majority over its seeds), as the
rankings from verdicts count them. The reference is the human pairwise study
with the most pairs, as for the pairwise judges that defer.

The population is the pairs both the study and the judge judged. The study's
pairs are the researcher's choice of systems and meetings, not a random
sample of the judge's, so as for the rank-sets from scores a seeded random
sample of the questions (at most half) keeps the study's outcomes and the
rest are hidden (analysis.report.prediction_powered.powered): the report
shows what the rank-sets would have been with that many labelled questions,
and whether each holds the system's rank by all the study's pairs. The
coverage harness replays this design (rows_ppr, "against a baseline")."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.prediction_powered import powered
from analysis.statistics.stats import not_computable

PAIR = ["response_id", "opponent_id"]


def judge_ranking(
    human: pd.DataFrame,
    judged: pd.DataFrame,
    places: pd.DataFrame,
    study: str,
    labelled_questions: int,
    seed: int,
) -> dict:
    """One judge's rank-sets: `human` and `judged` one outcome per pair (the
    study's and the judge's), `places` per response its question and meeting."""
    from analysis.statistics.pairwise import OUTCOME_POINTS

    both = judged.merge(human[[*PAIR, "outcome"]], on=PAIR, suffixes=("_judge", "_human"))
    both = both[both["response_id"].isin(places.index)]
    # a system judged against itself says nothing of the ranking
    both = both[both["system"].astype(str) != both["baseline"].astype(str)]
    if both.empty:
        return not_computable(f"no pair of two systems judged by both it and {study}")
    systems, baselines = both["system"].astype(str), both["baseline"].astype(str)
    names = sorted(set(systems) | set(baselines))
    at = places.loc[both["response_id"]]
    meetings, _ = pd.factorize(at["meeting"].astype(str), sort=True)
    return powered(
        np.searchsorted(names, systems.to_numpy()),
        np.searchsorted(names, baselines.to_numpy()),
        both["outcome_human"].map(OUTCOME_POINTS).to_numpy(float),
        both["outcome_judge"].map(OUTCOME_POINTS).to_numpy(float),
        at["question_key"].to_numpy(),
        meetings,
        names,
        labelled_questions,
        seed,
    )


def prediction_powered_from_verdicts(
    verdicts: pd.DataFrame, rs: pd.DataFrame, labelled_questions: int, seed: int
) -> dict:
    """The report's `rankings.prediction_powered_from_verdicts`: {"reference",
    "labelled", "judges": {judge: ranking or reason}}, or a reason."""
    from analysis.statistics.pairwise import (
        judge_pair_outcomes,
        majority_outcomes,
        study_with_most_pairs,
    )

    if verdicts.empty:
        return not_computable("no pairwise verdicts in the selection")
    humans = majority_outcomes(verdicts)
    if humans.empty:
        return not_computable(
            "no human pairwise study in the selection: its verdicts are the reference"
        )
    outcomes = judge_pair_outcomes(verdicts)
    if outcomes.empty:
        return not_computable("no LLM pairwise judge in the selection besides the human studies")
    study = study_with_most_pairs(humans)
    places = rs.assign(
        question_key=rs.groupby(["question_pk", "mode", "dataset_version"], observed=True)
        .ngroup()
        .to_numpy()
    ).drop_duplicates("response_id")
    places = places.set_index("response_id")[["question_key", "meeting"]]
    human = humans[humans["evaluator"] == study]
    return {
        "reference": study,
        "labelled": {
            "questions": labelled_questions,
            "seed": seed,
            "description": f"of the questions whose pairs both the judge and {study} judged, "
            f"a seeded random sample of {labelled_questions} (at most half) keeps its "
            f"{study} outcomes (the majority of its raters) and the rest are hidden; each "
            f"rank-set is checked against the ranks by all of {study}'s pairs",
        },
        "judges": {
            str(judge): judge_ranking(human, group, places, study, labelled_questions, seed)
            for judge, group in outcomes.groupby("evaluator")
        },
    }

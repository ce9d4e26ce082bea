"""Prediction-powered rank-sets from pairwise verdicts: on generated verdicts
whose outcomes are known (three systems and a baseline, a crowd of three
raters per pair, an LLM judge in both orders), the report's ranking equals
analysis.statistics.prediction_powered_ranking on battles written out by a
plain loop over the generated pairs, the all-labels win rates are plain
counts, and the reasons name what is missing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.report.prediction_powered_pairwise import prediction_powered_from_verdicts
from analysis.statistics import prediction_powered_ranking as ppr

COLUMNS = [
    "evaluator", "response_id", "opponent_id", "seed", "order", "winner",
    "system", "baseline", "rater", "evaluator_kind",
]  # fmt: skip
OUTCOMES = ("win", "tie", "loss")
POINTS = {"win": 1.0, "tie": 0.5, "loss": 0.0}
# each system's chances of win, tie and loss against the baseline, by the humans
SYSTEMS = {"Alpha": (0.75, 0.1, 0.15), "Beta": (0.45, 0.2, 0.35), "Gamma": (0.15, 0.15, 0.7)}
BASELINE = "Base"
LABELLED, SEED = 30, 7


def winner(outcome: str, order: int) -> str:
    """The verdict (by position) that gives the judged response this outcome."""
    if outcome == "tie":
        return "tie"
    return "first" if (outcome == "win") == (order == 0) else "second"


def generated(meetings: int = 16, per_meeting: int = 6, seed: int = 5):
    """Verdicts of a crowd and a judge, and per pair what they were made to say:
    the crowd's majority and the judge's consistent outcome."""
    rng = np.random.default_rng(seed)
    rows, facts, places = [], [], []
    for m in range(meetings):
        for q in range(per_meeting):
            question = m * 100 + q
            for s, (system, chances) in enumerate(SYSTEMS.items()):
                response = question * 10 + s
                votes = [OUTCOMES[rng.choice(3, p=chances)] for _ in range(3)]
                counts = {o: votes.count(o) for o in OUTCOMES}
                top = max(counts.values())
                leaders = [o for o in OUTCOMES if counts[o] == top]
                human = leaders[0] if len(leaders) == 1 else "tie"
                for r, vote in enumerate(votes):
                    order = (q + r) % 2
                    rows.append(
                        ("crowd", response, -response, 0, order, winner(vote, order),
                         system, BASELINE, f"p{r}", "crowd_human")
                    )  # fmt: skip
                # the judge: right 80% of the time, else a flip between the orders (a tie)
                judge = human if rng.random() < 0.8 else "tie"
                verdicts = (
                    [winner(judge, 0), winner(judge, 1)] if judge != "tie" else ["first", "first"]
                )
                for order, verdict in enumerate(verdicts):
                    rows.append(
                        ("judge", response, -response, 1, order, verdict,
                         system, BASELINE, "", "llm_pairwise")
                    )  # fmt: skip
                facts.append((system, question, f"m{m:02d}", human, judge))
                places.append((response, question, "st", "qa", f"m{m:02d}"))
    verdicts = pd.DataFrame(rows, columns=COLUMNS)
    facts = pd.DataFrame(facts, columns=["system", "question", "meeting", "human", "judge"])
    rs = pd.DataFrame(
        places, columns=["response_id", "question_pk", "mode", "dataset_version", "meeting"]
    )
    return verdicts, facts, rs


def test_the_ranking_is_the_statistic_on_the_pairs_written_out_by_hand():
    verdicts, facts, rs = generated()
    found = prediction_powered_from_verdicts(verdicts, rs, LABELLED, SEED)
    assert found["reference"] == "crowd"
    assert found["labelled"]["questions"] == LABELLED
    mine = found["judges"]["judge"]

    names = sorted([*SYSTEMS, BASELINE])
    first = np.array([names.index(s) for s in facts["system"]])
    second = np.full(len(facts), names.index(BASELINE))
    human = facts["human"].map(POINTS).to_numpy()
    judge = facts["judge"].map(POINTS).to_numpy()
    questions = np.unique(facts["question"])  # the report's question codes: sorted
    labelled_questions = np.random.default_rng(SEED).choice(
        len(questions), size=LABELLED, replace=False
    )
    labelled = np.isin(np.searchsorted(questions, facts["question"]), labelled_questions)
    meetings = np.unique(facts["meeting"], return_inverse=True)[1]
    expected = ppr.ranking(first, second, human, judge, labelled, meetings, names)

    for side in ("prediction_powered", "humans_alone"):
        got = {s["system"]: s for s in mine[side]["systems"]}
        for want in expected[side]["systems"]:
            row = got[want["system"]]
            assert row["win_rate"] == pytest.approx(want["win_rate"], abs=1e-12)
            assert row["se"] == pytest.approx(want["se"], abs=1e-12)
            assert row["rank_set"] == want["rank_set"]
    assert mine["prediction_powered"]["lambda"] == pytest.approx(
        expected["prediction_powered"]["lambda"], abs=1e-12
    )
    assert mine["battles"] == {"labelled": LABELLED * 3, "unlabelled": (96 - LABELLED) * 3}
    assert (mine["labelled_questions"], mine["questions"], mine["meetings"]) == (LABELLED, 96, 16)

    # all the crowd's pairs: a system's win rate is its mean points against the
    # baseline, the baseline's the mean of the others' complements
    rows = {s["system"]: s for s in mine["prediction_powered"]["systems"]}
    for system in SYSTEMS:
        plain = facts.loc[facts["system"] == system, "human"].map(POINTS).mean()
        assert rows[system]["all_labels_win_rate"] == pytest.approx(plain, abs=1e-12)
    assert rows[BASELINE]["all_labels_win_rate"] == pytest.approx(1 - human.mean(), abs=1e-12)
    # far apart by design: every rank-set is given and holds the crowd's rank
    assert [rows[s]["all_labels_rank"] for s in ("Alpha", "Beta", "Base", "Gamma")] == [1, 2, 3, 4]
    assert all(row["holds"] for row in rows.values())
    # a judge right on 80% of the pairs carries weight: smaller standard errors
    assert mine["prediction_powered"]["lambda"] > 0.3
    alone = {s["system"]: s for s in mine["humans_alone"]["systems"]}
    assert all(row["se"] < alone[name]["se"] for name, row in rows.items())
    assert (
        mine["prediction_powered"]["mean_rank_set_size"]
        <= mine["humans_alone"]["mean_rank_set_size"]
    )


def test_pairs_outside_the_selection_and_a_system_against_itself_are_not_battles():
    verdicts, facts, rs = generated()
    inside = rs[rs["meeting"] != "m15"]
    found = prediction_powered_from_verdicts(verdicts, inside, LABELLED, SEED)
    assert found["judges"]["judge"]["questions"] == 90
    itself = verdicts.assign(baseline=verdicts["system"])
    found = prediction_powered_from_verdicts(itself, rs, LABELLED, SEED)
    assert (
        "no pair of two systems judged by both it and crowd" in found["judges"]["judge"]["reason"]
    )


def test_the_study_with_the_most_pairs_is_the_reference():
    verdicts, _, rs = generated()
    crowd = verdicts[verdicts["evaluator"] == "crowd"]
    few = crowd[crowd["response_id"] < 3000].assign(evaluator="experts")
    found = prediction_powered_from_verdicts(pd.concat([verdicts, few]), rs, LABELLED, SEED)
    assert found["reference"] == "crowd"
    assert set(found["judges"]) == {"judge"}  # a human study is never ranked as a judge


@pytest.mark.parametrize(
    ("keep", "reason"),
    [
        (lambda v: v.iloc[:0], "no pairwise verdicts in the selection"),
        (lambda v: v[v["evaluator"] == "judge"], "no human pairwise study in the selection"),
        (lambda v: v[v["evaluator"] == "crowd"], "no LLM pairwise judge in the selection"),
    ],
)
def test_what_is_missing_is_named(keep, reason):
    verdicts, _, rs = generated()
    found = prediction_powered_from_verdicts(keep(verdicts), rs, LABELLED, SEED)
    assert found["computable"] is False and reason in found["reason"]


def test_few_labelled_meetings_give_win_rates_without_rank_sets():
    verdicts, _, rs = generated(meetings=4)
    found = prediction_powered_from_verdicts(verdicts, rs, LABELLED, SEED)["judges"]["judge"]
    assert "not enough labelled meetings for rank-sets" in found["ci_note"]
    assert all(s["rank_set"] is None for s in found["prediction_powered"]["systems"])
    assert found["labelled_questions"] == 12  # at most half of the 24 questions

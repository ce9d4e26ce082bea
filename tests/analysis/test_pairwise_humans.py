"""Human pairwise studies beside the LLM pairwise judges: win rates (per verdict
and majority per pair), agreement with each judge, position effect and
inter-rater agreement, in the report and its HTML.

The data: on the synthetic ELITR set, 4 Synthetic-Echo and 2 Synthetic-Terse
responses against the baseline Synthetic-Hedge, judged by an LLM judge in both
orders and by a crowd study with 3 raters per pair, each seeing one order.
Every expected number below is worked out by hand in the comments.
"""

from dataclasses import replace

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score

from analysis.report.build import build_report
from analysis.report.render import to_html
from analysis.report.report_types import NotComputable
from analysis.report.selection import Selection
from analysis.statistics.human_pairwise import cohen_kappa, position_effect
from analysis.statistics.pairwise import (
    majority_outcome,
    majority_outcomes,
    verdict_table,
    win_rates,
)
from generation.models import Response
from judging.models import Evaluator, PairwiseVerdict

pytestmark = pytest.mark.django_db

SELECTION = Selection(dataset_version="qa", split="test2", mode="st")
CROWD = "crowd human (pilot)"
JUDGE, LAZY = "battle judge", "lazy judge"
BASELINE = "Synthetic-Hedge"

# The judge, seed 2023: (winner in order 0, winner in order 1) per pair; the
# response is shown first in order 0, second in order 1.
JUDGE_VERDICTS = {
    "E1": ("first", "second"),  # win, win -> consistent win
    "E2": ("first", "first"),  # win, loss -> tie (a flip)
    "E3": ("second", "first"),  # loss, loss -> loss
    "E4": ("first", "second"),  # win
    "T1": ("tie", "tie"),  # tie
    "T2": ("second", "first"),  # loss
}
# The crowd: (rater, order, winner), one order per rater, orders balanced (9 and 9).
CROWD_VERDICTS = {
    "E1": [("p1", 0, "first"), ("p2", 1, "second"), ("p3", 0, "first")],  # w w w -> win
    "E2": [("p1", 1, "first"), ("p2", 0, "first"), ("p3", 1, "first")],  # l w l -> loss
    "E3": [("p1", 0, "second"), ("p2", 1, "tie"), ("p3", 0, "first")],  # l t w -> tie
    "E4": [("p1", 1, "second"), ("p2", 0, "first"), ("p3", 1, "tie")],  # w w t -> win
    "T1": [("p1", 0, "tie"), ("p2", 1, "tie"), ("p3", 0, "second")],  # t t l -> tie
    "T2": [("p1", 1, "first"), ("p2", 0, "second"), ("p3", 1, "first")],  # l l l -> loss
}
CROWD_OUTCOMES = {  # per pair, raters p1, p2, p3
    "E1": ("win", "win", "win"),
    "E2": ("loss", "win", "loss"),
    "E3": ("loss", "tie", "win"),
    "E4": ("win", "win", "tie"),
    "T1": ("tie", "tie", "loss"),
    "T2": ("loss", "loss", "loss"),
}


def st_responses(system: str) -> list[Response]:
    return list(
        Response.objects.filter(
            run__system__name=system,
            run__mode="st",
            run__dataset__version="qa",
            run__dataset__split="test2",
            run__dataset__language="en",
        ).order_by("question__document__external_id", "question__order")
    )


def pairs() -> dict[str, tuple[Response, Response]]:
    baseline = {r.question_id: r for r in st_responses(BASELINE)}
    echo, terse = st_responses("Synthetic-Echo"), st_responses("Synthetic-Terse")
    chosen = {f"E{i + 1}": echo[i] for i in range(4)} | {f"T{i + 1}": terse[i] for i in range(2)}
    return {key: (r, baseline[r.question_id]) for key, r in chosen.items()}


@pytest.fixture
def battles(two_meetings):
    judge = Evaluator.objects.create(name=JUDGE, kind="llm_pairwise")
    lazy = Evaluator.objects.create(name=LAZY, kind="llm_pairwise")
    crowd = Evaluator.objects.create(name=CROWD, kind="crowd_human")
    rows = []
    for key, (response, opponent) in pairs().items():
        for order, winner in enumerate(JUDGE_VERDICTS[key]):
            rows.append(
                PairwiseVerdict(
                    evaluator=judge,
                    response=response,
                    opponent=opponent,
                    seed=2023,
                    order=order,
                    winner=winner,
                )
            )
            if key == "E1":  # the lazy judge judged one pair only
                rows.append(
                    PairwiseVerdict(
                        evaluator=lazy,
                        response=response,
                        opponent=opponent,
                        seed=2023,
                        order=order,
                        winner=winner,
                    )
                )
        for rater, order, winner in CROWD_VERDICTS[key]:
            rows.append(
                PairwiseVerdict(
                    evaluator=crowd,
                    response=response,
                    opponent=opponent,
                    seed=0,
                    order=order,
                    rater=rater,
                    winner=winner,
                )
            )
    PairwiseVerdict.objects.bulk_create(rows)
    return pairs()


def rate(wins, ties, losses, counting):
    n = wins + ties + losses
    return {
        "against": BASELINE,
        "wins": wins,
        "ties": ties,
        "losses": losses,
        "n": n,
        "counting": counting,
        "win_rate": (wins + ties / 2) / n,
    }


def test_verdict_table_carries_rater_and_kind(battles):
    table = verdict_table()
    assert len(table) == 12 + 2 + 18
    crowd = table[table["evaluator"] == CROWD]
    assert sorted(crowd["rater"].unique()) == ["p1", "p2", "p3"]
    assert set(crowd["evaluator_kind"]) == {"crowd_human"}
    assert set(table[table["evaluator"] == JUDGE]["rater"]) == {""}


def test_win_rates_count_judges_and_studies_each_their_way(battles):
    table = verdict_table()
    # The judge: consistent E1 win, E2 tie, E3 loss, E4 win; T1 tie, T2 loss.
    assert win_rates(table, "consistent") == {
        JUDGE: {
            "Synthetic-Echo": rate(2, 1, 1, "consistent"),  # 2.5 / 4 = 0.625
            "Synthetic-Terse": rate(0, 1, 1, "consistent"),  # 0.5 / 2 = 0.25
        },
        LAZY: {"Synthetic-Echo": rate(1, 0, 0, "consistent")},
    }
    # per order: Echo w w | w l | l l | w w -> 5 wins, 3 losses; Terse t t | l l.
    per_order = win_rates(table, "per_order")
    assert per_order[JUDGE] == {
        "Synthetic-Echo": rate(5, 0, 3, "per_order"),
        "Synthetic-Terse": rate(0, 2, 2, "per_order"),
    }
    assert CROWD not in per_order
    # The crowd, every verdict: Echo www lwl ltw wwt -> 7 wins, 2 ties, 3 losses
    # (8 / 12); Terse ttl lll -> 2 ties, 4 losses (1 / 6).
    assert win_rates(table, "per_verdict") == {
        CROWD: {
            "Synthetic-Echo": rate(7, 2, 3, "per_verdict"),
            "Synthetic-Terse": rate(0, 2, 4, "per_verdict"),
        }
    }
    assert win_rates(table, "per_verdict")[CROWD]["Synthetic-Echo"]["win_rate"] == 8 / 12
    # Majority per pair: Echo win, loss, tie (1-1-1 split), win; Terse tie, loss.
    assert win_rates(table, "majority") == {
        CROWD: {
            "Synthetic-Echo": rate(2, 1, 1, "majority"),
            "Synthetic-Terse": rate(0, 1, 1, "majority"),
        }
    }
    with pytest.raises(ValueError, match="counting is one of"):
        win_rates(table, "elo")


def test_majority_rule():
    assert majority_outcome(["win", "win", "loss"]) == "win"
    assert majority_outcome(["win", "loss"]) == "tie"  # an even split
    assert majority_outcome(["win", "tie", "loss"]) == "tie"
    assert majority_outcome(["tie", "tie", "win"]) == "tie"
    assert majority_outcome(["loss", "loss", "win", "win", "tie"]) == "tie"
    assert majority_outcome(["loss", "loss", "win", "tie"]) == "loss"
    # A rater who saw both orders and changed their mind counts once, as a tie.
    table = pd.DataFrame(
        {
            "evaluator": ["s"] * 3,
            "evaluator_kind": ["gold_human"] * 3,
            "system": ["A"] * 3,
            "baseline": ["B"] * 3,
            "response_id": [1] * 3,
            "opponent_id": [2] * 3,
            "seed": [0] * 3,
            "rater": ["x", "x", "y"],
            "order": [0, 1, 0],
            "winner": ["first", "first", "first"],  # x: win then loss; y: win
        }
    )
    majority = majority_outcomes(table)
    assert (majority["outcome"].tolist(), majority["raters"].tolist()) == (["tie"], [2])
    assert majority["unanimous"].tolist() == [False]


def test_the_report_holds_the_study_beside_the_judges(battles):
    report = build_report(SELECTION)
    diagnostics = report.diagnostics
    assert set(report.to_dict()["diagnostics"]["win_rates"]) == {
        "consistent",
        "per_order",
        "per_verdict",
        "majority",
    }
    assert diagnostics.win_rates.majority[CROWD]["Synthetic-Echo"].model_dump() == rate(
        2, 1, 1, "majority"
    )
    assert diagnostics.win_rates.per_verdict[CROWD]["Synthetic-Terse"].model_dump() == rate(
        0, 2, 4, "per_verdict"
    )
    assert diagnostics.win_rates.consistent[JUDGE]["Synthetic-Echo"].win_rate == 0.625

    # The judge's own diagnostics: 6 pairs, one flip (E2); 10 decided verdicts,
    # 6 of them for the answer shown first. The study has none of these: its
    # two orders come from different raters.
    assert diagnostics.pairwise[JUDGE].model_dump() == {
        "pairs": 6,
        "flip_rate": pytest.approx(1 / 6),
        "first_position_win_rate": 0.6,
        "verdicts": 12,
    }
    assert CROWD not in diagnostics.pairwise

    study = diagnostics.human_pairwise[CROWD]
    assert (study.verdicts, study.pairs, study.raters) == (18, 6, 3)

    # Position effect: 18 verdicts, 4 ties; the first answer won 9 of the 14
    # others. Two-sided exact binomial p = 2 * P(X >= 9 | 14, 0.5)
    # = 2 * (2002 + 1001 + 364 + 91 + 14 + 1) / 2**14 = 6946 / 16384.
    position = study.position_effect
    expected_test = binomtest(9, 14, 0.5, alternative="two-sided")
    ci = expected_test.proportion_ci(confidence_level=0.95, method="exact")
    assert position.model_dump() == {
        "verdicts": 18,
        "decided": 14,
        "first_wins": 9,
        "ties": 4,
        "tie_rate": 4 / 18,
        "first_position_win_rate": 9 / 14,
        "binomial_test": {
            "p": pytest.approx(6946 / 16384, abs=1e-12),
            "alternative": "two-sided",
            "null": 0.5,
            "ci95": [ci.low, ci.high],
        },
    }
    assert position.binomial_test.p == expected_test.pvalue

    # Inter-rater: all three agree on E1 and T2 only (2 of 6). Krippendorff's
    # alpha (nominal) by hand from the coincidence matrix: o_ww = o_ll = 4,
    # o_tt = 1, every off-diagonal cell 1.5; n_w = n_l = 7, n_t = 4, n = 18;
    # D_o = 9 / 18, D_e = 2 (49 + 28 + 28) / (18 * 17) = 210 / 306;
    # alpha = 1 - 153 / 210 = 19 / 70.
    inter = study.inter_rater
    assert inter.pairs == 6 and inter.all_agree == 2
    assert inter.all_agree_share == pytest.approx(1 / 3)
    alpha = inter.krippendorff_alpha_nominal
    assert alpha.alpha == pytest.approx(19 / 70, abs=1e-12)
    assert (alpha.raters, alpha.units) == (3, 6)
    code = {"loss": 0, "tie": 1, "win": 2}
    raters_by_units = np.array(
        [[code[CROWD_OUTCOMES[k][r]] for k in sorted(CROWD_OUTCOMES)] for r in range(3)], float
    )
    direct = krippendorff.alpha(reliability_data=raters_by_units, level_of_measurement="nominal")
    assert alpha.alpha == pytest.approx(direct, abs=1e-12)

    # Agreement with the judge, per pair: majority  vs consistent
    # E1 win/win, E2 loss/tie, E3 tie/loss, E4 win/win, T1 tie/tie, T2 loss/loss:
    # 4 of 6 agree; each side uses each outcome twice, so chance agreement is
    # 3 * (2/6)^2 = 1/3 and kappa = (2/3 - 1/3) / (1 - 1/3) = 0.5.
    agreement = study.agreement_with_judges[JUDGE]
    assert agreement.pairs == 6
    assert agreement.agreement == pytest.approx(4 / 6)
    assert agreement.cohen_kappa == pytest.approx(0.5, abs=1e-12)
    human = ["win", "loss", "tie", "win", "tie", "loss"]
    judge = ["win", "tie", "loss", "win", "tie", "loss"]
    assert agreement.cohen_kappa == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert agreement.confusion == {
        "win": {"win": 2, "tie": 0, "loss": 0},
        "tie": {"win": 0, "tie": 1, "loss": 1},
        "loss": {"win": 0, "tie": 1, "loss": 1},
    }
    # The lazy judge shares one pair with the crowd (E1): agreement 1, no kappa.
    lazy = study.agreement_with_judges[LAZY]
    assert (lazy.pairs, lazy.agreement) == (1, 1.0)
    assert lazy.cohen_kappa == NotComputable.because("fewer than 2 pairs judged by both (1)")

    html = to_html(report)
    assert "Human pairwise studies" in html
    assert f"{CROWD} · Synthetic-Echo" in html and f"{CROWD} · {JUDGE}" in html
    assert "0.64 [" in html and "(9 of 14)" in html  # first-position win rate
    assert "0.27" in html  # alpha
    assert "fewer than 2 pairs judged by both (1)" in html


def test_the_selection_names_the_evaluators(battles):
    report = build_report(replace(SELECTION, evaluators=("gold-human-eval", "gpt-4-eval", JUDGE)))
    diagnostics = report.diagnostics
    assert diagnostics.human_pairwise == NotComputable.because(
        "no human pairwise verdicts in the selection"
    )
    assert set(diagnostics.win_rates.consistent) == {JUDGE}
    assert diagnostics.win_rates.majority == {}
    assert "Human pairwise studies" in to_html(report)

    only_crowd = build_report(replace(SELECTION, evaluators=("gold-human-eval", CROWD))).diagnostics
    assert only_crowd.pairwise.computable is False
    assert only_crowd.human_pairwise[CROWD].agreement_with_judges == {}
    assert only_crowd.win_rates.per_verdict[CROWD]["Synthetic-Echo"].n == 12


def test_the_stamp_covers_the_verdicts(battles):
    first = build_report(SELECTION).stamp.verdicts_sha256
    assert build_report(SELECTION).stamp.verdicts_sha256 == first
    response, _ = battles["T1"]
    PairwiseVerdict.objects.filter(evaluator__name=CROWD, response=response, rater="p1").update(
        winner="first"
    )
    assert build_report(SELECTION).stamp.verdicts_sha256 != first


def test_statistics_that_cannot_be_computed():
    assert cohen_kappa(["win"], ["loss"])["reason"] == "fewer than 2 pairs judged by both (1)"
    assert cohen_kappa(["tie", "tie"], ["tie", "tie"]) == {
        "computable": False,
        "reason": "one category only: every pair is a tie for both, so chance agreement is 1",
    }
    assert cohen_kappa(["win", "win"], ["loss", "loss"]) == 0.0  # no agreement, none expected
    ties = position_effect(pd.DataFrame({"order": [0, 1], "winner": ["tie", "tie"]}))
    assert ties["tie_rate"] == 1.0
    assert ties["binomial_test"] == {
        "computable": False,
        "reason": "every verdict is a tie: no answer won",
    }


def test_the_report_ranks_the_pairwise_judges_against_the_study(battles):
    """Prediction-powered rank-sets from verdicts, in the report and its HTML:
    6 pairs on 4 questions of one meeting, 2 questions labelled (at most half);
    too few labelled meetings for rank-sets, so win rates only, and why."""
    report = build_report(SELECTION)
    powered = report.rankings.prediction_powered_from_verdicts
    assert powered.reference == CROWD
    assert set(powered.judges) == {JUDGE, LAZY}
    mine = powered.judges[JUDGE]
    assert (mine.questions, mine.labelled_questions, mine.meetings) == (4, 2, 1)
    assert mine.battles.labelled + mine.battles.unlabelled == 6
    assert "not enough labelled meetings for rank-sets" in mine.ci_note
    assert all(s.rank_set is None for s in mine.prediction_powered.systems)
    # the lazy judge judged E1 only: 1 question, none labelled
    assert powered.judges[LAZY].computable is False
    html = to_html(report)
    section = html[html.index('id="prediction-powered-from-verdicts"') :]
    assert f"a few of {CROWD}'s pairs" in section
    assert "not enough labelled meetings for rank-sets" in section

    only_judges = build_report(replace(SELECTION, evaluators=("gold-human-eval", JUDGE)))
    assert only_judges.rankings.prediction_powered_from_verdicts == NotComputable.because(
        "no human pairwise study in the selection: its verdicts are the reference"
    )

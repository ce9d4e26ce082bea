"""Pairwise judges that defer: on generated battles whose truth is known
(a judge consistent on 70% of the pairs and nearly always right there, a tie
on the flips), the threshold keeps exactly the consistent pairs at 80%, and
the held-out share and agreement equal a plain count over the generated
pairs; a panel's dissent is the share of its members whose outcome differs
from its own; in the report, the pairwise judge and the panel sit beside the
judges of scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.report.deferral import DELTA
from analysis.report.pairwise_deferral import deferral_with_pairwise, dissent, pairwise_deferral
from analysis.report.panels import with_pairwise_panels
from analysis.statistics.pairwise import judge_pair_outcomes

OUTCOMES = ("win", "tie", "loss")
COLUMNS = [
    "evaluator", "response_id", "opponent_id", "seed", "order", "winner",
    "system", "baseline", "rater", "evaluator_kind",
]  # fmt: skip


def winner(outcome: str, order: int) -> str:
    """The verdict (by position) that gives the judged response this outcome."""
    if outcome == "tie":
        return "tie"
    return "first" if (outcome == "win") == (order == 0) else "second"


def verdict_row(evaluator, response, seed, order, verdict, rater="", kind="llm_pairwise"):
    """One row of a verdict table: the response against the baseline's (its
    id negated), system S against baseline B."""
    return (evaluator, response, -response, seed, order, verdict, "S", "B", rater, kind)


def generated(seed: int = 3, meetings: int = 20, per_meeting: int = 15):
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for m in range(meetings):
        for q in range(per_meeting):
            response = m * 100 + q
            human = OUTCOMES[rng.choice(3, p=[0.45, 0.2, 0.35])]
            consistent = rng.random() < 0.7
            if consistent:
                said = human if rng.random() < 0.97 else OUTCOMES[(OUTCOMES.index(human) + 1) % 3]
                verdicts = [winner(said, 0), winner(said, 1)]
                outcome = said
            else:  # the answer shown first wins both times: a flip, a tie
                verdicts = ["first", "first"]
                outcome = "tie"
            for order, verdict in enumerate(verdicts):
                rows.append(verdict_row("judge", response, 1, order, verdict))
            others = [human, human, OUTCOMES[rng.integers(3)]]
            for r, said_by_rater in enumerate(others):
                order = (q + r) % 2
                said = winner(said_by_rater, order)
                rows.append(verdict_row("crowd", response, 0, order, said, f"p{r}", "crowd_human"))
            truth.append((response, f"m{m:02d}", consistent, outcome == human))
    verdicts = pd.DataFrame(rows, columns=COLUMNS)
    facts = pd.DataFrame(truth, columns=["response_id", "meeting", "consistent", "agrees"])
    return verdicts, facts


def test_the_threshold_keeps_the_consistent_pairs_and_the_check_is_a_plain_count():
    verdicts, facts = generated()
    rs = facts[["response_id", "meeting"]]
    found = pairwise_deferral(verdicts, rs, {})
    judge = found["judge"]
    assert judge["compared_with"] == "crowd" and judge["tolerance"] is None
    assert judge["delta"] == DELTA
    # meetings m00, m02, ... choose; m01, m03, ... check
    held = facts[facts["meeting"].str[1:].astype(int) % 2 == 1]
    assert judge["held_out_responses"] == len(held) == 150
    assert judge["held_out_agreement_without_deferral"] == pytest.approx(held["agrees"].mean())
    at_80 = next(level for level in judge["levels"] if level["alpha"] == 0.2)
    # the consistent pairs (spread 0) pass at 80%; adding the flips (spread 1) fails
    assert at_80["max_spread_kept"] == 0
    kept = held[held["consistent"]]
    assert at_80["held_out_kept_share"] == pytest.approx(len(kept) / len(held))
    assert at_80["held_out_agreement"] == pytest.approx(kept["agrees"].mean())
    assert at_80["held_out_agreement"] >= 0.8
    assert at_80["deferred"] == int((~facts["consistent"]).sum())
    # at 90% the clustered bound on 10 calibration meetings (about 0.105) is too wide
    at_90 = next(level for level in judge["levels"] if level["alpha"] == 0.1)
    assert at_90["max_spread_kept"] is None and at_90["deferred"] == len(facts)
    # without a human pairwise study there is nothing to check against
    assert pairwise_deferral(verdicts[verdicts["evaluator"] == "judge"], rs, {}) == {}


def test_a_panels_dissent_is_the_share_of_members_against_its_outcome():
    rows = []
    # per pair: member a's and member b's outcome (the same in both orders)
    pairs = {1: ("win", "win"), 2: ("win", "loss"), 3: ("win", "tie")}
    for response, said in pairs.items():
        for member, outcome in zip(("a", "b"), said, strict=True):
            for order in (0, 1):
                rows.append(verdict_row(member, response, 1, order, winner(outcome, order)))
    verdicts = with_pairwise_panels(
        pd.DataFrame(rows, columns=COLUMNS), {"a+b": (["a", "b"], "majority")}
    )
    outcomes = judge_pair_outcomes(verdicts)
    panel = outcomes[outcomes["evaluator"] == "a+b"].set_index("response_id")["outcome"]
    # agreeing members: their outcome; win against loss, or win against tie: a tie
    assert panel.to_dict() == {1: "win", 2: "tie", 3: "tie"}
    spread = dissent(verdicts, outcomes, {"a+b": ["a", "b"]})
    got = spread.loc["a+b"].droplevel("opponent_id").to_dict()
    assert got == {1: 0.0, 2: 1.0, 3: 0.5}
    # a member's own spread: its verdicts all give its outcome
    assert (spread.loc["a"] == 0).all()


def test_scored_and_pairwise_deferral_are_one_part():
    reason = {"computable": False, "reason": "no reference"}
    pairwise = {"judge": {"signal": "s"}}
    assert deferral_with_pairwise(reason, {}) == reason
    assert deferral_with_pairwise(reason, pairwise) == pairwise
    assert deferral_with_pairwise({"rubric": {"signal": "r"}}, pairwise) == {
        "rubric": {"signal": "r"},
        "judge": {"signal": "s"},
    }


def test_the_report_part_reads_a_pairwise_judge():
    """The part's type takes a pairwise judge, and the page says what it is
    compared with and that its spread is a share of dissenting votes."""
    from types import SimpleNamespace

    from django.template.loader import render_to_string

    from analysis.report.report_types import DeferringJudge

    verdicts, facts = generated()
    found = pairwise_deferral(verdicts, facts[["response_id", "meeting"]], {})
    part = DeferringJudge.model_validate(found["judge"])
    assert part.compared_with == "crowd" and part.tolerance is None
    html = render_to_string(
        "analysis/_deferral.html", {"report": SimpleNamespace(deferral={"judge": part})}
    )
    assert "the majority outcome of crowd on each pair" in html
    assert "largest share of dissenting votes kept" in html
    assert "Threshold chosen on 150 pairs of 10 meetings" in html

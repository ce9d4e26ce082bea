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
    "system", "baseline", "rater", "evaluator_kind", "probability",
]  # fmt: skip


def winner(outcome: str, order: int) -> str:
    """The verdict (by position) that gives the judged response this outcome."""
    if outcome == "tie":
        return "tie"
    return "first" if (outcome == "win") == (order == 0) else "second"


def verdict_row(
    evaluator, response, seed, order, verdict, rater="", kind="llm_pairwise", probability=None
):
    """One row of a verdict table: the response against the baseline's (its
    id negated), system S against baseline B."""
    return (
        evaluator, response, -response, seed, order, verdict, "S", "B", rater, kind, probability
    )  # fmt: skip


def generated(seed: int = 3, meetings: int = 20, per_meeting: int = 15, right: float = 0.97):
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for m in range(meetings):
        for q in range(per_meeting):
            response = m * 100 + q
            human = OUTCOMES[rng.choice(3, p=[0.45, 0.2, 0.35])]
            consistent = rng.random() < 0.7
            if consistent:
                said = human if rng.random() < right else OUTCOMES[(OUTCOMES.index(human) + 1) % 3]
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
    spread, by_tokens = dissent(verdicts, outcomes, {"a+b": ["a", "b"]})
    assert by_tokens == set()
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


def test_token_probabilities_weigh_a_pairwise_judges_votes():
    """A judge run with logprobs: each pair's spread is 1 - the mean over its
    verdicts of the tokens' probability where the verdict gives the pair's
    outcome and 0 where not, worked out by hand; a judge missing one
    probability keeps the plain share of dissent."""
    rows = []
    # per pair: (outcome, probability) in order 0 and in order 1
    said = {
        1: (("win", 0.9), ("win", 0.7)),  # consistent: 1 - (0.9 + 0.7) / 2
        2: (("win", 0.99), ("loss", 0.95)),  # a flip: a tie, both against it
        3: (("tie", 0.6), ("tie", 0.5)),
    }
    for response, votes in said.items():
        for order, (outcome, probability) in enumerate(votes):
            verdict = winner(outcome, order)
            rows.append(verdict_row("sure", response, 1, order, verdict, probability=probability))
            plain = None if (response, order) == (3, 1) else probability
            rows.append(verdict_row("patchy", response, 1, order, verdict, probability=plain))
    verdicts = pd.DataFrame(rows, columns=COLUMNS)
    outcomes = judge_pair_outcomes(verdicts)
    spread, by_tokens = dissent(verdicts, outcomes, {})
    assert by_tokens == {"sure"}
    got = spread.loc["sure"].droplevel("opponent_id").to_dict()
    assert got == pytest.approx({1: 1 - 0.8, 2: 1.0, 3: 1 - 0.55})
    assert spread.loc["patchy"].droplevel("opponent_id").to_dict() == {1: 0.0, 2: 1.0, 3: 0.0}


def test_a_pairwise_judge_with_token_probabilities_keeps_its_surest_pairs():
    """A judge right on only 75% of its consistent pairs, and unsure
    (probability 0.5) exactly where wrong: by dissent alone no threshold
    reaches 80% (the consistent pairs agree 75%) and every pair goes to a
    human; weighed by its tokens, the sure consistent pairs pass, and the
    held-out share and agreement are a plain count over them."""
    verdicts, facts = generated(right=0.75)
    rs = facts[["response_id", "meeting"]]
    plain = pairwise_deferral(verdicts, rs, {})["judge"]
    plain_80 = next(level for level in plain["levels"] if level["alpha"] == 0.2)
    assert plain["spread"] == "dissent" and plain_80["max_spread_kept"] is None
    agrees = facts.set_index("response_id")["agrees"]
    sure = np.where(agrees.reindex(verdicts["response_id"]).to_numpy(), 0.97, 0.5)
    verdicts["probability"] = np.where(verdicts["evaluator"] == "judge", sure, np.nan)
    found = pairwise_deferral(verdicts, rs, {})["judge"]
    assert found["spread"] == "tokens" and "tokens" in found["signal"]
    held = facts[facts["meeting"].str[1:].astype(int) % 2 == 1]
    at_80 = next(level for level in found["levels"] if level["alpha"] == 0.2)
    # consistent and right: spread 0.03; consistent and wrong: 0.5; flips: 1
    assert at_80["max_spread_kept"] == pytest.approx(0.03)
    kept = held[held["consistent"] & held["agrees"]]
    assert at_80["held_out_kept_share"] == pytest.approx(len(kept) / len(held))
    assert at_80["held_out_agreement"] == 1.0
    assert at_80["deferred"] == int((~(facts["consistent"] & facts["agrees"])).sum())

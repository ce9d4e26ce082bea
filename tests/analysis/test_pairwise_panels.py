"""Panels of pairwise judges: the majority verdict equals a plain count of
votes (collections.Counter, member by member) on thousands of generated
verdicts; in the report, a panel of three pairwise judges is counted as any
pairwise judge (consistent and per-order win rates, agreement with a human
pairwise study, rankings from verdicts), with every expected number worked
out by hand below; the configuration check keeps verdicts and scores apart."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from analysis.report.build import build_report
from analysis.report.render import to_html
from analysis.report.report_types import is_computed
from analysis.statistics import panels
from judging.evaluators import ConfigError
from judging.models import Evaluator, PairwiseVerdict
from judging.panels import checked_panel
from tests.analysis.test_pairwise_humans import (  # noqa: F401 (the fixture)
    CROWD,
    JUDGE,
    LAZY,
    SELECTION,
    battles,
)

WINNERS = ("first", "second", "tie")


def generated_verdicts(rng: np.random.Generator, members: int, pairs: int = 3000) -> pd.DataFrame:
    """Verdicts of `members` judges on `pairs` pairs in two orders, 1-3 seeds
    each, some (member, pair, order) never judged."""
    rows = []
    for m in range(members):
        for pair in range(pairs):
            for order in (0, 1):
                if rng.random() < 0.05:
                    continue
                for seed in range(int(rng.integers(1, 4))):
                    rows.append(
                        (f"judge-{m}", pair, 10_000 + pair, seed, order, rng.choice(WINNERS))
                    )
    table = pd.DataFrame(
        rows, columns=["evaluator", "response_id", "opponent_id", "seed", "order", "winner"]
    )
    return table.assign(system="S", baseline="B", rater="", evaluator_kind="llm_pairwise")


def counted_by_hand(table: pd.DataFrame, members: list[str]) -> dict[tuple[int, int], str]:
    """The reference: per member its seeds' most common verdict (a tie on an
    even split), then the members' most common one, where all of them judged."""

    def most(votes: list[str]) -> str:
        counts = Counter(votes).most_common()
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            return "tie"
        return counts[0][0]

    seen: dict[tuple[int, int], dict[str, list[str]]] = {}
    for row in table.itertuples():
        seen.setdefault((row.response_id, row.order), {}).setdefault(row.evaluator, []).append(
            row.winner
        )
    return {
        key: most([most(by_member[m]) for m in members])
        for key, by_member in seen.items()
        if set(by_member) == set(members)
    }


@pytest.mark.parametrize("members", [2, 3, 4, 5])
def test_the_majority_verdict_is_a_count_of_votes(members):
    table = generated_verdicts(np.random.default_rng(members), members)
    names = [f"judge-{m}" for m in range(members)]
    got = panels.majority_verdicts(table, names)
    expected = counted_by_hand(table, names)
    assert len(got) == len(expected) > 0
    assert {(r.response_id, r.order): r.winner for r in got.itertuples()} == expected
    assert (got["opponent_id"] == got["response_id"] + 10_000).all()
    # a judge outside the panel changes nothing
    other = table.assign(evaluator="judge-x")
    again = panels.majority_verdicts(pd.concat([table, other]), names)
    pd.testing.assert_frame_equal(again, got)


# Two more pairwise judges beside the fixture's JUDGE (winner in order 0, order 1);
# the response is shown first in order 0. Per pair and order, the panel's
# majority of JUDGE, SECOND, THIRD (all different: a tie):
SECOND = {
    "E1": ("second", "first"),
    "E2": ("first", "second"),
    "E3": ("second", "first"),
    "E4": ("tie", "tie"),
    "T1": ("tie", "second"),
    "T2": ("second", "first"),
}
THIRD = {
    "E1": ("first", "tie"),
    "E2": ("second", "first"),
    "E3": ("first", "second"),
    "E4": ("first", "first"),
    "T1": ("first", "second"),
    "T2": ("tie", "tie"),
}
# JUDGE is E1 (first, second), E2 (first, first), E3 (second, first),
# E4 (first, second), T1 (tie, tie), T2 (second, first). So:
#   E1 o0 first first first: win; o1 second first tie: tie   -> consistent tie
#   E2 o0 first first second: win; o1 first second first: loss -> tie
#   E3 o0 second second first: loss; o1 first first second: loss -> loss
#   E4 o0 first tie first: win; o1 second tie (THIRD's seeds split: tie): tie -> tie
#   T1 o0 tie tie first: tie; o1 tie second second: win -> tie
#   T2 o0 second second tie: loss; o1 first first tie: loss -> loss
PANEL = "panel of three"
PANEL_ORDERS = {
    "E1": ("win", "tie"),
    "E2": ("win", "loss"),
    "E3": ("loss", "loss"),
    "E4": ("win", "tie"),
    "T1": ("tie", "win"),
    "T2": ("loss", "loss"),
}


@pytest.fixture
def panel(battles):  # noqa: F811 (the fixture)
    rows = []
    for name, verdicts in (("second judge", SECOND), ("third judge", THIRD)):
        judge = Evaluator.objects.create(name=name, kind="llm_pairwise")
        for key, (response, opponent) in battles.items():
            for order, winner in enumerate(verdicts[key]):
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
        if name == "third judge":
            # a second seed on E4, order 1, that splits the third judge's own vote
            # (first, second): it counts once, as a tie, not as a second vote
            response, opponent = battles["E4"]
            rows.append(
                PairwiseVerdict(
                    evaluator=judge,
                    response=response,
                    opponent=opponent,
                    seed=7,
                    order=1,
                    winner="second",
                )
            )
    PairwiseVerdict.objects.bulk_create(rows)
    members = [JUDGE, "second judge", "third judge"]
    Evaluator.objects.create(name=PANEL, kind="panel", config=checked_panel({"members": members}))
    Evaluator.objects.create(
        name="panel with the lazy judge",
        kind="panel",
        config=checked_panel({"members": [JUDGE, LAZY], "rule": "majority"}),
    )
    return battles


def test_a_pairwise_panel_is_counted_as_any_pairwise_judge(panel):
    report = build_report(SELECTION)
    account = report.panels[PANEL]
    assert is_computed(account)
    assert account.pairwise is True
    assert account.members == [JUDGE, "second judge", "third judge"]
    assert account.responses == 6
    assert account.cost_per_response is None  # no member's cost is recorded

    win_rates = report.diagnostics.win_rates
    # consistent: Echo E1 tie, E2 tie, E3 loss, E4 tie -> 1.5 / 4; Terse: T1 tie, T2 loss
    assert win_rates.consistent[PANEL]["Synthetic-Echo"].win_rate == 0.375
    assert win_rates.consistent[PANEL]["Synthetic-Terse"].win_rate == 0.25
    # per order: Echo's 8 verdicts are 3 wins, 2 ties, 3 losses
    echo = win_rates.per_order[PANEL]["Synthetic-Echo"]
    assert (echo.wins, echo.ties, echo.losses) == (3, 2, 3)
    # position bias, as any pairwise judge's. The panel's raw verdicts (order 0,
    # order 1): E1 (first, tie), E2 (first, first), E3 (second, first),
    # E4 (first, tie), T1 (tie, second), T2 (second, first). Only E3 and T2 move
    # with their answer: 4 of 6 pairs flip. 9 decided verdicts, 6 "first".
    diagnostics = report.diagnostics.pairwise[PANEL]
    assert (diagnostics.pairs, diagnostics.verdicts) == (6, 12)
    assert diagnostics.flip_rate == pytest.approx(4 / 6)
    assert diagnostics.first_position_win_rate == pytest.approx(6 / 9)

    # agreement with the crowd's majority (E1 win, E2 loss, E3 tie, E4 win, T1 tie,
    # T2 loss) against the panel's (tie, tie, loss, tie, tie, loss): T1 and T2
    agreement = report.diagnostics.human_pairwise[CROWD].agreement_with_judges[PANEL]
    assert agreement.pairs == 6
    assert agreement.agreement == pytest.approx(2 / 6)

    # the lazy judge judged E1 only, in both orders, as JUDGE did: one pair, a win
    lazy = report.panels["panel with the lazy judge"]
    assert lazy.responses == 1
    assert win_rates.consistent["panel with the lazy judge"]["Synthetic-Echo"].win_rate == 1.0

    # its consistent outcomes are battles of the rankings from verdicts, as JUDGE's
    from_verdicts = report.to_dict()["rankings"]["from_verdicts"]
    assert set(from_verdicts) >= {JUDGE, PANEL, CROWD}

    html = to_html(report)
    assert "(pairwise judges)" in html and "Responses compared with the baseline" in html


def test_per_order_verdicts_of_the_panel_are_the_hand_counted_ones(panel):
    from analysis.report.build import pairwise_verdicts

    verdicts = pairwise_verdicts(SELECTION, {r.pk for pair in panel.values() for r in pair})
    mine = verdicts[verdicts["evaluator"] == PANEL]
    by_response = {response.pk: key for key, (response, _) in panel.items()}
    from judging.models import verdict_outcome

    got = {
        (by_response[r.response_id], r.order): verdict_outcome(r.order, r.winner)
        for r in mine.itertuples()
    }
    assert got == {
        (key, order): outcome
        for key, outcomes in PANEL_ORDERS.items()
        for order, outcome in enumerate(outcomes)
    }
    assert set(mine["evaluator_kind"]) == {"panel"} and set(mine["seed"]) == {0}


def test_a_panel_whose_member_is_not_read_says_so(panel):
    from dataclasses import replace

    report = build_report(replace(SELECTION, evaluators=("gold-human-eval", JUDGE, PANEL)))
    # naming the panel reads its members' verdicts
    assert is_computed(report.panels[PANEL])
    assert report.panels[PANEL].responses == 6
    Evaluator.objects.create(
        name="panel of one absent",
        kind="panel",
        config={"members": [JUDGE, "nobody judged"], "rule": "majority", "pairwise": True},
    )
    report = build_report(SELECTION)
    assert report.panels["panel of one absent"].reason == (
        "panel of one absent: no verdict in this selection from nobody judged"
    )


@pytest.mark.django_db
def test_the_check_keeps_verdicts_and_scores_apart():
    for name in ("battles-a", "battles-b"):
        Evaluator.objects.create(name=name, kind="llm_pairwise")
    for name in ("rubric", "rubric-2"):
        Evaluator.objects.create(name=name, kind="llm_rubric")
    assert checked_panel({"members": ["battles-a", "battles-b"]}) == {
        "members": ["battles-a", "battles-b"],
        "rule": "majority",
        "pairwise": True,
    }
    assert checked_panel({"members": ["rubric", "rubric-2"], "pairwise": False}) == {
        "members": ["rubric", "rubric-2"],
        "rule": "mean",
        "pairwise": False,
    }
    with pytest.raises(ConfigError, match="all score answers or all compare"):
        checked_panel({"members": ["battles-a", "rubric"]})
    with pytest.raises(ConfigError, match="a verdict has no mean"):
        checked_panel({"members": ["battles-a", "battles-b"], "rule": "mean"})
    with pytest.raises(ConfigError, match="pairwise: true"):
        checked_panel({"members": ["battles-a", "battles-b"], "pairwise": False})


def test_pairwise_judges_and_panels_defer_beside_the_judges_of_scores(panel):
    """The six battles lie in one meeting: the report's deferral part holds the
    pairwise judge and the panel, each saying why no threshold can be chosen
    and checked (analysis.report.pairwise_deferral; the thresholds themselves:
    tests/analysis/test_pairwise_deferral.py)."""
    report = build_report(SELECTION)
    for judge in (JUDGE, PANEL):
        assert report.deferral[judge].reason == (
            f"{judge}: labels on 1 meeting(s): choosing a threshold on some meetings and "
            "checking it on others takes 2 or more"
        )

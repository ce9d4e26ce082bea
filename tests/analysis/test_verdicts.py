"""Three-valued verdicts: the alt-test passes, fails or is inconclusive (with
what would decide it), checked against direct computations with scipy; the
power simulation's promise checked by simulating the larger study it
proposes; correlations and rankings whose interval spans the decision; the
degenerate cases (one meeting, tied means, constant scores)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import alt_test, verdicts
from analysis.bootstrap import ClusterBootstrap, clustered_correlation, ranking_agreement

DESCRIBED = {"panel": {"role": "individual raters"}}


def annotations(scores: dict[str, dict[int, float]]) -> pd.DataFrame:
    rows = [
        (item, rater, score) for rater, items in scores.items() for item, score in items.items()
    ]
    frame = pd.DataFrame(rows, columns=["item", "rater", "score"])
    frame["rater"] = frame["rater"].astype("category")
    return frame


def panel(raters: int, items: int, noise: float, seed: int = 0):
    """Raters who score a true quality with noise; the true quality per item."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 11, size=items).astype(float)
    scores = {
        f"r{j}": {
            i: float(np.clip(round(truth[i] + rng.normal(0, noise)), 1, 10)) for i in range(items)
        }
        for j in range(raters)
    }
    return truth, scores


def verdict_of(scores, judge, epsilon=0.2, population="experts"):
    return verdicts.alt_test_verdict(
        annotations(scores),
        pd.Series(judge),
        population=population,
        evaluators=["panel"],
        described=DESCRIBED,
        epsilon=epsilon,
        epsilon_rule="chosen",
        alignment="neg_rmse",
    )


def test_a_judge_close_to_the_humans_passes():
    truth, scores = panel(raters=4, items=60, noise=1.5, seed=1)
    verdict = verdict_of(scores, dict(enumerate(truth)))  # the judge sees the truth
    assert verdict["verdict"] == "passes" and verdict["test"]["passed"]
    assert verdict["decide"] is None and not verdict["trivial"]


def test_a_judge_far_from_the_humans_fails_by_the_reverse_test():
    truth, scores = panel(raters=4, items=80, noise=0.5, seed=2)
    rng = np.random.default_rng(99)  # not the panel's seed: scores unrelated to the truth
    judge = {i: float(rng.integers(1, 11)) for i in range(80)}
    verdict = verdict_of(scores, judge, epsilon=0.1)
    assert verdict["verdict"] == "fails"
    assert verdict["reverse_share"] > 0.5
    # the reverse test per rater is scipy's one-sample t-test, alternative "greater"
    wins = alt_test.win_table(annotations(scores), pd.Series(judge))
    tested = wins.items_per_rater >= 30
    rejected = verdicts.reverse_rejections(wins, tested, 0.1, 0.05)
    p_values = [
        stats.ttest_1samp(
            wins.differences[wins.rater_index == j], 0.1, alternative="greater"
        ).pvalue
        for j in range(len(wins.rater_codes))
    ]
    assert list(rejected) == list(alt_test.benjamini_yekutieli(np.array(p_values), 0.05))


def test_too_few_raters_is_inconclusive_with_how_many_more():
    truth, scores = panel(raters=2, items=48, noise=1.0, seed=3)
    verdict = verdict_of(scores, dict(enumerate(truth + 3)), population="crowd")
    assert verdict["verdict"] == "inconclusive" and verdict["more_raters"] == 1
    assert verdict["decide"] == (
        "needs at least 3 crowd raters on 30+ items each: 1 more rater on the same items"
    )
    assert "provisionally ω" in verdict["reason"]  # the test ran, but cannot decide


def test_raters_with_few_items_are_named_with_the_items_they_lack():
    truth, scores = panel(raters=3, items=40, noise=1.0, seed=4)
    scores["r2"] = {i: s for i, s in scores["r2"].items() if i < 25}
    verdict = verdict_of(scores, dict(enumerate(truth)))
    assert verdict["verdict"] == "inconclusive" and verdict["more_raters"] == 1
    assert "r2 has 25: 5 more" in verdict["decide"] and verdict["more_items"] == 5


def test_no_individual_ratings_is_no_verdict():
    empty = pd.DataFrame({"item": [], "rater": pd.Categorical([]), "score": []})
    verdict = verdicts.alt_test_verdict(
        empty,
        pd.Series({1: 5.0}),
        population="crowd",
        evaluators=["silver"],
        described={"silver": {"role": "a mean of 10 ratings per response, not one rater's"}},
        epsilon=0.1,
        epsilon_rule="rule",
        alignment="neg_rmse",
    )
    assert verdict["verdict"] == "no_data" and "silver is a mean of 10" in verdict["reason"]
    assert verdicts.population_words(verdict).startswith("no verdict against crowd raters")


def test_constant_scores_pass_trivially_and_say_so():
    scores = {f"r{j}": dict.fromkeys(range(40), 7.0) for j in range(3)}
    verdict = verdict_of(scores, dict.fromkeys(range(40), 7.0))
    assert verdict["verdict"] == "passes" and verdict["trivial"]
    assert verdict["reason"].startswith("passes trivially: no variance")
    assert "passes trivially" in verdicts.population_words(verdict)


def reference_decided_share(counts, sizes, epsilon, q, simulations, seed):
    """What the power simulation promises, checked the slow way: simulate each
    rater's outcomes at the proposed size, run scipy's t-tests both ways and
    the Benjamini-Yekutieli procedure, count the studies that reach a verdict."""
    rng = np.random.default_rng(seed)
    shares = counts / counts.sum(axis=1, keepdims=True)
    decided = 0
    for _ in range(simulations):
        less, greater = [], []
        for j, size in enumerate(sizes):
            d = rng.choice([-1.0, 0.0, 1.0], size=int(size), p=shares[j])
            less.append(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
            greater.append(stats.ttest_1samp(d, epsilon, alternative="greater").pvalue)
        less, greater = np.nan_to_num(less, nan=1.0), np.nan_to_num(greater, nan=1.0)
        passes = alt_test.benjamini_yekutieli(less, q).mean() >= 0.5
        fails = alt_test.benjamini_yekutieli(greater, q).mean() > 0.5
        decided += passes or fails
    return decided / simulations


def test_an_inconclusive_test_says_how_many_more_items_decide_it():
    # a judge about as good as the raters, at a margin that leaves it open on 40 items
    truth, scores = panel(raters=3, items=40, noise=1.2, seed=11)
    rng = np.random.default_rng(111)
    judge = {i: float(np.clip(round(truth[i] + rng.normal(0, 1.6)), 1, 10)) for i in range(40)}
    verdict = verdict_of(scores, judge, epsilon=0.2)
    assert verdict["verdict"] == "inconclusive", verdict["reason"]
    assert verdict["more_items"] is not None and verdict["more_items"] > 0
    assert f"about {verdict['more_items']} more items per rater" in verdict["decide"]
    assert verdict["decided_probability"] >= verdicts.POWER_TARGET
    # the promise, checked independently: at that many more items per rater, studies
    # drawn from the observed outcomes reach a verdict about 80% of the time or more
    wins = alt_test.win_table(annotations(scores), pd.Series(judge))
    counts = verdicts.outcome_counts(wins)
    sizes = counts.sum(axis=1) + verdict["more_items"]
    share = reference_decided_share(counts, sizes, 0.2, 0.05, simulations=300, seed=5)
    assert share >= verdicts.POWER_TARGET - 0.08


def test_correlation_words_say_when_the_interval_spans_the_decision():
    words = verdicts.correlation_words(
        {"r": 0.74, "ci95": [0.62, 0.83], "clusters": 8}, "gold-human-eval"
    )
    assert words["verdict"] == "close" and not words["settled"]
    assert "the interval spans 0.7" in words["words"]
    settled = verdicts.correlation_words({"r": 0.82, "ci95": [0.78, 0.86], "clusters": 8}, "g")
    assert settled["settled"] and settled["words"].startswith("tracks g closely")
    weak = verdicts.correlation_words({"r": 0.24, "ci95": [0.18, 0.31], "clusters": 8}, "g")
    assert weak["verdict"] == "weak" and weak["settled"]
    both = verdicts.correlation_words({"r": 0.6, "ci95": [0.4, 0.75], "clusters": 8}, "g")
    assert "spans 0.5 and 0.7" in both["words"]


def test_one_meeting_gives_no_clustered_interval_and_says_why():
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    y = x + rng.normal(size=30)
    boot = ClusterBootstrap(np.zeros(30, dtype=int), 1, resamples=200)
    correlation = clustered_correlation(boot, x, y)
    assert correlation["ci95"] == [None, None]
    assert correlation["ci_note"].startswith("1 meeting: a meeting-clustered interval needs 2")
    assert correlation["r"] == pytest.approx(stats.pearsonr(x, y).statistic)
    words = verdicts.correlation_words(correlation, "gold")
    assert not words["settled"] and "no interval: 1 meeting" in words["words"]


def test_tied_means_name_no_top_system():
    # systems 0 and 1 tie on the reference's scale
    systems = np.repeat([0, 1, 2], 10)
    human = np.concatenate([np.full(10, 8.0), np.full(10, 8.0), np.full(10, 3.0)])
    judge = np.concatenate([np.full(10, 9.0), np.full(10, 7.0), np.full(10, 2.0)])
    meetings = np.tile(np.arange(5), 6)
    boot = ClusterBootstrap(meetings, 5, resamples=100)
    ranking = ranking_agreement(boot, judge, human, systems, ["A", "B", "C"])
    assert ranking["top_same"] is None and ranking["top_same_probability"] is None
    assert ranking["top_note"] == "no top system: the reference's highest means tie"


def test_ranking_words_are_settled_only_when_the_interval_is():
    same = {"kendall_tau": 1.0, "ci95": [1.0, 1.0], "judge_ranking": ["a", "b", "c"]}
    assert verdicts.ranking_words(same, "gold")["settled"]
    open_ = {"kendall_tau": 1.0, "ci95": [0.33, 1.0], "judge_ranking": ["a", "b", "c"]}
    assert "not settled" in verdicts.ranking_words(open_, "gold")["words"]
    other = {"kendall_tau": 0.33, "ci95": [-0.33, 1.0], "judge_ranking": ["a", "b", "c"]}
    assert "includes the same ranking" in verdicts.ranking_words(other, "gold")["words"]
    differs = {"kendall_tau": -1.0, "ci95": [-1.0, -0.33], "judge_ranking": ["a", "b", "c"]}
    result = verdicts.ranking_words(differs, "gold")
    assert result["settled"] and result["verdict"] == "different"


def test_the_rejected_share_of_many_studies_is_the_procedure_row_by_row():
    rng = np.random.default_rng(7)
    p = rng.uniform(0, 0.05, size=(500, 9)) ** rng.uniform(0.5, 2, size=(500, 1))
    p[::7, 3] = np.nan
    expected = [alt_test.benjamini_yekutieli(row, 0.05).mean() for row in p]
    assert verdicts.rejected_share(p, 0.05).tolist() == pytest.approx(expected)


def test_the_answer_names_a_use_the_selection_cannot_answer():
    """A judge compared with experts only says, for the crowd, that the
    selection holds no crowd raters, rather than leaving the use out."""
    truth, scores = panel(raters=4, items=60, noise=1.5, seed=1)
    experts = verdict_of(scores, dict(enumerate(truth)))
    row = {
        "ranking_verdict": {"words": "ranks these 3 systems as gold does"},
        "alt_tests": {"experts": experts},
    }
    clauses, sentence = verdicts.answer("judge-x", row, ["experts"])
    assert clauses["crowd"] == "no verdict against crowd raters: none in the selection"
    assert clauses["experts"].startswith("it can replace an expert")
    assert sentence == (
        "judge-x ranks these 3 systems as gold does; "
        "no verdict against crowd raters: none in the selection; "
        f"{clauses['experts']}."
    )

"""The plan of an adaptive study (analysis.planning.study_plan): its simulated loop
stops where its own confidence sequence says, a tighter goal or a smaller
budget changes the answer the way it must, and `manage.py plan_study` gives
the plan on the paper's data."""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from analysis.planning.study_plan import Budget, Goal, plan, run_system
from analysis.statistics.anytime import active_increments, confidence_sequence, increment_ends
from judging.importing import import_elitr_bench


def pool(n=300, seed=0):
    rng = np.random.default_rng(seed)
    system = np.repeat([0, 1, 2], n // 3)
    human = np.clip(np.round(rng.normal(4 + 2 * system, 2)), 1, 10)
    judge = np.clip(human + rng.normal(0.5, 1.2, n), 1, 10)
    return judge, system, human


def test_a_system_stops_where_its_sequence_first_is_narrow_enough():
    judge, system, human = pool()
    probability = np.full(len(judge), 0.4)
    goal = Goal(width=0.8, min_labels=20, max_draws=2000)

    def sample(item, rng):
        return human[item]

    stop = run_system(
        np.random.default_rng(5), np.flatnonzero(system == 1), judge, probability, sample, goal, 0
    )["sequence"]
    # the same draws again, directly
    rng = np.random.default_rng(5)
    item = rng.choice(np.flatnonzero(system == 1), 2000)
    sent = rng.random(2000) < probability[item]
    z, _ = active_increments(
        judge[item], np.where(sent, human[item], np.nan), sent, probability[item]
    )
    rows = np.flatnonzero(system == 1)
    sequence = confidence_sequence(
        z,
        t_opt=goal.t_opt,
        scale=goal.scale,
        bounds=(1, 10),
        pad=increment_ends(judge[rows], probability[rows], (1, 10)),
    )
    narrow = (sequence.half_width <= 0.8) & (np.cumsum(sent) >= 20)
    first = int(np.argmax(narrow))
    assert stop.stopped and stop.draws == first + 1 and stop.labels == int(sent[: first + 1].sum())
    assert stop.paid == stop.labels  # no dropout: one place per label
    assert stop.upper - stop.lower <= 1.6


def test_a_tighter_goal_costs_more_and_a_small_budget_answers_less_often():
    judge, system, human = pool()
    probability = np.full(len(judge), 0.3)
    budget = Budget(pence=100_000, reward_pence=30)
    loose = plan(
        judge, system, ["a", "b", "c"], human, Goal(width=1.0), budget, probability=probability
    )
    tight = plan(
        judge, system, ["a", "b", "c"], human, Goal(width=0.5), budget, probability=probability
    )
    assert tight.paid_median > 2 * loose.paid_median
    assert loose.answered_within_budget == 1.0
    poor = Budget(pence=int(loose.cost_median_pence), reward_pence=30)
    squeezed = plan(
        judge, system, ["a", "b", "c"], human, Goal(width=1.0), poor, probability=probability
    )
    assert 0.2 < squeezed.answered_within_budget < 0.8  # about half: the budget is the median
    assert loose.paid_p95 >= loose.paid_median
    assert "human-minus-judge differences" in loose.assumptions[0]
    blind = plan(
        judge, system, ["a", "b", "c"], None, Goal(width=1.0), budget, probability=probability
    )
    assert "predicts nothing" in blind.assumptions[0]
    assert "Expected" in loose.summary() and "GBP" in loose.summary()


def test_bad_goals_and_budgets_are_refused():
    with pytest.raises(ValueError, match="half-width"):
        Goal(width=0)
    with pytest.raises(ValueError, match="reward"):
        Budget(pence=100, reward_pence=0)
    judge, system, _ = pool()
    judge[3] = np.nan
    with pytest.raises(ValueError, match="every response"):
        plan(
            judge,
            system,
            ["a", "b", "c"],
            None,
            Goal(width=1),
            Budget(pence=1, reward_pence=1),
            probability=np.full(len(judge), 0.3),
        )


@pytest.mark.django_db
def test_plan_study_on_the_paper_data(elitr_data):
    import_elitr_bench(elitr_data, with_responses=True, languages=("en",))
    selection = [
        "--dataset-version",
        "qa",
        "--split",
        "test2",
        "--mode",
        "st",
        "--systems",
        "GPT-4,LongAlpaca-7B,Vicuna-13B-v1.5",
    ]
    out = StringIO()
    call_command(
        "plan_study",
        "--judge",
        "gpt-4-eval",
        "--uncertainty-judge",
        "prometheus-eval",
        "--width",
        "0.6",
        "--budget-gbp",
        "150",
        "--replays",
        "60",
        "--json",
        *selection,
        stdout=out,
    )
    result = json.loads(out.getvalue())
    assert result["systems"] == ["GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5"]
    assert "390 human-minus-judge differences" in result["assumptions"][0]
    assert 100 < result["places_median"] < 1500
    assert result["places_p95"] >= result["places_median"]
    assert 0 <= result["answered_within_budget"] <= 1
    # a place at GBP 9/hour for 2 minutes: 30 pence, 40 with the fee
    assert result["place_pence"] == pytest.approx(40)
    with pytest.raises(CommandError, match="scores no response"):
        call_command("plan_study", "--judge", "nobody", "--width", "1", "--budget-gbp", "1")
    with pytest.raises(CommandError, match="amounts such as"):
        call_command("plan_study", "--judge", "gpt-4-eval", "--width", "1", "--budget-gbp", "lots")


def test_the_fixed_designs_interval_written_out():
    """ppi: lambda = cov(Y, f) / var(f) in [0, 1], theta = lambda * the pool's
    judge mean + mean(Y - lambda f), its variance (ddof 1) with two
    pseudo-labels at each end of the scale (at lambda times the labelled
    judge mean), Student's t on the first wave's labels - 1; uniform: lambda 0."""
    from scipy import stats

    from analysis.planning.study_plan import fixed_estimate

    rng = np.random.default_rng(3)
    judge = rng.uniform(1, 10, 80)
    human = np.clip(np.round(judge + rng.normal(0.5, 1.5, 80)), 1, 10)
    for design, first in (("ppi", None), ("ppi", 30), ("uniform", None)):
        mean, low, high, lam = fixed_estimate(design, human, judge, 5.2, 0.05, (1, 10), first)
        expected_lam = (
            min(1.0, max(0.0, np.cov(human, judge)[0, 1] / np.var(judge, ddof=1)))
            if design == "ppi"
            else 0.0
        )
        residual = human - expected_lam * judge
        ends = [v - expected_lam * judge.mean() for v in (1.0, 10.0)]
        se = np.sqrt(np.var(np.r_[residual, ends, ends], ddof=1) / 80)
        q = stats.t.ppf(0.975, (first or 80) - 1)
        centre = expected_lam * 5.2 + residual.mean()
        assert lam == pytest.approx(expected_lam, abs=1e-12)
        assert mean == pytest.approx(centre, abs=1e-12)
        assert [low, high] == pytest.approx([centre - q * se, centre + q * se], abs=1e-12)


def test_a_top_up_sized_on_the_first_wave_reaches_the_width():
    """A first wave of 10 falls short; the top-up is sized with the degrees of
    freedom the final interval keeps, so the study reaches +-0.6 (a sizing on
    n - 1 degrees of freedom left it at about +-0.7)."""
    from analysis.planning.study_plan import run_fixed

    judge, system, human = pool(900)
    rows = np.flatnonzero(system == 1)
    reached = []
    for seed in range(40):
        stop = run_fixed(
            np.random.default_rng(seed),
            "uniform",
            rows,
            judge,
            lambda item, rng: human[item],
            10,
            Goal(width=0.6),
            0.0,
        )
        reached.append(stop.stopped)
    assert np.mean(reached) >= 0.9


def test_the_plan_chooses_the_judge_where_it_helps_and_says_why():
    """An informative judge: the fixed design with the judge pays fewer places
    than the uniform one and is chosen; a judge giving one score everywhere
    saves nothing, and the plan keeps the simpler uniform design."""
    judge, system, human = pool()
    budget = Budget(pence=10**7, reward_pence=30)
    informed = plan(
        judge,
        system,
        ["a", "b", "c"],
        human,
        Goal(width=0.6),
        budget,
        probability=np.full(len(judge), 0.3),
        replays=60,
    )
    assert informed.design == "ppi"
    assert informed.designs["ppi"].paid_median < 0.8 * informed.designs["uniform"].paid_median
    assert informed.designs["ppi"].coverage >= 0.94
    assert "the fewest paid places among the designs that hold" in informed.reason
    assert "a fixed uniform design on humans alone" in informed.reason
    constant = plan(
        np.full(len(judge), 7.0),
        system,
        ["a", "b", "c"],
        human,
        Goal(width=0.6),
        budget,
        probability=np.full(len(judge), 0.3),
        replays=60,
        designs=("uniform", "ppi"),
    )
    assert constant.design == "uniform"
    assert constant.as_dict()["design"] == "uniform"

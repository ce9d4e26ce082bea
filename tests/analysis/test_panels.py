"""Judge panels: the rules equal plain references (numpy, scipy.stats.mode, a
bounded least squares by scipy.optimize.nnls on the centred problem), the
learned panel never scores a labelled response with weights fitted on its
meeting, and a panel in the report on the paper's data is analysed like any
judge (alt-test, correlations, rankings) with its weights and cost shown."""

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as scipy_stats

from analysis.report.build import build_report
from analysis.report.render import to_html
from analysis.report.report_types import AgreementReport, is_computed
from analysis.report.selection import Selection
from analysis.statistics import panels
from judging.models import Evaluator
from tests.analysis.test_trust import paper, paper_once  # noqa: F401 (fixtures)

PAPER_SYSTEMS = ("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5")
TEST2 = Selection(dataset_version="qa", split="test2", mode="st", systems=PAPER_SYSTEMS)


def scores_table(rng, n=4000, k=4):
    """Scores as judges give them: whole points mostly, some means of seeds."""
    table = rng.integers(1, 11, size=(n, k)).astype(float)
    halves = rng.random((n, k)) < 0.2
    table[halves] += 0.5 * rng.choice([-1, 1], size=halves.sum())
    return np.clip(table, 1, 10)


def test_mean_and_median_are_numpys():
    table = scores_table(np.random.default_rng(1))
    np.testing.assert_array_equal(panels.combine(table, "mean"), table.mean(axis=1))
    np.testing.assert_array_equal(panels.combine(table, "median"), np.median(table, axis=1))


@pytest.mark.parametrize("members", [2, 3, 4, 5])
def test_majority_is_the_mode_of_rounded_scores_or_the_median_on_a_tie(members):
    table = scores_table(np.random.default_rng(members), k=members)
    got = panels.combine(table, "majority")
    votes = np.rint(table)
    for row, votes_row, value in zip(table, votes, got, strict=True):
        values, counts = np.unique(votes_row, return_counts=True)
        if (counts == counts.max()).sum() == 1:
            assert value == scipy_stats.mode(votes_row, keepdims=False).mode
        else:
            assert value == np.median(row)


def test_unknown_rule_and_empty_panels_are_refused():
    with pytest.raises(panels.PanelError, match="unknown rule"):
        panels.combine(np.ones((3, 2)), "max")
    with pytest.raises(panels.PanelError, match="responses by members"):
        panels.combine(np.ones((3, 0)), "mean")


def reference_weights(members, labels):
    """Non-negative weights with a free intercept: on centred data the
    intercept drops out, so scipy's NNLS solves for the weights alone."""
    x = members - members.mean(axis=0)
    y = labels - labels.mean()
    weights, _ = optimize.nnls(x, y)
    return labels.mean() - members.mean(axis=0) @ weights, weights


@pytest.mark.parametrize("seed", range(6))
def test_learned_weights_are_nnls_with_a_free_intercept(seed):
    rng = np.random.default_rng(seed)
    truth = rng.normal(5, 2, 3000)
    members = np.column_stack(
        [
            truth + rng.normal(0, 1, 3000),  # a good judge
            0.5 * truth + rng.normal(0, 2, 3000),  # a weak one
            -0.3 * truth + rng.normal(0, 1, 3000),  # one that gets it backwards
            rng.normal(5, 1, 3000),  # noise
        ]
    )
    got = panels.fit_weights(members, truth)
    intercept, weights = reference_weights(members, truth)
    np.testing.assert_allclose(got.weights, weights, atol=1e-8)
    assert got.intercept == pytest.approx(intercept, abs=1e-8)
    assert got.weights[2] == 0 and got.weights[0] > 0.5  # never subtracts a judge


def test_a_learned_panel_scores_each_labelled_response_without_its_meeting():
    rng = np.random.default_rng(7)
    meetings = np.repeat(np.arange(12), 30)
    truth = rng.normal(5, 2, len(meetings))
    members = np.column_stack([truth + rng.normal(0, 1, len(truth)) for _ in range(3)])
    labels = truth.copy()
    labels[rng.random(len(truth)) < 0.4] = np.nan  # 40% unlabelled
    fitted = panels.learned(members, labels, meetings)
    assert fitted.folds == 5
    labelled = ~np.isnan(labels)
    folds = panels.meeting_folds(meetings[labelled], 5)
    x, y = members[labelled], labels[labelled]
    for fold in range(5):
        held_out = panels.fit_weights(x[folds != fold], y[folds != fold])
        np.testing.assert_allclose(
            fitted.scores[labelled][folds == fold],
            np.clip(held_out.intercept + x[folds == fold] @ held_out.weights, 1, 10),
        )
        # a fold holds whole meetings
        assert not set(meetings[labelled][folds == fold]) & set(meetings[labelled][folds != fold])
    assert np.isfinite(fitted.scores).all() and (fitted.scores >= 1).all()


def test_a_learned_panel_needs_labels_on_two_meetings():
    members = np.ones((10, 2))
    with pytest.raises(panels.PanelError, match="at least 2"):
        panels.learned(members, np.full(10, 5.0), np.zeros(10))


def make_panel(name, rule, members=("gpt-4-eval", "prometheus-eval")):
    return Evaluator.objects.create(
        name=name, kind="panel", config={"members": list(members), "rule": rule}
    )


@pytest.mark.django_db
@pytest.mark.usefixtures("paper")
class TestOnThePapersData:
    def test_a_mean_panel_is_a_judge_with_the_members_mean(self):
        make_panel("panel-mean", "mean")
        report = build_report(TEST2)
        assert "panel-mean" in report.scope.judges
        account = report.panels["panel-mean"]
        assert account.rule == "mean" and account.weights is None
        # its scores are the members' mean on every response both scored
        from analysis.report.scope import resolve

        scope = resolve(TEST2)
        table = scope.table
        per = table.groupby(["response_id", "evaluator"], observed=True)["score"].mean().unstack()
        both = per[["gpt-4-eval", "prometheus-eval"]].dropna()
        np.testing.assert_allclose(
            per.loc[both.index, "panel-mean"], both.mean(axis=1), rtol=0, atol=1e-12
        )
        assert account.responses == len(both)
        # analysed like any judge
        assert is_computed(report.trust)
        assert "panel-mean" in report.correlations.pearson["gold-human-eval"]
        assert "panel-mean" in report.rankings.from_scores
        # imported scores record no cost
        assert account.cost_per_response is None
        assert AgreementReport.from_json(report.to_json()) == report

    def test_a_learned_panel_shows_its_weights_and_is_cross_fitted(self):
        make_panel("panel-learned", "learned")
        report = build_report(TEST2)
        account = report.panels["panel-learned"]
        assert account.weights.learned_from == "gold-human-eval"
        assert account.weights.folds == 5
        assert set(account.weights.members) == {"gpt-4-eval", "prometheus-eval"}
        assert all(w >= 0 for w in account.weights.members.values())
        html = to_html(report)
        section = html[html.index('id="panel-panel-learned"') :]
        assert "cross-fitted over 5 folds of whole meetings" in section
        for member, weight in account.weights.members.items():
            assert f"<td>{member}</td><td>{weight:.2f}</td>" in section

    def test_a_panel_naming_an_absent_member_says_so(self):
        make_panel("panel-missing", "median", members=("gpt-4-eval", "no-such-judge"))
        report = build_report(TEST2)
        assert not is_computed(report.panels["panel-missing"])
        assert "no-such-judge" in report.panels["panel-missing"].reason
        assert "panel-missing" not in report.scope.judges

    def test_the_planner_says_how_many_fewer_gold_ratings_each_judge_needs(self):
        """The savings a judge brings (PPI++), in words beside its count: a
        panel's, and its members', side by side."""
        make_panel("panel-mean", "mean")
        report = build_report(TEST2)
        html = to_html(report)
        seen = 0
        for budget in report.planner.systems.values():
            for judge, plan in budget.judges.items():
                if plan.ppi is None:
                    continue
                fewer = f"{1 - plan.ppi / budget.gold_only:.0%} fewer"
                assert f"{judge}: {plan.ppi} ({plan.more} more; {fewer})" in html
                seen += 1
        assert seen >= 3

    def test_naming_only_the_panel_loads_its_members(self):
        make_panel("panel-majority", "majority")
        selection = Selection(
            dataset_version="qa",
            split="test2",
            mode="st",
            systems=PAPER_SYSTEMS,
            judges=("panel-majority",),
        )
        report = build_report(selection)
        assert report.scope.judges == ["panel-majority"]
        assert is_computed(report.panels["panel-majority"])
        assert report.panels["panel-majority"].responses > 0


@pytest.mark.django_db
def test_the_api_checks_a_panel_and_stores_nothing_it_refuses(researcher_api):
    for name in ("judge-a", "judge-b"):
        Evaluator.objects.create(name=name, kind="llm_rubric", project=None)
    Evaluator.objects.create(name="experts", kind="gold_human", project=None)
    Evaluator.objects.create(name="battles", kind="llm_pairwise", project=None)
    refused = {
        "one member": {"members": ["judge-a"], "rule": "mean"},
        "a person": {"members": ["judge-a", "experts"], "rule": "mean"},
        "pairwise": {"members": ["judge-a", "battles"], "rule": "mean"},
        "unknown": {"members": ["judge-a", "nobody"], "rule": "mean"},
        "rule": {"members": ["judge-a", "judge-b"], "rule": "max"},
        "shape": ["judge-a", "judge-b"],
        "extra": {"members": ["judge-a", "judge-b"], "weights": [1, 2]},
    }
    for label, config in refused.items():
        answer = researcher_api.post(
            "/api/evaluators/",
            {"name": f"panel {label}", "kind": "panel", "config": config},
            format="json",
        )
        assert answer.status_code == 400, label
        assert "config" in answer.json(), label
    assert not Evaluator.objects.filter(kind="panel").exists()
    made = researcher_api.post(
        "/api/evaluators/",
        {"name": "panel", "kind": "panel", "config": {"members": ["judge-a", "judge-b"]}},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert Evaluator.objects.get(name="panel").config == {
        "members": ["judge-a", "judge-b"],
        "rule": "mean",
        "pairwise": False,
    }

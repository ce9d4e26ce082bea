"""Self-preference (analysis.statistics.self_preference): the difference of
mean biases and its jackknife equal plain loops; model names map to the
families a reader expects; on the paper's data gpt-4-eval's preference for
GPT-4 is what a loop over the responses finds, and a judge with no system of
its family says so."""

import numpy as np
import pandas as pd
import pytest

from analysis.report.build import build_report
from analysis.report.render import to_html
from analysis.report.report_types import AgreementReport, is_computed
from analysis.report.scope import resolve
from analysis.statistics.bootstrap import ClusterBootstrap, cluster_sums, jackknife_se
from analysis.statistics.self_preference import difference_of_biases, family, self_preference
from tests.analysis.test_panels import TEST2
from tests.analysis.test_trust import paper, paper_once  # noqa: F401 (fixtures)


@pytest.mark.parametrize(
    "model,expected",
    [
        ("gpt-4-0613", "gpt"),
        ("GPT-4", "gpt"),
        ("gpt-4o-mini", "gpt"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama"),
        ("Vicuna-13B-v1.5", "vicuna"),
        ("LongAlpaca-7B", "longalpaca"),
        ("prometheus-eval", "prometheus"),
        ("Qwen2.5-7B", "qwen"),
    ],
)
def test_a_models_family_is_the_letters_its_name_starts_with(model, expected):
    assert family(model) == expected


def test_the_difference_and_its_jackknife_are_plain_loops():
    rng = np.random.default_rng(4)
    meetings = np.repeat(np.arange(9), 30)
    own = rng.random(len(meetings)) < 0.3
    bias = rng.normal(0.5 * own, 1.5)
    bias[rng.random(len(bias)) < 0.1] = np.nan
    boot = ClusterBootstrap(meetings, 9, 200, seed=1)
    found = self_preference(boot, bias, own)
    frame = pd.DataFrame({"bias": bias, "own": own, "meeting": meetings}).dropna()
    expected = frame[frame.own].bias.mean() - frame[~frame.own].bias.mean()
    assert found["difference"] == pytest.approx(expected, abs=1e-12)
    assert found["bias_own"] == pytest.approx(frame[frame.own].bias.mean(), abs=1e-12)
    # the interval's standard error: leave each meeting out in turn
    leave_out = []
    for m in range(9):
        rest = frame[frame.meeting != m]
        leave_out.append(rest[rest.own].bias.mean() - rest[~rest.own].bias.mean())
    known = np.isfinite(bias)
    columns = np.column_stack(
        [known & own, np.where(known & own, bias, 0), known & ~own, np.where(known & ~own, bias, 0)]
    ).astype(float)
    sums = cluster_sums(meetings, columns, 9)
    replicates = difference_of_biases(sums.sum(axis=0)[None, :] - sums)
    np.testing.assert_allclose(replicates, leave_out, atol=1e-12)
    se = jackknife_se(replicates, np.ones(9))
    loop_se = np.sqrt(8 / 9 * np.sum((np.array(leave_out) - np.mean(leave_out)) ** 2))
    assert se == pytest.approx(loop_se, rel=1e-12)
    low, high = found["ci95"]
    assert low < expected < high and (high - low) / 2 >= 2.306 * loop_se - 1e-9  # t(8)


def test_no_interval_below_six_meetings_and_an_empty_side_says_so():
    meetings = np.repeat(np.arange(4), 10)
    boot = ClusterBootstrap(meetings, 4, 50, seed=1)
    found = self_preference(boot, np.ones(40), np.arange(40) % 2 == 0)
    assert found["ci95"] == [None, None] and "not enough meetings" in found["ci_note"]
    empty = self_preference(boot, np.ones(40), np.zeros(40, bool))
    assert empty["computable"] is False and "own family" in empty["reason"]


@pytest.mark.django_db
@pytest.mark.usefixtures("paper")
class TestOnThePapersData:
    def test_gpt4s_bias_toward_gpt4(self):
        report = build_report(TEST2)
        assert AgreementReport.from_json(report.to_json()) == report
        part = report.self_preference["gpt-4-eval"]
        assert is_computed(part)
        assert part.families == ["gpt"] and part.own_systems == ["GPT-4"]
        assert part.other_systems == ["LongAlpaca-7B", "Vicuna-13B-v1.5"]
        table = resolve(TEST2).table
        scores = table.groupby(["response_id", "evaluator"], observed=True)["score"].mean()
        scores = scores.unstack()
        system = table.drop_duplicates("response_id").set_index("response_id")["system"]
        bias = (scores["gpt-4-eval"] - scores["gold-human-eval"]).dropna()
        own = system.reindex(bias.index).astype(str) == "GPT-4"
        assert part.difference == pytest.approx(bias[own].mean() - bias[~own].mean(), abs=1e-12)
        assert part.ci95[0] < part.difference < part.ci95[1]
        prometheus = report.self_preference["prometheus-eval"]
        assert "no system of its family in the selection" in prometheus.reason
        html = to_html(report)
        assert 'id="self-preference"' in html and "gpt: GPT-4" in html

    def test_reliability_by_answer_and_input_length_on_the_papers_data(self):
        report = build_report(TEST2)
        reliability = report.diagnostics.reliability["gpt-4-eval"]
        assert [key.split()[0] for key in reliability.input_length] == [
            "short",
            "middle",
            "long",
        ]
        assert sum(c.n for c in reliability.input_length.values()) == 390
        assert sum(c.n for c in reliability.answer_length.values()) == 390
        assert "answer length (thirds)" in to_html(report)

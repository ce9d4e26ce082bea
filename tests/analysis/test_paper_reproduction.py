"""The report on the imported paper data reproduces the ELITR-Bench paper's
numbers (seeds/000: Table 4, Fig. 2b, Table 2 dev single-turn, Table 10,
Section 6.2's three GPT-4 levels). Tables 2 (test), 8 and 9 average three
seeded test runs; the release holds one run per setting, so they cannot be
reproduced from it.

One known difference: the released generated-responses files give
Vicuna-13B-v1.5 a GPT-4-eval total of 869 on test2 and 834 on dev
(6.6846 and 5.9149), where the paper prints 6.69 and 5.92, i.e. one point more
on one response in each split (870/130 = 6.692, 835/141 = 5.922). Every other
printed number matches; these two are checked against the released files and
their distance to the print is bounded by that one point."""

import pytest

from analysis.report.build import build_report
from analysis.report.selection import Selection
from judging.importing import import_elitr_bench
from tests.conftest import rolled_back_once

pytestmark = pytest.mark.django_db

PAPER_SYSTEMS = ("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5")
TABLE_4 = {  # system: gpt-4, prometheus, gold, silver
    "GPT-4": (8.33, 5.68, 7.93, 7.21),
    "Vicuna-13B-v1.5": (6.69, 4.80, 6.19, 5.80),
    "LongAlpaca-7B": (5.57, 4.46, 4.55, 4.72),
}
EVALUATORS = ("gpt-4-eval", "prometheus-eval", "gold-human-eval", "silver-human-eval")
TABLE_2_DEV_ST = {
    "GPT-3.5": 7.04,
    "GPT-4": 8.21,
    "LongAlpaca-7B": 5.89,
    "LongAlpaca-13B": 6.17,
    "LongChat-7B-v1.5": 6.60,
    "Vicuna-7B-v1.5": 5.42,
    "Vicuna-13B-v1.5": 5.92,
    "LongAlign-7B": 6.11,
    "LongAlign-13B": 6.27,
}
TABLE_10_P = {
    "GPT-3.5": 0.466,
    "GPT-4": 0.372,
    "LongAlpaca-7B": 0.713,
    "LongAlpaca-13B": 0.265,
    "LongChat-7B-v1.5": 0.032,
    "Vicuna-7B-v1.5": 0.046,
    "Vicuna-13B-v1.5": 0.469,
    "LongAlign-7B": 0.409,
    "LongAlign-13B": 0.413,
}
RELEASE_DIFFERENCE = {
    ("Vicuna-13B-v1.5", "test2"): 869 / 130,
    ("Vicuna-13B-v1.5", "dev"): 834 / 141,
}


@pytest.fixture(scope="module")
def paper_once(django_db_setup, django_db_blocker, elitr_data):
    """The archives as published, imported once for the module (every test
    only reads them; 5-7 s an import), in a transaction rolled back at its end."""
    with rolled_back_once(django_db_blocker):
        import_elitr_bench(elitr_data, with_responses=True, languages=("en",))
        yield


@pytest.fixture
def paper(paper_once, db):
    """The paper's data, in this test's own transaction."""


def assert_printed(value: float, printed: float, system: str, split: str) -> None:
    if (system, split) in RELEASE_DIFFERENCE:
        assert value == pytest.approx(RELEASE_DIFFERENCE[(system, split)])
        assert abs(value - printed) < 0.011
    else:
        assert round(value, 2) == printed, (system, split, value, printed)


def test_table_4_and_figure_2b(paper):
    report = build_report(
        Selection(dataset_version="qa", split="test2", mode="st", systems=PAPER_SYSTEMS)
    )
    assert report.counts.responses == 390
    for system, printed in TABLE_4.items():
        for evaluator, value in zip(EVALUATORS, printed, strict=True):
            computed = report.mean_scores[system][evaluator]
            if evaluator == "gpt-4-eval":
                assert_printed(computed, value, system, "test2")
            else:
                assert round(computed, 2) == value, (system, evaluator, computed)
    pearson = report.correlations.pearson
    # Section 6.2: 0.82 GPT-4/Gold, 0.78 GPT-4/Silver, 0.89 Gold/Silver,
    # Prometheus "between 0.2 and 0.3" with all the others.
    assert round(pearson["gpt-4-eval"]["gold-human-eval"], 2) == 0.82
    assert round(pearson["gpt-4-eval"]["silver-human-eval"], 2) == 0.78
    assert round(pearson["gold-human-eval"]["silver-human-eval"], 2) == 0.89
    for other in ("gpt-4-eval", "gold-human-eval", "silver-human-eval"):
        assert 0.2 <= pearson["prometheus-eval"][other] <= 0.3
    assert pearson["gpt-4-eval"]["gold-human-eval"] == pearson["gold-human-eval"]["gpt-4-eval"]
    # Fig. 2a and Section 6.2: GPT-4 separates three levels, gold [1,2], [3,5], [6,10].
    levels = report.gold_bins.levels["gpt-4-eval"]
    assert levels.gold_ranges == [[1, 2], [3, 5], [6, 10]]
    assert report.gold_bins.gold == "gold-human-eval"
    assert sum(b.n for b in report.gold_bins.bins.values()) == 390


def test_table_2_dev_single_turn_and_tables_9_10(paper):
    dev = build_report(
        Selection(dataset_version="qa", split="dev", mode="st", evaluators=("gpt-4-eval",))
    )
    for system, printed in TABLE_2_DEV_ST.items():
        assert_printed(dev.mean_scores[system]["gpt-4-eval"], printed, system, "dev")
    assert dev.settings["gpt-4-eval"]["GPT-4"] == {"st/qa/dev": pytest.approx(8.2127, abs=1e-4)}

    test2 = build_report(
        Selection(dataset_version="qa", split="test2", mode="st", evaluators=("gpt-4-eval",))
    )
    welch = test2.middle_position_welch["gpt-4-eval"]
    for system, p in TABLE_10_P.items():
        assert round(welch[system].p, 3) == p, (system, welch[system].p)
        assert welch[system].n_middle == 34 and welch[system].n_other == 96
    # Table 9 averages three test seeds, of which the release holds one: only
    # its subset sizes can be checked here (the means are checked against pandas
    # in test_stats.py).
    types = test2.breakdown.question_type["gpt-4-eval"]
    positions = test2.breakdown.answer_position["gpt-4-eval"]
    for system in TABLE_10_P:
        assert {k: v.n for k, v in types[system].items()} == {
            "who": 45,
            "what": 57,
            "when": 20,
            "howmany": 8,
        }
        assert {k: v.n for k, v in positions[system].items()} == {
            "B": 43,
            "M": 34,
            "E": 22,
            "S": 31,
        }


def test_differentiating_questions_fig_1_settings(paper):
    report = build_report(Selection(evaluators=("gpt-4-eval",)))
    gpt4 = report.qa_conv_differentiating["gpt-4-eval"]["GPT-4"]
    assert set(gpt4) == {"st/qa", "mt/qa", "mt/conv"}
    assert gpt4["mt/conv"].splits["dev"].n == 16
    assert gpt4["mt/conv"].splits["test2"].n == 17
    means = [gpt4["mt/conv"].splits[s].mean for s in ("dev", "test2")]
    assert gpt4["mt/conv"].mean_of_splits == pytest.approx(sum(means) / 2)
    # GPT-3.5 answered in single-turn mode only (16K context)
    assert set(report.qa_conv_differentiating["gpt-4-eval"]["GPT-3.5"]) == {"st/qa"}

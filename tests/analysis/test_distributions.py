"""Score distributions per evaluator: responses per 1-10 bin, continuous scores
(crowd means, metrics) binned as the gold bins are, in the report and its JSON."""

import json

import numpy as np
import pandas as pd
import pytest

from analysis.report.build import build_report
from analysis.report.report_types import NOT_IN_THIS_REPORT, AgreementReport, NotComputable
from analysis.report.selection import Selection
from analysis.statistics.distributions import BINNING, score_bin, score_distributions


def test_scores_are_binned_to_the_nearest_level_within_the_scale():
    scores = np.array([1, 1.2, 1.49, 1.5, 2.5, 3.5, 5.0, 9.49, 9.5, 10, 0.7, 10.3])
    assert score_bin(scores).tolist() == [1, 1, 1, 2, 2, 4, 5, 9, 10, 10, 1, 10]
    # an integer score is its own bin
    assert score_bin(np.arange(1, 11)).tolist() == list(range(1, 11))


def frame(rows):
    return pd.DataFrame(rows, columns=["response_id", "evaluator", "score"])


def test_counts_per_evaluator_every_bin_listed():
    rs = frame(
        [(1, "judge", 9), (2, "judge", 9), (3, "judge", 2)]
        + [(1, "crowd", 8.6), (2, "crowd", 8.5), (3, "crowd", 1.1)]
        + [(1, "rouge", 1.0), (2, "rouge", 1.9), (3, "rouge", np.nan)]
    )
    parts = score_distributions(rs)
    judge, crowd, rouge = (parts["evaluators"][n] for n in ("judge", "crowd", "rouge"))
    assert judge == {
        "n": 3,
        "continuous": False,
        "distinct": 2,
        "counts": {str(k): {2: 1, 9: 2}.get(k, 0) for k in range(1, 11)},
    }
    assert crowd["continuous"] and crowd["distinct"] == 3
    assert crowd["counts"]["9"] == 1 and crowd["counts"]["8"] == 1 and crowd["counts"]["1"] == 1
    assert rouge["n"] == 2 and sum(rouge["counts"].values()) == 2  # no score, no count
    assert list(parts["evaluators"]) == ["crowd", "judge", "rouge"]
    assert parts["binning"] == BINNING
    assert score_distributions(frame([])) == {
        "computable": False,
        "reason": "empty selection: no judgment matches it",
    }


@pytest.mark.django_db
def test_in_the_report_and_its_json(two_meetings):
    report = build_report(Selection(split="test2"))
    parts = report.score_distributions
    gold = parts.evaluators["gold-human-eval"]
    # the gold evaluator's counts are the sizes of the gold bins
    assert gold.counts == {level: b.n for level, b in report.gold_bins.bins.items()}
    assert gold.n == report.counts.responses and not gold.continuous
    assert set(parts.evaluators) == set(report.evaluators)
    data = json.loads(report.to_json())
    # after the parts every report has had (test_report_types has the whole order)
    names = list(data)
    assert names[names.index("score_distributions") + 1] == "rankings"
    assert data["score_distributions"]["evaluators"]["gpt-4-eval"]["counts"] == dict(
        parts.evaluators["gpt-4-eval"].counts
    )
    empty = build_report(Selection(split="test2", mode="mt"))
    assert empty.score_distributions == NotComputable.because(
        "empty selection: no judgment matches it"
    )


@pytest.mark.django_db
def test_a_report_stored_before_the_part_reads_and_writes_back_the_same(two_meetings):
    data = build_report(Selection(split="test2")).to_dict()
    del data["score_distributions"]
    text = json.dumps(data, indent=2, allow_nan=False)
    stored = AgreementReport.from_json(text)
    assert stored.score_distributions == NOT_IN_THIS_REPORT
    assert stored.to_json() == text

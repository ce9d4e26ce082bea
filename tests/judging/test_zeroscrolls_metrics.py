"""ZeroSCROLLS' metrics equal its official code: per item on 3,000 generated
cases each (Unicode, empty texts, several references, percentages with signs
and spaces, permutations with missing, extra and repeated ids), task scores
on small lists per task, and the cases where the official code raises.
The expected values were computed by running the official code
(tests/data/zeroscrolls/README.md says how); none of it is in Concord."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judging.evaluators import metric_class
from judging.metrics import zeroscrolls

DATA = Path(__file__).resolve().parent.parent / "data" / "zeroscrolls"


def cases(name: str) -> list[dict]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize(
    ("file", "metric"),
    [
        ("f1_cases.jsonl", "zeroscrolls.f1"),
        ("exp_similarity_cases.jsonl", "zeroscrolls.exp_similarity"),
        ("concordance_index_cases.jsonl", "zeroscrolls.concordance_index"),
        ("mc_accuracy_cases.jsonl", "zeroscrolls.accuracy"),
        ("exact_match_cases.jsonl", "scrolls.exact_match"),
    ],
)
def test_every_case_equals_the_official_code(file, metric):
    plugin = metric_class(metric)()
    found = cases(file)
    assert len(found) >= 3000
    wrong = []
    for case in found:
        value = plugin.compute(case["prediction"], case["references"])
        if abs(value - case["score"]) > 1e-12:
            wrong.append((case["prediction"], case["references"], case["score"], value))
    assert not wrong, f"{len(wrong)} of {len(found)} differ, e.g. {wrong[:3]}"


def test_rouge_parts_equal_the_official_code_per_type():
    found = cases("rouge_cases.jsonl")
    assert len(found) >= 3000
    wrong, largest = [], 0.0
    for case in found:
        parts = zeroscrolls.rouge_parts(case["prediction"], case["references"])
        for name in zeroscrolls.ROUGE_TYPES:
            difference = abs(100 * parts[name] - case["score"][name])
            largest = max(largest, difference)
            if difference > 1e-9:
                wrong.append((case["prediction"], case["references"], name))
    assert not wrong, f"{len(wrong)} differ, e.g. {wrong[:3]}"
    assert largest < 1e-9


TASK_METRICS = {
    "gov_report": "zeroscrolls.rouge",
    "summ_screen_fd": "zeroscrolls.rouge",
    "qmsum": "zeroscrolls.rouge",
    "squality": "zeroscrolls.rouge",
    "qasper": "zeroscrolls.f1",
    "narrative_qa": "zeroscrolls.f1",
    "musique": "zeroscrolls.f1",
    "quality": "zeroscrolls.accuracy",
    "space_digest": "zeroscrolls.exp_similarity",
    "book_sum_sort": "zeroscrolls.concordance_index",
}


def test_task_scores_are_aggregated_as_the_official_code_does():
    data = json.loads((DATA / "task_scores.json").read_text(encoding="utf-8"))
    assert set(data["tasks"]) == set(TASK_METRICS)
    checked = 0
    for task, lists in data["tasks"].items():
        plugin = metric_class(TASK_METRICS[task])()
        for case in lists:
            items = [
                plugin.item(p, r)
                for p, r in zip(case["predictions"], case["references"], strict=True)
            ]
            score = plugin.task_score([v for v, _ in items], [parts for _, parts in items])
            assert score == case["task_score"], (task, case["predictions"])
            checked += 1
            if "NOT_OFFICIAL_mean_of_per_item_geometric_means" in case:
                # the mean of per-item geometric means is not the task score
                per_item = round(100 * sum(v for v, _ in items) / len(items), 4)
                assert per_item == pytest.approx(
                    case["NOT_OFFICIAL_mean_of_per_item_geometric_means"], abs=1e-4
                )
    assert checked == 30


def test_where_the_official_code_raises_the_item_is_refused_with_why():
    names = {
        "exp_similarity": "zeroscrolls.exp_similarity",
        "concordance_index": "zeroscrolls.concordance_index",
        "accuracy": "zeroscrolls.accuracy",
    }
    found = cases("error_cases.jsonl")
    assert len(found) == 15
    for case in found:
        plugin = metric_class(names[case["metric"]])()
        if case["error"] is None:
            assert plugin.compute(case["prediction"], case["references"]) == case["score"]
        else:
            with pytest.raises(ValueError):
                plugin.compute(case["prediction"], case["references"])

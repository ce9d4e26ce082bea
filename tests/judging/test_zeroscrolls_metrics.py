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


@pytest.mark.parametrize(
    ("file", "metric"),
    [
        ("f1_cases.jsonl", "zeroscrolls.f1"),
        ("rouge_cases.jsonl", "zeroscrolls.rouge"),
        ("exp_similarity_cases.jsonl", "zeroscrolls.exp_similarity"),
        ("concordance_index_cases.jsonl", "zeroscrolls.concordance_index"),
        ("mc_accuracy_cases.jsonl", "zeroscrolls.accuracy"),
    ],
)
def test_the_score_command_equals_the_official_code_without_a_database(tmp_path, file, metric):
    """`manage.py score` writes each line back with its score: the official
    per-item value (ROUGE: its parts) on every case; no database is opened
    (the test has no database access)."""
    from django.core.management import call_command

    found = cases(file)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(
        "".join(
            json.dumps({"prediction": c["prediction"], "references": c["references"], "n": n})
            + "\n"
            for n, c in enumerate(found)
        ),
        encoding="utf-8",
    )
    scored = tmp_path / "scored.jsonl"
    call_command(
        "score", "--metric", metric, "--predictions", str(predictions), "--output", str(scored)
    )
    lines = [json.loads(line) for line in scored.read_text(encoding="utf-8").splitlines()]
    assert [line["n"] for line in lines] == list(range(len(found)))
    for line, case in zip(lines, found, strict=True):
        if metric == "zeroscrolls.rouge":
            for name in zeroscrolls.ROUGE_TYPES:
                assert abs(100 * line["parts"][name] - case["score"][name]) < 1e-9
        else:
            assert abs(line["score"] - case["score"]) < 1e-12, (line, case)


def test_the_score_command_lists_metrics_and_names_a_bad_line(tmp_path):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = StringIO()
    call_command("score", "--list", stdout=out)
    names = [line.split("\t")[0] for line in out.getvalue().splitlines()]
    assert "zeroscrolls.rouge" in names and "rouge" in names
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"prediction": "a", "references": ["b"]}\n{"prediction": 3, "references": []}\n'
    )
    with pytest.raises(CommandError, match=r"bad.jsonl, line 2: 'prediction' must be a string"):
        call_command("score", "--metric", "zeroscrolls.f1", "--predictions", str(bad))
    percent = tmp_path / "percent.jsonl"
    percent.write_text(
        '{"prediction": "40%", "references": ["60%"]}\n'
        '{"prediction": "40%", "references": ["sixty"]}\n'
    )
    err, out = StringIO(), StringIO()
    call_command(
        "score", "--metric", "zeroscrolls.exp_similarity", "--predictions", str(percent),
        stdout=out, stderr=err,
    )  # fmt: skip
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["score"] == 0.25 and "holds no percentage" in second["error"]
    assert "1 of 2 lines scored; task score 25.0000; 1 could not be scored" in err.getvalue()

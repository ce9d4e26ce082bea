"""L-Eval's metrics equal its official code: per item on thousands of generated
cases (the exam match raw and after each closed task's preprocessing, F1,
ROUGE), task scores as its script prints them, the cases where it raises, and
L-Eval's own published predictions re-scored to its published task scores
(QuALITY 82.1782 / 73.7624 / 61.3861 for GPT-4-32k, Claude-100k, Turbo-16k).
The expected values were computed by running the official code
(tests/data/leval/README.md); none of it is in Concord."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judging.evaluators import metric_class
from judging.metrics import zeroscrolls

DATA = Path(__file__).resolve().parent.parent / "data" / "leval"

# the metric each task's preprocessing is (auto_eval.py picks it by file name)
TASK_METRICS = {
    None: "leval.exam",
    "quality": "leval.exam_choice",
    "tpo": "leval.exam_choice",
    "coursera": "leval.exam_coursera",
    "gsm100": "leval.exam_math",
    "codeU": "leval.exam_code",
    "topic_retrieval_longchat": "leval.exam_topics",
    "sci_fi": "leval.exam_scifi",
}


def lines(name: str) -> list[dict]:
    text = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in text if line.strip()]


def test_every_exam_case_equals_the_official_code():
    found = lines("exam_em_cases.jsonl")
    assert len(found) >= 4000
    wrong = []
    for case in found:
        plugin = metric_class(TASK_METRICS[case["task"]])()
        value, parts = plugin.item(case["prediction"], case["references"])
        if case["task"] == "sci_fi":
            expected = {"loyalty": case["loyalty_score"], "fact": case["fact_score"]}
            if parts != expected:
                wrong.append((case, parts))
        elif value != case["score"]:
            wrong.append((case, value))
    assert not wrong, f"{len(wrong)} of {len(found)} differ, e.g. {wrong[:3]}"


def test_every_f1_case_equals_the_official_code():
    plugin = metric_class("leval.f1")()
    found = lines("f1_cases.jsonl")
    assert len(found) >= 3000
    wrong = [
        c
        for c in found
        if abs(plugin.compute(c["prediction"], c["references"]) - c["score"]) > 1e-12
    ]
    assert not wrong, f"{len(wrong)} differ, e.g. {wrong[:3]}"


def test_every_rouge_case_equals_the_official_code_per_type():
    found = lines("rouge_cases.jsonl")
    assert len(found) >= 3000
    wrong = []
    for case in found:
        parts = zeroscrolls.rouge_parts(case["prediction"], case["references"])
        for name in zeroscrolls.ROUGE_TYPES:
            if abs(100 * parts[name] - case[name]) > 1e-9:
                wrong.append((case["prediction"], case["references"], name))
    assert not wrong, f"{len(wrong)} differ, e.g. {wrong[:3]}"


def test_task_scores_are_what_the_official_script_prints():
    groups = json.loads((DATA / "task_scores.json").read_text(encoding="utf-8"))["groups"]
    assert len(groups) == 68
    metric_of = {"f1": "leval.f1", "rouge": "leval.rouge"}
    for group in groups:
        cases = lines(group["file"])
        chosen = [cases[i] for i in group["lines"]]
        name = metric_of.get(group["metric"]) or TASK_METRICS[group.get("task")]
        plugin = metric_class(name)()
        items = [plugin.item(c["prediction"], c["references"]) for c in chosen]
        score = plugin.task_score([v for v, _ in items], [p for _, p in items])
        assert score == group["task_score"], (group["metric"], group.get("task"), len(chosen))


def test_where_the_official_code_raises_the_item_is_refused():
    found = json.loads((DATA / "error_cases.json").read_text(encoding="utf-8"))
    checked = 0
    for case in found:
        if "prediction" not in case or not case.get("references"):
            continue  # empty input lists: an empty task, refused before any item
        plugin = metric_class(TASK_METRICS.get(case.get("task"), "leval.exam"))()
        with pytest.raises(ValueError):
            plugin.item(case["prediction"], case["references"])
        checked += 1
    assert checked >= 10


PUBLISHED = {
    "predictions/quality_full/gpt4-32k/quality.pred.jsonl": ("quality", 82.1782),
    "predictions/quality_full/Claude-100k/quality.pred.jsonl": ("quality", 73.7624),
    "predictions/quality_full/turbo-16k-0613/quality.pred.jsonl": ("quality", 61.3861),
}


def published(path: str) -> tuple[list[str], list[list[str]]]:
    """A published predictions file as the script reads it: the first key with
    _pred, the gt, only the lines an automatic metric scores."""
    predictions, references = [], []
    for record in lines(path):
        if record["evaluation"] not in ("f1", "rouge", "exam"):
            continue
        key = next(k for k in record if "_pred" in k)
        predictions.append(record[key])
        references.append([record["gt"]])
    return predictions, references


@pytest.mark.parametrize("path", sorted(PUBLISHED))
def test_leval_published_quality_predictions_give_its_published_scores(path):
    task, expected = PUBLISHED[path]
    plugin = metric_class(TASK_METRICS[task])()
    predictions, references = published(path)
    assert len(predictions) == 202
    values = [plugin.compute(p, r) for p, r in zip(predictions, references, strict=True)]
    assert plugin.task_score(values, [{}] * len(values)) == expected


def test_the_published_excerpts_give_the_official_scores():
    expected = json.loads((DATA / "predictions" / "expected.json").read_text(encoding="utf-8"))
    tasks = {
        "quality": "quality",
        "coursera": "coursera",
        "tpo": "tpo",
        "gsm100": "gsm100",
        "codeU": "codeU",
        "topic_retrieval_longchat": "topic_retrieval_longchat",
        "meeting_summ": "rouge",
        "narrative_qa": "f1",
    }
    for excerpt in expected["excerpts"]:
        task = Path(excerpt["file"]).name.split(".")[0]
        kind = tasks[task]
        name = {"rouge": "leval.rouge", "f1": "leval.f1"}.get(kind) or TASK_METRICS[kind]
        plugin = metric_class(name)()
        predictions, references = published(excerpt["file"])
        items = [plugin.item(p, r) for p, r in zip(predictions, references, strict=True)]
        score = plugin.task_score([v for v, _ in items], [p for _, p in items])
        assert score == excerpt["official_excerpt_score"], excerpt["file"]

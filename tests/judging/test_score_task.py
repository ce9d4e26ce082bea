"""`manage.py score --benchmark B --task T`: the task's official metric, chosen
as the authors' code chooses it (judging.evaluators.official), on L-Eval's own
prediction files as published (`gt`, `<model>_pred`, `evaluation`): every
published excerpt and the three whole QuALITY files print the score the
official script printed for them. No database."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judging.evaluators.official import (
    ZEROSCROLLS_METRICS,
    NoOfficialMetric,
    official_metric,
)
from tests.judging.test_leval_metrics import DATA, PUBLISHED
from tests.judging.test_zeroscrolls_metrics import TASK_METRICS as ZEROSCROLLS_TEST_METRICS

EXPECTED = json.loads((DATA / "predictions" / "expected.json").read_text(encoding="utf-8"))
FILES = {e["file"]: e["official_excerpt_score"] for e in EXPECTED["excerpts"]} | {
    path: score for path, (_, score) in PUBLISHED.items()
}


def score(*arguments: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("score", *arguments, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("file", sorted(FILES))
def test_a_published_leval_file_scores_as_the_official_script_by_its_task(tmp_path, file):
    task = Path(file).name.split(".")[0]
    scored = tmp_path / "scored.jsonl"
    out, _ = score(
        *("--benchmark", "leval", "--task", task),
        *("--predictions", str(DATA / file), "--output", str(scored)),
    )
    assert f"task score {FILES[file]:.4f}" in out, out
    lines = [json.loads(line) for line in scored.read_text(encoding="utf-8").splitlines()]
    published = [json.loads(line) for line in (DATA / file).read_text().splitlines()]
    assert len(lines) == len(published)
    # every field kept; the prediction and references read as the script reads them
    key = next(k for k in published[0] if "_pred" in k)
    for line, original in zip(lines, published, strict=True):
        assert {k: line[k] for k in original} == original
        assert line["prediction"] == original[key] and line["references"] == [original["gt"]]


def test_the_official_metric_follows_the_authors_dispatch():
    assert official_metric("leval", "codeu") == "leval.exam_code"  # the stored slug too
    assert official_metric("leval", "codeU") == "leval.exam_code"
    assert official_metric("leval", "coursera") == "leval.exam_coursera"
    assert official_metric("leval", "gsm100") == "leval.exam_math"
    assert official_metric("leval", "tpo") == "leval.exam_choice"
    # an open task: the last line the script scores decides
    assert official_metric("leval", "financial_qa", ["LLM", "f1", "human"]) == "leval.f1"
    assert official_metric("leval", "news_summ", ["rouge"]) == "leval.rouge"
    with pytest.raises(NoOfficialMetric, match="no line has one"):
        official_metric("leval", "financial_qa", ["LLM", "human"])
    assert official_metric("zeroscrolls", "qasper") == "zeroscrolls.f1"
    assert official_metric("zeroscrolls", "quality") == "zeroscrolls.accuracy"
    assert ZEROSCROLLS_METRICS == ZEROSCROLLS_TEST_METRICS  # the metric tests' own table
    with pytest.raises(NoOfficialMetric, match="No ZeroSCROLLS task 'coursera'"):
        official_metric("zeroscrolls", "coursera")


def test_score_by_task_refuses_what_it_cannot_choose(tmp_path):
    file = tmp_path / "p.jsonl"
    file.write_text('{"prediction": "a b", "references": ["a b c"]}\n', encoding="utf-8")
    with pytest.raises(CommandError, match="--task needs --benchmark"):
        score("--task", "qasper", "--predictions", str(file))
    with pytest.raises(CommandError, match="not both"):
        score("--metric", "f1", "--task", "qasper", "--predictions", str(file))
    _, err = score("--benchmark", "zeroscrolls", "--task", "qasper", "--predictions", str(file))
    # SQuAD normalisation drops the article "a": "b" against "b c"
    assert err.startswith("zeroscrolls.f1: 1 of 1 lines scored; task score 66.6667")
    no_pred = tmp_path / "no_pred.jsonl"
    no_pred.write_text('{"query": "q", "gt": "A", "evaluation": "exam"}\n', encoding="utf-8")
    with pytest.raises(CommandError, match="without a '<model>_pred' key"):
        score("--benchmark", "leval", "--task", "quality", "--predictions", str(no_pred))

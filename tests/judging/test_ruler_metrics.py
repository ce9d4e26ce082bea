"""RULER's scoring (judging.metrics.ruler, the evaluators ruler.string_match_all
and ruler.string_match_part) against a copy of its authors' code (NVIDIA/RULER
at c3f5e3b, Apache 2.0: `scripts/eval/synthetic/constants.py`'s two metrics and
`scripts/eval/evaluate.py`'s postprocess_pred, below as published) on over 2,000
generated items per metric in 220 task files: references found whole, in part, in
another case, across a control character; Unicode, empty predictions,
several references."""

from __future__ import annotations

import json
import random
import re
from io import StringIO

import pytest
from django.core.management import call_command

from judging.evaluators import metric_class
from judging.evaluators.official import NoOfficialMetric, official_metric
from judging.metrics import ruler


# --- RULER/scripts/eval/synthetic/constants.py ---------------------------------------------------
# fmt: off
def official_string_match_part(preds, refs):
    score = sum([max([1.0 if r.lower() in pred.lower() else 0.0 for r in ref]) for pred, ref in zip(preds, refs)]) / len(preds) * 100  # noqa: B905, E501 (as published)
    return round(score, 2)

def official_string_match_all(preds, refs):
    score = sum([sum([1.0 if r.lower() in pred.lower() else 0.0 for r in ref]) / len(ref) for pred, ref in zip(preds, refs)]) / len(preds) * 100  # noqa: B905, E501 (as published)
    return round(score, 2)
# fmt: on


# --- RULER/scripts/eval/evaluate.py --------------------------------------------------------------
def postprocess_pred(predict_str: str, task_config: dict):
    predict_str = predict_str.strip()

    # Remove all non-printable characters
    np_pattern = re.compile(r"[\x00-\x1f]")
    predict_str = np_pattern.sub("\n", predict_str).strip()

    return predict_str


OFFICIAL = {
    "ruler.string_match_all": official_string_match_all,
    "ruler.string_match_part": official_string_match_part,
}
VALUES = ["8675309", "4411520", "abrupt-cell", "VAR QWERT", "Straße", "İstanbul", "ÉCOLE", "42"]
NOISE = ["", " ", "\n", "\t", "\x00", "\x1f", "The answer is ", ", ", " and ", "…", "答案"]


def case_of(value: str, rng: random.Random) -> str:
    how = rng.randrange(5)
    if how == 0:
        return value.upper()
    if how == 1:
        return value.lower()
    if how == 2 and len(value) > 2:  # a control character inside: postprocessing breaks it
        cut = rng.randrange(1, len(value))
        return value[:cut] + rng.choice(["\t", "\x01", "\n"]) + value[cut:]
    if how == 3:
        return value[: max(1, len(value) // 2)]  # only a part
    return value


def generated_task(rng: random.Random, items: int) -> tuple[list[str], list[list[str]]]:
    predictions, references = [], []
    for _ in range(items):
        refs = rng.sample(VALUES, rng.randint(1, 4))
        pieces = [rng.choice(NOISE)]
        for ref in refs:
            if rng.random() < 0.6:
                pieces += [case_of(ref, rng), rng.choice(NOISE)]
        if rng.random() < 0.1:
            pieces = [rng.choice(["", "   ", "\x00\n"])]
        rng.shuffle(pieces)
        predictions.append("".join(pieces))
        references.append(refs)
    return predictions, references


@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_task_scores_equal_the_official_code_on_generated_files(name):
    rng = random.Random(f"ruler {name}")
    plugin = metric_class(name)()
    differences, cases = [], 0
    for _ in range(220):
        predictions, references = generated_task(rng, rng.randint(1, 20))
        cases += len(predictions)
        expected = OFFICIAL[name]([postprocess_pred(p, {}) for p in predictions], references)
        values = [plugin.compute(p, r) for p, r in zip(predictions, references, strict=True)]
        found = plugin.task_score(values, [{} for _ in values])
        if found != expected:
            differences.append((predictions, references, found, expected))
        # each item alone, too: its value is the one-item file's score / 100
        for prediction, refs, value in zip(predictions, references, values, strict=True):
            alone = OFFICIAL[name]([postprocess_pred(prediction, {})], [refs])
            assert round(value * 100, 2) == alone, (prediction, refs)
    assert cases >= 2000
    assert differences == []


def test_the_two_matches_differ_where_the_tasks_need_them_to():
    found_one = "The special magic numbers are 8675309 and nothing else."
    assert ruler.string_match_all(found_one, ["8675309", "4411520"]) == 0.5
    assert ruler.string_match_part(found_one, ["8675309", "4411520"]) == 1.0
    # the prediction's tab became a newline, so a reference with a tab is not found
    assert ruler.string_match_all("VAR\tQWERT", ["VAR\tQWERT"]) == 0.0
    assert ruler.string_match_all("VAR\nQWERT", ["VAR\nQWERT"]) == 1.0
    assert ruler.string_match_all("ISTANBUL", ["istanbul"]) == 1.0
    with pytest.raises(ValueError, match="at least one reference"):
        ruler.string_match_all("x", [])


@pytest.mark.parametrize(
    ("task", "metric"),
    [
        ("niah_single_1", "ruler.string_match_all"),
        ("niah_multiquery-131072", "ruler.string_match_all"),
        ("vt-4096", "ruler.string_match_all"),
        ("cwe", "ruler.string_match_all"),
        ("fwe-8192", "ruler.string_match_all"),
        ("qa_1-4096", "ruler.string_match_part"),
        ("qa_2", "ruler.string_match_part"),
    ],
)
def test_each_task_gets_the_metric_its_base_task_names(task, metric):
    assert official_metric("ruler", task) == metric


def test_a_task_ruler_does_not_name_is_refused_with_the_names():
    with pytest.raises(NoOfficialMetric, match="niah_single_1"):
        official_metric("ruler", "needle-4096")


@pytest.mark.parametrize(("task", "name"), [("niah_multivalue", "all"), ("qa_1", "part")])
def test_score_reads_rulers_prediction_file_and_prints_the_official_task_score(
    tmp_path, task, name
):
    """A `pred/<task>.jsonl` as call_api.py writes it, scored by its task as
    evaluate.py scores it."""
    rng = random.Random(task)
    predictions, references = generated_task(rng, 40)
    # Concord refuses a NUL in any text it reads (PostgreSQL cannot store one)
    predictions = [p.replace("\x00", "\x01") for p in predictions]
    path = tmp_path / f"{task}.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"index": i, "pred": p, "input": "...", "outputs": r, "others": {}, "length": 99}
            )
            + "\n"
            for i, (p, r) in enumerate(zip(predictions, references, strict=True))
        ),
        encoding="utf-8",
    )
    out, err = StringIO(), StringIO()
    call_command(
        "score",
        "--benchmark",
        "ruler",
        "--task",
        task,
        "--predictions",
        str(path),
        stdout=out,
        stderr=err,
    )
    expected = OFFICIAL[f"ruler.string_match_{name}"](
        [postprocess_pred(p, {}) for p in predictions], references
    )
    assert f"ruler.string_match_{name}: 40 of 40 lines scored; task score {expected:.4f}" in (
        err.getvalue()
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["prediction"] for line in lines] == predictions

"""BABILong's scoring (judging.metrics.babilong, the evaluator babilong.accuracy
and `score --benchmark babilong`) against its authors' code as published
(tests/data/babilong/official: booydar/babilong at 7a6efee, Apache 2.0):
`compare_answers` on 4,000 generated items over the 20 tasks (labels in the
question, several sentences, examples the model starts to write, lists,
upper case, Unicode, empty answers), and collect_results.py's accuracy on the
prediction files the authors publish (25 kept in tests/data; all 145 when
CONCORD_BABILONG_EVALS names the repository's `babilong_evals` folder)."""

from __future__ import annotations

import importlib.util
import json
import os
import random
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command

from judging.evaluators import metric_class
from judging.evaluators.official import NoOfficialMetric, official_metric
from judging.metrics import babilong
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "babilong"


def official_module():
    spec = importlib.util.spec_from_file_location(
        "babilong_official_metrics", DATA / "official" / "metrics.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OFFICIAL = official_module()
NOISE = ["", " ", "Answer: ", "The answer is ", "\n", "…", "Straße ", "答案 ", "İ", "QUESTION: "]
BREAKS = [". ", ".", "<context>", "<example>", "Question", " and ", ", ", "\n\n"]


def generated_item(task: str, rng: random.Random) -> tuple[str, str, str]:
    labels = list(OFFICIAL.TASK_LABELS[task])
    target = rng.choice(labels)
    if task == "qa8" and rng.random() < 0.4:  # a list of objects, as qa8's targets are
        target = ",".join(rng.sample(["apple", "football", "milk"], rng.randint(2, 3)))
    named = rng.sample(labels, rng.randint(0, 2))
    question = rng.choice(["Where is Mary? ", "What is ", "Is John in the "]) + " ".join(named)
    pieces = [rng.choice(NOISE)]
    for _ in range(rng.randint(0, 4)):
        word = rng.choice(labels + [target])
        if rng.random() < 0.3:
            word = word.upper() if rng.random() < 0.5 else word.title()
        pieces += [word, rng.choice(BREAKS + NOISE)]
    if rng.random() < 0.3:  # a well-behaved answer, then maybe more
        pieces = [rng.choice(NOISE), target.replace(",", " and "), rng.choice(BREAKS), *pieces]
    if rng.random() < 0.08:
        pieces = [rng.choice(["", "   ", ".", "None"])]
    return target, "".join(pieces), question


def test_every_generated_answer_is_judged_as_compare_answers_judges_it():
    rng = random.Random(2024)
    tasks = list(OFFICIAL.TASK_LABELS)
    assert tasks == list(babilong.TASK_LABELS)
    assert {t: list(v) for t, v in babilong.TASK_LABELS.items()} == OFFICIAL.TASK_LABELS
    metric = metric_class(babilong.ACCURACY)()
    right = items = 0
    for task in tasks:
        values, official = [], []
        for _ in range(200):
            target, output, question = generated_item(task, rng)
            labels = OFFICIAL.TASK_LABELS[task]
            expected = OFFICIAL.compare_answers(target, output, question, labels)
            assert babilong.preprocess_output(output) == OFFICIAL.preprocess_output(output)
            value, _ = metric.item_asked(output, [target], question=question, task=f"{task}-4k")
            assert value == (1.0 if expected else 0.0), (task, target, output, question)
            values.append(value)
            official.append(expected)
        assert metric.task_score(values, []) == 100 * sum(official) / len(official)
        right += sum(official)
        items += len(official)
    assert items == 4000 and 0.15 * items < right < 0.85 * items  # both verdicts well tested


def published_files() -> list[Path]:
    folder = Path(os.environ.get("CONCORD_BABILONG_EVALS") or DATA / "babilong_evals")
    return sorted(folder.rglob("*.csv"))


def official_accuracy(path: Path, task: str) -> tuple[float, list[bool]]:
    """collect_results.py's get_model_results for one file, as published."""
    df = pd.read_csv(path)
    if df["output"].dtype != object:
        df["output"] = df["output"].astype(str)
    df["output"] = df["output"].fillna("")
    df["correct"] = df.apply(
        lambda row: OFFICIAL.compare_answers(
            target=row["target"],
            output=row["output"],
            question=row["question"],
            task_labels=OFFICIAL.TASK_LABELS[task],
        ),
        axis=1,
    )
    score = df["correct"].sum()
    return (100 * score / len(df) if len(df) > 0 else 0), list(df["correct"])


def test_the_published_prediction_files_score_as_collect_results_scores_them(tmp_path):
    files = published_files()
    assert len(files) >= 25
    lines = 0
    for path in files:
        task, length = path.stem.split("_")[:2]
        expected, correct = official_accuracy(path, task)
        out = tmp_path / "scored.jsonl"
        summary = StringIO()
        call_command(
            "score",
            benchmark="babilong",
            task=f"{task}-{length}",
            predictions=path,
            output=out,
            stdout=summary,
        )
        scored = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["score"] == 1.0 for r in scored] == correct, path
        values = [r["score"] for r in scored]
        assert babilong.task_score(values) == expected, path
        assert f"task score {expected:.4f}" in summary.getvalue()
        lines += len(scored)
    assert lines >= 2400


def test_the_official_metric_of_each_task_and_a_task_babilong_lacks():
    assert official_metric("babilong", "qa1-4k") == babilong.ACCURACY
    assert official_metric("babilong", "qa20") == babilong.ACCURACY
    with pytest.raises(NoOfficialMetric, match="qa21"):
        official_metric("babilong", "qa21-4k")
    with pytest.raises(ValueError, match="needs the question"):
        metric_class(babilong.ACCURACY)().compute("bathroom", ["bathroom"])


def test_a_label_named_in_the_question_is_never_the_answer():
    # "Is Mary in the kitchen?" names the kitchen: "yes, the kitchen" counts yes only
    assert babilong.accuracy("Yes, the kitchen.", "yes", "Is Mary in the kitchen?", "qa6") == 1.0
    # two rooms named: not one answer
    assert babilong.accuracy("The bedroom or the garden", "garden", "Where is Mary?", "qa1") == 0
    # only the first sentence counts
    assert babilong.accuracy("Garden. Not the bedroom.", "garden", "Where is Mary?", "qa1") == 1
    # qa8's lists need every item and nothing else
    assert babilong.accuracy("apple and milk", "apple,milk", "What is Mary carrying?", "qa8") == 1
    assert babilong.accuracy("apple", "apple,milk", "What is Mary carrying?", "qa8") == 0.0


def test_a_csv_read_as_pandas_reads_it_and_qa7s_none_never_right(tmp_path):
    """collect_results.py reads the files with pandas ("None" alone in a cell
    is NaN there, then ""); `score` reads the cells as they are. Either way
    "none" is never right: it holds the label "one" too."""
    path = tmp_path / "qa7_0k_instruction_yes.csv"
    pd.DataFrame(
        {
            "target": ["none", "none", "two", "one"],
            "output": ["None", "none", "two", ""],
            "question": ["How many objects is Mary carrying?"] * 4,
        }
    ).to_csv(path)
    expected, correct = official_accuracy(path, "qa7")
    assert correct == [False, False, True, False]
    out = tmp_path / "scored.jsonl"
    options = {"benchmark": "babilong", "task": "qa7-0k", "predictions": path, "output": out}
    call_command("score", **options, stdout=StringIO())
    scores = [json.loads(line)["score"] for line in out.read_text().splitlines()]
    assert scores == [0.0, 0.0, 1.0, 0.0]
    assert babilong.task_score(scores) == expected == 25.0


def test_lengths_as_the_authors_write_them():
    from corpus.importers.formats.babilong import length_name, length_tokens

    assert length_name("qa1-1m") == "1M"
    assert length_name("qa1-128k") == "128k"
    assert length_tokens("4k") == 4000
    assert length_tokens("1M") == 1_000_000
    assert length_tokens("0k") == 0
    assert length_tokens("long") is None

"""Runs handed back in the leaderboards' shapes (judging.leaderboard_exports),
round-tripped through the authors' own reading of them:

- L-Eval: published prediction files (tests/data/leval/predictions, verbatim
  excerpts of OpenLMLab/LEval's `Predictions/`) are imported as a task and a
  run, exported, and the export is line for line the published file (query,
  gt, prediction, evaluation, in order) and scores what the official script
  printed for it (auto_eval.py's reading: the first "_pred" key, the
  automatic evaluations only, the task from the file's name).
- ZeroSCROLLS: the submission CSV read back with prepare_submission's
  `safe_read_csv` and checked as `verify_submission.py` checks it (columns,
  the ten tasks, every id once), each prediction exactly as stored (commas,
  quotes, new lines, "NA", "null", "007", Unicode, empty).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.importers.formats.zeroscrolls import TASKS as ZEROSCROLLS_TASKS
from corpus.importers.samples import zeroscrolls_row
from corpus.models import QuestionText
from generation.models import GenerationRun, Response
from judging.evaluators import metric_class
from judging.leaderboard_exports import (
    ExportRefused,
    leval_predictions,
    zeroscrolls_companions,
    zeroscrolls_submission,
)
from tests.judging.test_leval_metrics import DATA, TASK_METRICS, published

pytestmark = pytest.mark.django_db

EXPECTED = json.loads((DATA / "predictions" / "expected.json").read_text(encoding="utf-8"))
EXCERPTS = {Path(e["file"]).name.split(".")[0] + "/" + e["file"]: e for e in EXPECTED["excerpts"]}
# the metric the official script applies to each excerpt's task (test_leval_metrics's)
METRIC = {"meeting_summ": "leval.rouge", "narrative_qa": "leval.f1"}
# questions per document in the task file built from an excerpt: topic retrieval
# asks three of each conversation (the script groups its lines in threes)
PER_DOCUMENT = {"topic_retrieval_longchat": 3}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def import_published(
    tmp_path: Path, excerpt: str, project: str | None = None
) -> tuple[GenerationRun, list[dict], str]:
    """The excerpt as an L-Eval task file (documents of a few of its
    questions) and its model's answers as an imported run (in `project`)."""
    lines = read_jsonl(DATA / excerpt)
    task = Path(excerpt).name.split(".")[0]
    model = Path(excerpt).parent.name
    key = next(k for k in lines[0] if "_pred" in k)
    size = PER_DOCUMENT.get(task, 5)
    tmp_path.mkdir(parents=True, exist_ok=True)
    groups = [lines[i : i + size] for i in range(0, len(lines), size)]
    task_file = tmp_path / f"{task}.jsonl"
    task_file.write_text(
        "".join(
            json.dumps(
                {
                    "input": f"Document {n}: a long text.",
                    "instructions": [line["query"] for line in group],
                    "outputs": [line["gt"] for line in group],
                    "evaluation": group[0]["evaluation"],
                }
            )
            + "\n"
            for n, group in enumerate(groups, 1)
        ),
        encoding="utf-8",
    )
    call_command("import_benchmark", str(task_file), "--format", "leval", stdout=None)
    records = [
        {
            "system": model,
            "task": task,
            "document_id": f"{task.lower()}-{n}",
            "question_id": str(q),
            "response": line[key],
        }
        for n, group in enumerate(groups, 1)
        for q, line in enumerate(group, 1)
    ]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    in_project = ["--project", project] if project else []
    call_command(
        "import_responses",
        str(answers),
        *("--benchmark", "leval", "--split", "test", *in_project),
        stdout=None,
    )
    (run,) = GenerationRun.objects.filter(dataset__task=task.lower())
    return run, lines, key


@pytest.mark.parametrize("excerpt", sorted(EXCERPTS))
def test_an_leval_export_is_the_published_file_and_scores_as_the_official_script(tmp_path, excerpt):
    expected = EXCERPTS[excerpt]
    run, lines, key = import_published(tmp_path, expected["file"])
    out = tmp_path / "out"
    out.mkdir()
    call_command("export_leaderboard", "--runs", str(run.pk), "--output", str(out), stdout=None)
    task = Path(expected["file"]).name.split(".")[0]
    model = Path(expected["file"]).parent.name
    exported = out / "Predictions" / model / f"{task}.pred.jsonl"
    got = read_jsonl(exported)
    # the prediction under the system's name (the published files' own keys vary:
    # gpt4-32k's is gpt4-x_pred), the key the script takes (the first with _pred)
    ours = f"{model}_pred"
    assert [next(k for k in g if "_pred" in k) for g in got] == [ours] * len(lines)
    assert [(g["query"], g["gt"], g[ours], g["evaluation"]) for g in got] == [
        (line["query"], line["gt"], line[key], line["evaluation"]) for line in lines
    ]
    # scored as auto_eval.py reads the file, with the metric equal to its code
    plugin = metric_class(METRIC.get(task) or TASK_METRICS[task])()
    predictions, references = published(str(exported))  # DATA / an absolute path: the path
    items = [plugin.item(p, r) for p, r in zip(predictions, references, strict=True)]
    score = plugin.task_score([v for v, _ in items], [p for _, p in items])
    assert score == expected["official_excerpt_score"]


def test_an_leval_export_names_codeu_as_the_authors_and_refuses_an_unfinished_run(tmp_path):
    excerpt = next(e["file"] for e in EXPECTED["excerpts"] if "codeU" in e["file"])
    run, _, _ = import_published(tmp_path, excerpt)
    assert run.dataset.task == "codeu"  # stored as a slug
    assert leval_predictions(run).path == "Predictions/gpt4-32k/codeU.pred.jsonl"
    Response.objects.filter(run=run).order_by("pk").first().delete()
    with pytest.raises(ExportRefused, match="has answered 14 of 15 questions"):
        leval_predictions(run)
    with pytest.raises(CommandError, match="has answered 14 of 15"):
        call_command("export_leaderboard", "--runs", str(run.pk), "--output", str(tmp_path))
    with pytest.raises(CommandError, match="No such run"):
        call_command("export_leaderboard", "--runs", "999999", "--output", str(tmp_path))


# --- ZeroSCROLLS ---------------------------------------------------------------------------------

HARD_PREDICTIONS = [
    'A, B and "C"',
    "two\nlines, and a comma",
    "NA",
    "null",
    "007",
    "Ünïcødé — 東京 ✓",
    "",
    "  spaces kept  ",
    "!@#$",
    "1e5",
]


def safe_read_csv(file_path):
    """zero_scrolls submission/prepare_submission.py and verify_submission.py."""
    return pd.read_csv(file_path, dtype=object, keep_default_na=False, na_values=["!@#$%^&*()"])


def verify(df: pd.DataFrame, id_to_labels: dict[str, dict[str, str]]) -> None:
    """verify_submission.load_predictions_df and verify_task.verify, the checks
    the leaderboard runs on a submission."""
    assert set(df.columns) == {"Task", "ID", "Prediction"}
    assert set(df.Task.unique()) == set(ZEROSCROLLS_TASKS)
    for task in ZEROSCROLLS_TASKS:
        task_json = df[df.Task == task][["ID", "Prediction"]].set_index("ID")["Prediction"]
        id_to_pred = task_json.to_dict()
        assert all(isinstance(k, str) for k in id_to_pred)
        assert all(isinstance(v, str) for v in id_to_pred.values())
        assert set(id_to_pred) == set(id_to_labels[task])


@pytest.fixture
def zeroscrolls(tmp_path):
    return import_zeroscrolls(tmp_path)


def import_zeroscrolls(tmp_path: Path, project: str | None = None) -> dict[str, dict[str, str]]:
    """The ten ZeroSCROLLS tasks (test split: no references), three questions
    each, answered by one system (in `project`) with predictions a CSV can
    break; each task's {id: prediction}."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    truth: dict[str, dict[str, str]] = {}
    records = []
    for t, task in enumerate(ZEROSCROLLS_TASKS):
        rows = []
        truth[task] = {}
        for q in range(3):
            identifier = f"{task[:3]}{q:02d}x"
            rows.append(
                zeroscrolls_row(identifier, f"d{q}", f"Text {t}-{q}.", f"Question {q}?", "")
            )
            prediction = HARD_PREDICTIONS[(3 * t + q) % len(HARD_PREDICTIONS)]
            truth[task][identifier] = prediction
            records.append(
                {
                    "system": "my-model",
                    "task": task,
                    "document_id": None,
                    "question_id": identifier,
                    "response": prediction,
                }
            )
        path = tmp_path / f"{task}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        call_command(
            "import_benchmark", str(path), "--format", "zeroscrolls", "--split", "test", stdout=None
        )
    for record in records:  # the document ids the import gave
        text = QuestionText.objects.select_related("question__document").get(
            dataset__task=record["task"], question__external_id=record["question_id"]
        )
        record["document_id"] = text.question.document.external_id
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    in_project = ["--project", project] if project else []
    call_command(
        "import_responses",
        str(answers),
        *("--benchmark", "zeroscrolls", "--split", "test", *in_project),
        stdout=None,
    )
    return truth


def test_the_zeroscrolls_submission_reads_back_as_stored_and_passes_the_leaderboards_check(
    tmp_path, zeroscrolls
):
    runs = GenerationRun.objects.filter(dataset__benchmark__slug="zeroscrolls")
    assert runs.count() == 10
    out = tmp_path / "out"
    out.mkdir()
    ids = ",".join(str(r.pk) for r in runs)
    call_command("export_leaderboard", "--runs", ids, "--output", str(out), stdout=None)
    df = safe_read_csv(out / "zero_scrolls_predictions.csv")
    verify(df, zeroscrolls)
    assert df.columns.tolist() == ["Task", "ID", "Prediction"]
    assert list(dict.fromkeys(df.Task)) == list(ZEROSCROLLS_TASKS)  # prepare_submission's order
    for task, answers in zeroscrolls.items():
        rows = df[df.Task == task]
        assert dict(zip(rows.ID, rows.Prediction, strict=True)) == answers
    # from one run, its system's other runs on the split make the rest
    one = runs.order_by("pk").first()
    assert {r.pk for r in zeroscrolls_companions(one)} == {r.pk for r in runs}


def test_a_zeroscrolls_submission_short_of_a_task_or_an_answer_is_refused(tmp_path, zeroscrolls):
    runs = list(GenerationRun.objects.filter(dataset__benchmark__slug="zeroscrolls"))
    nine = [r for r in runs if r.dataset.task != "musique"]
    with pytest.raises(ExportRefused, match="no finished run for musique"):
        zeroscrolls_submission(nine)
    partial = zeroscrolls_submission(nine, partial=True)
    assert "musique" not in partial.content.decode()
    qasper = next(r for r in runs if r.dataset.task == "qasper")
    Response.objects.filter(run=qasper).order_by("pk").first().delete()
    with pytest.raises(ExportRefused, match="has answered 2 of 3 questions"):
        zeroscrolls_submission(runs)
    # the companions skip the unfinished run: the submission lacks its task
    other = next(r for r in runs if r.dataset.task == "quality")
    assert qasper.pk not in {r.pk for r in zeroscrolls_companions(other)}
    with pytest.raises(ExportRefused, match="one answer per question"):
        zeroscrolls_submission([other, other])

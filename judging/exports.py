"""Concord's runs in the ELITR-Bench JSON layout (as generated-responses/*.json),
so that responses and scores go back and forth with the authors' scripts.
`import_elitr_bench --with-responses` reads such a file back."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence

from core.downloads import safe_part
from corpus.models import QuestionText
from generation.models import GenerationRun, Response
from judging.models import Judgment


def export_runs(runs: list[GenerationRun], evaluators: Sequence[str] = ()) -> dict:
    """One ELITR-Bench file for runs of one dataset and mode: meetings, questions
    with type, position, wording and reference, and each run's response with
    `<evaluator>_score` fields (the mean over seeds and raters, as a string)."""
    if not runs:
        raise ValueError("No runs to export.")
    datasets = {(r.dataset_id, r.mode) for r in runs}
    if len(datasets) != 1:
        raise ValueError("Export the runs of one dataset and mode per file.")
    dataset = runs[0].dataset
    responses = Response.objects.filter(run__in=runs).select_related("run__system", "question")
    scores: dict[tuple[int, str], list[float]] = defaultdict(list)
    for response_id, name, score in Judgment.objects.filter(
        response__run__in=runs, evaluator__name__in=list(evaluators)
    ).values_list("response_id", "evaluator__name", "score"):
        scores[(response_id, name)].append(score)
    by_question: dict[int, list[dict]] = defaultdict(list)
    for response in responses:
        entry = {"model": response.run.system.name, "generated-response": response.text}
        for name in evaluators:
            values = scores.get((response.pk, name))
            if values:
                entry[f"{name}_score"] = score_text(sum(values) / len(values))
        by_question[response.question_id].append(entry)
    meetings: dict[str, list[dict]] = defaultdict(list)
    texts = (
        QuestionText.objects.filter(dataset=dataset)
        .select_related("question__document")
        .order_by("question__document__external_id", "question__order")
    )
    for text in texts:
        question = text.question
        meetings[question.document.external_id].append(
            {
                "id": question.external_id,
                "question-type": question.question_type,
                "answer-position": question.answer_position,
                "question": text.text,
                "groundtruth-answer": text.reference_answer,
                "generated-responses": sorted(
                    by_question.get(question.pk, []), key=lambda e: e["model"]
                ),
            }
        )
    return {
        "split": dataset.split,
        "meetings": [{"id": m, "questions": q} for m, q in meetings.items()],
    }


def score_text(value: float) -> str:
    """As the authors write scores: "9", "6.8", "2.555555556" (shortest exact form)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def file_name(run: GenerationRun, evaluators: Sequence[str]) -> str:
    """The authors' naming, elitr-bench-{version}_{split}_{mode}_{evaluator}.json,
    which the importer reads back (corpus.importers.elitr_bench.RESPONSE_FILE):
    the evaluator's name made safe (core.downloads.safe_part: no slash or
    space ends up in the path) and ending in "-eval", the split in letters and
    digits only."""
    if len(evaluators) > 1:
        suffix = "all-eval"
    elif evaluators:
        suffix = safe_part(evaluators[0]).replace("_", "-") or "scores"
        suffix = suffix if suffix.endswith("-eval") else f"{suffix}-eval"
    else:
        suffix = "responses"
    split = "".join(c for c in run.dataset.split if c.isascii() and c.isalnum()) or "split"
    return f"elitr-bench-{run.dataset.version}_{split}_{run.mode}_{suffix}.json"


def dumps(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1)

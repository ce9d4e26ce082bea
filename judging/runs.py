"""Judging runs: an evaluator over a selection of responses, as Celery work.

Automatic metrics need no model and no key: they run here, in batches, each
batch written at once (idempotently, so a redelivered task changes nothing).
LLM judges reuse the same runs once their backend lands (see docs/judging.md).
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from corpus.bulk import sync_rows
from corpus.models import QuestionText
from generation.models import Response
from judging.metrics import METRICS
from judging.models import Evaluator, JudgingRun, Judgment

BATCH_SIZE = 500
METRIC_EVALUATORS = {
    "metric: rouge": (
        "rouge",
        "ROUGE: geometric mean of ROUGE-1, -2 and -L F-measures "
        "(rouge-score, stemmed), maximum over references (ZeroSCROLLS).",
    ),
    "metric: f1": ("f1", "SQuAD-normalised token F1, maximum over references."),
    "metric: exact match": ("exact_match", "SQuAD-normalised exact match with any reference."),
}


class JudgingError(Exception):
    """A run that cannot start or go on; the message says why."""


def ensure_metric_evaluators() -> list[Evaluator]:
    evaluators = []
    for name, (metric, description) in METRIC_EVALUATORS.items():
        evaluator, _ = Evaluator.objects.get_or_create(
            name=name,
            defaults={
                "kind": Evaluator.Kind.METRIC,
                "description": description,
                "config": {"metric": metric},
                "raw_scale_min": 0,
                "raw_scale_max": 1,
            },
        )
        evaluators.append(evaluator)
    return evaluators


def run_responses(run: JudgingRun):
    responses = Response.objects.filter(run__dataset=run.dataset, run__mode=run.mode)
    systems = list(run.systems.all())
    if systems:
        responses = responses.filter(run__system__in=systems)
    return responses.order_by("pk")


@transaction.atomic
def start_run(evaluator: Evaluator, dataset, mode: str, systems=(), user=None) -> JudgingRun:
    if evaluator.kind != Evaluator.Kind.METRIC:
        raise JudgingError(
            f"{evaluator.name} is a {evaluator.get_kind_display().lower()}: only automatic "
            "metrics run in this version (LLM judges need the API backend, see docs/judging.md)."
        )
    if evaluator.config.get("metric") not in METRICS:
        raise JudgingError(
            f"{evaluator.name}: unknown metric {evaluator.config.get('metric')!r}; "
            f"known: {', '.join(METRICS)}."
        )
    run = JudgingRun.objects.create(
        evaluator=evaluator, dataset=dataset, mode=mode, created_by=user
    )
    run.systems.set(systems)
    run.total = run_responses(run).count()
    if run.total == 0:
        raise JudgingError(f"No {mode} responses on {dataset} for this selection.")
    run.save(update_fields=["total"])
    return run


def cancel_run(run: JudgingRun) -> None:
    JudgingRun.objects.filter(pk=run.pk, status__in=["queued", "running"]).update(
        status=JudgingRun.Status.CANCELLED, finished_at=timezone.now()
    )


def run_metric_judging(run_id: int) -> JudgingRun:
    """Score every response of the run, batch by batch; safe to run again."""
    run = JudgingRun.objects.select_related("evaluator").get(pk=run_id)
    if run.status in (JudgingRun.Status.DONE, JudgingRun.Status.CANCELLED):
        return run
    JudgingRun.objects.filter(pk=run.pk).update(
        status=JudgingRun.Status.RUNNING, started_at=timezone.now()
    )
    metric = METRICS[run.evaluator.config["metric"]]
    ids = list(run_responses(run).values_list("pk", flat=True))
    done = failed = 0
    problems: list[str] = []
    for start in range(0, len(ids), BATCH_SIZE):
        if JudgingRun.objects.filter(pk=run.pk, status=JudgingRun.Status.CANCELLED).exists():
            return JudgingRun.objects.get(pk=run.pk)
        batch = list(
            Response.objects.filter(pk__in=ids[start : start + BATCH_SIZE]).values_list(
                "pk", "question_id", "text"
            )
        )
        references = {
            q: [reference, *alternatives]
            for q, reference, alternatives in QuestionText.objects.filter(
                dataset=run.dataset, question_id__in={q for _, q, _ in batch}
            ).values_list("question_id", "reference_answer", "alternative_answers")
        }
        rows = []
        for response_id, question_id, text in batch:
            try:
                value = metric(text, references[question_id])
            except (KeyError, ValueError) as error:  # no reference, or not scorable by it
                failed += 1
                problems.append(f"response {response_id}: {error}")
                continue
            rows.append(
                {
                    "evaluator_id": run.evaluator_id,
                    "response_id": response_id,
                    "rater": "",
                    "seed": None,
                    "order": 0,
                    "score": 1 + 9 * value,
                    "raw_score": value,
                    "raw_scale_min": 0.0,
                    "raw_scale_max": 1.0,
                }
            )
        with transaction.atomic():
            sync_rows(
                Judgment.objects.filter(
                    evaluator_id=run.evaluator_id,
                    response_id__in=[r["response_id"] for r in rows],
                    seed__isnull=True,
                ),
                rows,
                key=("evaluator_id", "response_id", "rater", "order"),
                compare=("score", "raw_score"),
            )
            done += len(rows)
            JudgingRun.objects.filter(pk=run.pk).update(done=done, failed=failed)
    JudgingRun.objects.filter(pk=run.pk).update(
        status=JudgingRun.Status.DONE,
        finished_at=timezone.now(),
        message="\n".join(problems[:50]),
    )
    return JudgingRun.objects.get(pk=run.pk)

"""Judging runs: an evaluator over a selection of responses, as Celery work.

Automatic metrics need no model and no key: they run here, in batches, each
batch written at once (idempotently, so a redelivered task changes nothing).
LLM judges make JudgeItems (response x seed) that judging.model_judging works
through.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from core.errors import ErrorCode, Invalid
from corpus.models import Dataset, QuestionText
from generation.models import Response, System
from judging.evaluators import ConfigError, Metric, ModelJudge, plugin_for, registry
from judging.metric_judging import run_metric_judging, run_responses
from judging.model_judging import RETRY, run_llm_judging
from judging.models import Evaluator, JudgeItem, JudgingRun
from runs import lifecycle
from runs.lifecycle import Outcome, enqueue_on_commit, finish
from users.models import Project, default_project


class JudgingError(Invalid):
    """A run that cannot start or go on; the message says why."""

    code = ErrorCode.JUDGING_REFUSED


def ensure_metric_evaluators() -> list[Evaluator]:
    """An evaluator for every registered metric, so that a researcher can pick
    it (`manage.py judge`, the admin's action), in the registry's order."""
    return [ensure_metric_evaluator(name) for name in registry.metrics()]


def ensure_metric_evaluator(name: str) -> Evaluator:
    """The shared evaluator of the registered metric `name`, made the first time
    it is used (a form offers the metric before: judging.forms)."""
    metric = registry.metrics()[name]
    evaluator, _ = Evaluator.objects.get_or_create(
        name=metric.evaluator_name,
        defaults={
            "kind": Evaluator.Kind.METRIC,
            "project": None,  # shared: a metric is the same for every project
            "description": metric.description,
            "config": {"metric": name},
            "raw_scale_min": metric().scale.low,
            "raw_scale_max": metric().scale.high,
        },
    )
    return evaluator


@transaction.atomic
def create_judging_run(
    evaluator: Evaluator,
    dataset,
    mode: str,
    systems=(),
    user=None,
    *,
    budget=None,
    refresh: bool = False,
    use_batch: bool = False,
    confirm_over_budget: bool = False,
    project: Project | None = None,
) -> JudgingRun:
    """Create a run (not yet started: the caller queues `judging.run_judging`).
    A run projected to cost more than its budget is refused unless the
    researcher confirms it: it would stop part of the way. The run judges its
    project's responses (default: the evaluator's project, else the default
    one) with its project's evaluator or a shared one."""
    if budget is not None and not 0 <= float(budget) < float("inf"):
        raise JudgingError(f"budget {budget}: a cost of 0 or more (USD), or none for no limit.")
    project = project or evaluator.project or default_project()
    if evaluator.project_id not in (None, project.pk):
        raise JudgingError(f"{evaluator.name} belongs to another project.")
    try:
        plugin = plugin_for(evaluator)
    except (ConfigError, registry.UnknownEvaluator) as error:
        raise JudgingError(f"{evaluator.name}: {error}") from None
    if isinstance(plugin, Metric):
        config = protocol = None
    elif isinstance(plugin, ModelJudge):
        protocol = plugin
        config = protocol.config
    else:
        raise JudgingError(
            f"{evaluator.name} holds {evaluator.get_kind_display().lower()}: runs take automatic "
            "metrics and LLM judges."
        )
    if use_batch and config is None:
        raise JudgingError("Automatic metrics make no calls: the Batch API is for LLM judges.")
    run = JudgingRun.objects.create(
        project=project,
        evaluator=evaluator,
        dataset=dataset,
        mode=mode,
        created_by=user,
        budget=budget,
        refresh=refresh,
        use_batch=use_batch,
    )
    run.systems.set(systems)
    response_ids = list(run_responses(run).values_list("pk", flat=True))
    if not response_ids:
        raise JudgingError(f"No {mode} responses on {dataset} for this selection.")
    if protocol is None:
        run.total = len(response_ids)
    elif protocol.pairwise:
        run.total = _pairwise_items(run, protocol)
        run.projected_cost = projected_cost(run, protocol)
    else:
        JudgeItem.objects.bulk_create(
            JudgeItem(run=run, response_id=r, seed=seed)
            for r in response_ids
            for seed in protocol.config.seeds
        )
        run.total = len(response_ids) * len(protocol.config.seeds)
        run.projected_cost = projected_cost(run, protocol)
    run.save(update_fields=["total", "projected_cost"])
    if budget is not None and run.projected_cost > float(budget) and not confirm_over_budget:
        share = 100 * float(budget) / run.projected_cost
        raise JudgingError(
            f"The projected cost, {run.projected_cost:.2f}, is above the budget of "
            f"{float(budget):g}: the run would stop after about {share:.0f}% of its "
            f"{run.total} items. Raise the budget, or confirm to start it anyway (the console's "
            '"Start over the budget", the API\'s "confirm_over_budget": true, the command\'s '
            "--confirm-over-budget)."
        )
    return run


def _pairwise_items(run: JudgingRun, protocol: ModelJudge) -> int:
    """Every other system's response against the baseline's response to the
    same question, in each of the protocol's orders (both), for each seed."""
    config = protocol.config
    baseline = {
        question: pk
        for pk, question in Response.objects.filter(
            run__project=run.project_id,
            run__dataset=run.dataset,
            run__mode=run.mode,
            run__system__name=config.baseline,
        ).values_list("pk", "question_id")
    }
    if not baseline:
        raise JudgingError(
            f"The baseline {config.baseline!r} has no {run.mode} responses on {run.dataset}."
        )
    competitors = run_responses(run).exclude(run__system__name=config.baseline)
    items = [
        JudgeItem(run=run, response_id=pk, opponent_id=baseline[question], seed=seed, order=order)
        for pk, question in competitors.values_list("pk", "question_id")
        if question in baseline
        for seed in config.seeds
        for order in protocol.orders
    ]
    if not items:
        raise JudgingError("No response of another system answers the baseline's questions.")
    JudgeItem.objects.bulk_create(items)
    return len(items)


def projected_cost(run: JudgingRun, protocol: ModelJudge) -> float:
    """Before starting: prompt tokens estimated at 4 characters a token, answers
    at half of max_tokens, priced per million tokens."""
    config = protocol.config
    texts = dict(
        QuestionText.objects.filter(dataset=run.dataset).values_list(
            "question_id", "reference_answer"
        )
    )
    characters = 0
    for question_id, text in run_responses(run).values_list("question_id", "text"):
        for messages in protocol.estimate_messages(text, texts.get(question_id, "")):
            characters += sum(len(m["content"]) for m in messages)
    prompt_tokens = characters / 4 * len(config.seeds)
    completion_tokens = run.total * config.max_tokens / 2
    return (
        prompt_tokens * config.price_input_per_million
        + completion_tokens * config.price_output_per_million
    ) / 1e6


def start_judging_run(
    evaluator: Evaluator,
    dataset: Dataset,
    mode: str,
    systems: Iterable[System] = (),
    user=None,
    **options: Any,
) -> JudgingRun:
    """Create the run and queue it (after the surrounding transaction commits).
    The one way admin, API and commands start a judging run; a broker that
    cannot take the task leaves the run failed, saying why."""
    with transaction.atomic():
        run = create_judging_run(evaluator, dataset, mode, systems, user, **options)
        enqueue_on_commit(run)
    run.refresh_from_db()
    return run


def resume_run(run: JudgingRun, *, send: bool = True) -> Outcome:
    """A cancelled, failed or interrupted run goes on with its pending items; a
    running one is left alone (the answer says so)."""
    return lifecycle.resume(run, send=send)


def retry_failed(run: JudgingRun) -> Outcome:
    """Ask again the items that need a human (their answers did not parse),
    then go on with every pending item."""

    def reopen(locked: JudgingRun) -> bool:
        reopened = JudgeItem.objects.filter(run=locked, status=JudgeItem.Status.NEEDS_HUMAN).update(
            status=JudgeItem.Status.PENDING, outcome=RETRY, detail=""
        )
        pending = JudgeItem.objects.filter(run=locked, status=JudgeItem.Status.PENDING).exists()
        return bool(reopened or pending)

    return lifecycle.resume(run, before_queue=reopen)


def cancel_run(run: JudgingRun) -> Outcome:
    return lifecycle.cancel(run)


def judge_run(run_id: int) -> JudgingRun:
    """Do a run's work (the task calls this): an LLM judge's pending items
    through the model driver, or a metric computed here. A run whose
    evaluator can no longer be read fails, saying why."""
    run = JudgingRun.objects.select_related("evaluator").get(pk=run_id)
    try:
        plugin = plugin_for(run.evaluator)
    except (ConfigError, registry.UnknownEvaluator) as error:
        # The run is still queued here, and `finish` ends only a running run
        # under its lease: claim it first, or it would stay queued for ever.
        with lifecycle.holding_lease(JudgingRun, run.pk) as lease:
            if lease is not None:
                finish(run, JudgingRun.Status.FAILED, f"{run.evaluator.name}: {error}", lease)
        run.refresh_from_db()
        return run
    if plugin.needs_model:
        return run_llm_judging(run_id)
    return run_metric_judging(run_id)

"""The events of the apps before webhooks, as deliveries: each receiver runs
inside the transaction of the change (the signals are sent there), so its
deliveries commit or roll back with it. A receiver never raises: a webhook
that cannot be recorded is logged, and the change goes on."""

from __future__ import annotations

import logging
import re
from typing import Any

from django.db import transaction
from django.db.models import Model

from adaptive import events as adaptive_events
from adaptive.models import AdaptiveStudy
from annotator import signals as annotator_signals
from annotator.models import Study
from runs import signals as run_signals
from runs.models import Run
from webhooks.models import EventType
from webhooks.services import do_emit, subscribed

logger = logging.getLogger(__name__)

RUN_EVENTS = {
    "done": EventType.RUN_FINISHED,
    "failed": EventType.RUN_FAILED,
    "cancelled": EventType.RUN_CANCELLED,
}


def when(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def kind_of(model: type[Model]) -> str:
    """JudgingRun -> judging_run."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", model.__name__).lower()


def run_data(run: Run) -> dict:
    return {
        "kind": kind_of(type(run)),
        "id": run.pk,
        "name": str(run),
        "status": run.status,
        "message": run.message[:1000],
        "total": run.total,
        "done": run.done,
        "failed": run.failed,
        "created_at": when(run.created_at),
        "started_at": when(run.started_at),
        "finished_at": when(run.finished_at),
    }


def study_data(study: Study) -> dict:
    tasks = study.tasks.count()
    return {
        "id": study.pk,
        "name": study.name,
        "kind": study.kind,
        "rating_type": study.rating_type,
        "status": study.status,
        "tasks": tasks,
        "raters_per_task": study.raters_per_task,
        "places": tasks * study.raters_per_task,
    }


def adaptive_data(adaptive: AdaptiveStudy) -> dict:
    return {
        "id": adaptive.pk,
        "name": adaptive.name,
        "goal": adaptive.goal,
        "status": adaptive.status,
        "stop_reason": adaptive.stop_reason,
    }


def emit(event_type: str, model: type[Model], pk: int, data_of: Any, **extra: Any) -> None:
    """Deliveries of the event to the object's project's endpoints that want
    it; the payload is built only when one does."""
    try:
        with transaction.atomic():  # a failure here undoes only this
            project_id = model._default_manager.values_list("project_id", flat=True).get(pk=pk)
            endpoints = subscribed(project_id, event_type)
            if endpoints:
                thing = model._default_manager.get(pk=pk)
                do_emit(event_type, project_id, {**data_of(thing), **extra}, endpoints)
    except Exception:
        logger.exception("Could not record the webhook %s of %s %s", event_type, model, pk)


def on_run_finished(sender: type[Run], pk: int, status: str, **kwargs: Any) -> None:
    if status in RUN_EVENTS:
        emit(RUN_EVENTS[status], sender, pk, lambda run: {"run": run_data(run)})


def budget(limit: float, spent: float, currency: str) -> dict:
    return {"limit": round(float(limit), 6), "spent": round(float(spent), 6), "currency": currency}


def on_run_budget(
    sender: type[Run], pk: int, limit: float, spent: float, currency: str, **kwargs: Any
) -> None:
    emit(
        EventType.BUDGET_REACHED,
        sender,
        pk,
        lambda run: {"subject": "run", "run": run_data(run)},
        budget=budget(limit, spent, currency),
    )


def on_adaptive_budget(
    sender: type[AdaptiveStudy], pk: int, limit: float, spent: float, currency: str, **kwargs: Any
) -> None:
    emit(
        EventType.BUDGET_REACHED,
        AdaptiveStudy,
        pk,
        lambda adaptive: {"subject": "adaptive_study", "adaptive_study": adaptive_data(adaptive)},
        budget=budget(limit, spent, currency),
    )


def on_quota_filled(sender: Any, study_id: int, **kwargs: Any) -> None:
    emit(EventType.STUDY_QUOTA_FILLED, Study, study_id, lambda s: {"study": study_data(s)})


def on_study_completed(sender: Any, study_id: int, **kwargs: Any) -> None:
    emit(EventType.STUDY_COMPLETED, Study, study_id, lambda s: {"study": study_data(s)})


def connect() -> None:
    run_signals.run_finished.connect(on_run_finished, dispatch_uid="webhooks-run-finished")
    run_signals.budget_reached.connect(on_run_budget, dispatch_uid="webhooks-run-budget")
    adaptive_events.budget_reached.connect(
        on_adaptive_budget, dispatch_uid="webhooks-adaptive-budget"
    )
    annotator_signals.quota_filled.connect(on_quota_filled, dispatch_uid="webhooks-quota-filled")
    annotator_signals.study_completed.connect(
        on_study_completed, dispatch_uid="webhooks-study-completed"
    )

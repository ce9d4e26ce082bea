"""(Re)build a study's tasks and items from its selection."""

from __future__ import annotations

import random

from django.db import transaction

from annotator import defaults
from annotator.actions.audit import Action, audit
from annotator.actions.judgments import do_ensure_evaluator
from annotator.actions.locks import lock_study
from annotator.errors import StudyConflict
from annotator.models import Item, Study, Task
from annotator.selectors import selection, why_items_are_frozen
from annotator.validation import validate_settings
from core.words import count
from corpus.models import QuestionText
from users.models import User


@transaction.atomic
def check_build_items(study: Study, actor: User | None = None) -> dict[str, int]:
    """(Re)build the study's tasks and items from its selection. Takes the study
    lock, then do_build_items.

    Refused (StudyConflict, the API's 409) once anyone has arrived or rated:
    changing what was rated would make the collected ratings meaningless, and
    a participant's task holds their own order of its items."""
    study = lock_study(study)
    if reason := why_items_are_frozen(study):
        raise StudyConflict(
            f"Study '{study.name}' {reason}, so its items cannot change. "
            "Create a new study for a different selection."
        )
    validate_settings(study)
    return do_build_items(study, actor)


def do_build_items(study: Study, actor: User | None = None) -> dict[str, int]:
    """Replace the study's tasks and items with those of its selection (a
    StudyError when the selection holds no responses); counts of each.

    Needs the study lock, and nobody arrived yet (check_build_items takes the
    lock and checks; check_save_study holds it)."""
    responses, opponents = selection(study, study.systems.all(), study.documents.all())
    wording = {
        qt.question_id: qt
        for qt in QuestionText.objects.filter(
            dataset=study.dataset, question_id__in={r.question_id for r in responses}
        )
    }
    Item.objects.filter(study=study).delete()
    Task.objects.filter(study=study).delete()
    tasks: dict[int | None, Task] = {}
    if study.kind == Study.Kind.GOLD:
        tasks[None] = Task.objects.create(study=study, label="all meetings")
    else:
        for document in sorted(
            {r.question.document for r in responses}, key=lambda d: d.external_id
        ):
            tasks[document.pk] = Task.objects.create(
                study=study, document=document, label=document.external_id
            )
    items = []
    for response in responses:
        text = wording[response.question_id]
        opponent = opponents.get(response.question_id)
        items.append(
            Item(
                study=study,
                task=tasks[
                    None if study.kind == Study.Kind.GOLD else response.question.document_id
                ],
                response=response,
                opponent=opponent,
                question=text.text,
                correct_answer=text.reference_answer,
                answer=response.text,
                other_answer=opponent.text if opponent else "",
            )
        )
    for task in tasks.values():
        for check in defaults.ATTENTION_CHECKS if study.attention_checks else ():
            items.append(Item(study=study, task=task, kind=Item.Kind.ATTENTION, **check))
        for practice in study.practice_items:
            items.append(
                Item(
                    study=study,
                    task=task,
                    kind=Item.Kind.PRACTICE,
                    question=practice["question"],
                    correct_answer=practice["correct_answer"],
                    answer=practice["answer"],
                    other_answer=practice.get("other_answer", ""),
                    expected_min=practice["expected_min"],
                    expected_max=practice["expected_max"],
                    feedback=practice.get("feedback", ""),
                )
            )
    Item.objects.bulk_create(items)
    do_ensure_evaluator(study)
    audit(
        study,
        Action.BUILD_ITEMS,
        actor=actor,
        detail=f"{count(len(tasks), 'task')}, {count(len(items), 'item')} "
        f"({count(len(responses), 'response')})",
    )
    return {"tasks": len(tasks), "items": len(items), "responses": len(responses)}


def sample_per_task(study: Study, per_task: int) -> list[int]:
    """At most `per_task` responses of each meeting (a crowd study's task) of
    the study's selection, spread over its systems: each system's first, then
    each one's second, ..., in an order drawn at random once per study (its
    public id seeds it, so the same study draws the same). A pairwise study
    keeps the baseline's answer beside each response drawn. The ids, for
    `study.responses` (set before the items are built)."""
    responses, opponents = selection(study, study.systems.all(), study.documents.all())
    rng = random.Random(str(study.public_id))
    by_document: dict[int, list] = {}
    for response in responses:
        by_document.setdefault(response.question.document_id, []).append(response)
    chosen: list[int] = []
    for document_id in sorted(by_document):
        candidates = by_document[document_id]
        rng.shuffle(candidates)
        rank: dict[int, int] = {}
        ranked = []
        for response in candidates:
            system = response.run.system_id
            rank[system] = rank.get(system, 0) + 1
            ranked.append((rank[system], response))
        ranked.sort(key=lambda pair: pair[0])  # stable: the draw's order within a rank
        for _, response in ranked[:per_task]:
            chosen.append(response.pk)
            if response.question_id in opponents:
                chosen.append(opponents[response.question_id].pk)
    return sorted(set(chosen))

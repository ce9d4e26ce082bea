"""A study's settings: check a change, save it (and rebuild the items while
nobody has arrived), delete a study nobody took part in."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction
from django.db.models import ProtectedError

from annotator.actions.audit import Action, audit
from annotator.actions.items import do_build_items
from annotator.actions.judgments import do_relabel_evaluator
from annotator.actions.locks import lock_study
from annotator.errors import StudyConflict, StudyError
from annotator.models import Item, Participant, Study
from annotator.selectors import documents_outside, selection, why_items_are_frozen
from annotator.validation import frozen_changes, validate_gold_covers, validate_settings
from corpus.models import Document
from generation.models import System
from judging.models import Evaluator
from users.models import User


def validate_study_change(
    stored: Study | None,
    values: dict[str, Any],
    systems: Iterable[System],
    documents: Iterable[Document],
    changed: list[str],
) -> None:
    """Everything check_save_study would refuse, checked before saving (forms and
    the API call it): `values` are the new field values (many-to-many apart),
    `systems` and `documents` the new selection, `changed` the changed fields."""
    candidate = Study(
        **{
            f.attname: getattr(stored, f.attname)
            for f in Study._meta.concrete_fields
            if stored is not None
        }
    )
    for key, value in values.items():
        if key not in ("systems", "documents", "gold_annotators", "project"):
            setattr(candidate, key, value)
    if stored is None or stored.pk is None:
        # a new study looks for its runs in the project it is made in (not the
        # model's default project): `values` name it
        project = values.get("project")
        if project is not None:
            candidate.project = project
    validate_settings(candidate)
    reason = why_items_are_frozen(stored) if stored is not None and stored.pk is not None else ""
    frozen = frozen_changes(changed)
    if reason and frozen:
        raise StudyConflict(
            f"This study {reason}, so what it rates and how cannot change "
            f"({', '.join(frozen)}). Create a new study instead."
        )
    if not reason and (stored is None or stored.pk is None or frozen):
        selection(candidate, systems, documents)
    elif stored is not None and "gold_evaluator" in changed:
        validate_gold_covers(candidate, set(stored.items.values_list("response_id", flat=True)))


@transaction.atomic
def check_save_study(
    study: Study,
    changed: list[str],
    *,
    actor: User | None = None,
    after_save: Callable[[Study], None] | None = None,
) -> Study:
    """Save a new or changed study and (re)build its items while nobody has rated.
    Validates the settings, takes the study lock (of a stored study) before
    anything else, refuses a change of what is rated once anyone arrived or
    rated (StudyConflict), then do_save_study.

    `changed` names the fields the caller changed; `after_save(study)` sets
    many-to-many fields. Refused, with nothing saved: invalid settings, a
    selection with no responses, and any change of what is rated once there
    are ratings."""
    validate_settings(study)
    if study.pk is not None:
        # by pk: `study` holds the unsaved changes
        reason = why_items_are_frozen(lock_study(study.pk))
        frozen = frozen_changes(changed)
        if reason and frozen:
            raise StudyConflict(
                f"Study '{study.name}' {reason}, so what it rates and how "
                f"cannot change ({', '.join(frozen)}). Create a new study instead."
            )
    return do_save_study(study, changed, actor=actor, after_save=after_save)


def do_save_study(
    study: Study,
    changed: list[str],
    *,
    actor: User | None = None,
    after_save: Callable[[Study], None] | None = None,
) -> Study:
    """Save the study, set its many-to-many fields, rebuild its items when what it
    rates changed (or it is new), and audit the change. A StudyError (meetings of
    another dataset, a selection without responses) undoes it all.

    Needs the study lock of a stored study (check_save_study takes it, and
    checks that nobody arrived when what is rated changes); a new study's row
    is this transaction's own."""
    creating = study.pk is None
    study.save()
    if after_save is not None:
        after_save(study)
    outside = documents_outside(study.dataset, study.documents.all())
    if outside:
        raise StudyError(
            f"These meetings are not in {study.dataset}: {', '.join(outside)}. "
            "Choose meetings of the study's dataset."
        )
    if study.evaluator_id is not None and "name" in changed:
        do_relabel_evaluator(study)
    if creating or frozen_changes(changed):
        # the study as stored, under its lock (refreshed in place), then its items
        do_build_items(lock_study(study), actor)
    elif "gold_evaluator" in changed:
        validate_gold_covers(
            study, set(Item.objects.filter(study=study).values_list("response_id", flat=True))
        )
    if not creating and changed:
        audit(study, Action.CHANGED, actor=actor, detail=", ".join(sorted(changed)))
    return study


@transaction.atomic
def check_delete_study(study: Study) -> None:
    """Delete a study nobody has taken part in. Takes the study lock, refuses a
    study with participants (StudyConflict: close it instead), then
    do_delete_study."""
    study = lock_study(study)
    if Participant.objects.filter(study=study).exists():
        raise StudyConflict(
            f"Study '{study.name}' has participants, so it cannot be deleted; close it instead."
        )
    try:
        with transaction.atomic():
            do_delete_study(study)
    except ProtectedError as error:
        # another app's records need it (an adaptive study's draws, for its batches)
        kinds = sorted({str(o._meta.verbose_name_plural) for o in error.protected_objects})
        raise StudyConflict(
            f"Study '{study.name}' cannot be deleted: {', '.join(kinds)} refer to it "
            "(a batch of an adaptive study: stop the adaptive study instead)."
        ) from None


def do_delete_study(study: Study) -> None:
    """Delete the study with its items and its (empty) evaluator.

    Needs the study lock and no participants (check_delete_study takes the lock
    and checks)."""
    evaluator_id = study.evaluator_id
    study.delete()
    if evaluator_id is not None:
        evaluator = Evaluator.objects.get(pk=evaluator_id)
        if not evaluator.judgments.exists() and not evaluator.verdicts.exists():
            evaluator.delete()

"""The study's evaluator, and its ratings as judgments (pairwise: verdicts).

A study's ratings reach the analysis as scores of its own Evaluator (tied by
foreign key), rater by rater: a rater's judgments equal their counted ratings
(annotator.selectors.counted_ratings: accepted participants whose work is
complete), kept so by every change that alters what counts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from annotator.actions.locks import lock_study
from annotator.models import Participant, Rating, Study
from annotator.selectors import counted_ratings
from judging import scores
from judging.models import Evaluator, Judgment, PairwiseVerdict

HUMAN_VERDICT_SEED = 0  # PairwiseVerdict.seed of human raters (LLM judges use their seed)


# --- The study's evaluator ----------------------------------------------------------------------


def _unique_evaluator_name(study: Study) -> str:
    name = study.evaluator_name
    taken = Evaluator.objects.filter(name=name)
    if study.evaluator_id:
        taken = taken.exclude(pk=study.evaluator_id)
    return f"{name} #{study.pk}" if taken.exists() else name


def do_ensure_evaluator(study: Study) -> Evaluator:
    """The study's evaluator, created once and tied by foreign key.

    Needs the study lock (check_build_items, check_sync_study_judgments and the
    checks that call do_sync_rater_judgments take it)."""
    if study.evaluator is not None:
        return study.evaluator
    kind = (
        Evaluator.Kind.GOLD_HUMAN if study.kind == Study.Kind.GOLD else Evaluator.Kind.CROWD_HUMAN
    )
    evaluator = Evaluator.objects.create(
        project_id=study.project_id,
        name=_unique_evaluator_name(study),
        kind=kind,
        origin=Evaluator.Origin.CONCORD,
        description=f"Ratings of study #{study.pk}.",
        config={"study_id": study.pk, "rating_type": study.rating_type},
    )
    study.evaluator = evaluator
    Study.objects.filter(pk=study.pk).update(evaluator=evaluator)
    return evaluator


def do_relabel_evaluator(study: Study) -> None:
    """The evaluator's name is only a label: renaming a study renames it, and no
    judgment moves (they hang on the foreign key).

    Needs the study lock (check_save_study takes it)."""
    evaluator = study.evaluator
    if evaluator is None:
        return
    evaluator.name = _unique_evaluator_name(study)
    evaluator.save(update_fields=["name"])


# --- Ratings as judgments -----------------------------------------------------------------------


def do_sync_rater_judgments(study: Study, participant: Participant) -> int:
    """Make this rater's judgments (or pairwise verdicts) of the study's
    evaluator equal to their counted ratings. Touches this rater's rows only.

    Needs the study lock (check_complete_assignment, check_exclude_participant
    and check_reinstate_participant take it)."""
    evaluator = do_ensure_evaluator(study)
    rater = participant.rater_id
    ratings = counted_ratings(study).filter(assignment__participant=participant)
    if study.is_pairwise:
        PairwiseVerdict.objects.filter(evaluator=evaluator, rater=rater).delete()
        verdicts = [_verdict(evaluator, rater, *row) for row in _verdict_rows(ratings)]
        PairwiseVerdict.objects.bulk_create(verdicts)
        return len(verdicts)
    Judgment.objects.filter(evaluator=evaluator, rater=rater).delete()
    judgments = [
        _judgment(study, evaluator, rater, response_id, score)
        for response_id, score in ratings.values_list("item__response_id", "score")
        if score is not None  # a rubric study's ratings all have one
    ]
    Judgment.objects.bulk_create(judgments)
    return len(judgments)


@transaction.atomic
def check_sync_study_judgments(study: Study) -> int:
    """Check every rater of the study (admin action "update the scores"). Takes
    the study lock, then do_sync_study_judgments. Returns the number of
    judgments (or verdicts)."""
    return do_sync_study_judgments(lock_study(study))


def do_sync_study_judgments(study: Study) -> int:
    """Add, change or remove only the rows that differ from the counted ratings.

    Needs the study lock (check_sync_study_judgments takes it)."""
    evaluator = do_ensure_evaluator(study)
    counted = counted_ratings(study)
    if study.is_pairwise:
        return _sync_verdicts(evaluator, counted)
    wanted = {
        (rater, rid): score
        for rater, rid, score in _rater_values(counted, "item__response_id", "score")
    }
    stored = {(j.rater, j.response_id): j for j in Judgment.objects.filter(evaluator=evaluator)}
    stale = [
        j.pk
        for key, j in stored.items()
        if key not in wanted or j.raw_score != wanted[key] or j.raw_scale_max != study.scale_max
    ]
    Judgment.objects.filter(pk__in=stale).delete()
    kept = {key for key, j in stored.items() if j.pk not in stale}
    Judgment.objects.bulk_create(
        _judgment(study, evaluator, rater, rid, score)
        for (rater, rid), score in wanted.items()
        if (rater, rid) not in kept
    )
    return len(wanted)


def _sync_verdicts(evaluator: Evaluator, counted: QuerySet[Rating]) -> int:
    wanted = {
        (rater, rid, oid): _verdict(evaluator, rater, rid, oid, choice, swapped)
        for rater, rid, oid, choice, swapped in _rater_values(
            counted, "item__response_id", "item__opponent_id", "choice", "swapped"
        )
    }
    stored = {
        (v.rater, v.response_id, v.opponent_id): v
        for v in PairwiseVerdict.objects.filter(evaluator=evaluator)
    }
    same = {
        key
        for key, v in stored.items()
        if key in wanted and (wanted[key].order, wanted[key].winner) == (v.order, v.winner)
    }
    PairwiseVerdict.objects.filter(
        pk__in=[v.pk for key, v in stored.items() if key not in same]
    ).delete()
    PairwiseVerdict.objects.bulk_create(v for key, v in wanted.items() if key not in same)
    return len(wanted)


def _judgment(
    study: Study, evaluator: Evaluator, rater: str, response_id: int, score: int
) -> Judgment:
    # a person's rating is a precomputed score on the study's scale (the evaluator interface)
    return study.rating_scale().judgment(evaluator.pk, response_id, score, rater=rater)


def _verdict_rows(ratings: QuerySet[Rating]) -> QuerySet[Rating, tuple[Any, ...]]:
    return ratings.values_list("item__response_id", "item__opponent_id", "choice", "swapped")


def _verdict(
    evaluator: Evaluator, rater: str, response_id: int, opponent_id: int, choice: str, swapped: bool
) -> PairwiseVerdict:
    """A human's choice as a verdict: order 0 when the response was shown first (A)."""
    winner = {"A": "first", "B": "second", "tie": "tie"}[choice]
    return scores.verdict(
        evaluator.pk,
        response_id,
        opponent_id,
        winner,
        seed=HUMAN_VERDICT_SEED,
        order=1 if swapped else 0,
        rater=rater,
    )


def _rater_values(ratings: QuerySet[Rating], *fields: str) -> Iterator[tuple[Any, ...]]:
    """Rows of `fields`, each led by its rater's id (the Prolific id, or user:<id>)."""
    rows = ratings.values_list(
        "assignment__participant__prolific_pid", "assignment__participant__user_id", *fields
    )
    for pid, user_id, *rest in rows:
        yield (pid or f"user:{user_id}", *rest)

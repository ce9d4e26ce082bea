"""The rules a study's settings must follow. Reads only; each refusal is a
StudyError whose message says what is wrong. The forms and the API check these
before saving; annotator.actions.settings checks them again under the lock."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from annotator.errors import StudyError
from annotator.models import Study
from judging.models import Judgment

# What a study rates and how: frozen once anyone has rated (a correction is a new study).
SELECTION_FIELDS = (
    "kind",
    "rating_type",
    "dataset",
    "mode",
    "seed",
    "systems",
    "baseline_system",
    "documents",
    "responses",
    "attention_checks",
    "practice_items",
    "practice_pass",
    "scale_max",
    "scale_labels",
    "rubric",
    "guidelines",
)


def frozen_changes(changed: Collection[str]) -> list[str]:
    """The changed fields that decide what the study rates and how."""
    return [f for f in SELECTION_FIELDS if f in changed]


def validate_settings(study: Study) -> None:
    """Refuse settings a study cannot run with; the message names what is wrong."""
    if study.raters_per_task is None or study.raters_per_task < 1:
        raise StudyError("Raters per task must be at least 1.")
    needs_failed_code = study.attention_checks or bool(study.practice_items)
    if needs_failed_code and not (study.failed_attention_code or "").strip():
        raise StudyError(
            "With attention checks or a qualification round, set a failed-check completion "
            "code: participants who fail get it instead of the normal code."
        )
    if needs_failed_code and study.failed_attention_code == study.completion_code:
        raise StudyError("The failed-check code must differ from the completion code.")
    if study.screen_out_pence:
        validate_screen_out(study)
    if study.scale_labels and len(study.scale_labels) != study.scale_max:
        raise StudyError(
            f"Give one label per point of the 1-{study.scale_max} scale "
            f"({len(study.scale_labels)} given), or none."
        )
    if study.scale_labels and not all(isinstance(x, str) for x in study.scale_labels):
        raise StudyError("Scale labels are a list of texts, lowest point first.")
    if study.is_pairwise and study.baseline_system_id is None:
        raise StudyError("A pairwise study needs a baseline system to compare with.")
    if study.is_pairwise and study.scale_max != 10:
        raise StudyError("A pairwise study has no rating scale: leave the scale at 1-10.")
    if study.is_pairwise and (study.attention_checks or study.practice_items):
        raise StudyError(
            "Attention checks and practice items are for rubric studies; a pairwise study "
            "cannot use them yet."
        )
    validate_practice_items(study.practice_items, study.practice_pass, study.scale_max)


def validate_practice_items(items: Any, pass_count: int, scale_max: int = 10) -> None:
    """`items` is what the study's JSON field holds (anything until checked here)."""
    if not isinstance(items, list):
        raise StudyError("Practice items are a list of objects.")
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise StudyError(f"Practice item {number} is not an object.")
        missing = [
            k
            for k in ("question", "correct_answer", "answer", "expected_min", "expected_max")
            if k not in item
        ]
        if missing:
            raise StudyError(f"Practice item {number} lacks {', '.join(missing)}.")
        for key in ("question", "correct_answer", "answer", "feedback", "other_answer"):
            if key in item and (not isinstance(item[key], str) or "\x00" in item[key]):
                raise StudyError(f"Practice item {number}: {key} must be text.")
        low, high = item["expected_min"], item["expected_max"]
        if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high <= scale_max):
            raise StudyError(
                f"Practice item {number}: expected_min and expected_max are whole scores "
                f"on the study's scale, 1 <= min <= max <= {scale_max}."
            )
    if pass_count > len(items):
        raise StudyError(
            f"The pass threshold ({pass_count}) is higher than the number of practice items "
            f"({len(items)})."
        )
    if items and pass_count < 1:
        raise StudyError("With practice items, set how many must be passed (at least 1).")


def validate_gold_covers(study: Study, response_ids: set[int]) -> None:
    """The study's gold evaluator (if any) has scores on some of these responses."""
    if study.gold_evaluator_id is None:
        return
    scored = Judgment.objects.filter(
        evaluator_id=study.gold_evaluator_id, response_id__in=response_ids
    ).exists()
    if not scored:
        raise StudyError(
            f"The gold evaluator '{study.gold_evaluator}' has no scores on this selection, so "
            "quality control could not compare anyone with it. Choose another gold evaluator "
            "or none."
        )


def validate_screen_out(study: Study) -> None:
    """Prolific's fixed screen-out payment: for a qualification round only, below
    the reward, with a code of its own."""
    from annotator.prolific_api import reward_in_pence

    if not study.practice_items:
        raise StudyError("Screening out needs a qualification round (practice items) to fail.")
    reward = reward_in_pence(study.hourly_pay, study.estimated_minutes)
    if study.screen_out_pence >= reward:
        raise StudyError(
            f"The screen-out payment ({study.screen_out_pence} pence) must be below the "
            f"reward ({reward} pence), as Prolific requires."
        )
    code = (study.screen_out_code or "").strip()
    if not code or code in (study.completion_code, study.failed_attention_code):
        raise StudyError("The screen-out code must be set and differ from the other codes.")

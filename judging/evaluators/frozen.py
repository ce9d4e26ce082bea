"""An evaluator that has judged is frozen: its judgments must stay explained.

Once an evaluator holds judgments or pairwise verdicts, what it is (name,
kind, origin, raw scale, configuration) no longer changes; only its
description may. A changed judge is a new evaluator. The admin form and the
API both ask ``frozen_changes``.
"""

from __future__ import annotations

from typing import Any

from core.errors import Conflict, ErrorCode
from judging.models import Evaluator

FROZEN_FIELDS = ("name", "kind", "origin", "raw_scale_min", "raw_scale_max", "config")
FIELD_WORDS = {
    "name": "name",
    "kind": "kind",
    "origin": "origin",
    "raw_scale_min": "raw scale minimum",
    "raw_scale_max": "raw scale maximum",
    "config": "configuration",
}


class EvaluatorFrozen(Conflict):
    """A change of what a judged evaluator is; `frozen_fields` names the fields."""

    code = ErrorCode.EVALUATOR_FROZEN


def judged_count(evaluator: Evaluator) -> int:
    """Judgments and pairwise verdicts the evaluator holds."""
    if evaluator.pk is None:
        return 0
    return evaluator.judgments.count() + evaluator.verdicts.count()


def frozen_changes(evaluator: Evaluator, values: dict[str, Any]) -> list[str]:
    """The frozen fields that ``values`` would change; empty when the evaluator
    has not judged (or the values change only what may change)."""
    changed = [
        field
        for field in FROZEN_FIELDS
        if field in values and values[field] != getattr(evaluator, field)
    ]
    if not changed or not judged_count(evaluator):
        return []
    return changed


def frozen_message(evaluator: Evaluator, fields: list[str]) -> str:
    words = [FIELD_WORDS[f] for f in fields]
    listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    count = judged_count(evaluator)
    return (
        f"This evaluator has judgments ({count:,} judgments and pairwise verdicts): its "
        f"{listed} {'is' if len(words) == 1 else 'are'} frozen so that they stay explained "
        f"(its description may still change). Create a new evaluator instead "
        f"(e.g. '{evaluator.name} v{evaluator.version + 1}')."
    )


def check_not_frozen(evaluator: Evaluator, values: dict[str, Any]) -> None:
    """Raise EvaluatorFrozen when ``values`` would change a frozen field."""
    frozen = frozen_changes(evaluator, values)
    if frozen:
        raise EvaluatorFrozen(frozen_message(evaluator, frozen), frozen_fields=frozen)

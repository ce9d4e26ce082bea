"""RULER's official string matches as evaluator plug-ins (the computation is in
judging.metrics.ruler)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from judging.evaluators.base import Metric
from judging.evaluators.registry import register
from judging.metrics import ruler

OFFICIAL = "RULER's official code (evaluate.py)"


class _RulerMatch(Metric):
    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        return ruler.task_score(values)


@register
class RulerStringMatchAll(_RulerMatch):
    name = ruler.STRING_MATCH_ALL
    evaluator_name = f"metric: {ruler.STRING_MATCH_ALL}"
    description = (
        f"string_match_all as {OFFICIAL} computes it (the needle, variable-tracking and "
        "word-extraction tasks): the share of the references found in the prediction, case "
        "ignored, after control characters are made newlines; the task score is 100 x the "
        "mean, rounded to two decimals."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return ruler.string_match_all(prediction, references)


@register
class RulerStringMatchPart(_RulerMatch):
    name = ruler.STRING_MATCH_PART
    evaluator_name = f"metric: {ruler.STRING_MATCH_PART}"
    description = (
        f"string_match_part as {OFFICIAL} computes it (the QA tasks): 1 when any reference is "
        "found in the prediction, case ignored; the task score is 100 x the mean, rounded to two "
        "decimals."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return ruler.string_match_part(prediction, references)

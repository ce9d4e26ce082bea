"""LongBench v2's official scoring as an evaluator plug-in (the computation is
in judging.metrics.longbench_v2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from judging.evaluators.base import Metric
from judging.evaluators.registry import register
from judging.metrics import longbench_v2


@register
class LongBenchV2Accuracy(Metric):
    name = "longbench_v2.accuracy"
    evaluator_name = "metric: longbench_v2.accuracy"
    description = (
        "LongBench v2's accuracy as its official code computes it (pred.py, result.py): the "
        'letter after "The correct answer is" against the reference\'s; the task score is '
        "100 x right over questions, rounded to one decimal."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        if len(references) != 1 or references[0] not in longbench_v2.CHOICES:
            raise ValueError(
                f"LongBench v2's reference is one letter A-D, not {list(references)!r}."
            )
        return longbench_v2.accuracy(prediction, references[0])

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        if not values:
            raise ValueError("No scored item.")
        return round(100 * sum(values) / len(values), 1)  # result.py's rounding

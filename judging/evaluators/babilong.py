"""BABILong's official accuracy as an evaluator plug-in (the computation is in
judging.metrics.babilong). It reads the question and the task besides the
answer and the target: a label the question names is never the answer, and
each bAbI task has its own labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from judging.evaluators.base import Metric
from judging.evaluators.registry import register
from judging.metrics import babilong


@register
class BabilongAccuracy(Metric):
    name = babilong.ACCURACY
    evaluator_name = f"metric: {babilong.ACCURACY}"
    description = (
        "BABILong's accuracy as its official code computes it (metrics.py, collect_results.py): "
        "right when the answer's first sentence names the target and no other of the task's "
        "labels (those in the question left out); the task score is 100 x right over "
        "questions."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        raise ValueError(
            "BABILong's accuracy needs the question and the task (labels the question names "
            "are never the answer)."
        )

    def item_asked(
        self, prediction: str, references: Sequence[str], *, question: str, task: str
    ) -> tuple[float, dict[str, float]]:
        if len(references) != 1:
            raise ValueError(f"BABILong has one target per question, not {list(references)!r}.")
        return babilong.accuracy(prediction, references[0], question, task), {}

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        return babilong.task_score(values)

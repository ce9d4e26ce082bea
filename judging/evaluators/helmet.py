"""HELMET's metrics as evaluator plug-ins (the computation is in
judging.metrics.helmet). Each reads the task: HELMET post-processes an
output by its dataset's name (the prefix its answer follows, RULER's recall,
InfiniteBench's choices) before it scores it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from judging.evaluators.base import Metric
from judging.evaluators.registry import register
from judging.metrics import helmet


class HelmetMetric(Metric):
    metric: ClassVar[str]

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        raise ValueError(
            "HELMET's metrics need the task: its post-processing depends on the dataset "
            "(nq, json_kv, multi_lexsum, ruler_..., infbench_...)."
        )

    def item_asked(
        self, prediction: str, references: Sequence[str], *, question: str, task: str
    ) -> tuple[float, dict[str, float]]:
        scores = helmet.post_process(task, prediction, list(references))
        if self.metric not in scores:
            raise ValueError(f"HELMET scores {task!r} by {', '.join(scores)}, not {self.metric}.")
        return float(scores[self.metric]), {}

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        return helmet.averaged(values)


def _described(metric: str, what: str) -> str:
    return (
        f"HELMET's {metric} as its code computes it: {what}, after the dataset's "
        "post-processing (the better of the raw and the parsed answer); the task score is "
        "100 x the mean."
    )


@register
class HelmetExactMatch(HelmetMetric):
    metric = "exact_match"
    name = "helmet.exact_match"
    evaluator_name = "metric: helmet.exact_match"
    description = _described(metric, "the answer equals a reference after SQuAD's normalisation")


@register
class HelmetF1(HelmetMetric):
    metric = "f1"
    name = "helmet.f1"
    evaluator_name = "metric: helmet.f1"
    description = _described(metric, "SQuAD's token F1, the best over the references")


@register
class HelmetSubstringExactMatch(HelmetMetric):
    metric = "substring_exact_match"
    name = "helmet.substring_exact_match"
    evaluator_name = "metric: helmet.substring_exact_match"
    description = _described(metric, "a normalised reference inside the normalised answer")


@register
class HelmetRougeLF1(HelmetMetric):
    metric = "rougeL_f1"
    name = "helmet.rougeL_f1"
    evaluator_name = "metric: helmet.rougeL_f1"
    description = _described(metric, "ROUGE-L F1, stemmed, the best over the references")


@register
class HelmetRougeLRecall(HelmetMetric):
    metric = "rougeL_recall"
    name = "helmet.rougeL_recall"
    evaluator_name = "metric: helmet.rougeL_recall"
    description = _described(metric, "ROUGE-L recall, stemmed, the best over the references")


@register
class HelmetRougeLsumF1(HelmetMetric):
    metric = "rougeLsum_f1"
    name = "helmet.rougeLsum_f1"
    evaluator_name = "metric: helmet.rougeLsum_f1"
    description = _described(metric, "ROUGE-Lsum F1, stemmed")


@register
class HelmetRougeLsumRecall(HelmetMetric):
    metric = "rougeLsum_recall"
    name = "helmet.rougeLsum_recall"
    evaluator_name = "metric: helmet.rougeLsum_recall"
    description = _described(metric, "ROUGE-Lsum recall, stemmed")


@register
class HelmetRulerRecall(HelmetMetric):
    metric = "ruler_recall"
    name = "helmet.ruler_recall"
    evaluator_name = "metric: helmet.ruler_recall"
    description = _described(metric, "the share of the answers in the output, case ignored")

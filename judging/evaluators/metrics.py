"""The automatic metrics as evaluator plug-ins: no model, no key, a value in
[0, 1] from a prediction and its references (the computations are in
`judging.metrics`). Each registers under its name; its stored evaluator is
`evaluator_name` ("metric: rouge"), created the first time a researcher can
pick it (`judging.judging_runs.ensure_metric_evaluators`).

A new metric is one class here (or in a module of its own that this package
imports) with `@register`: docs/judging.md shows one.
"""

from __future__ import annotations

from collections.abc import Sequence

from judging.evaluators.base import Metric
from judging.evaluators.registry import register
from judging.metrics import (
    concordance_index,
    exact_match,
    exponential_similarity,
    multiple_choice_accuracy,
    rouge_geometric_mean,
    token_f1,
)


@register
class Rouge(Metric):
    name = "rouge"
    evaluator_name = "metric: rouge"
    description = (
        "ROUGE as Concord scores ELITR-Bench: per item, the geometric mean of ROUGE-1, -2 and -L "
        "F-measures (rouge-score, stemmed), maximum over references. Not ZeroSCROLLS' "
        "official ROUGE (zeroscrolls.rouge: unstemmed, aggregated per task)."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return rouge_geometric_mean(prediction, references)


@register
class F1(Metric):
    name = "f1"
    evaluator_name = "metric: f1"
    description = (
        "SQuAD-normalised token F1 (text first folded to ASCII), maximum over references. "
        "Not ZeroSCROLLS' official F1 (zeroscrolls.f1)."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return token_f1(prediction, references)


@register
class ExactMatch(Metric):
    name = "exact_match"
    evaluator_name = "metric: exact match"
    description = "SQuAD-normalised exact match with any reference."

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return exact_match(prediction, references)


@register
class MultipleChoiceAccuracy(Metric):
    name = "mc_accuracy"
    evaluator_name = "metric: multiple-choice accuracy"
    description = "1 if the first option letter standing as a word (A-D) is the reference's letter."

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return multiple_choice_accuracy(prediction, references, behaviour="fixed")


@register
class MultipleChoiceAccuracyFaithful(Metric):
    name = "mc_accuracy_faithful"
    evaluator_name = "metric: multiple-choice accuracy (first letter anywhere)"
    description = (
        "1 if the first letter A-D anywhere in the output is the reference's letter "
        '(so "Based on the text, C" reads as B).'
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return multiple_choice_accuracy(prediction, references, behaviour="faithful")


@register
class ExponentialSimilarity(Metric):
    name = "exponential_similarity"
    evaluator_name = "metric: exponential similarity"
    description = (
        "2^(-10 |p - p_hat|) between the first percentage of the output and the "
        "reference's (ZeroSCROLLS' SpaceDigest); no percentage scores 0."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return exponential_similarity(prediction, references)


@register
class ConcordanceIndex(Metric):
    name = "concordance_index"
    evaluator_name = "metric: concordance index"
    description = (
        "Share of the pairs of the reference order that the output puts in the same "
        "order (ZeroSCROLLS' BookSumSort)."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return concordance_index(prediction, references)

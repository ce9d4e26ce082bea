"""ZeroSCROLLS' official metrics as evaluator plug-ins (the computations, and
what differs from the textbook definitions, are in judging.metrics.zeroscrolls;
docs/judging.md lists which task takes which)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from judging.evaluators.base import Metric
from judging.evaluators.registry import register
from judging.metrics import zeroscrolls

OFFICIAL = "ZeroSCROLLS' official code"


@register
class ZeroScrollsF1(Metric):
    name = "zeroscrolls.f1"
    evaluator_name = "metric: zeroscrolls.f1"
    description = (
        f"Token F1 as {OFFICIAL} computes it (Qasper, NarrativeQA, MuSiQue): SQuAD's "
        "normalisation then unidecode; empty scores 0."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return zeroscrolls.f1(prediction, references)


@register
class ZeroScrollsRouge(Metric):
    name = "zeroscrolls.rouge"
    evaluator_name = "metric: zeroscrolls.rouge"
    description = (
        f"ROUGE as {OFFICIAL} computes it (GovReport, SummScreenFD, QMSum, SQuALITY): R-1, R-2 "
        "and R-L unstemmed, each the best over the references; the task score is the geometric "
        "mean of their averages, an item's value the geometric mean of its own."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return self.item(prediction, references)[0]

    def item(self, prediction: str, references: Sequence[str]) -> tuple[float, dict[str, float]]:
        parts = zeroscrolls.rouge_parts(prediction, references)
        return math.prod(parts.values()) ** (1 / 3), parts

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        return zeroscrolls.rouge_geometric_mean([dict(p) for p in parts])


@register
class ZeroScrollsExpSimilarity(Metric):
    name = "zeroscrolls.exp_similarity"
    evaluator_name = "metric: zeroscrolls.exp_similarity"
    description = (
        f"Exponential similarity as {OFFICIAL} computes it (SpaceDigest): 0.5 ** (|gold - "
        "predicted| / 10) of the first percentage written like 40% or 40.5%."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return zeroscrolls.exp_similarity(prediction, references)


@register
class ZeroScrollsConcordanceIndex(Metric):
    name = "zeroscrolls.concordance_index"
    evaluator_name = "metric: zeroscrolls.concordance_index"
    description = (
        f"Concordance index as {OFFICIAL} computes it (BookSumSort): 0 unless the output is a "
        "permutation of the reference's summary ids."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return zeroscrolls.concordance_index(prediction, references)


@register
class ZeroScrollsAccuracy(Metric):
    name = "zeroscrolls.accuracy"
    evaluator_name = "metric: zeroscrolls.accuracy"
    description = (
        f"Multiple-choice accuracy as {OFFICIAL} computes it (QuALITY): the first stand-alone "
        "capital A-D of the output against the reference's."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return zeroscrolls.accuracy(prediction, references)


@register
class ScrollsExactMatch(Metric):
    name = "scrolls.exact_match"
    evaluator_name = "metric: scrolls.exact_match"
    description = (
        "Exact match as SCROLLS' official code computes it (ZeroSCROLLS has none): SQuAD's "
        "normalisation without transliteration; empty against empty matches."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return zeroscrolls.exact_match(prediction, references)

"""LooGLE's automatic metrics as evaluator plug-ins (the computation is in
judging.metrics.loogle): BLEU-1/4 and ROUGE-1/2/L recall for its QA and
summary tasks, exact and partial match of the cloze task's masks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from judging.evaluators.base import Metric
from judging.evaluators.registry import register
from judging.metrics import loogle


def _one(references: Sequence[str]) -> str:
    if len(references) != 1:
        raise ValueError(f"LooGLE has one reference per question, not {len(references)}.")
    return references[0]


class LoogleSimilarity(Metric):
    metric: ClassVar[str]

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return loogle.similarity(self.metric, _one(references), prediction)

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        return loogle.similarity_task_score(values)


class LoogleMatch(Metric):
    metric: ClassVar[str]

    def counts(self, reference: str, prediction: str) -> tuple[int, int]:
        if self.metric == loogle.EXACT_MATCH:
            return loogle.exact_match(reference, prediction)
        return loogle.partial_match(reference, prediction)

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return self.item(prediction, references)[0]

    def item(self, prediction: str, references: Sequence[str]) -> tuple[float, dict[str, float]]:
        matched, masks = self.counts(_one(references), prediction)
        return matched / masks, {"matched": matched, "masks": masks}

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        return loogle.match_task_score([(p["matched"], p["masks"]) for p in parts])


def _described(what: str) -> str:
    return (
        f"LooGLE's {what} as automatic_metrics.py computes it (an empty answer read as 'None'); "
        "the task score is 100 x the mean."
    )


@register
class LoogleBleu1(LoogleSimilarity):
    metric = name = loogle.BLEU_1
    evaluator_name = f"metric: {loogle.BLEU_1}"
    description = _described("BLEU-1 of whitespace words (nltk)")


@register
class LoogleBleu4(LoogleSimilarity):
    metric = name = loogle.BLEU_4
    evaluator_name = f"metric: {loogle.BLEU_4}"
    description = _described("BLEU-4 of whitespace words (nltk)")


@register
class LoogleRouge1(LoogleSimilarity):
    metric = name = loogle.ROUGE_1
    evaluator_name = f"metric: {loogle.ROUGE_1}"
    description = _described("ROUGE-1 recall (the rouge package)")


@register
class LoogleRouge2(LoogleSimilarity):
    metric = name = loogle.ROUGE_2
    evaluator_name = f"metric: {loogle.ROUGE_2}"
    description = _described("ROUGE-2 recall (the rouge package)")


@register
class LoogleRougeL(LoogleSimilarity):
    metric = name = loogle.ROUGE_L
    evaluator_name = f"metric: {loogle.ROUGE_L}"
    description = _described("ROUGE-L recall (the rouge package)")


@register
class LoogleExactMatch(LoogleMatch):
    metric = name = loogle.EXACT_MATCH
    evaluator_name = f"metric: {loogle.EXACT_MATCH}"
    description = (
        "LooGLE's cloze exact match (get_exact_match): the answer's dict of masks against the "
        "reference's; the task score is 100 x matched masks over all masks."
    )


@register
class LooglePartialMatch(LoogleMatch):
    metric = name = loogle.PARTIAL_MATCH
    evaluator_name = f"metric: {loogle.PARTIAL_MATCH}"
    description = (
        "LooGLE's cloze partial match (get_partial_match): masks whose answer shares a word "
        "with the reference's; the task score is 100 x matched masks over all masks."
    )

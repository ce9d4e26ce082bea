"""L-Eval's official automatic metrics as evaluator plug-ins, one per way its
script scores a task (the computations, and what differs from the textbook
definitions, are in judging.metrics.leval)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from judging.evaluators.base import Metric
from judging.evaluators.registry import register
from judging.metrics import leval, zeroscrolls

OFFICIAL = "L-Eval's official code"
# auto_eval.py's SUPPORT_METRICS: it scores the questions whose `evaluation` is one of
# these and skips the others ("LLM", "human": questions meant for a judge or people)
AUTOMATIC_EVALUATIONS = frozenset({"f1", "rouge", "exam"})


class LevalMetric(Metric):
    """An L-Eval metric: its task score leaves out the questions auto_eval.py
    skips, whatever metric scores the rest."""

    left_out_because = (
        "L-Eval's auto_eval.py scores only the questions whose evaluation is exam, f1 or "
        "rouge (those meant for an LLM judge or people are left out)"
    )

    def counted(self, evaluation: str | None) -> bool:
        return evaluation is None or evaluation in AUTOMATIC_EVALUATIONS


@register
class LevalExam(LevalMetric):
    name = "leval.exam"
    evaluator_name = "metric: leval.exam"
    description = (
        f"Exam exact match as {OFFICIAL} computes it (em.py): options 1 or 0.25 for a subset, "
        "numbers compared as numbers, else the reference found in the output."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return leval.exam(prediction, references)


@register
class LevalExamChoice(LevalMetric):
    name = "leval.exam_choice"
    evaluator_name = "metric: leval.exam_choice"
    description = (
        f"Multiple choice as {OFFICIAL} scores QuALITY and TOEFL: the first A-D letter of the "
        'output against the reference\'s ("(B) ..." is B), then em.py.'
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return leval.exam_choice(prediction, references)


@register
class LevalExamCoursera(LevalMetric):
    name = "leval.exam_coursera"
    evaluator_name = "metric: leval.exam_coursera"
    description = (
        f"Multiple choice with several right options, as {OFFICIAL} scores Coursera "
        "(0.25 for a subset of the right letters)."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return leval.exam_choice(prediction, references, several=True)


@register
class LevalExamMath(LevalMetric):
    name = "leval.exam_math"
    evaluator_name = "metric: leval.exam_math"
    description = f'GSM100 as {OFFICIAL} scores it: the digits after "The answer is".'

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return leval.exam_math(prediction, references)


@register
class LevalExamCode(LevalMetric):
    name = "leval.exam_code"
    evaluator_name = "metric: leval.exam_code"
    description = f"CodeU as {OFFICIAL} scores it: the output's last words, cleaned, then em.py."

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return leval.exam_code(prediction, references)


@register
class LevalExamTopics(LevalMetric):
    name = "leval.exam_topics"
    evaluator_name = "metric: leval.exam_topics"
    description = (
        f"Topic retrieval as {OFFICIAL} scores it: em.py per question; the task score is the "
        "mean of the 1st, 2nd and 3rd topic's scores (the questions in order, three a document)."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return leval.exam(prediction, references)

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        buckets = [values[start::3] for start in range(3)]
        if not all(buckets):
            raise ValueError("Topic retrieval needs at least three questions (1st, 2nd, 3rd).")
        # the script averages the rounded bucket scores and does not round the average
        return sum(round(100.0 * sum(b) / len(b), 4) for b in buckets) / 3


@register
class LevalExamSciFi(LevalMetric):
    name = "leval.exam_scifi"
    evaluator_name = "metric: leval.exam_scifi"
    description = (
        f'SFiction as {OFFICIAL} scores it: "True [fact: False]", the loyalty and the fact '
        "answers scored apart; the task score is the mean of the two."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return self.item(prediction, references)[0]

    def item(self, prediction: str, references: Sequence[str]) -> tuple[float, dict[str, float]]:
        loyalty, fact = leval.exam_judge(prediction, references)
        return (loyalty + fact) / 2, {"loyalty": loyalty, "fact": fact}

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        if not parts:
            raise ValueError("No scored item.")
        scores = [
            round(100.0 * sum(p[name] for p in parts) / len(parts), 4)
            for name in ("loyalty", "fact")
        ]
        return sum(scores) / 2


@register
class LevalF1(LevalMetric):
    name = "leval.f1"
    evaluator_name = "metric: leval.f1"
    description = f"Token F1 as {OFFICIAL} computes it (f1.py: SQuAD's, no transliteration)."

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return leval.f1(prediction, references)


@register
class LevalRouge(LevalMetric):
    name = "leval.rouge"
    evaluator_name = "metric: leval.rouge"
    description = (
        f"ROUGE as {OFFICIAL} computes it: R-1, R-2 and R-L unstemmed, each the best over the "
        "references; the task score is the geometric mean of their averages."
    )

    def compute(self, prediction: str, references: Sequence[str]) -> float:
        return self.item(prediction, references)[0]

    def item(self, prediction: str, references: Sequence[str]) -> tuple[float, dict[str, float]]:
        parts = zeroscrolls.rouge_parts(prediction, references)
        return (parts["rouge1"] * parts["rouge2"] * parts["rougeL"]) ** (1 / 3), parts

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        return zeroscrolls.rouge_geometric_mean([dict(p) for p in parts])

"""The evaluator interface: what every source of scores answers.

An evaluator plug-in says what it scores on (`scale`, its own), what it needs
(`needs_model`: a model to ask, or nothing), and how a score comes about:

- a **model judge** (`ModelJudge`: the rubric, Prometheus, pairwise and custom
  LLM judges) builds a request (`item_messages`) and parses the answer
  (`parse`);
- a **metric** (`Metric`: ROUGE, F1, exact match, ...) computes a value from a
  prediction and its references (`compute`);
- **precomputed** scores (`Precomputed`: a score file, the paper's scores, a
  human study's ratings) arrive as values and are only checked (`check_answer`).

Every plug-in turns a checked value into its stored row the same way
(`judgment`: through `judging.scores`, the one writer), on its own scale with
the value on the common 1-10 scale beside it (`common_score`). The plug-ins
are registered by name in `judging.evaluators.registry`, as inspect_ai
registers its scorers; `plugin_for(evaluator)` gives the one a stored
evaluator uses.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from core.errors import ErrorCode, Invalid
from judging import scores
from judging.models import Evaluator, Judgment
from judging.parsers import ParsedScore, ParsedVerdict, Verdict
from llm.config import ModelConfigError

if TYPE_CHECKING:
    from judging.evaluators.config import JudgeConfig
    from judging.models import JudgeItem, JudgingRun, PairwiseVerdict

Messages = list[dict[str, str]]
# What a plug-in's values are: a score (int or float) or a pairwise Verdict.
Answer = TypeVar("Answer", int, float, Verdict)


class ConfigError(ModelConfigError):
    """A judge's settings that cannot be used; the message says why."""

    code = ErrorCode.JUDGE_CONFIG_INVALID


class AnswerError(Invalid, ValueError):
    """A value the evaluator does not take (a score off its scale, a score
    where it wants a verdict, ...); the message says what it takes."""

    code = ErrorCode.ANSWER_INVALID


@dataclass(frozen=True)
class Scale:
    """An evaluator's own scale, from low to high; `whole`: whole numbers only
    (a judge's or a rater's points), else any number in between (a metric)."""

    low: float
    high: float
    whole: bool = True

    def __contains__(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.whole and not isinstance(value, int):
            return False
        return math.isfinite(value) and self.low <= value <= self.high

    def __str__(self) -> str:
        return f"{self.low:g}-{self.high:g}"


class EvaluatorPlugin(ABC, Generic[Answer]):
    """One kind of evaluator. A subclass names itself (`name`), is registered
    with `registry.register`, and says what it needs and how its values are
    stored."""

    name: ClassVar[str]
    # The stored evaluator kind whose evaluators use it.
    kind: ClassVar[Evaluator.Kind]
    # Whether a score needs a call to a model (a run's items go to the llm queue).
    needs_model: ClassVar[bool] = False
    # One line for lists (`manage.py score --list`, the admin's help).
    description: ClassVar[str] = ""

    @property
    @abstractmethod
    def scale(self) -> Scale:
        """The evaluator's own scale."""

    def common_score(self, raw: float) -> float:
        """A raw value on the common 1-10 scale: the linear map of the scale,
        unless the plug-in says otherwise (Prometheus' 1-5 doubled, as the
        paper does)."""
        return scores.common_score(raw, self.scale.low, self.scale.high)

    @abstractmethod
    def check_answer(self, value: object) -> Answer:
        """The value if this evaluator records it, else AnswerError saying what it takes."""

    def judgment(
        self,
        evaluator_id: int,
        response_id: int,
        value: float,
        **options: Any,
    ) -> Judgment:
        """The (unsaved) Judgment a checked score becomes (`scores.judgment`'s
        options: rater, seed, order, feedback)."""
        return scores.judgment(
            evaluator_id,
            response_id,
            value,
            self.scale.low,
            self.scale.high,
            score=self.common_score(value),
            **options,
        )

    def judgment_fields(
        self, evaluator_id: int, response_id: int, value: float, **options: Any
    ) -> dict[str, Any]:
        """The same Judgment's fields, for the writers that sync rows in bulk."""
        return scores.judgment_fields(
            evaluator_id,
            response_id,
            value,
            self.scale.low,
            self.scale.high,
            score=self.common_score(value),
            **options,
        )


class Metric(EvaluatorPlugin[float]):
    """An automatic metric: no model, no key; a value from the prediction and
    its references. `compute` raises ValueError for a pair it cannot score
    (a reference with no percentage for exponential similarity, say): the run
    counts it as failed, with the message."""

    kind = Evaluator.Kind.METRIC
    # The stored evaluator's name ("metric: rouge"): what a researcher picks.
    evaluator_name: ClassVar[str]
    # Why an item `counted` refuses stays out of the task score (the official script's rule)
    left_out_because: ClassVar[str] = ""

    @property
    def scale(self) -> Scale:
        return Scale(0.0, 1.0, whole=False)

    @abstractmethod
    def compute(self, prediction: str, references: Sequence[str]) -> float:
        """The value of `prediction` against `references` (one or more)."""

    def item(self, prediction: str, references: Sequence[str]) -> tuple[float, dict[str, float]]:
        """The item's value and the parts its task score is made of (none
        unless the task score needs more than the values: ROUGE's three
        F-measures)."""
        return self.compute(prediction, references), {}

    def item_asked(
        self, prediction: str, references: Sequence[str], *, question: str, task: str
    ) -> tuple[float, dict[str, float]]:
        """`item`, for a metric that also reads the question and the task
        (BABILong's: a label the question names is never the answer, and each
        task has its own labels). Most metrics read neither."""
        return self.item(prediction, references)

    def counted(self, evaluation: str | None) -> bool:
        """Whether an item counts in the task score, given how the data say it
        is evaluated (L-Eval's `evaluation` field; None: the data do not say).
        Every item, unless the benchmark's official script leaves some out."""
        return True

    def task_score(self, values: Sequence[float], parts: Sequence[Mapping[str, float]]) -> float:
        """The task's score from its items (0-100): 100 x the mean value, rounded
        to 4 decimals as the official scorers round."""
        if not values:
            raise ValueError("No scored item.")
        return round(100 * sum(values) / len(values), 4)

    def check_answer(self, value: object) -> float:
        if value not in self.scale:
            raise AnswerError(f"{self.name}: a number from 0 to 1, not {value!r}.")
        return float(value)  # type: ignore[arg-type]  # checked just above


class Precomputed(EvaluatorPlugin[float]):
    """Scores made elsewhere (a score file, the paper's release, a human
    study): values on the evaluator's scale, checked and stored."""

    name = "precomputed"
    kind = Evaluator.Kind.IMPORTED
    description = "Scores made elsewhere (a file, the paper, people), on their own scale."

    def __init__(self, scale: Scale) -> None:
        self._scale = scale

    @property
    def scale(self) -> Scale:
        return self._scale

    def check_answer(self, value: object) -> float:
        if value not in self.scale:
            raise AnswerError(f"A score from {self.scale.low:g} to {self.scale.high:g}.")
        return value  # type: ignore[return-value]  # a number in the scale: checked above


class ModelJudge(EvaluatorPlugin[Answer]):
    """An evaluator that asks a model (an LLM judge): its configuration names
    the endpoint and the sampling; the plug-in says what is asked and how the
    answer is read."""

    needs_model = True
    kind: ClassVar[Evaluator.Kind] = Evaluator.Kind.LLM_RUBRIC
    # Whether an item judges a response against an opponent (the baseline's).
    pairwise: ClassVar[bool] = False
    # The presentation orders each response (or pair) is judged in.
    orders: ClassVar[tuple[int, ...]] = (0,)
    # What a researcher enters for an item that needs a human: "score" or "verdict".
    answer_kind: ClassVar[str] = "score"
    # The settings this judge runs with unless its configuration says otherwise
    # (L-Eval's judge: its authors' sampling); the configuration's own defaults else.
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config

    @classmethod
    def check(cls, config: JudgeConfig) -> None:
        """Refuse (ConfigError) settings this judge cannot work with; by
        default a judge needs no setting of its own."""
        return None

    @classmethod
    def check_kind(cls, kind: str) -> None:
        if kind != cls.kind:
            raise ConfigError(
                f"the {cls.name} protocol is for evaluators of kind {cls.kind.value}, not {kind}."
            )

    @abstractmethod
    def item_messages(
        self, item: JudgeItem, question: str, reference: str, alternatives: Sequence[str] = ()
    ) -> Messages:
        """The prompt of a run's item (`alternatives`: the question's other
        right answers, for a judge shown them all: HELMET's)."""

    @abstractmethod
    def estimate_messages(self, response: str, reference: str) -> list[Messages]:
        """The prompts one response costs per seed, for the projected cost (the
        question left out: an estimate)."""

    @abstractmethod
    def parse(self, text: str) -> ParsedScore | ParsedVerdict:
        """The judge's answer read; `.value` is what `record` takes."""

    @abstractmethod
    def describe(self, value: Answer) -> str:
        """A checked value in words, e.g. 'score 7' or 'verdict A'."""

    @property
    @abstractmethod
    def expected_answer(self) -> str:
        """What a researcher resolving an item enters, in words."""

    @abstractmethod
    def result_row(
        self, run: JudgingRun, item: JudgeItem, value: Answer, feedback: str
    ) -> Judgment | PairwiseVerdict:
        """The (unsaved) row a checked value becomes."""

    def record(
        self,
        run: JudgingRun,
        item: JudgeItem,
        value: object,
        feedback: str,
        probability: float | None = None,
    ) -> None:
        """A parsed (or researcher-entered) value as the item's result, once: a
        second write (a redelivered task, a re-parse) finds it stored and
        changes nothing. A value the judge does not take is AnswerError.
        `probability`: the judge's tokens' (judging.token_probability)."""
        from django.db import IntegrityError, transaction

        row = self.result_row(run, item, self.check_answer(value), feedback)
        row.probability = probability
        try:
            with transaction.atomic():
                row.save(force_insert=True)
        except IntegrityError:
            pass

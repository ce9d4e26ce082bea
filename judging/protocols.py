"""Judge protocols: what an LLM judge is asked, how its answer is read, on
which scale, and how a result is stored.

Each protocol is a class registered under its name in `PROTOCOLS` (as
inspect_ai registers its scorers); `protocol_for(config)` gives the one a
judge's configuration names. The executor, runs, the Batch API path and human
review call its methods and never compare protocol names.

| protocol   | the judge answers     | raw scale          | common 1-10 scale | stored as       |
| ---------- | --------------------- | ------------------ | ----------------- | --------------- |
| rubric     | \\boxed{N}             | 1-10 (Czech: 0-10) | N                 | Judgment        |
| prometheus | [RESULT] N            | 1-5 (Czech: 0-5)   | 2N (paper)        | Judgment        |
| custom     | \\boxed{N}             | 1-10               | N                 | Judgment        |
| pairwise   | [[A]], [[B]] or [[C]] | -                  | -                 | PairwiseVerdict |

The Czech rubric and Prometheus prompts add a score 0, "the response is not
in Czech": it stays 0 in raw_score and is the lowest score, 1, on the common
scale. A custom template has no such level.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from django.db import IntegrityError, transaction

from corpus.choices import Language

# judging.llm.config imports this module only inside JudgeConfig.check: no import cycle.
from generation.models import Response
from judging import scores
from judging.llm.config import ConfigError, JudgeConfig
from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment, PairwiseVerdict
from judging.parsers import (
    ParsedScore,
    ParsedVerdict,
    Verdict,
    parse_boxed,
    parse_prometheus,
    parse_verdict,
)
from judging.prompts import (
    TemplateError,
    pairwise_judge_messages,
    prometheus_judge_prompt,
    render_template,
    rubric_judge_messages,
    validate_template,
)

Messages = list[dict[str, str]]
# What a protocol's items are decided with: a score (int) or a Verdict.
Answer = TypeVar("Answer", int, Verdict)

__all__ = [
    "PROTOCOLS",
    "AnswerError",
    "Custom",
    "JudgeProtocol",
    "Pairwise",
    "Prometheus",
    "Rubric",
    "Scale",
    "ScoringProtocol",
    "Verdict",
    "judge_protocol",
    "protocol_class",
    "protocol_for",
]

# How a pairwise judge's two orders make a result (judging.pairwise counts them).
JUDGE_COUNTINGS = ("consistent", "per_order")


class AnswerError(ValueError):
    """An answer the protocol does not take (a score off its scale, a score
    where it wants a verdict, ...); the message says what it takes."""


@dataclass(frozen=True)
class Scale:
    """A judge's own scale: whole numbers from low to high."""

    low: int
    high: int

    def __contains__(self, value: object) -> bool:
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and self.low <= value <= self.high
        )

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"


class JudgeProtocol(ABC, Generic[Answer]):
    """One judge protocol. A subclass names itself (`name`), is registered with
    `@register`, and answers everything below for a judge's configuration."""

    name: ClassVar[str]
    # The evaluator kind whose judges use it.
    evaluator_kind: ClassVar[Evaluator.Kind] = Evaluator.Kind.LLM_RUBRIC
    # Whether an item judges a response against an opponent (the baseline's).
    pairwise: ClassVar[bool] = False
    # The presentation orders each response (or pair) is judged in.
    orders: ClassVar[tuple[int, ...]] = (0,)
    # What a researcher enters for an item that needs a human: "score" or "verdict".
    answer_kind: ClassVar[str] = "score"

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config

    @classmethod
    def check(cls, config: JudgeConfig) -> None:
        """Refuse (ConfigError) settings this protocol cannot work with; by
        default a protocol needs no setting of its own."""
        return None

    @classmethod
    def check_kind(cls, kind: str) -> None:
        if kind != cls.evaluator_kind:
            raise ConfigError(
                f"the {cls.name} protocol is for evaluators of kind {cls.evaluator_kind.value}, "
                f"not {kind}."
            )

    @abstractmethod
    def item_messages(self, item: JudgeItem, question: str, reference: str) -> Messages:
        """The prompt of a run's item."""

    @abstractmethod
    def estimate_messages(self, response: str, reference: str) -> list[Messages]:
        """The prompts one response costs per seed, for the projected cost (the
        question left out: an estimate)."""

    @abstractmethod
    def parse(self, text: str) -> ParsedScore | ParsedVerdict:
        """The judge's answer read; `.value` is what `record` takes."""

    @abstractmethod
    def check_answer(self, value: object) -> Answer:
        """The value if this protocol records it, else AnswerError saying what it takes."""

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

    def record(self, run: JudgingRun, item: JudgeItem, value: object, feedback: str) -> None:
        """A parsed (or researcher-entered) value as the item's result, once: a
        second write (a redelivered task, a re-parse) finds it stored and
        changes nothing. A value the protocol does not take is AnswerError."""
        row = self.result_row(run, item, self.check_answer(value), feedback)
        try:
            with transaction.atomic():
                row.save(force_insert=True)
        except IntegrityError:
            pass


class ScoringProtocol(JudgeProtocol[int]):
    """A judge that scores one response on its own scale; the score is a
    Judgment, with its value on the common 1-10 scale beside the raw one."""

    high: ClassVar[int]
    # whether the Czech prompt adds score 0, "the response is not in Czech"
    czech_zero: ClassVar[bool] = True
    # raw score x factor = the common 1-10 score
    common_factor: ClassVar[int] = 1

    @property
    def scale(self) -> Scale:
        czech = self.czech_zero and self.config.language == Language.CZECH
        return Scale(0 if czech else 1, self.high)

    @staticmethod
    @abstractmethod
    def parser(text: str, low: int, high: int) -> ParsedScore:
        """Reads the score (a subclass names one of judging.parsers)."""

    @abstractmethod
    def messages(self, question: str, response: str, reference: str) -> Messages:
        """The prompt that asks to score `response`."""

    def item_messages(self, item: JudgeItem, question: str, reference: str) -> Messages:
        return self.messages(question, item.response.text, reference)

    def estimate_messages(self, response: str, reference: str) -> list[Messages]:
        return [self.messages("", response, reference)]

    def parse(self, text: str) -> ParsedScore:
        scale = self.scale
        return self.parser(text, scale.low, scale.high)

    def common_score(self, raw: int) -> float:
        """Onto the common 1-10 scale; a Czech 0 ("not in Czech") is the lowest, 1."""
        return float(max(1, raw * self.common_factor))

    def check_answer(self, value: object) -> int:
        if not isinstance(value, int) or value not in self.scale:
            raise AnswerError(f"Enter a whole number from {self.scale.low} to {self.scale.high}.")
        return value

    def describe(self, value: int) -> str:
        return f"score {value}"

    @property
    def expected_answer(self) -> str:
        czech = " (0: not in Czech)" if self.scale.low == 0 else ""
        return f"a score from {self.scale.low} to {self.scale.high}{czech}"

    def result_row(self, run: JudgingRun, item: JudgeItem, value: int, feedback: str) -> Judgment:
        return scores.judgment(
            run.evaluator_id,
            item.response_id,
            value,
            self.scale.low,
            self.scale.high,
            score=self.common_score(value),
            seed=item.seed,
            order=item.order,
            feedback=feedback,
        )


PROTOCOLS: dict[str, type[JudgeProtocol[Any]]] = {}


def register(cls: type[JudgeProtocol[Any]]) -> type[JudgeProtocol[Any]]:
    if cls.name in PROTOCOLS:
        raise ValueError(f"Two judge protocols are named {cls.name!r}.")
    PROTOCOLS[cls.name] = cls
    return cls


@register
class Rubric(ScoringProtocol):
    """The paper's GPT-4 judge: its 10-point rubric prompt, \\boxed{N}."""

    name = "rubric"
    high = 10
    parser = staticmethod(parse_boxed)

    def messages(self, question: str, response: str, reference: str) -> Messages:
        return rubric_judge_messages(question, response, reference, self.config.language)


@register
class Prometheus(ScoringProtocol):
    """Prometheus' 5-point rubric, [RESULT] N; x2 on the common scale as in the paper."""

    name = "prometheus"
    high = 5
    common_factor = 2
    parser = staticmethod(parse_prometheus)

    def messages(self, question: str, response: str, reference: str) -> Messages:
        prompt = prometheus_judge_prompt(question, response, reference, self.config.language)
        return [{"role": "user", "content": prompt}]


@register
class Custom(ScoringProtocol):
    """A researcher's template (placeholders checked when saved), \\boxed{N} on 1-10."""

    name = "custom"
    high = 10
    czech_zero = False
    parser = staticmethod(parse_boxed)

    @classmethod
    def check(cls, config: JudgeConfig) -> None:
        try:
            validate_template(config.template)
        except TemplateError as error:
            raise ConfigError(str(error)) from None

    def messages(self, question: str, response: str, reference: str) -> Messages:
        values = {"question": question, "response": response, "reference": reference}
        content = render_template(self.config.template, {**values, "rubric": ""})
        return [{"role": "user", "content": content}]


@register
class Pairwise(JudgeProtocol[Verdict]):
    """A battle against the baseline's answer (L-Eval / MT-Bench): question,
    reference and two answers; [[A]], [[B]] or [[C]] (a tie) read as a
    Verdict and stored as a PairwiseVerdict. Each pair is judged in both
    orders: order 0 shows the judged response first (as A), order 1 the
    baseline's."""

    name = "pairwise"
    evaluator_kind = Evaluator.Kind.LLM_PAIRWISE
    pairwise = True
    orders = (0, 1)
    answer_kind = "verdict"

    @classmethod
    def check(cls, config: JudgeConfig) -> None:
        if not config.baseline:
            raise ConfigError("A pairwise judge needs a baseline system to compare with.")
        if config.counting not in JUDGE_COUNTINGS:
            raise ConfigError(f"counting: one of {', '.join(JUDGE_COUNTINGS)}.")

    def messages(self, question: str, reference: str, first: str, second: str) -> Messages:
        return pairwise_judge_messages(question, reference, first, second)

    def item_messages(self, item: JudgeItem, question: str, reference: str) -> Messages:
        first, second = item.response.text, self._opponent(item).text
        if item.order == 1:
            first, second = second, first
        return self.messages(question, reference, first, second)

    def estimate_messages(self, response: str, reference: str) -> list[Messages]:
        # the response stands in for its opponent, whose length is about the same
        return [self.messages("", reference, response, response) for _ in self.orders]

    def parse(self, text: str) -> ParsedVerdict:
        return parse_verdict(text)

    def check_answer(self, value: object) -> Verdict:
        if not isinstance(value, Verdict):
            raise AnswerError(
                "A pairwise judge's item takes a verdict: A (the answer shown first), "
                "B (the answer shown second) or tie."
            )
        return value

    def describe(self, value: Verdict) -> str:
        return f"verdict {value.label}"

    @property
    def expected_answer(self) -> str:
        return "a verdict: A (the answer shown first), B (shown second) or tie"

    def result_row(
        self, run: JudgingRun, item: JudgeItem, value: Verdict, feedback: str
    ) -> PairwiseVerdict:
        return scores.verdict(
            run.evaluator_id,
            item.response_id,
            self._opponent_id(item),
            value.value,
            seed=item.seed,
            order=item.order,
            feedback=feedback,
        )

    @staticmethod
    def _opponent(item: JudgeItem) -> Response:
        if item.opponent is None:  # runs make pairwise items with one, always
            raise ValueError(f"Judge item {item.pk} has no opponent to compare with.")
        return item.opponent

    @staticmethod
    def _opponent_id(item: JudgeItem) -> int:
        if item.opponent_id is None:
            raise ValueError(f"Judge item {item.pk} has no opponent to compare with.")
        return item.opponent_id


def protocol_class(name: str) -> type[JudgeProtocol[Any]]:
    try:
        return PROTOCOLS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"Unknown judge protocol {name!r}; the known protocols are {', '.join(PROTOCOLS)}."
        ) from None


def protocol_for(config: JudgeConfig) -> JudgeProtocol[Any]:
    """The protocol a judge's configuration names, for that configuration."""
    return protocol_class(config.protocol)(config)


def judge_protocol(kind: str, settings: dict) -> JudgeProtocol[Any]:
    """An LLM judge evaluator's protocol, its settings checked and the protocol
    fitting the evaluator's kind (ConfigError, TypeError or ValueError saying
    what is wrong). The admin form, the API and starting a run ask this."""
    protocol = protocol_for(JudgeConfig.from_dict(settings))
    protocol.check_kind(kind)
    return protocol

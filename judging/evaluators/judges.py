"""The LLM judges: what a judge is asked, how its answer is read, on which
scale, and how a result is stored. Each is an evaluator plug-in
(`judging.evaluators.base.ModelJudge`) registered under its protocol's name;
`judge_for(config)` gives the one a judge's configuration names. The judging
runs and human review call its methods and never compare protocol names.

| protocol   | the judge answers     | raw scale          | common 1-10 scale | stored as       |
| ---------- | --------------------- | ------------------ | ----------------- | --------------- |
| rubric     | \\boxed{N}             | 1-10 (Czech: 0-10) | N                 | Judgment        |
| prometheus | [RESULT] N            | 1-5 (Czech: 0-5)   | 2N (paper)        | Judgment        |
| custom     | \\boxed{N}             | 1-10               | N                 | Judgment        |
| pairwise   | [[A]], [[B]] or [[C]] | -                  | -                 | PairwiseVerdict |
| loogle_qa  | True or False         | 0-1                | 1 or 10           | Judgment        |
| loogle_summary | N                 | 0-100              | 1 + 9N/100        | Judgment        |
| helmet_longqa | {"fluency", "correctness"} | 0-3 (product) | 1 + 3N      | Judgment        |

The Czech rubric and Prometheus prompts add a score 0, "the response is not
in Czech": it stays 0 in raw_score and is the lowest score, 1, on the common
scale. A custom template has no such level.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from corpus.choices import Language
from generation.models import Response
from judging import scores
from judging.evaluators.base import (
    AnswerError,
    ConfigError,
    Messages,
    ModelJudge,
    Scale,
)
from judging.evaluators.config import JudgeConfig
from judging.evaluators.registry import judge_class, register
from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment, PairwiseVerdict
from judging.parsers import (
    ParsedScore,
    ParsedVerdict,
    Verdict,
    parse_boxed,
    parse_helmet_longqa,
    parse_leval_verdict,
    parse_loogle_score,
    parse_loogle_truth,
    parse_prometheus,
    parse_verdict,
)
from judging.prompts import (
    TemplateError,
    leval_judge_messages,
    loogle_qa_messages,
    loogle_summary_messages,
    pairwise_judge_messages,
    prometheus_judge_prompt,
    render_template,
    rubric_judge_messages,
    validate_template,
)
from judging.prompts.helmet import longqa_messages as helmet_longqa_messages

__all__ = [
    "JUDGE_COUNTINGS",
    "Custom",
    "HelmetLongQa",
    "LevalPairwise",
    "LoogleQa",
    "LoogleSummary",
    "Pairwise",
    "Prometheus",
    "Rubric",
    "ScoringJudge",
    "checked_judge",
    "judge_for",
]

# How a pairwise judge's two orders make a result (analysis.statistics.pairwise counts them).
JUDGE_COUNTINGS = ("consistent", "per_order")


class ScoringJudge(ModelJudge[int]):
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

    def item_messages(
        self, item: JudgeItem, question: str, reference: str, alternatives: Sequence[str] = ()
    ) -> Messages:
        return self.answer_messages(question, item.response.text, (reference, *alternatives))

    def answer_messages(self, question: str, response: str, references: Sequence[str]) -> Messages:
        """The prompt for `response` given all the question's right answers (the
        reference first); a judge shown one is shown the reference."""
        return self.messages(question, response, references[0])

    def estimate_messages(self, response: str, reference: str) -> list[Messages]:
        return [self.messages("", response, reference)]

    def parse(self, text: str) -> ParsedScore:
        return self.parser(text, int(self.scale.low), int(self.scale.high))

    def common_score(self, raw: float) -> float:
        """Onto the common 1-10 scale; a Czech 0 ("not in Czech") is the lowest, 1."""
        return float(max(1, raw * self.common_factor))

    def check_answer(self, value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value not in self.scale:
            raise AnswerError(
                f"Enter a whole number from {self.scale.low:g} to {self.scale.high:g}."
            )
        return value

    def describe(self, value: int) -> str:
        return f"score {value}"

    @property
    def expected_answer(self) -> str:
        czech = " (0: not in Czech)" if self.scale.low == 0 else ""
        return f"a score from {self.scale.low:g} to {self.scale.high:g}{czech}"

    def result_row(self, run: JudgingRun, item: JudgeItem, value: int, feedback: str) -> Judgment:
        return self.judgment(
            run.evaluator_id,
            item.response_id,
            value,
            seed=item.seed,
            order=item.order,
            feedback=feedback,
        )


@register
class Rubric(ScoringJudge):
    """The paper's GPT-4 judge: its 10-point rubric prompt, \\boxed{N}."""

    name = "rubric"
    high = 10
    parser = staticmethod(parse_boxed)

    def messages(self, question: str, response: str, reference: str) -> Messages:
        return rubric_judge_messages(question, response, reference, self.config.language)


@register
class Prometheus(ScoringJudge):
    """Prometheus' 5-point rubric, [RESULT] N; x2 on the common scale as in the paper."""

    name = "prometheus"
    high = 5
    common_factor = 2
    parser = staticmethod(parse_prometheus)

    def messages(self, question: str, response: str, reference: str) -> Messages:
        prompt = prometheus_judge_prompt(question, response, reference, self.config.language)
        return [{"role": "user", "content": prompt}]


@register
class Custom(ScoringJudge):
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
class Pairwise(ModelJudge[Verdict]):
    """A battle against the baseline's answer (L-Eval / MT-Bench): question,
    reference and two answers; [[A]], [[B]] or [[C]] (a tie) read as a
    Verdict and stored as a PairwiseVerdict. Each pair is judged in both
    orders: order 0 shows the judged response first (as A), order 1 the
    baseline's."""

    name = "pairwise"
    kind = Evaluator.Kind.LLM_PAIRWISE
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

    def item_messages(
        self, item: JudgeItem, question: str, reference: str, alternatives: Sequence[str] = ()
    ) -> Messages:
        first, second = item.response.text, self._opponent(item).text
        if item.order == 1:
            first, second = second, first
        return self.messages(question, reference, first, second)

    def estimate_messages(self, response: str, reference: str) -> list[Messages]:
        # the response stands in for its opponent, whose length is about the same
        return [self.messages("", reference, response, response) for _ in self.orders]

    def parse(self, text: str) -> ParsedVerdict:
        return parse_verdict(text)

    @property
    def scale(self) -> Scale:
        # a verdict has no scale; on the common scale nothing is stored
        return Scale(0, 0)

    def common_score(self, raw: float) -> float:
        raise TypeError("A pairwise judge gives verdicts, not scores.")

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


@register
class LevalPairwise(Pairwise):
    """L-Eval's battle as L-Eval ran it (Evaluation/llm_eval.py): its system
    prompt and template byte for byte (question, reference, two answers, no
    document; the values as they are), temperature 0 and 2,048 tokens with no
    top_p and no seed sent, the verdict read by presence ("[[A]]" anywhere,
    else "[[B]]", else "[[C]]"), both orders, and win rates counted per order
    (ties a half, errors left out) against the baseline. An answer with no
    verdict is an error, as in L-Eval: not asked again, listed for a human."""

    name = "leval_pairwise"
    defaults = {
        "temperature": 0.0,
        "top_p": None,
        "max_tokens": 2048,
        "send_seed": False,
        "reask": 0,
        "counting": "per_order",
    }

    def messages(self, question: str, reference: str, first: str, second: str) -> Messages:
        return leval_judge_messages(question, reference, first, second)

    def parse(self, text: str) -> ParsedVerdict:
        return parse_leval_verdict(text)


class LoogleJudge(ScoringJudge):
    """LooGLE's GPT-4 judge as its authors ran it (Evaluation/llm_score.py):
    its prompts byte for byte, temperature 0, top_p 1 and 10 tokens, no seed
    (frequency and presence penalty 0, the API's defaults, are not sent), an
    unreadable answer never asked again and left out of the score, as
    llm_eval.py leaves it out."""

    czech_zero = False
    defaults = {
        "model": "gpt-4",
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": 10,
        "send_seed": False,
        "reask": 0,
    }

    @property
    def scale(self) -> Scale:
        return Scale(0, self.high)

    def common_score(self, raw: float) -> float:
        return scores.common_score(raw, self.scale.low, self.scale.high)


@register
class LoogleQa(LoogleJudge):
    """LooGLE's QA judge: is the answer the reference "in semantic"? True (1) or False (0);
    a system's score is the share of True, as llm_eval.py's get_accuracy."""

    name = "loogle_qa"
    high = 1
    parser = staticmethod(parse_loogle_truth)

    def messages(self, question: str, response: str, reference: str) -> Messages:
        return loogle_qa_messages(question, reference, response)

    def describe(self, value: int) -> str:
        return "True" if value else "False"

    @property
    def expected_answer(self) -> str:
        return "True or False"


@register
class LoogleSummary(LoogleJudge):
    """LooGLE's summary judge: the generated summary against the reference, 0-100."""

    name = "loogle_summary"
    high = 100
    parser = staticmethod(parse_loogle_score)

    def messages(self, question: str, response: str, reference: str) -> Messages:
        return loogle_summary_messages(reference, response)


@register
class HelmetLongQa(ScoringJudge):
    """HELMET's GPT-4o judge of long-document QA as its authors ran it
    (scripts/eval_gpt4_longqa.py): its prompt byte for byte with every right
    answer shown (the reference and the alternatives, as the script's list)
    and the output as the script parses it; gpt-4o-2024-05-13, temperature
    0.1, top_p 0.9, 2,048 tokens, seed 42; the score fluency x correctness
    from the last {...} (0-3; HELMET's table shows the mean x 100/3)."""

    name = "helmet_longqa"
    high = 3
    czech_zero = False
    parser = staticmethod(parse_helmet_longqa)
    defaults = {
        "model": "gpt-4o-2024-05-13",
        "temperature": 0.1,
        "top_p": 0.9,
        "max_tokens": 2048,
        "seeds": (42,),
        "reask": 0,
    }

    @property
    def scale(self) -> Scale:
        return Scale(0, self.high)

    def common_score(self, raw: float) -> float:
        return scores.common_score(raw, self.scale.low, self.scale.high)

    def messages(self, question: str, response: str, reference: str) -> Messages:
        return helmet_longqa_messages(question, response, [reference])

    def answer_messages(self, question: str, response: str, references: Sequence[str]) -> Messages:
        return helmet_longqa_messages(question, response, references)


def judge_for(config: JudgeConfig) -> ModelJudge[Any]:
    """The LLM judge a configuration names, for that configuration."""
    return judge_class(config.protocol)(config)


def checked_judge(kind: str, settings: object) -> ModelJudge[Any]:
    """An LLM judge evaluator's plug-in, its settings checked and its protocol
    fitting the evaluator's kind (ConfigError saying what is wrong). The admin
    form, the API and starting a run ask this."""
    judge = judge_for(JudgeConfig.from_dict(settings))
    judge.check_kind(kind)
    return judge

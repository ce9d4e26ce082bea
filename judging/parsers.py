"""Reading a score or a pairwise verdict out of a judge's answer, with a typed
outcome.

Outcomes: ok, parse_failure (no score in the expected format), out_of_range
(a score outside the scale), truncated (the answer was cut off by the token
limit: decided by the caller from the finish reason). A failure never becomes
a score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

PARSER_VERSION = "1"
BOXED = re.compile(r"\\boxed\s*\{\s*([^{}]*?)\s*\}")
RESULT = re.compile(r"\[RESULT\]\s*\(?\s*([^\s()\]]+)")
VERDICT = re.compile(r"\[\[([ABC])\]\]")
INTEGER = re.compile(r"^[+-]?\d+(?:\.0+)?$")


class Verdict(StrEnum):
    """Which of two answers a pairwise judge (or a researcher) prefers: A is
    the answer shown first, B the one shown second. The values are those
    stored in PairwiseVerdict.winner."""

    A = "first"
    B = "second"
    TIE = "tie"

    @property
    def label(self) -> str:
        """How a researcher names it: A, B or tie."""
        return "tie" if self is Verdict.TIE else self.name

    @classmethod
    def from_label(cls, label: str) -> Verdict:
        for verdict in cls:
            if verdict.label == label:
                return verdict
        raise ValueError(f"{label!r} is no verdict: choose A, B or tie.")


# The judge prompt asks for [[A]], [[B]] or [[C]] (a tie), as MT-Bench does.
JUDGE_LETTERS = {"A": Verdict.A, "B": Verdict.B, "C": Verdict.TIE}


@dataclass(frozen=True)
class ParsedScore:
    outcome: str
    score: int | None
    detail: str = ""
    # where in the answer the score was read (characters): its tokens'
    # probability is the judge's confidence (judging.token_probability)
    span: tuple[int, int] | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def value(self) -> int | None:
        """What the protocol records: the score."""
        return self.score


@dataclass(frozen=True)
class ParsedVerdict:
    outcome: str
    verdict: Verdict | None
    detail: str = ""
    span: tuple[int, int] | None = None  # where the verdict's letter was read

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def value(self) -> Verdict | None:
        """What the protocol records: the verdict."""
        return self.verdict


def _integer(found: list[re.Match], low: int, high: int, what: str) -> ParsedScore:
    if not found:
        return ParsedScore("parse_failure", None, f"no {what} in the answer")
    last = found[-1]  # the last one: the final verdict after any discussion
    raw = last.group(1)
    if not INTEGER.match(raw):
        return ParsedScore("parse_failure", None, f"{what} holds {raw!r}, not an integer")
    value = int(float(raw))
    if not low <= value <= high:
        return ParsedScore("out_of_range", value, f"score {value} outside {low}-{high}")
    return ParsedScore("ok", value, span=last.span(1))


def parse_boxed(text: str, low: int = 1, high: int = 10) -> ParsedScore:
    """The GPT-4 rubric judge's answer: the score in the last \\boxed{N}."""
    return _integer(list(BOXED.finditer(text or "")), low, high, "\\boxed{} score")


def parse_prometheus(text: str, low: int = 1, high: int = 5) -> ParsedScore:
    """Prometheus' answer: 'Feedback: ... [RESULT] N' (the last one)."""
    return _integer(list(RESULT.finditer(text or "")), low, high, "[RESULT] score")


def parse_verdict(text: str) -> ParsedVerdict:
    """A pairwise verdict [[A]], [[B]] or [[C]] (tie): the last one."""
    found = list(VERDICT.finditer(text or ""))
    if not found:
        return ParsedVerdict("parse_failure", None, "no [[A]], [[B]] or [[C]] verdict")
    return ParsedVerdict("ok", JUDGE_LETTERS[found[-1].group(1)], span=found[-1].span(1))


def parse_leval_verdict(text: str) -> ParsedVerdict:
    """L-Eval's reading of a battle (Evaluation/llm_eval.py): "[[A]]" anywhere
    wins, else "[[B]]", else "[[C]]" (a tie), else an error; so an answer that
    names [[A]] and then [[B]] is A."""
    text = text or ""
    for letter in ("A", "B", "C"):
        at = text.find(f"[[{letter}]]")
        if at >= 0:
            return ParsedVerdict("ok", JUDGE_LETTERS[letter], span=(at + 2, at + 3))
    return ParsedVerdict("parse_failure", None, "no [[A]], [[B]] or [[C]] verdict")


def parse_loogle_truth(text: str, low: int = 0, high: int = 1) -> ParsedScore:
    """LooGLE's QA judge (llm_eval.py's get_accuracy counts answers equal to
    "True" and to "False"): 1 for the answer "True", 0 for "False"; any other
    answer counts as neither there, and is unreadable here."""
    text = text or ""
    if text in ("True", "False"):
        return ParsedScore("ok", int(text == "True"), span=(0, len(text)))
    return ParsedScore(
        "parse_failure", None, "the answer is not 'True' or 'False' (LooGLE counts it as neither)"
    )


def parse_loogle_score(text: str, low: int = 0, high: int = 100) -> ParsedScore:
    """LooGLE's summary judge: the whole answer read by int(), as llm_score.py reads it."""
    text = text or ""
    try:
        value = int(text)
    except ValueError:
        return ParsedScore("parse_failure", None, f"{text[:40]!r} is not a whole number")
    if not low <= value <= high:
        return ParsedScore("out_of_range", value, f"score {value} outside {low}-{high}")
    start = len(text) - len(text.lstrip())
    return ParsedScore("ok", value, span=(start, len(text.rstrip())))


def parse_helmet_longqa(text: str, low: int = 0, high: int = 3) -> ParsedScore:
    """HELMET's long-QA judge (eval_gpt4_longqa.py's parse_json and its sum):
    the last {...} in the answer read as JSON, fluency x correctness (0-3)."""
    import json

    found = list(re.finditer(r"\{.*?\}", text or "", re.DOTALL))
    if not found:
        return ParsedScore("parse_failure", None, "no {...} with the scores in the answer")
    try:
        scores = json.loads(found[-1].group(0))
    except ValueError:
        return ParsedScore("parse_failure", None, "the last {...} is not JSON")
    if not isinstance(scores, dict) or not {"fluency", "correctness"} <= scores.keys():
        return ParsedScore("parse_failure", None, "no fluency and correctness in the last {...}")
    fluency, correctness = scores["fluency"], scores["correctness"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (fluency, correctness)):
        return ParsedScore("parse_failure", None, "fluency and correctness are not whole numbers")
    value = fluency * correctness
    if not (0 <= fluency <= 1 and 0 <= correctness <= 3):
        return ParsedScore("out_of_range", value, "fluency 0-1 and correctness 0-3 expected")
    return ParsedScore("ok", value, span=found[-1].span())

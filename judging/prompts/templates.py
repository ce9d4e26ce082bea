from __future__ import annotations

import re
import string

from core.errors import ErrorCode, Invalid
from corpus.choices import Language, either

TEMPLATE_VERSION = "elitr-bench-8364952"
DEFAULT_SYSTEM_MESSAGE = "You are a helpful assistant."

_CRITERIA = (
    "[Does the response to evaluate correctly address the given question based on the elements "
    "provided by the reference answer? The response should {czech}include the elements of the "
    "reference answer and should also avoid adding unnecessary elements or being too verbose.]"
)
_TEN_POINT = [
    (
        "1",
        "The response to evaluate is incorrect and misses all the elements of the reference "
        "answer.",
    ),
    (
        "2",
        "The response to evaluate indicates insufficient knowledge to answer the question "
        "even though the reference answer states otherwise.",
    ),
    (
        "3-4",
        "The response to evaluate contains some elements vaguely related to the reference answer.",
    ),
    (
        "5-6",
        "The response to evaluate is partially correct and/or covers only a part of the "
        "reference answer.",
    ),
    (
        "7-8",
        "The response to evaluate contains most of the reference answer but delivers it in "
        "an indirect and/or overly verbose way.",
    ),
    (
        "9",
        "The response to evaluate includes the reference answer but it is more verbose and "
        "adds unnecessary elements.",
    ),
    ("10", "The response to evaluate is essentially equivalent to the reference answer."),
]
_FIVE_POINT = [
    ("1", _TEN_POINT[0][1]),
    ("2", _TEN_POINT[2][1]),
    ("3", _TEN_POINT[3][1]),
    ("4", _TEN_POINT[4][1]),
    ("5", _TEN_POINT[6][1]),
]
_NOT_CZECH = ("0", "The response to evaluate is not in Czech language.")


def rubric_text(points: int, language: str = Language.ENGLISH) -> str:
    """The score rubric (paper Fig. 6 for 10 points, Fig. 8 for 5 points)."""
    czech = language == Language.CZECH
    levels = _TEN_POINT if points == 10 else _FIVE_POINT
    if czech:
        levels = [_NOT_CZECH, *levels]
    criteria = _CRITERIA.format(czech="be in Czech, it should " if czech else "")
    return "\n".join([criteria, *(f"Score {level}: {text}" for level, text in levels)])


def _task_description(top: int, language: str, output_format: str) -> str:
    low = 0 if language == Language.CZECH else 1
    lines = [
        "### Task description:",
        "You are provided below with a question, a response to evaluate, a reference answer "
        f"that gets the maximum score of {top}, and a score rubric representing evaluation "
        "criteria.",
    ]
    if language == Language.CZECH:
        lines.append("The question and the reference answer are in Czech.")
    lines += [
        "1. Write a detailed feedback that assess the quality of the response strictly based on "
        "the given score rubric, not evaluating in general.",
        f"2. After writing a feedback, write a score that is an integer between {low} and {top}. "
        "You should refer to the score rubric.",
        output_format.format(low=low, top=top),
        "4. Please do not generate any other opening, closing, and explanations.",
    ]
    return "\n".join(lines)


# Text a response could use to impersonate the prompt's structure or the answer
# format the parser reads: section headers, \boxed{...}, [RESULT].
_MARKERS = [
    (re.compile(r"(?m)^(\s*)#{3,}"), lambda m: m.group(1) + "# # #"),
    (re.compile(r"\\boxed\s*\{"), lambda m: "\\boxed (quoted) {"),
    (re.compile(r"\[RESULT\]", re.IGNORECASE), lambda m: "[RESULT (quoted)]"),
]


def neutralize(text: str) -> str:
    """Defuse section markers and score formats inside text that goes into a
    prompt, so that a response cannot end its own section or plant a score."""
    for pattern, replacement in _MARKERS:
        text = pattern.sub(replacement, text)
    return text


def _check_language(language: str) -> None:
    if language not in Language.values:
        raise ValueError(f"language {language!r}: {either(Language)}.")


def rubric_judge_prompt(
    question: str, response: str, reference: str, language: str = Language.ENGLISH
) -> str:
    """The GPT-4 rubric judge prompt (paper Figs. 5 and 6)."""
    _check_language(language)
    description = _task_description(
        10,
        language,
        "3. The output format should first include the feedback and then indicate the integer "
        "score in \\boxed{{}}.",
    )
    return (
        f"{description}\n\n### Question:\n{neutralize(question)}\n\n"
        f"### Response to evaluate:\n{neutralize(response)}\n\n"
        f"### Reference answer (score 10):\n{neutralize(reference)}\n\n"
        f"### Score rubric:\n{rubric_text(10, language)}\n\n### Feedback:\n"
    )


def rubric_judge_messages(
    question: str,
    response: str,
    reference: str,
    language: str = Language.ENGLISH,
    system: str = DEFAULT_SYSTEM_MESSAGE,
) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": rubric_judge_prompt(question, response, reference, language)},
    ]


def prometheus_judge_prompt(
    question: str, response: str, reference: str, language: str = Language.ENGLISH
) -> str:
    """The Prometheus prompt (paper Figs. 7 and 8): the rubric on 1-5."""
    _check_language(language)
    description = _task_description(
        5,
        language,
        '3. The output format should look as follows: "Feedback: (write the quality assessment '
        'feedback) [RESULT] (an integer number between {low} and {top})".',
    )
    return (
        f"{description}\n\n### Question:\n{neutralize(question)}\n\n"
        f"### Response to evaluate:\n{neutralize(response)}\n\n"
        f"### Reference answer (score 5):\n{neutralize(reference)}\n\n"
        f"### Score rubric:\n{rubric_text(5, language)}\n### Feedback:\n"
    )


PAIRWISE_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two "
    "AI assistants to the user question below, against the reference answer. Your evaluation "
    "should consider correctness and helpfulness against the reference answer. Details that "
    "are not in the reference answer do not make a response better: do not favour the longer "
    "response, and do not let the order in which the responses are presented or the names of "
    "the assistants influence you. Begin with a short comparison, then output your final "
    'verdict in exactly this format: "[[A]]" if assistant A is better, "[[B]]" if assistant B '
    'is better, and "[[C]]" for a tie.'
)


def pairwise_judge_messages(
    question: str, reference: str, answer_a: str, answer_b: str
) -> list[dict[str, str]]:
    """An L-Eval / MT-Bench style battle: question and reference (no document),
    two answers; the caller judges both orders."""
    user = (
        f"[User Question]\n{neutralize(question)}\n\n"
        f"[The Start of Reference Answer]\n{neutralize(reference)}\n"
        "[The End of Reference Answer]\n\n"
        f"[The Start of Assistant A's Answer]\n{neutralize(answer_a)}\n"
        "[The End of Assistant A's Answer]\n\n"
        f"[The Start of Assistant B's Answer]\n{neutralize(answer_b)}\n"
        "[The End of Assistant B's Answer]"
    )
    return [{"role": "system", "content": PAIRWISE_SYSTEM}, {"role": "user", "content": user}]


# L-Eval's pairwise judge, byte for byte as its authors ran it (Evaluation/llm_eval.py,
# "pair-v2"; tests/data/leval/judge.json): the values go in as they are, as
# str.format puts them, without Concord's neutralisation.
LEVAL_JUDGE_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided "
    "by two AI assistants to the user question about the content of a long document.  "
    "You will be given a reference answer written by human, assistant A's answer, and "
    "assistant B's answer. Your job is to evaluate which assistant's answer is better. "
    "Begin your evaluation by comparing both assistants' answers with the reference "
    "answer. Additional details or information that are not mentioned in reference "
    "answer cannot be considered as advantages and do not let them sway your judgment. "
    "Your evaluation should also consider the relevance to user's question but it is "
    "more important to avoid factual errors according to the reference answer. Avoid any "
    "position biases and ensure that the order in which the responses were presented "
    "does not influence your decision. Do not allow the length of the responses to "
    "influence your evaluation. Do not favor certain names of the assistants. Be as "
    "objective as possible. After providing your explanation, output your final verdict "
    'by strictly following this format: "[[A]]" if assistant A is better, "[[B]]" if '
    'assistant B is better, and "[[C]]" for a tie.'
)
LEVAL_JUDGE_TEMPLATE = (
    "[User Question]\n{question}\n\n[The Start of Reference Answer]\n{ref_answer}\n[The "
    "End of Reference Answer]\n\n[The Start of Assistant A's Answer]\n{answer_a}\n[The "
    "End of Assistant A's Answer]\n\n[The Start of Assistant B's "
    "Answer]\n{answer_b}\n[The End of Assistant B's Answer]"
)


def leval_judge_messages(
    question: str, reference: str, answer_a: str, answer_b: str
) -> list[dict[str, str]]:
    """L-Eval's battle: question and reference written by a person, two answers
    (no document); the caller judges both orders."""
    user = LEVAL_JUDGE_TEMPLATE.format(
        question=question, ref_answer=reference, answer_a=answer_a, answer_b=answer_b
    )
    return [{"role": "system", "content": LEVAL_JUDGE_SYSTEM}, {"role": "user", "content": user}]


# --- LooGLE's GPT-4 judge (Evaluation/llm_score.py, byte for byte) -------------------------------

LOOGLE_QA_SYSTEM = (
    "Given one question, there is a groundtruth and a predict_answer. Please decide whether "
    "they are the same or not in semantic. Please only output 'True' or 'False' ."
)
LOOGLE_SUMMARY_TEMPLATE = (
    "There is a groundtruth summary of a arxiv paper and a auto-generated summary .Please "
    "Compare generated summary with the goundtruth and evaluate the generated summary from "
    "the perspectives of information completeness, consistency, fluency, and grammar by giving "
    "a score within the range of 0 to 100. \nGroundtruth = {} \nGenerated = {} \nScore = "
)


def loogle_qa_messages(question: str, reference: str, answer: str) -> list[dict[str, str]]:
    """LooGLE's QA judge: its system prompt, then the question, the reference
    ("groudtruth", as written) and the answer; it answers True or False."""
    user = "Question: " + question + "\n" + "groudtruth = " + reference + "\n"
    return [
        {"role": "system", "content": LOOGLE_QA_SYSTEM},
        {"role": "user", "content": user + "predict_answer = " + answer},
    ]


def loogle_summary_messages(reference: str, answer: str) -> list[dict[str, str]]:
    """LooGLE's summary judge: one system message with both summaries; it answers 0-100."""
    return [{"role": "system", "content": LOOGLE_SUMMARY_TEMPLATE.format(reference, answer)}]


# --- Custom templates --------------------------------------------------------------------------

PLACEHOLDERS = {
    "rubric": {"question", "response", "reference", "rubric"},
    "pairwise": {"question", "reference", "response_a", "response_b"},
}
# What a template must hold: the answer (or the two answers) it judges.
REQUIRED = {"rubric": ("response",), "pairwise": ("response_a", "response_b")}


class TemplateError(Invalid, ValueError):
    code = ErrorCode.TEMPLATE_INVALID


def _parts(template: str, kind: str) -> list[tuple[str, str | None]]:
    """The template read as Python's str.format reads it: (literal text, the
    placeholder after it or None). Every brace is a known placeholder or a
    doubled literal ({{ and }}); anything else is refused, so that no
    placeholder is silently left in (or out of) every prompt."""
    allowed = PLACEHOLDERS[kind]
    hint = (
        f"use {', '.join('{' + a + '}' for a in sorted(allowed))} "
        "(write literal braces as {{ and }})"
    )
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:  # a lone { or }
        raise TemplateError(f"The template has an unmatched brace ({error}); {hint}.") from None
    parts: list[tuple[str, str | None]] = []
    for literal, field, spec, conversion in parsed:
        if field is None:
            parts.append((literal, None))
            continue
        written = "{" + field + (f"!{conversion}" if conversion else "")
        written += (f":{spec}" if spec else "") + "}"
        if field not in allowed or spec or conversion:
            raise TemplateError(f"Unknown placeholder {written}; {hint}.")
        parts.append((literal, field))
    return parts


def validate_template(template: str, kind: str = "rubric") -> set[str]:
    """The placeholders a template uses; unknown or malformed ones (`{reference.`,
    `{ reference }`, `{reference}}`) are refused, and the answer(s) it judges
    must be in it. Literal braces are written doubled: {{ and }}."""
    used = {field for _, field in _parts(template, kind) if field is not None}
    missing = [name for name in REQUIRED[kind] if name not in used]
    if missing:
        raise TemplateError(
            "The template must contain what it judges: "
            f"{', '.join('{' + m + '}' for m in missing)}."
        )
    return used


def render_template(template: str, values: dict[str, str], kind: str = "rubric") -> str:
    validate_template(template, kind)
    return "".join(
        literal + (neutralize(values[field]) if field is not None else "")
        for literal, field in _parts(template, kind)
    )

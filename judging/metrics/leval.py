"""L-Eval's automatic metrics as its official code computes them
(OpenLMLab/LEval, `Evaluation/auto_eval.py`, `em.py`, `f1.py`, `rouge.py`),
written anew and checked against that code's outputs on thousands of cases
(tests/data/leval/, README there).

Exam tasks compare the prediction with the reference after a task's own
preprocessing (auto_eval.py chooses it by the predictions file's name; here
each is a metric of its own):

- quality, tpo: the output's first A-D letter (`process_output_mc`) against the
  letters of the reference's first word (`process_gt_mc`: "(B) The cat" is B);
- coursera: several letters may be right (its branch of `process_output_mc`);
- gsm100: the number after "The answer is" (`process_math`), digits only;
- codeU: the code output's text cleaned (`process_gt_code`, `process_output_code`);
- sci_fi: "True [fact: False]", the loyalty and the fact answers scored apart;
- topic_retrieval_longchat: none; the task score averages the 1st, 2nd and 3rd
  topic's scores;

then `em.py`'s exact match: no lower-casing; if the cleaned reference holds
only the letters A-D (or nothing), equal scores 1 and a subset of its letters
0.25; otherwise both as numbers, or the reference (lower case, spaces out)
found in the prediction. F1 is SQuAD's (lower case, no transliteration, empty
scores 0); ROUGE is the same as ZeroSCROLLS' (unstemmed, geometric mean of the
averaged R-1, R-2, R-L). A task score is 100 x the mean, rounded to 4
decimals as the official code rounds. Where the official code raises (an
empty reference for a multiple-choice task, a sci_fi answer without
"[fact:"), these raise ValueError saying why.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

PUNCTUATION = frozenset(string.punctuation)
ARTICLES = re.compile(r"\b(a|an|the)\b")
CHOICES = frozenset("ABCD")


def _references(references: Sequence[str]) -> list[str]:
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError("At least one reference is needed.")
    return refs


def _max_over(score: Callable[[str, str], float], prediction: str, refs: Sequence[str]) -> float:
    return max(score(prediction, reference) for reference in _references(refs))


# --- em.py --------------------------------------------------------------------------------


def normalize_exam(text: str) -> str:
    """em.py's normalisation: ASCII punctuation and (lower-case) articles out,
    single spaces; no lower-casing."""
    text = "".join(ch for ch in text if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def exam_match(prediction: str, reference: str) -> float:
    """em.py's exact_match_score: 1, 0.25 (a subset of the right options) or 0."""
    gold = normalize_exam(reference)
    if all(ch in CHOICES for ch in gold):  # options only (or nothing)
        predicted = normalize_exam(prediction)
        if predicted == gold:
            return 1.0
        if set(predicted) <= set(gold):
            return 0.25
        return 0.0
    try:
        return float(float(prediction) == float(reference))
    except ValueError:
        found = reference.lower().replace(" ", "") in prediction.lower().replace(" ", "")
        return 1.0 if found else 0.0


def exam(prediction: str, references: Sequence[str]) -> float:
    return _max_over(exam_match, prediction, references)


# --- auto_eval.py's preprocessing -------------------------------------------------------


def output_letters(response: str, *, several: bool = False) -> str:
    """`process_output_mc`: the option letter(s) of an answer (`several`: the
    coursera branch, where more than one option may be right)."""
    if len(response.strip()) == 0:
        return "None"
    if response in "ABCD":
        return response
    if not several:
        for char in response:
            if char in "ABCD":
                return char
    cleaned = ""
    for char in response:
        if char in "ABCD":
            cleaned += char
            response = response[1:]
        else:
            break
    if len(cleaned) > 1:
        return "".join(sorted(set(cleaned)))
    response = response.split("Question")[0]
    cleaned += " ".join(re.findall(r"\s*[A-Z](?=[\s.)])", response)).strip()
    cleaned = "".join(sorted(set(re.sub(r"[^A-D]", "", cleaned))))
    if len(cleaned) < 1:
        has_answer = False
        for char in response:
            if char in "ABCD":
                cleaned += char
                response = response[1:]
                has_answer = True
            elif has_answer:
                break
    if len(cleaned) < 1:
        cleaned = "A"
    return cleaned


def reference_letters(response: str) -> str:
    """`process_gt_mc`: the letters A-D of the reference's first word ("A" if none)."""
    words = response.split()
    if not words:
        raise ValueError("An empty reference has no option letter.")
    cleaned = re.sub(r"[^A-D]", "", words[0])
    return cleaned if cleaned else "A"


def math_answer(response: str) -> str:
    """`process_math`: the digits of the number after "The answer is" (or of the
    last word holding a digit in the first paragraph), up to a decimal point."""
    match = re.search(r"The answer is (\S+)", response)
    if match is None:
        found = ""
        for word in response.split("\n\n")[0].split(" ")[::-1]:
            if any(char.isdigit() for char in word):
                found = word
                break
    else:
        found = match.group(1)
    digits = ""
    for char in found:
        if char.isdigit():
            digits += char
        if char == ".":
            break
    return digits


def code_text(response: str) -> str:
    """`process_gt_code`."""
    response = re.sub(r"\s+", " ", response)
    for old, new in (
        (",", ""),
        ("'", ""),
        ("\\", ""),
        (".0", ""),
        ("] [", "]["),
        ("[ [", "[["),
        ("] ]", "]]"),
    ):
        response = response.replace(old, new)
    return response


def code_output(response: str, reference: str) -> str:
    """`process_output_code`: the output's last words (or those after "the final
    output"), as many as the reference has plus three."""
    length = len(reference.split())
    response = code_text(response)
    for phrase in (
        "will be",
        "of the code",
        "is",
        "would be",
        "the value of",
        "the result of",
        "printed",
    ):
        response = response.replace(phrase, "")
    if "the final output" in response:
        words = re.split(r"\s+", response.split("the final output")[-1])[: length + 3]
    else:
        words = re.split(r"\s+", response)[-(length + 3) :]
    return " ".join(words)


def judge_parts(response: str) -> list[str]:
    """`process_gt_judge`: "True [fact: False]" as ["true", "false"]."""
    parts = response.lower().split("[fact:")
    if len(parts) < 2:
        raise ValueError(f"{response!r} has no '[fact: ...]' part.")
    return [parts[0].strip(), parts[1][:-1].strip()]


def judge_answers(response: str) -> list[str]:
    """`process_output_judge`: the first word holding "true" or "false" of each part."""
    answers = []
    for part in judge_parts(response):
        for word in part.split():
            if "true" in word:
                answers.append("true")
                break
            if "false" in word:
                answers.append("false")
                break
        else:
            answers.append("<error>")
    return answers


def exam_choice(prediction: str, references: Sequence[str], *, several: bool = False) -> float:
    """quality, tpo (and coursera with `several`)."""
    letters = output_letters(prediction, several=several)
    return _max_over(lambda _, r: exam_match(letters, reference_letters(r)), prediction, references)


def exam_math(prediction: str, references: Sequence[str]) -> float:
    """gsm100."""
    answer = math_answer(prediction)
    return _max_over(lambda _, r: exam_match(answer, math_answer(r)), prediction, references)


def exam_code(prediction: str, references: Sequence[str]) -> float:
    """codeU (the output cut by the first reference's length, as the script's one `gt`)."""
    refs = _references(references)
    output = code_output(prediction, refs[0])
    return _max_over(lambda _, r: exam_match(output, code_text(r)), prediction, refs)


def exam_judge(prediction: str, references: Sequence[str]) -> tuple[float, float]:
    """sci_fi: (loyalty, fact) exact matches, each the best over the references."""
    refs = _references(references)
    loyalty, fact = judge_answers(prediction)
    golds = [judge_parts(reference) for reference in refs]
    return (
        max(exam_match(loyalty, gold[0]) for gold in golds),
        max(exam_match(fact, gold[1]) for gold in golds),
    )


# --- f1.py --------------------------------------------------------------------------------


def _squad_normal(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def _f1(prediction: str, reference: str) -> float:
    predicted, gold = _squad_normal(prediction).split(), _squad_normal(reference).split()
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = 1.0 * same / len(predicted), 1.0 * same / len(gold)
    return (2 * precision * recall) / (precision + recall)


def f1(prediction: str, references: Sequence[str]) -> float:
    return _max_over(_f1, prediction, references)

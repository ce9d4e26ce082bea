from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rouge-score is imported with the first ROUGE score
    from rouge_score.rouge_scorer import RougeScorer

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = set(string.punctuation)


def _references(references: str | Sequence[str]) -> list[str]:
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError("At least one reference is needed.")
    return refs


def to_ascii(text: str) -> str:
    """Transliterate to ASCII (ZeroSCROLLS): decompose accents, drop what remains."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation (Rajpurkar et al. 2016): lower case, no punctuation,
    no articles, single spaces; plus ZeroSCROLLS' transliteration to ASCII."""
    text = to_ascii(text).lower()
    text = "".join(ch for ch in text if ch not in PUNCTUATION)
    text = ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _f1(prediction: str, reference: str) -> float:
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not predicted or not gold:
        return float(predicted == gold)
    common = Counter(predicted) & Counter(gold)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: str | Sequence[str]) -> float:
    """SQuAD token F1, the maximum over references."""
    return max(_f1(prediction, ref) for ref in _references(references))


def exact_match(prediction: str, references: str | Sequence[str]) -> float:
    return float(
        any(normalize_answer(prediction) == normalize_answer(r) for r in _references(references))
    )


@lru_cache(maxsize=1)
def _rouge_scorer() -> RougeScorer:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)


def rouge_geometric_mean(prediction: str, references: str | Sequence[str]) -> float:
    """ZeroSCROLLS: the geometric mean of ROUGE-1, ROUGE-2 and ROUGE-L F-measures,
    each the maximum over the references (rouge-score, with stemming)."""
    best = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    for reference in _references(references):
        scores = _rouge_scorer().score(reference, prediction)
        for key in best:
            best[key] = max(best[key], scores[key].fmeasure)
    return (best["rouge1"] * best["rouge2"] * best["rougeL"]) ** (1 / 3)


FAITHFUL_LETTER = re.compile(r"[ABCD]")
BOUNDED_LETTER = re.compile(r"\b([ABCD])\b")


def multiple_choice_accuracy(
    prediction: str, references: str | Sequence[str], behaviour: str = "fixed"
) -> float:
    """1 if the predicted option letter is the reference letter.

    behaviour="faithful": L-Eval's extraction, the first A-D letter anywhere
    (so "Based on the text, C" reads as B). behaviour="fixed": the first
    option letter standing as a word, as ZeroSCROLLS defines it."""
    if behaviour not in ("faithful", "fixed"):
        raise ValueError("behaviour is 'faithful' (L-Eval) or 'fixed' (word boundaries).")
    pattern = FAITHFUL_LETTER if behaviour == "faithful" else BOUNDED_LETTER
    match = pattern.search(prediction)
    if match is None:
        return 0.0
    letter = match.group(0)[-1]
    return float(any(letter == ref.strip().upper()[:1] for ref in _references(references)))


PERCENT = re.compile(r"(-?\d+(?:\.\d+)?)\s*%")


def exponential_similarity(
    prediction: str, references: str | Sequence[str], d: float = 2.0, c: float = 10.0
) -> float:
    """ZeroSCROLLS: d^(-c |p - p_hat|) for percentages as fractions; the first
    percentage in the output is parsed, and an output without one scores 0."""
    match = PERCENT.search(prediction)
    if match is None:
        return 0.0
    predicted = float(match.group(1)) / 100
    best = 0.0
    for reference in _references(references):
        gold = PERCENT.search(reference) or re.search(r"(-?\d+(?:\.\d+)?)", reference)
        if gold is None:
            raise ValueError(f"Reference {reference!r} holds no percentage.")
        value = float(gold.group(1)) / 100
        best = max(best, d ** (-c * abs(value - predicted)))
    return best


def concordance_index(prediction: str, references: str | Sequence[str]) -> float:
    """ZeroSCROLLS: the share of the C(n, 2) pairs of the reference permutation
    that the output puts in the right order. Ids are the integers of the output
    in order of first appearance; a pair counts only if both ids appear."""
    best = 0.0
    predicted: list[int] = []
    for token in re.findall(r"\d+", prediction):
        if int(token) not in predicted:
            predicted.append(int(token))
    position = {item: i for i, item in enumerate(predicted)}
    for reference in _references(references):
        gold = [int(t) for t in re.findall(r"\d+", reference)]
        n = len(gold)
        if n < 2:
            raise ValueError(f"Reference {reference!r} is not a permutation of 2+ ids.")
        right = sum(
            1
            for i in range(n)
            for j in range(i + 1, n)
            if gold[i] in position and gold[j] in position and position[gold[i]] < position[gold[j]]
        )
        best = max(best, right / math.comb(n, 2))
    return best

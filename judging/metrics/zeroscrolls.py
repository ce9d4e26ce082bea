"""ZeroSCROLLS' metrics as its official code computes them (the `metrics/`
folder of the `tau/zero_scrolls` dataset, with the aggregation of SCROLLS'
`metrics/scrolls.py`), written anew and checked against the official code's
outputs on thousands of cases (tests/data/zeroscrolls/, README there).

Per item, each value is the maximum over the references (ROUGE: each ROUGE
type's own maximum); a task's score is 100 x the mean over items, except
ROUGE, whose task score is the geometric mean of the averaged ROUGE-1, -2 and
-L F-measures; every task score is rounded to 4 decimals, as the official
code rounds. Where the official code raises (a reference with no percentage,
a permutation of one id), these raise ValueError saying why, and the item is
not scored.

What differs from the textbook definitions, on purpose (the official code's):
- F1 transliterates with `unidecode` after lower-casing and removing ASCII
  punctuation, so "straße" matches "strasse" while "don’t" (a curly
  quote, made an ASCII apostrophe that is never removed) does not match
  "don't"; an empty prediction or reference scores 0, empty against empty too.
- ROUGE is not stemmed, and its tokens are ASCII letters and digits only.
- Exponential similarity reads the first `\\d+\\.?\\d*%` ("40 %" is no
  percentage, "-40%" is 40) and scores 0.5 ** (|gold - predicted| / 10).
- The concordance index is 0 unless the prediction is a permutation of the
  reference's ids.
- QuALITY's accuracy compares the first stand-alone capital A-D of each side.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

PUNCTUATION = frozenset(string.punctuation)
ARTICLES = re.compile(r"\b(a|an|the)\b")
PERCENTAGE = re.compile(r"\d+\.?\d*%")
LETTER = re.compile(r"\b[A-D]\b")
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def _squad_normal(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in PUNCTUATION)
    text = ARTICLES.sub(" ", text)
    return " ".join(text.split())


def normalize_answer(text: str) -> str:
    """ZeroSCROLLS' F1 normalisation: SQuAD's (lower case, no ASCII
    punctuation, no articles, single spaces), then `unidecode`."""
    from unidecode import unidecode

    return unidecode(_squad_normal(text))


def _max_over(score: Callable[[str, str], float], prediction: str, refs: Sequence[str]) -> float:
    references = [refs] if isinstance(refs, str) else list(refs)
    if not references:
        raise ValueError("At least one reference is needed.")
    return max(score(prediction, reference) for reference in references)


def _f1(prediction: str, reference: str) -> float:
    predicted = normalize_answer(prediction).split()
    gold = normalize_answer(reference).split()
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str, references: Sequence[str]) -> float:
    """Qasper, NarrativeQA, MuSiQue."""
    return _max_over(_f1, prediction, references)


def exact_match(prediction: str, references: Sequence[str]) -> float:
    """SCROLLS' exact match (ZeroSCROLLS has none): SQuAD's normalisation,
    without transliteration; empty against empty matches."""
    return _max_over(
        lambda p, r: float(_squad_normal(p) == _squad_normal(r)), prediction, references
    )


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=False)


def rouge_parts(prediction: str, references: Sequence[str]) -> dict[str, float]:
    """ROUGE-1, -2 and -L F-measures (0-1), each the maximum over the
    references on its own (they may come from different references)."""
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError("At least one reference is needed.")
    best = dict.fromkeys(ROUGE_TYPES, 0.0)
    for reference in refs:
        scores = _rouge_scorer().score(reference, prediction)
        for name in ROUGE_TYPES:
            best[name] = max(best[name], scores[name].fmeasure)
    return best


def rouge_geometric_mean(parts: Sequence[dict[str, float]]) -> float:
    """The task score: the geometric mean of the averaged ROUGE-1, -2 and -L (0-100)."""
    if not parts:
        raise ValueError("No scored item.")
    # as the official `_compute_helper`: each F-measure x 100, then their mean per type
    means = [sum(p[name] * 100 for p in parts) / len(parts) for name in ROUGE_TYPES]
    return round((means[0] * means[1] * means[2]) ** (1.0 / 3.0), 4)


def _percentage(text: str) -> float | None:
    match = PERCENTAGE.search(text)
    return None if match is None else float(match.group().replace("%", ""))


def _exp_similarity(prediction: str, reference: str) -> float:
    gold = _percentage(reference)
    if gold is None:
        raise ValueError(f"The reference {reference!r} holds no percentage (e.g. 60%).")
    predicted = _percentage(str(prediction))
    if predicted is None:
        return 0.0
    return float(0.5 ** (abs(gold - predicted) / 10))


def exp_similarity(prediction: str, references: Sequence[str]) -> float:
    """SpaceDigest."""
    return _max_over(_exp_similarity, prediction, references)


def _ids(text: str) -> list[int]:
    kept = re.sub(r"[^0-9\s,]", "", str(text)).replace(",", " ").strip(string.punctuation)
    try:
        return [
            int("".join(ch for ch in part if ch not in PUNCTUATION).strip())
            for part in kept.split()
        ]
    except ValueError:
        return []


def _positions(ids: list[int]) -> list[int]:
    """For each summary id (1-based), its place in `ids` (1-based), as the
    official code builds it: Python's list indexing, so an id 0 writes to the
    last place and an id above len(ids) is an error."""
    order = [-1] * len(ids)
    for place, identifier in enumerate(ids, 1):
        try:
            order[identifier - 1] = place
        except IndexError:
            raise ValueError(
                f"Summary id {identifier} is outside 1..{len(ids)}: not a permutation of ids."
            ) from None
    return order


def _concordance(times: list[int], scores: list[int]) -> float:
    """lifelines' concordance_index(times, scores) with every event observed:
    over the pairs of different times, the share ordered alike (a tie in
    the scores counts half)."""
    concordant = admissible = 0.0
    for i in range(len(times)):
        for j in range(len(times)):
            if times[i] < times[j]:
                admissible += 1
                if scores[i] < scores[j]:
                    concordant += 1
                elif scores[i] == scores[j]:
                    concordant += 0.5
    if admissible == 0:
        raise ValueError("No pair of summaries to order: a single id or none.")
    return concordant / admissible


def _concordance_index(prediction: str, reference: str) -> float:
    predicted, gold = _ids(prediction), _ids(reference)
    if sorted(gold) != sorted(predicted):
        return 0.0
    return _concordance(_positions(gold), _positions(predicted))


def concordance_index(prediction: str, references: Sequence[str]) -> float:
    """BookSumSort."""
    return _max_over(_concordance_index, prediction, references)


def _letter(text: str) -> str | None:
    match = LETTER.search(text)
    return None if match is None else match.group()


def _accuracy(prediction: str, reference: str) -> float:
    gold = _letter(reference)
    if gold is None:
        raise ValueError(f"The reference {reference!r} holds no option letter A-D.")
    return float(_letter(str(prediction)) == gold)


def accuracy(prediction: str, references: Sequence[str]) -> float:
    """QuALITY."""
    return _max_over(_accuracy, prediction, references)

"""LooGLE's automatic metrics as its authors' code computes them
(bigai-nlco/LooGLE at 6734382, `Evaluation/automatic_metrics.py` and
`automatic_eval.py`), written anew around the same libraries:

- **Similarity** (`--eval_metric automatic_sim`; QA and summaries): BLEU-1 and
  BLEU-4 of whitespace words (nltk's `sentence_bleu`, no smoothing), and the
  ROUGE-1, ROUGE-2 and ROUGE-L *recall* of the `rouge` package (the script's
  `metric="r"`), each a mean over the questions. An empty answer is scored as
  the text "None", as `evaluation()` does.
- **Match** (`automatic_match`; the cloze task): the answer is read as a
  Python dict of masks (`{'<mask-0>': 'Bob'}`); exact match counts the masks
  it fills with the reference's text, partial match those sharing a word with
  it, and the task score is matched masks over all masks (not a mean of the
  questions), rounded to 4 decimals as the script prints it. An answer that
  is not a dict fills none.

Where the script would stop, a question here fails with the reason and the
others are scored: an answer or reference with no word for ROUGE (the package
raises "Hypothesis is empty"), a ROUGE-L sentence pair too long for the
package's recursion (or past a million word pairs, which the package would
hold in memory at once), a partial-match answer whose value is not text. The
script `eval()`s the model's answer; this reads it with `ast.literal_eval`,
which takes the same dicts of strings and never runs code (an answer written
as an expression, `dict(a='b')`, fills none here).

METEOR and BERTScore, the script's two other similarity scores, are not
here: nltk's METEOR needs the WordNet corpus and BERTScore roberta-large's
weights, neither of which Concord can fetch or ship.
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rouge import Rouge

TASKS = ("shortdep_qa", "longdep_qa", "longdep_summarization", "shortdep_cloze")
CLOZE_TASK = "shortdep_cloze"
BLEU_1, BLEU_4 = "loogle.bleu_1", "loogle.bleu_4"
ROUGE_1, ROUGE_2, ROUGE_L = "loogle.rouge_1", "loogle.rouge_2", "loogle.rouge_l"
EXACT_MATCH, PARTIAL_MATCH = "loogle.exact_match", "loogle.partial_match"
SIMILARITY_METRICS = (BLEU_1, BLEU_4, ROUGE_1, ROUGE_2, ROUGE_L)
MATCH_METRICS = (EXACT_MATCH, PARTIAL_MATCH)
# automatic_eval.py: `if hyp == '': hyp = 'None'`
EMPTY_ANSWER = "None"
# The rouge package's ROUGE-L keeps a dict of every word pair of two
# sentences (1,000 x 1,000 words: 140 MB), then recurses along it and fails
# past Python's 1,000 frames; past this many pairs, a question fails up front.
LCS_CELLS = 1_000_000


def metrics_for(task: str) -> tuple[str, ...]:
    """The metrics the script scores `task` with (automatic_match for the cloze
    task, automatic_sim for the others); ValueError for a task LooGLE lacks."""
    if task not in TASKS:
        raise ValueError(f"No LooGLE task {task!r}: one of {', '.join(TASKS)}.")
    return MATCH_METRICS if task == CLOZE_TASK else SIMILARITY_METRICS


def answered(hypothesis: str) -> str:
    return EMPTY_ANSWER if hypothesis == "" else hypothesis


@lru_cache(maxsize=256)  # each metric of a task asks for the same pair's (BLEU-1 and -4)
def bleu(reference: str, hypothesis: str) -> tuple[float, float]:
    """(BLEU-1, BLEU-4) of `hypothesis`'s words against `reference`'s
    (get_bleu_score)."""
    from nltk.translate.bleu_score import sentence_bleu

    ref = reference.replace("\n", " ").split()
    hyp = answered(hypothesis).replace("\n", " ").split()
    with warnings.catch_warnings():  # nltk warns on every answer with no 4-gram in common
        warnings.simplefilter("ignore")
        return (
            float(sentence_bleu([ref], hyp, weights=(1, 0, 0, 0))),
            float(sentence_bleu([ref], hyp, weights=(0, 0, 0, 1))),
        )


@lru_cache(maxsize=1)
def _rouge() -> Rouge:
    from rouge import Rouge

    return Rouge()


def _sentence_words(text: str) -> list[int]:
    """The words of each of the package's sentences (split at '.')."""
    return [len(part.split()) for part in text.split(".") if part]


@lru_cache(maxsize=256)  # the three ROUGE metrics of a pair are one call of the package's
def rouge_recall(reference: str, hypothesis: str) -> tuple[float, float, float]:
    """(ROUGE-1, ROUGE-2, ROUGE-L) recall (get_rouge_score); ValueError where
    the package stops (no word in the answer or the reference, a sentence pair
    past its recursion) or would hold a table past LCS_CELLS."""
    longest = max(_sentence_words(answered(hypothesis)), default=0)
    if longest * max(_sentence_words(reference), default=0) > LCS_CELLS:
        raise ValueError(
            "LooGLE's ROUGE-L (the rouge package) cannot score it: a sentence of the answer "
            f"and one of the reference hold more than {LCS_CELLS:,} word pairs (the package "
            "keeps a table of them all, then fails its recursion)."
        )
    try:
        scores = _rouge().get_scores(hyps=[answered(hypothesis)], refs=[reference])[0]
    except ValueError as error:  # "Hypothesis is empty." / "Collections must contain ..."
        raise ValueError(f"LooGLE's ROUGE (the rouge package) cannot score it: {error}") from None
    except RecursionError:
        raise ValueError(
            "LooGLE's ROUGE-L (the rouge package) cannot score it: a sentence pair too long "
            "for the package's recursive longest common subsequence."
        ) from None
    return (scores["rouge-1"]["r"], scores["rouge-2"]["r"], scores["rouge-l"]["r"])


def similarity(metric: str, reference: str, hypothesis: str) -> float:
    if metric in (BLEU_1, BLEU_4):
        return bleu(reference, hypothesis)[0 if metric == BLEU_1 else 1]
    return rouge_recall(reference, hypothesis)[(ROUGE_1, ROUGE_2, ROUGE_L).index(metric)]


def masks(reference: str | Mapping[str, Any]) -> dict[str, Any]:
    """A cloze question's reference masks: its dict, stored as JSON (the
    importer's) or written as Python (LooGLE's own `qa_pairs`)."""
    if isinstance(reference, Mapping):
        return dict(reference)
    for parse in (json.loads, ast.literal_eval):
        try:
            found = parse(reference)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(found, dict) and found:
            return found
    raise ValueError(
        "A LooGLE cloze reference is a dict of masks ({'<mask-0>': 'Bob'}), "
        f"not {reference!r:.80}."
    )


def filled(hypothesis: str | Mapping[str, Any]) -> dict[Any, Any] | None:
    """The answer's masks, as the script's `eval(hypothesis)` reads a dict of
    strings; None for anything else (the script counts it as no mask filled)."""
    if isinstance(hypothesis, Mapping):
        return dict(hypothesis)
    try:
        found = ast.literal_eval(answered(hypothesis))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def exact_match(reference: str | Mapping[str, Any], hypothesis: str) -> tuple[int, int]:
    """(masks filled with the reference's exact text, masks) (get_exact_match)."""
    wanted = masks(reference)
    given = filled(hypothesis)
    if given is None:
        return 0, len(wanted)
    return sum(1 for key in wanted if key in given and given[key] == wanted[key]), len(wanted)


def partial_match(reference: str | Mapping[str, Any], hypothesis: str) -> tuple[int, int]:
    """(masks filled with a word of the reference's, masks) (get_partial_match)."""
    wanted = masks(reference)
    given = filled(hypothesis)
    if given is None:
        return 0, len(wanted)
    count = 0
    for key in wanted:
        if key in given:
            value = given[key]
            if not isinstance(value, str):  # the script's `.split()` stops on it
                raise ValueError(
                    f"LooGLE's partial match reads each mask's answer as text; {key!r} is "
                    f"{value!r:.80}."
                )
            count += int(len(set(str(wanted[key]).split()) & set(value.split())) > 0)
    return count, len(wanted)


def similarity_task_score(values: Sequence[float]) -> float:
    """A similarity metric's task score, 0-100: 100 x the script's np.mean."""
    import numpy as np

    if not values:
        raise ValueError("No scored item.")
    return 100 * float(np.mean(values))


def match_task_score(counts: Sequence[tuple[float, float]]) -> float:
    """A match metric's task score, 0-100: 100 x the script's
    round(matched / masks, 4) over all questions."""
    matched = sum(m for m, _ in counts)
    total = sum(n for _, n in counts)
    if not total:
        raise ValueError("No scored mask.")
    return round(100 * round(matched / total, 4), 2)

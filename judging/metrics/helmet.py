"""HELMET's metrics as its authors' code computes them (princeton-nlp/HELMET
at 4526dfb, `utils.py`'s calculate_metrics and parse_output, `data.py`'s
post-processing per dataset), written anew:

- **calculate_metrics**: exact match, F1 (a yes/no/noanswer answer or
  reference scores 0 unless both are the same) and substring exact match,
  each the best over the answers after SQuAD's normalisation; ROUGE-L and
  ROUGE-Lsum F1 and recall (rouge-score, stemmed), each the best over them.
- **Post-processing**, as `load_data` picks it by the dataset's name: the
  metrics of the raw output and of its parsed answer (the text after
  "Answer:", else its first line), the better of each (`default_post_process`:
  the QA, RAG, NarrativeQA and InfiniteBench QA and summary datasets, RULER's
  QA); JSON KV parses after "corresponding value:", Multi-LexSum after
  "Summary:"; RULER's other tasks score `ruler_recall` (the share of the
  answers found in the output, case ignored); InfiniteBench's multiple choice
  takes exact match and F1 of both, then counts the option's "A. text" found
  in the output as both exact and substring match.
- A dataset's scores are 100 x the mean of its examples' (eval.py's
  averaged_metrics); `dataset_to_metrics` (scripts/collect_results.py) names
  the one each dataset reports.

The re-ranking (NDCG through pytrec_eval), citation (ALCE) and in-context
learning (label maps) datasets are not here.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rouge_score.rouge_scorer import RougeScorer

METRICS = (
    "exact_match",
    "f1",
    "substring_exact_match",
    "rougeL_f1",
    "rougeL_recall",
    "rougeLsum_f1",
    "rougeLsum_recall",
    "ruler_recall",
)
# scripts/collect_results.py's dataset_to_metrics, for the datasets scored here
REPORTED = {
    "json_kv": "substring_exact_match",
    "nq": "substring_exact_match",
    "popqa": "substring_exact_match",
    "triviaqa": "substring_exact_match",
    "hotpotqa": "substring_exact_match",
    "ruler_qa_1": "substring_exact_match",
    "ruler_qa_2": "substring_exact_match",
    "ruler_": "ruler_recall",
    "infbench_qa": "rougeL_f1",
    "infbench_choice": "exact_match",
}
_NO_ANSWER = ("yes", "no", "noanswer")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def f1_score(prediction: str, ground_truth: str) -> float:
    """utils.f1_score's F1 (its first value)."""
    predicted, truth = normalize_answer(prediction), normalize_answer(ground_truth)
    if predicted in _NO_ANSWER and predicted != truth:
        return 0.0
    if truth in _NO_ANSWER and predicted != truth:
        return 0.0
    predicted_tokens, truth_tokens = predicted.split(), truth.split()
    same = sum((Counter(predicted_tokens) & Counter(truth_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted_tokens), same / len(truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def flattened(answers: str | Sequence[str] | Sequence[Sequence[str]]) -> list[str]:
    """The answers as the script reads them: a string, a list, or a list of lists."""
    if isinstance(answers, str):
        return [answers]
    found: list[object] = list(answers)
    if found and isinstance(found[0], list | tuple):
        found = [a for group in found if isinstance(group, list | tuple) for a in group]
    strings = [a for a in found if isinstance(a, str)]
    if not strings or len(strings) != len(found):
        raise ValueError(f"HELMET's answers are strings (or lists of them), not {answers!r:.80}.")
    return strings


def _best(metric: Callable[[str, str], float], prediction: str, answers: list[str]) -> float:
    return max(metric(prediction, answer) for answer in answers)


@lru_cache(maxsize=1)
def _scorer() -> RougeScorer:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL", "rougeLsum"], use_stemmer=True)


def calculate_metrics(prediction: str, answers: str | Sequence) -> dict[str, float]:
    """utils.calculate_metrics: the seven scores of `prediction` (True/False as 1/0)."""
    found = flattened(answers)
    scores = {
        "exact_match": _best(
            lambda p, a: float(normalize_answer(p) == normalize_answer(a)), prediction, found
        ),
        "f1": _best(f1_score, prediction, found),
        "substring_exact_match": _best(
            lambda p, a: float(normalize_answer(a) in normalize_answer(p)), prediction, found
        ),
    }
    rouges = [_scorer().score(target=a, prediction=prediction) for a in found]
    for kind in ("rougeL", "rougeLsum"):
        scores[f"{kind}_f1"] = max(r[kind].fmeasure for r in rouges)
        scores[f"{kind}_recall"] = max(r[kind].recall for r in rouges)
    return scores


def parse_output(output: str, prefix: str = "Answer:") -> str | None:
    """utils.parse_output: the text after `prefix` on its line (case ignored),
    else the first line, with a repeated prefix taken off."""
    patterns = [
        re.compile(f"(?:{prefix})(.*)(?:\n|$)", flags=re.IGNORECASE),
        re.compile(r"(?:^)(.*)(?:\n|$)"),
    ]
    for pattern in patterns:
        matches = pattern.search(output)
        if matches is not None:
            stripped = matches[1].strip()
            return re.sub(f"^{re.escape(prefix)}", "", stripped, flags=re.IGNORECASE).strip()
    return None


def _with_parsed(prediction: str, answers: Sequence, prefix: str) -> dict[str, float]:
    scores = calculate_metrics(prediction, answers)
    parsed = parse_output(prediction, prefix)
    if parsed is not None:
        again = calculate_metrics(parsed, answers)
        scores = {k: max(v, again[k]) for k, v in scores.items()}
    return scores


def _choice(prediction: str, answers: Sequence) -> dict[str, float]:
    """InfiniteBench's multiple choice (choice_post_process): the answers are
    the letter and "A. option"."""
    scores = calculate_metrics(prediction, answers)
    scores.pop("substring_exact_match")
    parsed = parse_output(prediction)
    if parsed is not None:
        again = calculate_metrics(parsed, answers)
        again.pop("substring_exact_match")
        scores = {k: max(v, again[k]) for k, v in scores.items()}
    scores["substring_exact_match"] = 0.0
    if len(answers) < 2 or not isinstance(answers[1], str):
        raise ValueError("InfiniteBench's choice answers are the letter and 'A. option'.")
    if answers[1].lower() in prediction.lower():
        scores["substring_exact_match"] = scores["exact_match"] = 1.0
    return scores


def ruler_recall(prediction: str, answers: Sequence) -> dict[str, float]:
    found = flattened(answers)
    return {"ruler_recall": sum(a.lower() in prediction.lower() for a in found) / len(found)}


def post_process(dataset: str, prediction: str, answers: Sequence) -> dict[str, float]:
    """The example's scores as HELMET's post-processing for `dataset` makes
    them (load_data's dispatch by name, in its order); ValueError for a
    dataset scored otherwise (re-ranking, citations, ICL) or unknown."""
    if "popqa" in dataset or any(x in dataset for x in ("nq", "hotpotqa", "triviaqa")):
        return _with_parsed(prediction, answers, "Answer:")
    if dataset == "json_kv":  # parsed always, as its post_process does
        scores = calculate_metrics(prediction, answers)
        again = calculate_metrics(parse_output(prediction, "corresponding value:") or "", answers)
        return {k: max(v, again[k]) for k, v in scores.items()}
    if "narrativeqa" in dataset:
        return _with_parsed(prediction, answers, "Answer:")
    if any(x in dataset for x in ("msmarco", "alce", "icl")):
        raise ValueError(
            f"HELMET scores {dataset!r} by ranking, citations or label maps, not here."
        )
    if "multi_lexsum" in dataset:
        return _with_parsed(prediction, answers, "Summary:")
    if "ruler" in dataset:
        if "qa" in dataset:
            return _with_parsed(prediction, answers, "Answer:")
        return ruler_recall(prediction, answers)
    if "infbench" in dataset:
        if "choice_eng" in dataset:
            return _choice(prediction, answers)
        return _with_parsed(prediction, answers, "Answer:")
    raise ValueError(f"Unknown HELMET dataset {dataset!r}.")


def averaged(values: Sequence[float]) -> float:
    """A dataset's score, 0-100: eval.py's np.mean(v) * 100."""
    import numpy as np

    if not values:
        raise ValueError("No scored item.")
    return float(np.mean(values) * 100)


def reported_metric(dataset: str) -> str | None:
    """The metric collect_results.py reports for `dataset` (None: a judge's, or none here)."""
    for name, metric in REPORTED.items():
        if name in dataset:
            return metric
    return None

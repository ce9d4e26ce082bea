"""RULER's scoring as its authors' code does it (NVIDIA/RULER,
`scripts/eval/evaluate.py` and `scripts/eval/synthetic/constants.py`, Apache
2.0), written anew and checked against a copy of that code on thousands of
generated cases (tests/judging/test_ruler_metrics.py).

- A prediction is first stripped, every control character (U+0000-U+001F)
  made a newline, and stripped again (`postprocess_pred`).
- `string_match_all` (the needle, variable-tracking and word-extraction
  tasks): the share of the references found in the prediction, ignoring case.
- `string_match_part` (the QA tasks): 1 when any reference is found, else 0.
- A task's score: 100 x the mean over its items, rounded to two decimals.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from corpus.ruler.constants import ALL_TASKS
from corpus.ruler.constants import ruler_task as task_name

STRING_MATCH_ALL = "ruler.string_match_all"
STRING_MATCH_PART = "ruler.string_match_part"
_CONTROL = re.compile(r"[\x00-\x1f]")

# each base task's metric (constants.py's TASKS); the tasks are synthetic.yaml's
METRIC_BY_BASE_TASK = {
    "niah": STRING_MATCH_ALL,
    "variable_tracking": STRING_MATCH_ALL,
    "common_words_extraction": STRING_MATCH_ALL,
    "freq_words_extraction": STRING_MATCH_ALL,
    "qa": STRING_MATCH_PART,
}


def postprocess(prediction: str) -> str:
    """evaluate.py's postprocess_pred."""
    return _CONTROL.sub("\n", prediction.strip()).strip()


def string_match_all(prediction: str, references: Sequence[str]) -> float:
    """The share of `references` in the prediction (case ignored)."""
    if not references:
        raise ValueError("RULER's string match needs at least one reference.")
    found = postprocess(prediction).lower()
    return sum(1.0 if r.lower() in found else 0.0 for r in references) / len(references)


def string_match_part(prediction: str, references: Sequence[str]) -> float:
    """1.0 when any of `references` is in the prediction (case ignored)."""
    if not references:
        raise ValueError("RULER's string match needs at least one reference.")
    found = postprocess(prediction).lower()
    return max(1.0 if r.lower() in found else 0.0 for r in references)


def task_score(values: Sequence[float]) -> float:
    """100 x the items' mean, rounded to two decimals, summed in the items'
    order as the script sums them."""
    if not values:
        raise ValueError("No scored item.")
    return round(sum(values) / len(values) * 100, 2)


def metric_for(task: str) -> str | None:
    """The metric a synthetic.yaml task (`niah_single_1`, `qa_2`, with or
    without Concord's `-<length>` suffix) is scored with; None for a task
    RULER does not name."""
    base = ALL_TASKS.get(task_name(task))
    return METRIC_BY_BASE_TASK[base] if base else None

"""LongBench v2's scoring as its authors' code does it (THUDM/LongBench,
`pred.py` `extract_answer` and `result.py`, MIT licence), written anew and
checked against a copy of that code on thousands of generated cases
(tests/judging/test_longbench_v2.py).

- The answer: asterisks removed from the response, then the letter of the
  first "The correct answer is (X)", else of the first "The correct answer
  is X" (X one of A-D); none when neither is there.
- An item is right when that letter is the reference's (`judge`), wrong when
  no letter was found.
- `result.py`'s table: the accuracy (100 x right / questions, rounded to one
  decimal) over all questions and over each difficulty (easy; every other
  value counts as hard) and each length (short, medium; every other value
  counts as long). Its "compensated" variant (a missing answer scores 0.25)
  is off in the published script and here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

METRIC = "longbench_v2.accuracy"  # the evaluator plug-in (judging.evaluators.longbench_v2)
CHOICES = ("A", "B", "C", "D")
_BRACKETED = re.compile(r"The correct answer is \(([A-D])\)")
_BARE = re.compile(r"The correct answer is ([A-D])")
BREAKDOWN = ("Overall", "Easy", "Hard", "Short", "Medium", "Long")


def extract_answer(response: str) -> str | None:
    """pred.py's extract_answer."""
    response = response.replace("*", "")
    match = _BRACKETED.search(response) or _BARE.search(response)
    return match.group(1) if match else None


def accuracy(prediction: str, answer: str) -> float:
    """1.0 when the response's answer is the reference letter, else 0.0."""
    return 1.0 if extract_answer(prediction) == answer else 0.0


def breakdown(items: Iterable[Mapping[str, object]]) -> dict[str, float | None]:
    """result.py's row for one results file: each item's `judge` (right or
    not), `difficulty` and `length`; None for a group with no question (where
    the script divides by zero)."""
    counts = dict.fromkeys(BREAKDOWN, 0)
    right = dict.fromkeys(BREAKDOWN, 0)
    for item in items:
        value = int(bool(item["judge"]))
        groups = ["Overall", "Easy" if item["difficulty"] == "easy" else "Hard"]
        length = item["length"]
        groups.append("Short" if length == "short" else "Medium" if length == "medium" else "Long")
        for group in groups:
            counts[group] += 1
            right[group] += value
    return {
        group: round(100 * right[group] / counts[group], 1) if counts[group] else None
        for group in BREAKDOWN
    }

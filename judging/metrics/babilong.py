"""BABILong's scoring as its authors' code does it (booydar/babilong,
`babilong/metrics.py` and `babilong/collect_results.py`, Apache 2.0), written
anew and checked against a copy of that code on thousands of generated cases
and on the prediction files the authors publish
(tests/judging/test_babilong_metrics.py).

- An answer is right when, after `preprocess_output` (lower case, the first
  sentence, cut at `<context>` or `<example>`), the target is the only one of
  the task's labels it names, labels named in the question left out (they
  are never the answer). qa8's lists (`apple,milk`) need each label and no
  other. Labels are found as substrings, as the authors find them: so qa7's
  "none" also names "one", and an answer "none" is never right (kept as
  published; the published scores have it so).
- A task's score at a length: 100 x right / questions, not rounded
  (collect_results.py's accuracy).
"""

from __future__ import annotations

from collections.abc import Sequence

from corpus.importers.formats.babilong import task_name

ACCURACY = "babilong.accuracy"

# metrics.py's TASK_LABELS: the answers each bAbI task can have
TASK_LABELS: dict[str, tuple[str, ...]] = {
    "qa1": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa2": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa3": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa4": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa5": ("Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"),
    "qa6": ("no", "yes"),
    "qa7": ("none", "one", "three", "two"),
    "qa8": ("apple", "football", "milk", "nothing"),
    "qa9": ("no", "yes"),
    "qa10": ("maybe", "no", "yes"),
    "qa11": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa12": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa13": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa14": ("bedroom", "cinema", "kitchen", "office", "park", "school"),
    "qa15": ("cat", "mouse", "sheep", "wolf"),
    "qa16": ("gray", "green", "white", "yellow"),
    "qa17": ("no", "yes"),
    "qa18": ("no", "yes"),
    "qa19": (
        "e,e",
        "e,n",
        "e,s",
        "n,e",
        "n,n",
        "n,w",
        "s,e",
        "s,s",
        "s,w",
        "w,n",
        "w,s",
        "w,w",
    ),  # fmt: skip
    "qa20": ("bedroom", "bored", "garden", "hungry", "kitchen", "thirsty", "tired"),
}


def labels_for(task: str) -> tuple[str, ...]:
    """The labels of a stored or bAbI task; ValueError for a task BABILong
    does not have."""
    labels = TASK_LABELS.get(task_name(task))
    if labels is None:
        raise ValueError(
            f"No BABILong task {task_name(task)!r}: one of qa1-qa20 (with its length, qa1-4k)."
        )
    return labels


def preprocess_output(output: str) -> str:
    """metrics.py's preprocess_output: lower case, the first sentence, cut
    where the model starts an example. (Its cut at 'Question' comes after the
    lower-casing, so it never cuts; kept as published.)"""
    output = output.lower()
    output = output.split(".")[0]
    output = output.split("<context>")[0]
    output = output.split("<example>")[0]
    return output.split("Question")[0]


def is_correct(target: str, output: str, question: str, labels: Sequence[str]) -> bool:
    """metrics.py's compare_answers."""
    output = preprocess_output(output)
    target = target.lower()
    task_labels = {label.lower() for label in labels}
    in_question = {label for label in task_labels if label in question.lower()}
    in_output = {label for label in task_labels if label in output} - in_question
    if "," in target and len(target) > 3:  # qa8's lists: every item, and nothing else
        items = target.split(",")
        return all(item in in_output for item in items) and len(in_output) == len(items)
    return target in in_output and len(in_output) == 1


def accuracy(prediction: str, target: str, question: str, task: str) -> float:
    """1.0 when the prediction answers the task's question with its target."""
    return 1.0 if is_correct(target, prediction, question, labels_for(task)) else 0.0


def task_score(values: Sequence[float]) -> float:
    """collect_results.py's accuracy: 100 x right / questions, unrounded."""
    if not values:
        raise ValueError("No scored item.")
    return 100 * sum(values) / len(values)

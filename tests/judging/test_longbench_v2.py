"""LongBench v2's scoring (judging.metrics.longbench_v2, the evaluator
longbench_v2.accuracy) against a copy of its authors' code (THUDM/LongBench
at 2e00731, MIT licence: `pred.py` extract_answer, `result.py`'s loop, both
below as published, the loop made a function of its items) on 4,000
generated responses and 300 generated results files: asterisks, brackets or
none, several answers, lower case, letters beyond D, Unicode, empty."""

from __future__ import annotations

import json
import random
import re

import pytest

from judging.evaluators import metric_class
from judging.metrics import longbench_v2


# --- LongBench/pred.py ------------------------------------------------------------------------
def extract_answer(response):
    response = response.replace("*", "")
    match = re.search(r"The correct answer is \(([A-D])\)", response)
    if match:
        return match.group(1)
    else:
        match = re.search(r"The correct answer is ([A-D])", response)
        if match:
            return match.group(1)
        else:
            return None


# --- LongBench/result.py (the loop over one file's predictions) ---------------------------------
def result_row(pred_data, compensated=False):
    easy, hard, short, medium, long = 0, 0, 0, 0, 0
    easy_acc, hard_acc, short_acc, medium_acc, long_acc = 0, 0, 0, 0, 0
    for pred in pred_data:
        acc = int(pred["judge"])
        if compensated and pred["pred"] == None:  # noqa: E711 (as published)
            acc = 0.25
        if pred["difficulty"] == "easy":
            easy += 1
            easy_acc += acc
        else:
            hard += 1
            hard_acc += acc

        if pred["length"] == "short":
            short += 1
            short_acc += acc
        elif pred["length"] == "medium":
            medium += 1
            medium_acc += acc
        else:
            long += 1
            long_acc += acc
    return [
        round(100 * (easy_acc + hard_acc) / len(pred_data), 1),
        round(100 * easy_acc / easy, 1),
        round(100 * hard_acc / hard, 1),
        round(100 * short_acc / short, 1),
        round(100 * medium_acc / medium, 1),
        round(100 * long_acc / long, 1),
    ]


PIECES = [
    "The correct answer is (A)",
    "The correct answer is (B).",
    "The correct answer is C",
    "The correct answer is D because",
    "**The correct answer is (C)**",
    "The correct answer is **B**",
    "The *correct* answer is (A)",
    "the correct answer is (A)",
    "The correct answer is (E)",
    "The correct answer is E",
    "The correct answer is: (B)",
    "The correct answer is  (C)",
    "The correct answer is (a)",
    "The correct answer is \n(D)",
    "The correct answer is Ａ",
    "Die richtige Antwort ist (B)",
    "答案是 (C)",
    "I think (A) is right.",
    "",
    " ",
    "(B)",
    "The correct answer is (",
    "The correct answer is (AB)",
    "The correct answer is (D) or The correct answer is (A)",
    "The correct answer is B, not The correct answer is (C)",
]


def response(rng: random.Random) -> str:
    parts = rng.choices(PIECES, k=rng.randint(0, 3))
    filler = rng.choice(["", "Let me think. ", "Ünïcødé ✓ ", "***", "\n\n"])
    return filler + rng.choice([" ", "\n", "*", ""]).join(parts)


def test_the_answer_and_accuracy_equal_the_official_code_on_4000_responses():
    rng = random.Random(7)
    found = {None: 0, "A": 0, "B": 0, "C": 0, "D": 0}
    plugin = metric_class("longbench_v2.accuracy")()
    for _ in range(4000):
        text, answer = response(rng), rng.choice("ABCD")
        official = extract_answer(text)
        assert longbench_v2.extract_answer(text) == official, text
        assert plugin.compute(text, [answer]) == float(official == answer)
        found[official] += 1
    assert min(found.values()) > 100  # every outcome met, none found included


def test_the_breakdown_equals_result_py_on_300_files():
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(6, 80)
        items = [
            {
                "judge": rng.random() < 0.4,
                "pred": rng.choice([None, "A", "B"]),
                "difficulty": rng.choice(["easy", "hard", "Easy"]),
                "length": rng.choice(["short", "medium", "long", "Long"]),
            }
            for _ in range(n)
        ]
        # every group met (the script divides by each group's count)
        items += [
            {"judge": True, "pred": "A", "difficulty": d, "length": length}
            for d, length in (("easy", "short"), ("hard", "medium"), ("hard", "long"))
        ]
        ours = longbench_v2.breakdown(items)
        assert [ours[g] for g in longbench_v2.BREAKDOWN] == result_row(items)
        plugin = metric_class("longbench_v2.accuracy")()
        values = [float(i["judge"]) for i in items]
        assert plugin.task_score(values, [{}] * len(values)) == result_row(items)[0]
    # a group without questions: none, where the script divides by zero
    lone = [{"judge": True, "pred": "A", "difficulty": "easy", "length": "short"}]
    with pytest.raises(ZeroDivisionError):
        result_row(lone)
    assert longbench_v2.breakdown(lone) == {
        "Overall": 100.0, "Easy": 100.0, "Hard": None, "Short": 100.0, "Medium": None,
        "Long": None,
    }  # fmt: skip


def test_a_reference_that_is_not_one_letter_is_refused():
    plugin = metric_class("longbench_v2.accuracy")()
    for references in (["E"], ["A", "B"], [""], ["(A)"]):
        with pytest.raises(ValueError, match="one letter A-D"):
            plugin.compute("The correct answer is (A)", references)


def test_score_by_task_takes_longbench_v2s_accuracy(tmp_path):
    from io import StringIO

    from django.core.management import call_command

    file = tmp_path / "p.jsonl"
    lines = [
        {"prediction": "The correct answer is (B)", "references": ["B"]},
        {"prediction": "**The correct answer is C**", "references": ["C"]},
        {"prediction": "I cannot tell.", "references": ["A"]},
    ]
    file.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    err = StringIO()
    call_command(
        "score", "--benchmark", "longbench_v2", "--task", "longbench_v2",
        "--predictions", str(file), stdout=StringIO(), stderr=err,
    )  # fmt: skip
    assert err.getvalue().startswith("longbench_v2.accuracy: 3 of 3 lines scored; task score 66.7")

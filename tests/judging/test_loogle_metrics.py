"""LooGLE's scoring (judging.metrics.loogle, the loogle.* evaluators and
`score --benchmark loogle`) against its authors' code as published
(tests/data/loogle/official: bigai-nlco/LooGLE at 6734382, MIT): BLEU-1/4 and
ROUGE-1/2/L recall on 3,000 generated pairs (sentences, newlines, repeats,
Unicode, empty answers), exact and partial match on 3,000 generated cloze
answers (dicts, missing and extra masks, JSON, prose, expressions), and
automatic_eval.py's task scores on the four prediction files the authors
publish that it can score (tests/data/loogle/Output)."""

from __future__ import annotations

import importlib
import json
import random
import re
import sys
import types
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judging.evaluators import metric_class
from judging.evaluators.official import NoOfficialMetric, official_metric
from judging.metrics import loogle
from tests.conftest import REPO

# nltk warns on every pair with no 4-gram in common, the authors' code as Concord's
pytestmark = pytest.mark.filterwarnings("ignore:\\s*The hypothesis contains 0 counts")

DATA = REPO / "tests" / "data" / "loogle"


def official_modules():
    """automatic_metrics.py and automatic_eval.py as published; bert_score (a
    model download, never called here) stands in as an empty module."""
    sys.modules.setdefault("bert_score", types.SimpleNamespace(score=None))  # type: ignore[arg-type]
    sys.path.insert(0, str(DATA / "official"))
    try:
        return importlib.import_module("automatic_metrics"), importlib.import_module(
            "automatic_eval"
        )
    finally:
        sys.path.remove(str(DATA / "official"))


METRICS, EVAL = official_modules()
WORDS = ["the", "paper", "Picardo", "1919", "born", "in", "Madrid", "Straße", "東京", "a", "of"]
BREAKS = [" ", " ", " ", ". ", "\n", ".", ", ", "  ", "\t", "..."]


def sentence_text(rng: random.Random, words: int) -> str:
    pieces = []
    for _ in range(words):
        pieces += [rng.choice(WORDS), rng.choice(BREAKS)]
    return "".join(pieces).strip() or rng.choice(WORDS)


def similar_pair(rng: random.Random) -> tuple[str, str]:
    reference = sentence_text(rng, rng.randint(1, 40))
    roll = rng.random()
    if roll < 0.05:
        return reference, ""
    if roll < 0.2:  # the reference, perhaps with more
        return reference, reference + rng.choice(["", " " + sentence_text(rng, 5)])
    return reference, sentence_text(rng, rng.randint(1, 60))


def test_every_generated_pair_has_the_scripts_bleu_and_rouge_recall():
    rng = random.Random(23)
    rouge = {m: metric_class(m)() for m in loogle.SIMILARITY_METRICS}
    failed = 0
    for _ in range(3000):
        reference, answer = similar_pair(rng)
        hyp = "None" if answer == "" else answer  # automatic_eval.py's evaluation()
        expected_bleu = METRICS.get_bleu_score("", reference, hyp, "shortdep_qa")
        assert loogle.bleu(reference, answer) == expected_bleu
        assert rouge[loogle.BLEU_1].compute(answer, [reference]) == expected_bleu[0]
        assert rouge[loogle.BLEU_4].compute(answer, [reference]) == expected_bleu[1]
        try:
            expected = METRICS.get_rouge_score("", reference, hyp, "shortdep_qa")
        except ValueError:  # the package stops (an answer of dots: no word); so does the metric
            failed += 1
            with pytest.raises(ValueError, match="cannot score"):
                rouge[loogle.ROUGE_L].compute(answer, [reference])
            continue
        for metric, value in zip(
            (loogle.ROUGE_1, loogle.ROUGE_2, loogle.ROUGE_L), expected, strict=True
        ):
            assert rouge[metric].compute(answer, [reference]) == value
    assert failed < 30  # the generator mostly makes pairs the script scores


CLOZE_ANSWERS = [
    "{'<mask-0>': 'Bob'}",
    '{"<mask-0>": "Bob Smith", "<mask-1>": "Kentwood"}',
    "{'<mask-0>': 'bob', '<mask-2>': 'Madrid'}",
    " {'<mask-1>': 'Kentwood Louisiana'}",
    "{'<mask-0>': 'Bob', '<mask-0>': 'Alice'}",
    "The masked entities are Bob and Kentwood.",
    "",
    "None",
    "['Bob', 'Kentwood']",
    "{'<mask-0>': 'Bob'} and that is all",
    "{'<mask-0>': 'Bob Smith'",
    "{}",
    "{'<mask-0>': \"Bob's friend\"}",
    "{'<mask-1>': 'Kentwood', '<mask-9>': 'x'}",
    "{'<mask-0>': true}",
    "\n{'<mask-0>': 'Bob'}",
    "{'<mask-0>': '東京 Bob'}",
]


def cloze_case(rng: random.Random) -> tuple[dict[str, str], str]:
    names = ["Bob", "Bob Smith", "Kentwood", "Kentwood Louisiana", "Madrid", "東京"]
    reference = {f"<mask-{i}>": rng.choice(names) for i in range(rng.randint(1, 3))}
    if rng.random() < 0.5:
        return reference, rng.choice(CLOZE_ANSWERS)
    answer = {k: rng.choice([v, v.split()[0], rng.choice(names)]) for k, v in reference.items()}
    if rng.random() < 0.3:
        answer.pop(rng.choice(list(answer)))
    return reference, (json.dumps(answer) if rng.random() < 0.3 else repr(answer))


def test_every_generated_cloze_answer_matches_as_the_script_matches_it():
    rng = random.Random(7)
    exact, partial = metric_class(loogle.EXACT_MATCH)(), metric_class(loogle.PARTIAL_MATCH)()
    counts: dict[str, list[tuple[int, int]]] = {"exact": [], "partial": []}
    for _ in range(3000):
        reference, answer = cloze_case(rng)
        stored = json.dumps(reference, ensure_ascii=False)  # as the importer stores it
        hyp = "None" if answer == "" else answer
        expected_exact = METRICS.get_exact_match("", reference, hyp, loogle.CLOZE_TASK)
        expected_partial = METRICS.get_partial_match("", reference, hyp, loogle.CLOZE_TASK)
        assert loogle.exact_match(stored, answer) == expected_exact
        assert loogle.partial_match(repr(reference), answer) == expected_partial
        value, parts = exact.item(answer, [stored])
        assert (parts["matched"], parts["masks"]) == expected_exact
        assert value == expected_exact[0] / expected_exact[1]
        counts["exact"].append(expected_exact)
        counts["partial"].append(expected_partial)
        partial.item(answer, [stored])
    for name, metric in (("exact", exact), ("partial", partial)):
        got = metric.task_score([], [{"matched": m, "masks": n} for m, n in counts[name]])
        official = EVAL.get_match_score({f"get_{name}_match": counts[name]}, [f"get_{name}_match"])
        assert got == pytest.approx(100 * official[f"get_{name}_match"], abs=1e-9)
    assert 0 < sum(m for m, _ in counts["exact"]) < sum(m for m, _ in counts["partial"])


def test_an_answer_the_script_cannot_read_as_text_fails_alone():
    with pytest.raises(AttributeError):  # the script stops on it
        METRICS.get_partial_match("", {"<mask-0>": "Bob"}, "{'<mask-0>': 3}", loogle.CLOZE_TASK)
    with pytest.raises(ValueError, match="as text"):
        loogle.partial_match('{"<mask-0>": "Bob"}', "{'<mask-0>': 3}")
    assert loogle.exact_match('{"<mask-0>": "Bob"}', "{'<mask-0>': 3}") == (0, 1)
    with pytest.raises(ValueError, match="dict of masks"):
        loogle.exact_match("Bob", "{'<mask-0>': 'Bob'}")
    # the script evaluates an expression; the metric never runs the model's answer
    for expression in ("dict(a='Bob')", "{'a': 'B' + 'ob'}"):
        assert METRICS.get_exact_match("", {"a": "Bob"}, expression, "") == (1, 1)
        assert loogle.exact_match('{"a": "Bob"}', expression) == (0, 1)
    long_reference, long_answer = " ".join(["a"] * 50), " ".join(["b"] * 5000)
    with pytest.raises(RecursionError):
        METRICS.get_rouge_score("", long_reference, long_answer, "shortdep_qa")
    with pytest.raises(ValueError, match="recursive"):
        loogle.rouge_recall(long_reference, long_answer)
    with pytest.raises(ValueError, match="1,000,000 word pairs"):  # refused before the table
        loogle.rouge_recall(" ".join(["a"] * 2000), " ".join(["a"] * 2000) + ". a")


PUBLISHED = sorted((DATA / "Output").glob("*.jsonl"))


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: p.stem)
def test_each_published_prediction_file_scores_as_automatic_eval_scores_it(path):
    task = next(t for t in loogle.TASKS if path.stem.startswith(t))
    functions = ["get_bleu_score", "get_rouge_score"]
    official: dict[str, list] = {}
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        official = EVAL.evaluation(line, official, functions, task)
    expected = EVAL.get_semantic_matching(official, functions)
    answers = [
        (hyp, ref)
        for line in lines
        for hyp, ref in zip(line["llm_output"], line["output"], strict=True)
    ]
    assert len(answers) == len(official["get_bleu_score"]) >= 2
    for index, metric in enumerate(loogle.SIMILARITY_METRICS):
        plugin = metric_class(metric)()
        values = [plugin.compute(hyp, [ref]) for hyp, ref in answers]
        function, part = ("get_bleu_score", index) if index < 2 else ("get_rouge_score", index - 2)
        assert values == [score[part] for score in official[function]]
        assert plugin.task_score(values, []) == 100 * expected[function][part]

    out, err = StringIO(), StringIO()
    call_command("score", benchmark="loogle", task=task, predictions=path, stdout=out, stderr=err)
    summary = err.getvalue().strip().splitlines()
    means = [*expected["get_bleu_score"], *expected["get_rouge_score"]]
    assert len(summary) == len(means) == len(loogle.SIMILARITY_METRICS)
    for line, metric, value in zip(summary, loogle.SIMILARITY_METRICS, means, strict=True):
        assert line.startswith(f"{metric}: {len(answers)} of {len(answers)} lines scored")
        assert line.endswith(f"task score {100 * value:.4f}")
    scored = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(scored) == len(answers)
    assert [s["scores"][loogle.ROUGE_L] for s in scored] == [
        score[2] for score in official["get_rouge_score"]
    ]
    if task != "longdep_summarization":  # a summary's qa_pairs: "none"
        assert scored[0]["question"] == lines[0]["qa_pairs"][0]["Q"]


def test_the_official_metrics_are_the_tasks_own():
    assert official_metric("loogle", "shortdep_cloze") == loogle.EXACT_MATCH
    assert loogle.metrics_for("longdep_summarization") == loogle.SIMILARITY_METRICS
    with pytest.raises(NoOfficialMetric, match="shortdep_qa"):
        official_metric("loogle", "qa")


def test_score_refuses_a_loogle_line_it_cannot_read_and_writes_nothing(tmp_path):
    out = tmp_path / "scored.jsonl"
    for line, error in [
        ({"llm_output": "answer", "output": ["Jerez."]}, "must be lists"),
        ({"llm_output": ["a", "b"], "output": ["Jerez."]}, "2 answers in 'llm_output' for 1"),
        ({"llm_output": [3], "output": ["Jerez."]}, "'prediction' must be a string"),
    ]:
        path = tmp_path / "shortdep_qa_m.jsonl"
        path.write_text(json.dumps(line) + "\n")
        with pytest.raises(CommandError, match=re.escape(error)):
            call_command(
                "score", benchmark="loogle", task="shortdep_qa", predictions=path, output=out
            )
        assert not out.exists()

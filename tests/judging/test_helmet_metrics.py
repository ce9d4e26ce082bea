"""HELMET's scoring (judging.metrics.helmet and the helmet.* evaluators)
against its authors' code as published (tests/data/helmet/official:
princeton-nlp/HELMET at 4526dfb, MIT): utils.py's calculate_metrics and
parse_output imported as they are (pytrec_eval, for re-ranking, stands in as
an empty module), and data.py's post-processing functions (default_post_process,
and the closures JSON KV, Multi-LexSum, RULER and InfiniteBench's choices
define) taken out of the published file as written, on 4,000 generated
outputs over every dataset kind scored here."""

from __future__ import annotations

import ast
import importlib
import json
import random
import sys
import types
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from judging.evaluators import metric_class
from judging.evaluators.official import NoOfficialMetric, official_metric
from judging.metrics import helmet
from tests.conftest import REPO

OFFICIAL_DIR = REPO / "tests" / "data" / "helmet" / "official"


def official_utils():
    sys.modules.setdefault("pytrec_eval", types.SimpleNamespace())  # type: ignore[arg-type]
    sys.path.insert(0, str(OFFICIAL_DIR))
    try:
        return importlib.import_module("utils")
    finally:
        sys.path.remove(str(OFFICIAL_DIR))


UTILS = official_utils()


def official_post_processes() -> dict[str, object]:
    """data.py's post-processing functions as published, by the dataset kind
    that uses them (the closures lifted out of their loaders unchanged)."""
    tree = ast.parse((OFFICIAL_DIR / "data.py").read_text(encoding="utf-8"))
    wanted = {
        ("load_json_kv", "post_process"): "json_kv",
        ("load_multi_lexsum", "post_process"): "multi_lexsum",
        ("load_ruler", "post_process"): "ruler",
        ("load_infbench", "choice_post_process"): "infbench_choice",
        (None, "default_post_process"): "default",
    }
    found = {}
    for outer in tree.body:
        if not isinstance(outer, ast.FunctionDef):
            continue
        candidates = [(None, outer)] + [
            (outer.name, inner) for inner in ast.walk(outer) if isinstance(inner, ast.FunctionDef)
        ]
        for parent, node in candidates:
            kind = wanted.get((parent, node.name))
            if kind is None or kind in found:
                continue
            namespace = {
                "calculate_metrics": UTILS.calculate_metrics,
                "parse_output": UTILS.parse_output,
                "system_template": "Summary:",  # load_multi_lexsum's
            }
            exec(compile(ast.Module([node], []), "data.py", "exec"), namespace)  # noqa: S102
            found[kind] = namespace[node.name]
    assert set(found) == set(wanted.values())
    return found


OFFICIAL = official_post_processes()
DATASETS = {  # HELMET's dataset names (configs/*.yaml) -> the post-processing data.py gives them
    "kilt_nq": "default",
    "kilt_triviaqa": "default",
    "kilt_hotpotqa": "default",
    "kilt_popqa_3": "default",
    "narrativeqa_130772": "default",
    "infbench_qa_eng_130862": "default",
    "infbench_sum_eng_129672": "default",
    "ruler_qa_1": "default",
    "json_kv": "json_kv",
    "multi_lexsum_130700": "multi_lexsum",
    "ruler_niah_mk_2": "ruler",
    "ruler_cwe": "ruler",
    "infbench_choice_eng_130862": "infbench_choice",
}
WORDS = ["the", "North", "Pole", "a", "yes", "no", "1919", "Straße", "running", "ran", "an"]
NOISE = ["", " ", "\n", "Answer: ", "answer:", "Summary: ", "Corresponding value: ", ".", ", "]


def phrase(rng: random.Random, most: int = 6) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, most)))


def case(rng: random.Random, kind: str) -> tuple[str, list[str]]:
    if kind == "infbench_choice":
        letter = rng.choice("ABCD")
        answers = [letter, f"{letter}. {phrase(rng)}"]
    elif kind == "json_kv":
        answers = [f"{rng.getrandbits(64):016x}-{rng.getrandbits(16):04x}"]
    else:
        answers = [phrase(rng) for _ in range(rng.randint(1, 3))]
    pieces = [rng.choice(NOISE)]
    for _ in range(rng.randint(0, 4)):
        pieces += [rng.choice([phrase(rng), rng.choice(answers), rng.choice(answers).upper()])]
        pieces += [rng.choice(NOISE)]
    return "".join(pieces), answers


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_every_generated_output_scores_as_helmets_post_processing_scores_it(dataset):
    rng = random.Random(dataset)
    official = OFFICIAL[DATASETS[dataset]]
    plugins = {name: metric_class(f"helmet.{name}")() for name in helmet.METRICS}
    values: dict[str, list[float]] = {}
    for _ in range(300):
        output, answers = case(rng, DATASETS[dataset])
        expected, _ = official({"output": output}, {"answer": answers})
        got = helmet.post_process(dataset, output, answers)
        assert got.keys() == expected.keys()
        for name, value in expected.items():
            assert got[name] == float(value), (name, output, answers)
            plugin_value, _ = plugins[name].item_asked(output, answers, question="", task=dataset)
            assert plugin_value == float(value)
            values.setdefault(name, []).append(float(value))
    for name, scored in values.items():  # eval.py's averaged_metrics
        assert plugins[name].task_score(scored, []) == np.mean(scored) * 100
    assert any(v for scored in values.values() for v in scored)  # not all zeros


def test_parse_output_and_the_metrics_equal_utils_on_their_own():
    rng = random.Random(3)
    for _ in range(500):
        output, answers = case(rng, "default")
        prefix = rng.choice(["Answer:", "Summary:", "corresponding value:"])
        assert helmet.parse_output(output, prefix) == UTILS.parse_output(output, prefix)
        nested = [answers, [phrase(rng)]] if rng.random() < 0.3 else answers
        expected = {k: float(v) for k, v in UTILS.calculate_metrics(output, nested).items()}
        assert helmet.calculate_metrics(output, nested) == expected


def test_a_dataset_scored_otherwise_or_a_metric_it_has_not_is_refused():
    with pytest.raises(ValueError, match="ranking, citations or label maps"):
        helmet.post_process("msmarco_rerank_psg", "1 > 2", ["1"])
    with pytest.raises(ValueError, match="Unknown HELMET dataset"):
        helmet.post_process("qmsum", "x", ["x"])
    exact = metric_class("helmet.exact_match")()
    with pytest.raises(ValueError, match="by ruler_recall"):
        exact.item_asked("x", ["x"], question="", task="ruler_cwe")
    with pytest.raises(ValueError, match="need the task"):
        exact.compute("x", ["x"])
    assert official_metric("helmet", "kilt_nq") == "helmet.substring_exact_match"
    assert official_metric("helmet", "ruler_niah_mk_2") == "helmet.ruler_recall"
    assert official_metric("helmet", "ruler_qa_1") == "helmet.substring_exact_match"
    assert official_metric("helmet", "infbench_qa_eng_130862") == "helmet.rougeL_f1"
    with pytest.raises(NoOfficialMetric, match="GPT-4o judge"):
        official_metric("helmet", "narrativeqa_130772")


@pytest.mark.parametrize("indent", [4, None], ids=["as-eval-py-writes-it", "on-one-line"])
def test_score_reads_helmets_output_file_and_prints_its_averaged_metric(tmp_path, indent):
    rng = random.Random(5)
    data, official = [], []
    for index in range(40):
        output, answers = case(rng, "default")
        mets, extra = OFFICIAL["default"]({"output": output}, {"answer": answers})
        data.append({"id": index, "question": phrase(rng), "answer": answers, "output": output,
                     **mets, **extra})  # fmt: skip
        official.append(float(mets["substring_exact_match"]))
    averaged = {"substring_exact_match": np.mean(official) * 100}
    path = tmp_path / "kilt_nq_eval_test_in131072_size100_shots2.json"
    path.write_text(
        json.dumps({"args": {}, "data": data, "averaged_metrics": averaged}, indent=indent)
    )
    out, err = StringIO(), StringIO()
    call_command(
        "score", benchmark="helmet", task="kilt_nq", predictions=path, stdout=out, stderr=err
    )
    assert err.getvalue().strip() == (
        f"helmet.substring_exact_match: 40 of 40 lines scored; task score "
        f"{averaged['substring_exact_match']:.4f}"
    )
    scored = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [s["score"] for s in scored] == official

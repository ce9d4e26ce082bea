"""LooGLE end to end: its task files imported (a document per line, the
questions in `qa_pairs` written as Python, a summary's reference in
`output`, a cloze answer's masks), asked of an OpenAI-compatible server as
pred_gpt_models.py asks (task2prompt.json's template byte for byte, one
system message, cut in the middle by cl100k_base tokens past --max_length,
task2maxlen.json's budget), cut for a local model as
pred_opensource_models.py cuts it, scored by the official metrics and
exported as the scripts' Output file, which automatic_eval.py scores the
same. The authors' scripts run here from tests/data/loogle/official."""

from __future__ import annotations

import importlib
import json
import sys
import types

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.tiktoken_offline import tiktoken_encoding
from corpus.importers.errors import ImportFailure
from corpus.importers.formats import loogle as loogle_format
from corpus.importers.formats import read_benchmark
from corpus.models import Dataset, QuestionText
from generation.models import GenerationRun, System
from generation.prompts_loogle import DATA as PROMPT_DATA
from generation.prompts_loogle import cut_middle_local, loogle_prompt
from generation.runner import GenerationError, create_generation_run, run_generation
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.metrics import loogle
from judging.models import Evaluator, Judgment
from tests.conftest import database_snapshot
from tests.fakes.openai_server import FakeOpenAI
from tests.judging.test_loogle_metrics import DATA, EVAL

# nltk warns on every pair with no 4-gram in common
pytestmark = pytest.mark.filterwarnings("ignore:\\s*The hypothesis contains 0 counts")


def official_scripts():
    """The prediction scripts as published; `datasets` (the Hub, never reached
    here) stands in as an empty module."""
    sys.modules.setdefault("datasets", types.SimpleNamespace(load_dataset=None))  # type: ignore[arg-type]
    sys.path.insert(0, str(DATA / "official"))
    try:
        return importlib.import_module("pred_gpt_models"), importlib.import_module(
            "pred_opensource_models"
        )
    finally:
        sys.path.remove(str(DATA / "official"))


WORDS = " ".join(f"word{i} Straße {{braces}} 東京." for i in range(40))
LINES = {
    "shortdep_qa": [
        {"input": "Picardo was born in Jerez. " + WORDS, "title": "José Luis Picardo",
         "qa_pairs": repr([
             {"S": "Picardo was born in Jerez.", "Q": "Where was Picardo born?", "A": "Jerez."},
             {"S": "He moved.", "Q": "Where did he {move}?", "A": "To Madrid."},
         ]), "output": "none"},
        {"input": "Barcelona grew. " + WORDS, "title": "Urban planning of Barcelona",
         "qa_pairs": repr([{"S": "Barcelona grew.", "Q": "What grew?", "A": "Barcelona"}]),
         "output": "none"},
    ],
    "longdep_summarization": [
        {"input": "A paper on distinction. " + WORDS, "title": "2201.00447",
         "qa_pairs": "none", "question": "none",
         "output": "We study distinction. It is shown to hold."},
    ],
    "shortdep_cloze": [
        {"input": "Britney sang in Kentwood. " + WORDS, "title": "Its-Britney",
         "qa_pairs": repr([{"Q": "<mask-0> sang in <mask-1>.", "S": ["Britney sang."],
                            "A": {"<mask-0>": "Britney Spears", "<mask-1>": "Kentwood"}}]),
         "output": "None"},
    ],
}  # fmt: skip


def write_task_files(folder, *, parquet: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for task, lines in LINES.items():
        if parquet:
            pd.DataFrame(lines).to_parquet(folder / f"{task}.parquet")
        else:
            text = "".join(json.dumps(line) + "\n" for line in lines)
            (folder / f"{task}.jsonl").write_text(text, encoding="utf-8")


class OfficialChat:
    """openai.ChatCompletion as pred_gpt_models.py calls it (openai 0.27), keeping the request."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def create(self, **request):
        self.sent.append(request)
        return {"choices": [{"message": {"content": "answer"}}]}


def import_published(folder, path, project: str | None = None):
    """A published Output file's questions as a LooGLE task file (its documents'
    texts are not in it: a placeholder each) and its answers as an imported run."""
    task = next(t for t in loogle.TASKS if path.stem.startswith(t))
    model = path.stem.removeprefix(f"{task}_")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    folder.mkdir(parents=True, exist_ok=True)
    task_file = folder / f"{task}.jsonl"
    task_file.write_text(
        "".join(
            json.dumps(
                {
                    "input": f"Document {n}.",
                    "title": f"doc {n}",
                    "output": "none",
                    "qa_pairs": repr(line["qa_pairs"]),
                }  # fmt: skip
            )
            + "\n"
            for n, line in enumerate(lines, 1)
        ),
        encoding="utf-8",
    )
    in_project = ["--project", project] if project else []
    call_command("import_benchmark", str(task_file), "--format", "loogle", stdout=None)
    records = [
        {"system": model, "task": task, "document_id": f"{task}-{n}",
         "question_id": f"{n}-{q}", "response": answer}
        for n, line in enumerate(lines, 1)
        for q, answer in enumerate(line["llm_output"], 1)
    ]  # fmt: skip
    answers = folder / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    call_command(
        "import_responses", str(answers), "--benchmark", "loogle", "--split", "test",
        *in_project, stdout=None,
    )  # fmt: skip
    return GenerationRun.objects.get(dataset__task=task, system__name=model), lines


@pytest.mark.django_db
@pytest.mark.parametrize(
    "published", [p.stem for p in sorted((DATA / "Output").glob("shortdep_qa_*"))]
)
def test_a_published_run_exports_as_the_file_it_came_from(tmp_path, published):
    run, lines = import_published(tmp_path / "in", DATA / "Output" / f"{published}.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    call_command("export_leaderboard", "--runs", str(run.pk), "--output", str(out), stdout=None)
    exported = (out / "Output" / f"{published}.jsonl").read_text(encoding="utf-8")
    assert [json.loads(line) for line in exported.splitlines()] == lines


def test_the_templates_and_budgets_are_the_authors_byte_for_byte():
    for name in ("task2prompt.json", "task2maxlen.json"):
        ours = (PROMPT_DATA / f"loogle_{name}").read_bytes()
        assert ours == (DATA / "official" / name).read_bytes()
    template = json.loads((DATA / "official" / "task2prompt.json").read_text())
    document = "A {text} with braces } and Unicode: Straße."
    assert loogle_prompt(document, "What {x}?", "shortdep_cloze") == template[
        "shortdep_cloze"
    ].format(Q="What {x}?", input=document)
    assert loogle_prompt(document, "", "longdep_summarization") == template[
        "longdep_summarization"
    ].format(input=document)


@pytest.mark.django_db(transaction=True)
def test_loogle_is_imported_asked_scored_and_exported_as_its_authors_do(tmp_path, monkeypatch):
    write_task_files(tmp_path / "LooGLE-testdata")
    call_command("import_benchmark", str(tmp_path / "LooGLE-testdata"), "--format", "loogle")
    datasets = {d.task: d for d in Dataset.objects.filter(benchmark__slug="loogle")}
    assert sorted(datasets) == sorted(LINES)
    cloze = QuestionText.objects.get(dataset=datasets["shortdep_cloze"])
    assert json.loads(cloze.reference_answer) == {
        "<mask-0>": "Britney Spears",
        "<mask-1>": "Kentwood",
    }
    assert cloze.prompt == {"title": "Its-Britney", "evidence": ["Britney sang."], "type": ""}
    summary = QuestionText.objects.get(dataset=datasets["longdep_summarization"])
    assert summary.reference_answer == LINES["longdep_summarization"][0]["output"]

    max_length = 120  # tokens: every document here is longer, so every prompt is cut
    config = {
        "backend": "openai", "base_url": "", "model": "gpt-3.5-turbo-16k", "server": "vllm",
        "tokenizer": "tiktoken:cl100k_base", "context_length": max_length,
    }  # fmt: skip
    with FakeOpenAI() as server:
        config["base_url"] = server.url
        system = System.objects.create(
            name="gpt-3.5-turbo-16k", model_name="m", backend="openai", config=config
        )
        runs = {
            task: run_generation(create_generation_run(system, dataset, "st").pk)
            for task, dataset in datasets.items()
        }
        sent = list(server.requests)
    assert all(run.status == "done" for run in runs.values())
    with pytest.raises(GenerationError, match="asks each question alone"):
        create_generation_run(system, datasets["shortdep_qa"], "mt")

    # pred_gpt_models.get_pred on the same lines sends the same messages and budgets
    gpt, _ = official_scripts()
    chat = OfficialChat()
    monkeypatch.setattr(gpt, "openai", types.SimpleNamespace(ChatCompletion=chat))
    budgets = json.loads((DATA / "official" / "task2maxlen.json").read_text())
    templates = json.loads((DATA / "official" / "task2prompt.json").read_text())
    for task, lines in LINES.items():
        for line in lines:
            gpt.get_pred(
                "m", line, tiktoken_encoding("cl100k_base"), max_length, budgets[task],
                templates[task],
            )  # fmt: skip
    expected = sorted((json.dumps(r["messages"]), r["max_tokens"]) for r in chat.sent)
    assert sorted((json.dumps(r["messages"]), r["max_tokens"]) for r in sent) == expected
    assert len(expected) == 5 and all(r["messages"][0]["role"] == "system" for r in sent)
    cl100k = tiktoken_encoding("cl100k_base")
    assert all(  # each cut to its first and last 60 tokens (a split character may count twice)
        max_length <= len(cl100k.encode(r["messages"][0]["content"])) <= max_length + 2
        for r in sent
    )

    # scored by the official metrics; the exported file scores the same under automatic_eval.py
    ensure_metric_evaluators()
    rouge_l = Evaluator.objects.get(name=f"metric: {loogle.ROUGE_L}")
    judged = judge_run(create_judging_run(rouge_l, datasets["shortdep_qa"], "st").pk)
    assert (judged.status, judged.done) == ("done", 3)
    out = tmp_path / "out"
    out.mkdir()
    ids = ",".join(str(runs[t].pk) for t in ("shortdep_qa", "shortdep_cloze"))
    call_command("export_leaderboard", "--runs", ids, "--output", str(out), stdout=None)
    exported = out / "Output" / "shortdep_qa_gpt-3.5-turbo-16k.jsonl"
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [line["output"] for line in lines] == [["Jerez.", "To Madrid."], ["Barcelona"]]
    second = {"Q": "Where did he {move}?", "A": "To Madrid.", "S": "He moved."}
    assert lines[0]["qa_pairs"][1] == second
    official: dict[str, list] = {}
    for line in lines:
        official = EVAL.evaluation(line, official, ["get_rouge_score"], "shortdep_qa")
    values = Judgment.objects.filter(evaluator=rouge_l, response__run=runs["shortdep_qa"])
    assert sorted(j.raw_score for j in values) == sorted(s[2] for s in official["get_rouge_score"])
    cloze_line = json.loads((out / "Output" / "shortdep_cloze_gpt-3.5-turbo-16k.jsonl").read_text())
    assert cloze_line["output"] == [{"<mask-0>": "Britney Spears", "<mask-1>": "Kentwood"}]
    assert EVAL.evaluation(cloze_line, {}, ["get_exact_match"], "shortdep_cloze") == {
        "get_exact_match": [(0, 2)]
    }


def test_a_local_model_gets_the_open_source_scripts_cut(tiny_model):
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model, local_files_only=True)
    _, local = official_scripts()

    class Model:
        """Keeps the prompts' tokens pred_opensource_models.get_pred generates from."""

        def __init__(self) -> None:
            self.ids: list[list[int]] = []

        def generate(self, input_ids, **kwargs):
            self.ids.append(input_ids[0].tolist())
            self.kwargs = kwargs
            return torch.cat([input_ids, input_ids[:, :1]], dim=1)

    templates = json.loads((DATA / "official" / "task2prompt.json").read_text())
    for max_length in (40, 41, 10_000):
        for task in ("shortdep_qa", "longdep_summarization"):
            line = LINES[task][0]
            model = Model()
            local.get_pred(model, line, tokenizer, max_length, 7, templates[task], "cpu")
            pairs = loogle_format.qa_pairs(line["qa_pairs"], "line") or [{"Q": ""}]
            ours = [
                cut_middle_local(loogle_prompt(line["input"], p["Q"], task), tokenizer, max_length)
                for p in pairs
            ]
            assert [tokenizer(text)["input_ids"] for text in ours] == model.ids
            assert model.kwargs["max_new_tokens"] == 7
            if max_length < 100:
                assert all(len(ids) <= max_length + 2 for ids in model.ids)


@pytest.mark.django_db
def test_parquet_files_and_a_named_task_read_the_same(tmp_path):
    write_task_files(tmp_path / "jsonl")
    write_task_files(tmp_path / "parquet", parquet=True)
    bundles = [read_benchmark("loogle", tmp_path / f) for f in ("jsonl", "parquet")]
    shapes = [
        sorted((i.task, i.question, i.answers, json.dumps(i.prompt)) for i in b.items)
        for b in bundles
    ]
    assert shapes[0] == shapes[1] and len(shapes[0]) == 5
    loose = tmp_path / "questions.jsonl"
    loose.write_text(json.dumps(LINES["shortdep_qa"][0]) + "\n")
    named = read_benchmark("loogle", loose, task="longdep_qa")
    assert [i.task for i in named.items] == ["longdep_qa", "longdep_qa"]


@pytest.mark.django_db
def test_a_bad_file_is_refused_and_nothing_is_stored(tmp_path):
    before = database_snapshot()
    loose = tmp_path / "questions.jsonl"
    loose.write_text(json.dumps(LINES["shortdep_qa"][0]) + "\n")
    with pytest.raises(CommandError, match="give it"):
        call_command("import_benchmark", str(loose), "--format", "loogle")
    with pytest.raises(CommandError, match="one of LooGLE's"):
        call_command("import_benchmark", str(loose), "--format", "loogle", "--task", "qa")
    good = LINES["shortdep_qa"][0]
    pair = {"S": "s", "Q": "q?", "A": "a"}
    for task, change, error in [
        ("shortdep_qa", {"qa_pairs": "__import__('os').system('x')"}, "'qa_pairs' must be"),
        ("shortdep_qa", {"qa_pairs": "[]"}, "non-empty list of questions"),
        ("shortdep_qa", {"qa_pairs": "[" * 50_000 + "]" * 50_000}, "'qa_pairs' must be"),
        ("shortdep_qa", {"qa_pairs": "[{'Q': 'q', 'A': 'a'}] * 10**9"}, "'qa_pairs' must be"),
        ("shortdep_qa", {"qa_pairs": "none"}, "needs its 'qa_pairs'"),
        ("shortdep_qa", {"qa_pairs": repr([{**pair, "A": ""}])}, "'A' must be a non-empty"),
        ("shortdep_qa", {"qa_pairs": repr([{**pair, "Q": 3}])}, "'Q' must be a non-empty"),
        ("shortdep_qa", {"qa_pairs": repr([{**pair, "S": 3}])}, "'S' must be"),
        ("shortdep_cloze", {}, "dict of masks"),
        ("shortdep_qa", {"input": ""}, "'input' must be a non-empty string"),
        ("shortdep_qa", {"answer": "x"}, "unknown field"),
        ("longdep_summarization", {"qa_pairs": "none", "output": ""}, "'output' must be"),
    ]:
        bad = tmp_path / "bad" / f"{task}.jsonl"
        bad.parent.mkdir(exist_ok=True)
        bad.write_text(json.dumps(good) + "\n" + json.dumps({**good, **change}) + "\n")
        with pytest.raises(CommandError, match=error):
            call_command("import_benchmark", str(bad.parent), "--format", "loogle")
        bad.unlink()
    with pytest.raises(ImportFailure, match="no LooGLE task file"):
        read_benchmark("loogle", tmp_path / "bad")
    assert database_snapshot() == before

"""Generation runs in the shapes the benchmarks' own scorers and leaderboards
take back:

- L-Eval: `Predictions/<model>/<task>.pred.jsonl` (OpenLMLab/LEval), a line
  per question in the task file's order, `{"query", "gt", "<model>_pred",
  "evaluation"}`: what `Evaluation/auto_eval.py --pred_file` reads (the
  first key holding "_pred", the line's `evaluation`, the task from the
  file's name, topic retrieval's lines in threes). The task is named as the
  authors write it (codeU), since the script recognises tasks by words in
  the file's path.
- LongBench v2: `results/<model>.jsonl` as `pred.py` writes it, a line per
  question with the question's fields, the context's first 1,000
  characters, `response`, `pred` (the letter extract_answer finds, or null)
  and `judge`: what `result.py` reads for its Overall, Easy, Hard, Short,
  Medium and Long table. (pred.py leaves out a question whose request failed
  and retries it next time; Concord's run has every answer, an empty one
  scored wrong.)
- RULER: `<model>/synthetic/<length>/pred/<task>.jsonl` as `call_api.py`
  writes it (run.sh's folders), a line per question in the data file's order,
  `{"index", "pred", "input", "outputs", "others", "truncation", "length"}`
  (the input with its answer prefix, as sent): what `eval/evaluate.py
  --data_dir <length>/pred` reads, the task from the file's name.
- BABILong: `<model>/<task>_<length>_<prompt>.csv` as
  `run_model_on_babilong.py` writes it (pandas, with its index column):
  target, output and question per row in the data's order, the prompt's
  parts in the name (`instruction_yes_examples_yes_post_prompt_yes_
  chat_template_yes_system_prompt_no`): what `collect_results.py` reads, the
  task and length from the file's name.
- LooGLE: `Output/<task>_<model>.jsonl` as its prediction scripts write it,
  a line per document in the task file's order, `{"qa_pairs", "llm_output",
  "output"}` (a summary's qa_pairs "none", a cloze answer's masks as a dict):
  what `Evaluation/automatic_eval.py --task <task> --model_name <model>`
  reads.
- ZeroSCROLLS: the submission CSV of `submission/prepare_submission.py`
  (tau-nlp/zero_scrolls): columns Task, ID, Prediction, the ten tasks in its
  order, written by pandas as that script writes it, so that its
  `safe_read_csv` reads back every prediction as it was; the leaderboard's
  check (`verify_submission.py`) wants every task and every id, so a
  submission short of either is refused unless asked for in part.

Only complete runs are exported: a leaderboard scores a missing answer as
wrong, and a researcher should learn that before sending the file.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from corpus.importers.formats import loogle, zeroscrolls
from corpus.importers.formats.babilong import length_name, task_name
from corpus.models import QuestionText
from corpus.ruler.constants import ruler_task
from generation.models import GenerationRun, Response
from generation.prompts_leval import authors_task
from judging.metrics.longbench_v2 import extract_answer

LEVAL = "leval"
ZEROSCROLLS = "zeroscrolls"
LONGBENCH_V2 = "longbench_v2"
RULER = "ruler"
BABILONG = "babilong"
LOOGLE = "loogle"
SHAPES = (LEVAL, ZEROSCROLLS, LONGBENCH_V2, RULER, BABILONG, LOOGLE)
ZEROSCROLLS_COLUMNS = ["Task", "ID", "Prediction"]  # prepare_submission.COLUMNS
ZEROSCROLLS_FILE = "zero_scrolls_predictions.csv"  # the name prepare_submission writes


class ExportRefused(ValueError):
    """Runs that cannot make the file asked for; the message says why."""


@dataclass(frozen=True)
class ExportFile:
    path: str  # relative: folders as the leaderboard lays them out
    content: bytes


def leaderboard_of(run: GenerationRun) -> str | None:
    """The leaderboard shape a run's benchmark has (one of SHAPES), or None."""
    fmt = run.dataset.benchmark.format
    return fmt if fmt in SHAPES else None


def _model_folder(name: str) -> str:
    """A system's name as a folder: what a path cannot hold becomes '-'."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", name).strip(".-") or "model"


def _answered(run: GenerationRun) -> list[tuple[QuestionText, Response]]:
    """Each of the run's questions with its answer, in the task file's order
    (the documents' lines, then the questions on each); refused when one has
    no answer."""
    texts = list(
        QuestionText.objects.filter(dataset=run.dataset).select_related("question__document")
    )
    responses = {r.question_id: r for r in Response.objects.filter(run=run)}
    missing = [t for t in texts if t.question_id not in responses]
    if missing or not texts:
        raise ExportRefused(
            f"Run {run.pk} ({run.system.name}, {run.dataset}) has answered "
            f"{len(texts) - len(missing)} of {len(texts)} questions; a leaderboard scores a "
            "missing answer as wrong, so finish (resume) the run first."
        )
    texts.sort(key=_file_order)
    return [(t, responses[t.question_id]) for t in texts]


def _file_order(text: QuestionText) -> tuple[int, int, int, int]:
    """L-Eval's documents are `<task>-<line>`: the line's number orders them
    (the database's order where an id has none); then the question's place."""
    document = text.question.document
    line = re.search(r"-(\d+)$", document.external_id)
    rank = int(line.group(1)) if line else 0
    return (0 if line else 1, rank, document.pk, text.question.order)


def leval_predictions(run: GenerationRun) -> ExportFile:
    """The run as L-Eval's `Predictions/<model>/<task>.pred.jsonl`."""
    if leaderboard_of(run) != LEVAL:
        raise ExportRefused(f"Run {run.pk} is not on an L-Eval task ({run.dataset}).")
    task = authors_task(run.dataset.task)
    key = f"{run.system.name}_pred"
    lines = []
    for text, response in _answered(run):
        line = {
            "query": text.text,
            "gt": text.reference_answer,
            key: response.text,
            "evaluation": (text.prompt or {}).get("evaluation", ""),
        }
        lines.append(json.dumps(line, ensure_ascii=False) + "\n")
    path = f"Predictions/{_model_folder(run.system.name)}/{task}.pred.jsonl"
    return ExportFile(path, "".join(lines).encode("utf-8"))


def longbench_v2_results(run: GenerationRun) -> ExportFile:
    """The run as LongBench v2's `results/<model>.jsonl` (pred.py's lines)."""
    if leaderboard_of(run) != LONGBENCH_V2:
        raise ExportRefused(f"Run {run.pk} is not on LongBench v2 ({run.dataset}).")
    lines = []
    for text, response in _answered(run):
        parts = text.prompt or {}
        item = {
            "_id": text.question.external_id,
            **{key: parts.get(key, "") for key in ("domain", "sub_domain", "difficulty")},
            "length": parts.get("length", ""),
            "question": text.text,
            **{f"choice_{c}": parts.get(f"choice_{c}", "") for c in "ABCD"},
            "answer": text.reference_answer,
            "context": text.question.document.text[:1000],
        }
        answer = response.text.strip()  # pred.py strips the output before it stores it
        item["response"] = answer
        item["pred"] = extract_answer(answer)
        item["judge"] = item["pred"] == item["answer"]
        lines.append(json.dumps(item, ensure_ascii=False) + "\n")
    path = f"results/{_model_folder(run.system.name)}.jsonl"
    return ExportFile(path, "".join(lines).encode("utf-8"))


def ruler_predictions(run: GenerationRun) -> ExportFile:
    """The run (a RULER task at a length) as call_api.py's `pred/<task>.jsonl`."""
    if leaderboard_of(run) != RULER:
        raise ExportRefused(f"Run {run.pk} is not on a RULER task ({run.dataset}).")
    lines = []
    length = ""
    for text, response in _answered(run):
        parts = text.prompt or {}
        length = str(parts.get("max_seq_length", ""))
        line = {
            "index": parts.get("index", text.question.external_id),
            "pred": response.text,
            "input": text.question.document.text + str(parts.get("answer_prefix", "")),
            "outputs": [text.reference_answer, *text.alternative_answers],
            "others": {},
            "truncation": -1,
            "length": parts.get("length", -1),
        }
        lines.append(json.dumps(line) + "\n")
    task = ruler_task(run.dataset.task)
    path = f"{_model_folder(run.system.name)}/synthetic/{length}/pred/{task}.jsonl"
    return ExportFile(path, "".join(lines).encode("utf-8"))


def babilong_predictions(run: GenerationRun) -> ExportFile:
    """The run (a BABILong task at a length) as run_model_on_babilong.py's CSV."""
    import pandas as pd

    if leaderboard_of(run) != BABILONG:
        raise ExportRefused(f"Run {run.pk} is not on a BABILong task ({run.dataset}).")
    rows = [(text.reference_answer, response.text, text.text) for text, response in _answered(run)]
    table = pd.DataFrame(rows, columns=["target", "output", "question"])
    out = io.StringIO()
    table.to_csv(out)  # with the index, as the script writes it
    config = run.system.config or {}
    chat = config.get("backend") == "openai" or config.get("chat_template") == "tokenizer"
    prompt = (
        "instruction_yes_examples_yes_post_prompt_yes_"
        f"chat_template_{'yes' if chat else 'no'}_system_prompt_no"
    )
    task = run.dataset.task
    name = f"{task_name(task)}_{length_name(task)}_{prompt}.csv"
    return ExportFile(f"{_model_folder(run.system.name)}/{name}", out.getvalue().encode("utf-8"))


def loogle_predictions(run: GenerationRun) -> ExportFile:
    """The run (a LooGLE task) as its scripts' `Output/<task>_<model>.jsonl`."""
    if leaderboard_of(run) != LOOGLE:
        raise ExportRefused(f"Run {run.pk} is not on a LooGLE task ({run.dataset}).")
    task = run.dataset.task
    documents: dict[int, dict[str, Any]] = {}
    for text, response in _answered(run):
        line = documents.setdefault(
            text.question.document_id, {"qa_pairs": [], "llm_output": [], "output": []}
        )
        reference: Any = text.reference_answer
        if task == loogle.CLOZE_TASK:  # stored as JSON, written as the dict it was
            reference = json.loads(reference)
        line["llm_output"].append(response.text)
        line["output"].append(reference)
        if task == loogle.SUMMARY_TASK:
            line["qa_pairs"] = "none"
            continue
        parts = text.prompt or {}
        pair = {"Q": text.text, "A": reference, "S": parts.get("evidence", [])}
        if parts.get("type"):
            pair["type"] = parts["type"]
        line["qa_pairs"].append(pair)
    content = "".join(json.dumps(line) + "\n" for line in documents.values())
    return ExportFile(f"Output/{task}_{_model_folder(run.system.name)}.jsonl", content.encode())


def zeroscrolls_submission(runs: Iterable[GenerationRun], *, partial: bool = False) -> ExportFile:
    """One system's runs (a task each) as ZeroSCROLLS' submission CSV."""
    import pandas as pd

    by_task: dict[str, GenerationRun] = {}
    for run in runs:
        if leaderboard_of(run) != ZEROSCROLLS:
            raise ExportRefused(f"Run {run.pk} is not on a ZeroSCROLLS task ({run.dataset}).")
        if run.dataset.task in by_task:
            raise ExportRefused(
                f"Runs {by_task[run.dataset.task].pk} and {run.pk} both answer "
                f"{run.dataset.task}: a submission holds one answer per question."
            )
        by_task[run.dataset.task] = run
    systems = {run.system.name for run in by_task.values()}
    if len(systems) > 1:
        raise ExportRefused(f"A submission is one system's; these runs are {sorted(systems)}.")
    unknown = sorted(set(by_task) - set(zeroscrolls.TASKS))
    if unknown:
        raise ExportRefused(f"Not ZeroSCROLLS tasks: {', '.join(unknown)}.")
    missing = [t for t in zeroscrolls.TASKS if t not in by_task]
    if not by_task or (missing and not partial):
        raise ExportRefused(
            f"The leaderboard wants all ten tasks; no finished run for {', '.join(missing)}. "
            "(A file of fewer tasks can be asked for, to score them yourself.)"
        )
    frames = [pd.DataFrame(columns=ZEROSCROLLS_COLUMNS, data=[])]
    for task in zeroscrolls.TASKS:  # prepare_submission's order
        if task in by_task:
            rows = [
                (task, text.question.external_id, response.text)
                for text, response in _answered(by_task[task])
            ]
            frames.append(pd.DataFrame(rows, columns=ZEROSCROLLS_COLUMNS))
    table = pd.concat(frames).reset_index(drop=True)
    out = io.StringIO()
    table.to_csv(out, index=False)
    return ExportFile(ZEROSCROLLS_FILE, out.getvalue().encode("utf-8"))


def zeroscrolls_companions(run: GenerationRun) -> list[GenerationRun]:
    """The runs a ZeroSCROLLS submission is made of when asked for from one
    run: its system's runs on the same benchmark, split and mode (and seed),
    one per task: the newest that answered every question."""
    candidates = (
        GenerationRun.objects.filter(
            system=run.system,
            dataset__benchmark=run.dataset.benchmark,
            dataset__split=run.dataset.split,
            mode=run.mode,
            seed=run.seed,
        )
        .select_related("system", "dataset__benchmark")
        .annotate(answered=Count("responses", distinct=True))
        .annotate(asked=Count("dataset__question_texts", distinct=True))
        .order_by("-pk")
    )
    chosen: dict[str, GenerationRun] = {run.dataset.task: run}
    for other in candidates:
        if other.dataset.task not in chosen and other.answered >= other.asked > 0:
            chosen[other.dataset.task] = other
    return list(chosen.values())


# The shapes written a file per run (ZeroSCROLLS' submission holds a system's runs)
PER_RUN = {
    LEVAL: leval_predictions,
    LONGBENCH_V2: longbench_v2_results,
    RULER: ruler_predictions,
    BABILONG: babilong_predictions,
    LOOGLE: loogle_predictions,
}

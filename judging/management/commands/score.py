"""python manage.py score --metric NAME --predictions FILE [--output FILE]
python manage.py score --benchmark leval|zeroscrolls|longbench_v2|ruler|babilong|loogle
    --task TASK --predictions FILE
python manage.py score --list

A metric over a predictions file, without a database: for researchers who
only want the number. One JSON object per line with `prediction` and
`references` (a list, or one string), or a line of L-Eval's own prediction
files (`gt`, and the prediction under the first key holding "_pred", as
`auto_eval.py` reads them), or of RULER's (`pred` and `outputs`, as
`call_api.py` writes them), or HELMET's output files (`data`, each with
`output` and `answer`, as eval.py writes them), or BABILong's CSV files (`target`, `output` and
`question`, as `run_model_on_babilong.py` writes them; the task `qa1`, or
with its length, `qa1-4k`), or LooGLE's (`llm_output` and `output`, lists
of a document's answers and references, with its `qa_pairs`, as its
prediction scripts write them: a line per question is written back); every
other field is kept. `--task` scores with the metric the benchmark's official
code applies to that task (judging.evaluators.official; LooGLE's several at
once). Each line is written back with its `score` (or the `error` that kept
it from one; with several metrics, `scores` and `errors` by metric), and the
task score is printed as the metric's official code aggregates it. A line
whose `evaluation` (L-Eval's field) the official script skips is scored but
marked `"counted": false` and left out of the task score, as that script
leaves it out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.importers.checks import load_json_line
from corpus.importers.errors import ImportFailure
from corpus.importers.limits import lines as numbered_lines
from corpus.importers.records import member_records, read_records
from judging.evaluators import UnknownEvaluator, metric_class
from judging.evaluators.base import Metric
from judging.evaluators.official import BENCHMARKS, NoOfficialMetric, official_metrics
from judging.evaluators.registry import metrics


class Command(BaseCommand):
    help = (
        "Score a predictions file with a metric (JSON Lines: prediction, references); writes "
        "each line with its score and prints the task score. No database needed."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--metric", help="A metric's name (--list shows them).")
        parser.add_argument("--benchmark", choices=BENCHMARKS, help="With --task.")
        parser.add_argument(
            "--task",
            help="The task's official metric instead of --metric (L-Eval's codeU, ...).",
        )
        parser.add_argument("--predictions", type=Path, help="JSON Lines file.")
        parser.add_argument("--output", type=Path, help="Where to write the scored lines.")
        parser.add_argument(
            "--list", action="store_true", help="Print the metrics, one per line, name first."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for name, cls in metrics().items():
                self.stdout.write(f"{name}\t{cls.description}")
            return
        if options["metric"] and options["task"]:
            raise CommandError("Give --metric or --task, not both.")
        if options["task"] and not options["benchmark"]:
            raise CommandError(f"--task needs --benchmark ({' or '.join(BENCHMARKS)}).")
        if not (options["metric"] or options["task"]) or not options["predictions"]:
            raise CommandError(
                "Give --metric NAME (or --benchmark B --task T) and --predictions FILE (or --list)."
            )
        path: Path = options["predictions"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file.")
        lines = []
        try:  # a line at a time, within the upload limits (corpus.importers.limits)
            if path.suffix.lower() == ".csv":  # BABILong's predictions
                for row in read_records(path):
                    lines.append(_case(row.fields, row.where))
            elif _one_object(path):  # HELMET's output: {"data": [{"output", "answer"}, ...]}
                for row in member_records(path, "data"):
                    lines.append(_case(row.fields, row.where))
            else:
                for number, line in numbered_lines(path):
                    if line.strip():
                        where = f"{path}, line {number}"
                        lines.extend(_cases(load_json_line(line, where), where))
        except ImportFailure as failure:
            raise CommandError(str(failure)) from None
        if not lines:
            raise CommandError(f"{path}: no predictions.")
        try:
            names = (
                (options["metric"],)
                if options["metric"]
                else official_metrics(
                    options["benchmark"], options["task"], [r.get("evaluation") for r in lines]
                )
            )
            chosen = [metric_class(name)() for name in names]
        except (UnknownEvaluator, NoOfficialMetric) as error:
            raise CommandError(str(error)) from None
        summaries = [
            _scored(metric, lines, options["task"] or "", several=len(chosen) > 1)
            for metric in chosen
        ]
        out = options["output"]
        written = [json.dumps(record, ensure_ascii=False) for record in lines]
        if out is None:  # the scored lines on standard output, the summary on standard error
            for line in written:
                self.stdout.write(line)
        else:
            out.write_text("".join(line + "\n" for line in written), encoding="utf-8")
        for summary in summaries:
            (self.stderr if out is None else self.stdout).write(summary)


def _scored(metric: Metric, lines: list[dict[str, Any]], task: str, *, several: bool) -> str:
    """Each line scored by `metric` (its score written into the line: under
    `scores` by metric when `several`); the summary line with the task score."""
    values, parts, errors, left_out = [], [], 0, 0
    for record in lines:
        try:
            value, item_parts = metric.item_asked(
                record["prediction"],
                record["references"],
                question=record.get("question") or "",
                task=task,
            )
        except ValueError as error:
            if several:
                record.setdefault("errors", {})[metric.name] = str(error)
            else:
                record["error"] = str(error)
            errors += 1
            continue
        if several:
            record.setdefault("scores", {})[metric.name] = value
        else:
            record["score"] = value
            if item_parts:
                record["parts"] = item_parts
        if not metric.counted(record.get("evaluation")):
            record["counted"] = False
            left_out += 1
            continue
        values.append(value)
        parts.append(item_parts)
    scored = len(values) + left_out
    summary = f"{metric.name}: {scored} of {len(lines)} lines scored"
    if left_out:
        summary += (
            f"; {left_out} left out of the task score, {len(values)} in it "
            f"({metric.left_out_because})"
        )
    if values:
        summary += f"; task score {metric.task_score(values, parts):.4f}"
    if errors:
        summary += f"; {errors} could not be scored (their 'error' says why)"
    return summary


def _one_object(path: Path) -> bool:
    """A .json file that opens an object, not a line of JSON Lines' first
    record: HELMET writes its outputs indented, one object over many lines."""
    if path.suffix.lower() != ".json":
        return False
    with path.open("rb") as file:
        start = file.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    first_line = start.split(b"\n", 1)[0].rstrip()
    return start.startswith(b"{") and not first_line.endswith(b"}")


def _cases(value: object, where: str) -> list[dict[str, Any]]:
    """A line's cases: one, or a LooGLE line's questions (`llm_output` and
    `output` side by side, the questions in `qa_pairs`), each as its own line."""
    if isinstance(value, dict) and isinstance(value.get("data"), list) and "output" not in value:
        # a HELMET output file written on one line
        return [_case(row, f"{where}, record {n}") for n, row in enumerate(value["data"], 1)]
    if not (isinstance(value, dict) and "llm_output" in value and "output" in value):
        return [_case(value, where)]
    answers, references, pairs = value["llm_output"], value["output"], value.get("qa_pairs")
    if not isinstance(answers, list) or not isinstance(references, list):
        raise ImportFailure(f"{where}: LooGLE's 'llm_output' and 'output' must be lists.")
    if len(answers) != len(references):
        raise ImportFailure(
            f"{where}: {len(answers)} answers in 'llm_output' for {len(references)} references."
        )
    if not isinstance(pairs, list) or len(pairs) != len(answers):
        pairs = [{} for _ in answers]  # a summary's "none", or no questions given
    cases = []
    for index, (answer, reference, pair) in enumerate(zip(answers, references, pairs, strict=True)):
        if isinstance(reference, dict):  # a cloze question's masks
            reference = json.dumps(reference, ensure_ascii=False)
        question = pair.get("Q", "") if isinstance(pair, dict) else ""
        case = {"line_index": index, "question": question}
        cases.append(_case({**case, "prediction": answer, "references": reference}, where))
    return cases


def _case(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ImportFailure(f"{where}: expected a JSON object.")
    prediction, references = value.get("prediction"), value.get("references")
    if prediction is None and references is None and "gt" in value:
        # L-Eval's prediction files: the first key holding "_pred", as auto_eval.py finds it
        key = next((k for k in value if "_pred" in k), None)
        if key is None:
            raise ImportFailure(f"{where}: an L-Eval line ('gt') without a '<model>_pred' key.")
        prediction, references = value[key], value["gt"]
    elif prediction is None and references is None and "pred" in value and "outputs" in value:
        prediction, references = value["pred"], value["outputs"]  # RULER's pred/<task>.jsonl
    elif prediction is None and references is None and "output" in value and "answer" in value:
        prediction, references = value["output"], value["answer"]  # HELMET's output files
        if isinstance(references, list) and references and isinstance(references[0], list):
            references = [a for group in references for a in group]
    elif prediction is None and references is None and "target" in value:
        # BABILong's CSV (an empty cell is no answer; a cell pandas reads as
        # missing, "None" or "NA", names no label either way)
        prediction, references = value.get("output", ""), value["target"]
        if not isinstance(value.get("question", ""), str):
            raise ImportFailure(f"{where}: 'question' must be a string.")
    if not isinstance(prediction, str):
        raise ImportFailure(f"{where}: 'prediction' must be a string.")
    if isinstance(references, str):
        references = [references]
    if (
        not isinstance(references, list)
        or not references
        or not all(isinstance(r, str) for r in references)
    ):
        raise ImportFailure(f"{where}: 'references' must be a string or a list of strings.")
    if not isinstance(value.get("evaluation", ""), str | None):
        raise ImportFailure(f"{where}: 'evaluation' must be a string (L-Eval's: exam, f1, ...).")
    return {**value, "prediction": prediction, "references": references}

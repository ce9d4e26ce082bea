"""The demo's other benchmarks: a small L-Eval and a small ZeroSCROLLS, in
their authors' file shapes, written by Concord (corpus.importers.samples: no
download), and a small RULER made by Concord's port of its authors' scripts
at 1K, 2K and 4K tokens (corpus.ruler), each imported through the same
readers as the real files; two invented systems' outputs imported as
responses would be (on RULER one of them loses the answers as the inputs
grow, so its length view has something to show); and the official metrics
run on them, so that the console shows the four benchmarks side by side,
each report in its authors' shape. The texts and the outputs are made up,
and say so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.urls import reverse

from corpus.importers.formats import read_benchmark
from corpus.importers.samples import write_leval_tasks, write_zeroscrolls_task
from corpus.models import Dataset
from corpus.services import import_benchmark
from generation.response_import import import_responses, read_response_file
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.models import Evaluator, Judgment

OTHER_BENCHMARKS_NOTE = (
    "Other benchmarks: L-Eval (quality, report_qa) and ZeroSCROLLS (qasper), small ones in "
    "the authors' file shapes with Concord's own made-up texts, and RULER (niah_multikey_3, "
    "vt at 1K, 2K, 4K tokens) made as its authors' scripts make it; their systems' outputs "
    "are invented."
)
# RULER's tasks that need no word list (a quick start), the lengths, the lines each
RULER_TASKS = ("niah_multikey_3", "vt")
RULER_LENGTHS = (1024, 2048, 4096)
RULER_SAMPLES = 6
# (system, how it answers): a model that copies the reference's words, one that hedges
SYSTEMS = (("Demo-Copier", 0), ("Demo-Hedger", 1))
# each benchmark's task and the official metric that scores it
METRICS = {
    ("leval", "quality"): "metric: leval.exam_choice",
    ("leval", "report_qa"): "metric: leval.f1",
    ("zeroscrolls", "qasper"): "metric: zeroscrolls.f1",
    **{
        ("ruler", f"{task}-{length}"): "metric: ruler.string_match_all"
        for task in RULER_TASKS
        for length in RULER_LENGTHS
    },
}
SLUGS = ("leval", "ruler", "zeroscrolls")


def _answer(reference: str, style: int) -> str:
    if style == 0:
        return reference
    return f"I am not sure; perhaps {reference.split()[0] if reference.split() else 'nothing'}."


def _ruler_answer(references: tuple[str, ...], style: int, length: int) -> str:
    """The copier names every reference; the hedger all of them at 1K, the
    first at 2K, none beyond."""
    if style == 0 or length <= RULER_LENGTHS[0]:
        return ", ".join(references)
    if length <= RULER_LENGTHS[1]:
        return f"{references[0]}, I think."
    return "I could not find it."


def _ruler_files(folder: Path) -> list[tuple[str, Path]]:
    from corpus.ruler.prepare import write_data
    from corpus.ruler.tokens import token_counter

    wanted = [
        folder / str(length) / "data" / task / "validation.jsonl"
        for length in RULER_LENGTHS
        for task in RULER_TASKS
    ]
    if not all(path.is_file() for path in wanted):
        count = token_counter("tiktoken:cl100k_base")
        write_data(folder, RULER_TASKS, RULER_LENGTHS, RULER_SAMPLES, count)
    return [("ruler", path) for path in wanted]


def set_up_other_benchmarks(report: Callable[[str], None]) -> list[tuple[str, str]]:
    """Import the two small benchmarks with their demo responses and score them
    (idempotent: a second demo start changes nothing). Returns each benchmark's
    report (title, path)."""
    folder = Path(settings.VAR_DIR) / "demo-benchmarks"
    files = [("leval", path) for path in write_leval_tasks(folder / "leval")]
    files.append(("zeroscrolls", write_zeroscrolls_task(folder / "zeroscrolls")))
    files += _ruler_files(folder / "ruler")
    for format, path in files:
        bundle = read_benchmark(format, path, benchmark=format)
        import_benchmark(bundle)
        records = []
        for item in bundle.items:
            for system, style in SYSTEMS:
                if format == "ruler":
                    made_at = int(item.prompt["max_seq_length"])
                    answer = _ruler_answer(item.answers, style, made_at)
                else:
                    answer = _answer(item.answers[0], style)
                records.append(
                    {
                        "system": system,
                        "document_id": item.document_id,
                        "question_id": item.question_id,
                        "response": answer,
                    }
                )
        outputs = path.with_suffix(".outputs.jsonl")
        outputs.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        import_responses(
            read_response_file(outputs, task=bundle.items[0].task),
            benchmark=format,
            split=bundle.split,
            origin=str(outputs),
        )
    ensure_metric_evaluators()
    for (slug, task), name in METRICS.items():
        evaluator = Evaluator.objects.get(name=name)
        dataset = Dataset.objects.get(benchmark__slug=slug, task=task)
        if not Judgment.objects.filter(
            evaluator=evaluator, response__run__dataset=dataset
        ).exists():
            judge_run(create_judging_run(evaluator, dataset, "st").pk)
    report(OTHER_BENCHMARKS_NOTE)
    reports = [
        (
            f"{name} {split}",
            reverse("analysis-benchmark-report", args=[slug]) + f"?split={split}",
        )
        for slug, name, split in Dataset.objects.filter(benchmark__slug__in=SLUGS)
        .values_list("benchmark__slug", "benchmark__name", "split")
        .distinct()
        .order_by("benchmark__name")
    ]
    by_length = reverse("analysis-benchmark-length", args=["ruler"]) + "?split=validation"
    return [*reports, ("RULER validation by input length", by_length)]

"""The demo's other benchmarks: a small L-Eval and a small ZeroSCROLLS, in
their authors' file shapes, written by Concord (corpus.importers.samples: no
download) and imported through the same readers as the real files; two
invented systems' outputs imported as responses would be; and the official
metrics run on them, so that the console shows the three benchmarks side by
side, each report in its authors' shape. The texts and the outputs are made
up, and say so."""

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
    "the authors' file shapes with Concord's own made-up texts; their systems' outputs are "
    "invented too."
)
# (system, how it answers): a model that copies the reference's words, one that hedges
SYSTEMS = (("Demo-Copier", 0), ("Demo-Hedger", 1))
# each benchmark's task and the official metric that scores it
METRICS = {
    ("leval", "quality"): "metric: leval.exam_choice",
    ("leval", "report_qa"): "metric: leval.f1",
    ("zeroscrolls", "qasper"): "metric: zeroscrolls.f1",
}


def _answer(reference: str, style: int) -> str:
    if style == 0:
        return reference
    return f"I am not sure; perhaps {reference.split()[0] if reference.split() else 'nothing'}."


def set_up_other_benchmarks(report: Callable[[str], None]) -> list[tuple[str, str]]:
    """Import the two small benchmarks with their demo responses and score them
    (idempotent: a second demo start changes nothing). Returns each benchmark's
    report (title, path)."""
    folder = Path(settings.VAR_DIR) / "demo-benchmarks"
    files = [("leval", path) for path in write_leval_tasks(folder / "leval")]
    files.append(("zeroscrolls", write_zeroscrolls_task(folder / "zeroscrolls")))
    for format, path in files:
        bundle = read_benchmark(format, path, benchmark=format)
        import_benchmark(bundle)
        records = []
        for item in bundle.items:
            for system, style in SYSTEMS:
                records.append(
                    {
                        "system": system,
                        "document_id": item.document_id,
                        "question_id": item.question_id,
                        "response": _answer(item.answers[0], style),
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
    return [
        (
            f"{name} {split}",
            reverse("analysis-benchmark-report", args=[slug]) + f"?split={split}",
        )
        for slug, name, split in Dataset.objects.filter(
            benchmark__slug__in=("leval", "zeroscrolls")
        )
        .values_list("benchmark__slug", "benchmark__name", "split")
        .distinct()
        .order_by("benchmark__name")
    ]

"""State changes of the corpus app: one function per action, each atomic."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from corpus.bulk import SyncCount, id_map, sync_rows
from corpus.choices import DatasetVersion, Language
from corpus.importers.elitr_bench import ElitrBundle
from corpus.importers.formats.base import BenchmarkBundle, task_from_file
from corpus.models import Benchmark, Dataset, Document, Question, QuestionText

ELITR_BENCH = {
    "slug": "elitr-bench",
    "name": "ELITR-Bench",
    "description": "Questions about hour-long meeting transcripts of the ELITR Minuting Corpus "
    "(Thonet et al., ELITR-Bench: A Meeting Assistant Benchmark for Long-Context Language "
    "Models). QA and Conv versions, dev and test2 splits, English and Czech questions.",
    "source_url": "https://github.com/utter-project/ELITR-Bench",
    "format": Benchmark.Format.ELITR_BENCH,
}
# The made-up meeting of corpus/importers/synthetic.py is kept apart from the
# real benchmark, so that it never mixes into ELITR-Bench's numbers.
SYNTHETIC_ELITR_BENCH = {
    "slug": "elitr-bench-synthetic",
    "name": "ELITR-Bench (synthetic demo meeting)",
    "description": "A made-up meeting in the ELITR-Bench layout, used when the real data "
    "cannot be had (offline demo). Not ELITR data: its transcript, questions, responses and "
    "every score on them are invented by Concord, the human ones (gold-human-eval, "
    "silver-human-eval) included; no person rated these answers.",
    "source_url": "",
    "format": Benchmark.Format.ELITR_BENCH,
}


@dataclass
class CorpusImport:
    """What an import wrote, and the ids later steps need."""

    benchmark: Benchmark
    counts: dict[str, SyncCount] = field(default_factory=dict)
    dataset_ids: dict[tuple[str, str, str], int] = field(default_factory=dict)
    question_ids: dict[tuple[str, str], int] = field(default_factory=dict)


@transaction.atomic
def import_elitr_corpus(bundle: ElitrBundle, benchmark_info: dict = ELITR_BENCH) -> CorpusImport:
    benchmark, _ = Benchmark.objects.get_or_create(
        slug=benchmark_info["slug"],
        defaults={k: v for k, v in benchmark_info.items() if k != "slug"},
    )
    result = CorpusImport(benchmark)
    result.counts["datasets"] = sync_rows(
        Dataset.objects.filter(benchmark=benchmark),
        (
            {"benchmark_id": benchmark.pk, "version": v, "language": lang, "split": s}
            for v, lang, s in bundle.datasets()
        ),
        key=("version", "language", "split"),
    )
    result.dataset_ids = id_map(
        Dataset.objects.filter(benchmark=benchmark), ("version", "language", "split")
    )
    result.counts["documents"] = sync_rows(
        Document.objects.filter(benchmark=benchmark, external_id__in=list(bundle.transcripts)),
        (
            {
                "benchmark_id": benchmark.pk,
                "external_id": t.meeting_id,
                "split": bundle.meeting_splits[t.meeting_id],
                "language": Language.ENGLISH,
                "text": t.text,
                "word_count": t.word_count,
                "source": t.origin[:500],
            }
            for t in bundle.transcripts.values()
        ),
        key=("external_id",),
        compare=("split", "text", "word_count"),
    )
    document_ids = {
        external_id: pk
        for (external_id,), pk in id_map(
            Document.objects.filter(benchmark=benchmark), ("external_id",)
        ).items()
    }
    _check_no_order_clash(bundle, document_ids)
    result.counts["questions"] = sync_rows(
        Question.objects.filter(document__benchmark=benchmark),
        (
            {
                "document_id": document_ids[q.meeting_id],
                "external_id": q.question_id,
                "order": q.order,
                "question_type": q.question_type,
                "answer_position": q.answer_position,
            }
            for q in bundle.questions.values()
        ),
        key=("document_id", "external_id"),
        compare=("order", "question_type", "answer_position"),
    )
    question_ids = id_map(
        Question.objects.filter(document__benchmark=benchmark),
        ("document__external_id", "external_id"),
    )
    result.question_ids = question_ids
    result.counts["question texts"] = sync_rows(
        QuestionText.objects.filter(question__document__benchmark=benchmark),
        (
            {
                "question_id": question_ids[(w.meeting_id, w.question_id)],
                "dataset_id": result.dataset_ids[(w.version, w.language, w.split)],
                "text": w.text,
                "reference_answer": w.reference,
                "alternative_answers": [],
            }
            for w in bundle.wordings
        ),
        key=("question_id", "dataset_id"),
        compare=("text", "reference_answer"),
    )
    return result


def _check_no_order_clash(bundle: ElitrBundle, document_ids: dict[str, int]) -> None:
    """Question order is unique per meeting; a re-import that reorders questions
    would break that constraint half-way, so say so plainly first."""
    from corpus.importers import ImportFailure

    stored = {
        (doc, ext): order
        for doc, ext, order in Question.objects.filter(
            document_id__in=document_ids.values()
        ).values_list("document__external_id", "external_id", "order")
    }
    for key, question in bundle.questions.items():
        if key in stored and stored[key] != question.order:
            named_by = bundle.meeting_files.get(key[0]) or ["the files"]
            raise ImportFailure(
                f"{named_by[0]}: meeting {key[0]} question {key[1]} is number {question.order} "
                f"here but number {stored[key]} in the database; reordering stored questions "
                "is not supported (their responses keep the old order)."
            )


@transaction.atomic
def import_benchmark(bundle: BenchmarkBundle) -> dict[str, SyncCount]:
    """Write a benchmark read by one of the formats (corpus/importers/formats/):
    a dataset per task, the documents, questions and question texts (with their
    prompt parts). Idempotent (a second import changes nothing), atomic, and a
    conflict with what is stored (a document in another split, a benchmark of
    another format) aborts with the file named."""
    from corpus.importers import ImportFailure

    benchmark, created = Benchmark.objects.get_or_create(
        slug=bundle.slug,
        defaults={
            "name": bundle.name,
            "format": bundle.format,
            "description": bundle.description,
            "source_url": bundle.source_url,
        },
    )
    if not created and benchmark.format != bundle.format:
        raise ImportFailure(
            f"{bundle.origin}: benchmark {benchmark.slug} holds {benchmark.get_format_display()} "
            f"data; these are {Benchmark.Format(bundle.format).label} files. Import them "
            "under another --benchmark."
        )
    counts: dict[str, SyncCount] = {}
    counts["datasets"] = sync_rows(
        Dataset.objects.filter(benchmark=benchmark),
        [
            {
                "benchmark_id": benchmark.pk,
                "version": bundle.version,
                "language": bundle.language,
                "split": bundle.split,
                "task": task,
            }
            for task in bundle.tasks()
        ],
        key=("version", "language", "split", "task"),
    )
    dataset_ids = {
        task: pk
        for (task,), pk in id_map(
            Dataset.objects.filter(
                benchmark=benchmark,
                version=bundle.version,
                language=bundle.language,
                split=bundle.split,
            ),
            ("task",),
        ).items()
    }
    other_split = (
        Document.objects.filter(benchmark=benchmark, external_id__in=list(bundle.documents))
        .exclude(split=bundle.split)
        .values_list("external_id", "split")
        .first()
    )
    if other_split:
        raise ImportFailure(
            f"{bundle.origin}: document {other_split[0]} is already stored in split "
            f"{other_split[1]} of {benchmark.name}, not {bundle.split}; a document belongs "
            "to one split."
        )
    counts["documents"] = sync_rows(
        Document.objects.filter(benchmark=benchmark, external_id__in=list(bundle.documents)),
        (
            {
                "benchmark_id": benchmark.pk,
                "external_id": doc_id,
                "split": bundle.split,
                "language": bundle.language,
                "text": text,
                "word_count": len(text.split()),
                "source": bundle.origin[:500],
            }
            for doc_id, text in bundle.documents.items()
        ),
        key=("external_id",),
        compare=("text", "word_count"),
    )
    document_ids = {
        k[0]: v
        for k, v in id_map(Document.objects.filter(benchmark=benchmark), ("external_id",)).items()
    }
    # Questions keep the order they were first imported in; new ones go last.
    stored_order = {
        (doc, ext): order
        for doc, ext, order in Question.objects.filter(document__benchmark=benchmark).values_list(
            "document__external_id", "external_id", "order"
        )
    }
    last_order: dict[str, int] = {}
    for (doc, _), order in stored_order.items():
        last_order[doc] = max(last_order.get(doc, 0), order)
    question_rows = []
    for item in bundle.items:
        stored = stored_order.get((item.document_id, item.question_id))
        if stored is not None:
            order = stored
        else:
            order = last_order[item.document_id] = last_order.get(item.document_id, 0) + 1
        question_rows.append(
            {
                "document_id": document_ids[item.document_id],
                "external_id": item.question_id,
                "order": order,
                "question_type": item.question_type,
                "answer_position": item.answer_position,
            }
        )
    counts["questions"] = sync_rows(
        Question.objects.filter(document__benchmark=benchmark),
        question_rows,
        key=("document_id", "external_id"),
        compare=("question_type", "answer_position"),
    )
    question_ids = id_map(
        Question.objects.filter(document__benchmark=benchmark),
        ("document__external_id", "external_id"),
    )
    counts["question texts"] = sync_rows(
        QuestionText.objects.filter(dataset_id__in=dataset_ids.values()),
        (
            {
                "question_id": question_ids[(item.document_id, item.question_id)],
                "dataset_id": dataset_ids[item.task],
                "text": item.question,
                "reference_answer": item.answers[0],
                "alternative_answers": list(item.answers[1:]),
                "prompt": item.prompt,
            }
            for item in bundle.items
        ),
        key=("question_id", "dataset_id"),
        compare=("text", "reference_answer", "alternative_answers", "prompt"),
    )
    return counts


def add_dataset_arguments(
    parser, split_required: bool = True, default_split: str | None = None, many: bool = False
) -> None:
    """The options that name a dataset, shared by the commands that take one
    (`many`: a command that takes several tasks)."""
    parser.add_argument("--benchmark", default="elitr-bench")
    parser.add_argument(
        "--dataset-version", default=DatasetVersion.QA, choices=DatasetVersion.values
    )
    parser.add_argument("--language", default=Language.ENGLISH)
    parser.add_argument(
        "--split", required=split_required and default_split is None, default=default_split
    )
    parser.add_argument(
        "--task",
        default="",
        help="The benchmark's task, as its authors write it (L-Eval's codeU) or as stored "
        "(codeu)" + ("; several with commas" if many else "") + ". Needed where the split "
        "has more than one.",
    )


class DatasetChoiceError(ValueError):
    """The options name no dataset, or more than one where one is needed."""


def datasets_from_options(options: dict, many: bool = True) -> list[Dataset]:
    """The datasets the options name: the split's tasks given by --task (a
    task as its authors write it or as stored), or its only one. Refuses a
    split with several tasks when none is named: taking the first would
    judge or generate a task nobody asked for."""
    found = Dataset.objects.filter(
        benchmark__slug=options["benchmark"],
        version=options["dataset_version"],
        language=options["language"],
        split=options["split"],
    ).order_by("task")
    by_task = {dataset.task: dataset for dataset in found}
    what = (
        f"{options['benchmark']} {options['dataset_version']} {options['language']} "
        f"split {options['split']!r}"
    )
    if not by_task:
        raise DatasetChoiceError(f"No such dataset ({what}).")
    asked = [t.strip() for t in (options.get("task") or "").split(",") if t.strip()]
    if len(asked) > 1 and not many:
        raise DatasetChoiceError(f"One task only here, not {len(asked)}: {', '.join(asked)}.")
    if not asked:
        if len(by_task) > 1:
            raise DatasetChoiceError(
                f"{what} has {len(by_task)} tasks: name one with --task"
                + (" (several with commas)" if many else "")
                + f"; its tasks: {', '.join(by_task)}."
            )
        return list(by_task.values())
    chosen, unknown = [], []
    for task in asked:
        dataset = by_task.get(task) or by_task.get(task_from_file(task))
        if dataset is None:
            unknown.append(task)
        elif dataset not in chosen:
            chosen.append(dataset)
    if unknown:
        raise DatasetChoiceError(
            f"No task {', '.join(map(repr, unknown))} in {what}; its tasks: "
            f"{', '.join(t or '(unnamed)' for t in by_task)}."
        )
    return chosen


def dataset_from_options(options: dict) -> Dataset:
    """The one dataset the options name (see datasets_from_options)."""
    return datasets_from_options(options, many=False)[0]

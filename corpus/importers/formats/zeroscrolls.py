"""ZeroSCROLLS rows as the authors publish them (the `tau/zero_scrolls`
dataset: JSON Lines, or Parquet as the Hugging Face dataset stores it), one
question per row:

    {"id": "...", "pid": "...",
     "input": "instruction, document, query and response header, in one text",
     "output": "the reference" (none on the test split),
     "document_start_index": 0, "document_end_index": 0,
     "query_start_index": 0, "query_end_index": 0,
     "truncation_seperator": "... [The rest of ... is omitted]\\n\\n"}

The document is `input[document_start_index:document_end_index]`, the
question `input[query_start_index:query_end_index]`; what surrounds them (the
task's instruction before, the response header after) is kept as the
question's prompt parts with the separator, so that Concord prompts exactly
with `input` and truncates as the authors' code does
(generation.prompts_zeroscrolls). A question with several references comes
as several rows of one `id` (the first output is the reference, the others
are its alternatives). Documents are shared by text: rows about the same
document (QuALITY's questions about one story) make one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from corpus.importers.checks import identifier
from corpus.importers.errors import ImportFailure
from corpus.importers.formats.base import (
    BenchmarkBundle,
    QuestionItem,
    check_names,
    task_from_file,
    text_field,
)
from corpus.importers.records import Record, read_records, unknown_fields

FORMAT = "zeroscrolls"
INDICES = (
    "document_start_index",
    "document_end_index",
    "query_start_index",
    "query_end_index",
)
KNOWN_FIELDS = frozenset(
    {"id", "pid", "input", "output", "truncation_seperator", *INDICES, "inner_docs_start_indices"}
)
TASKS = (
    "gov_report",
    "summ_screen_fd",
    "qmsum",
    "squality",
    "qasper",
    "narrative_qa",
    "quality",
    "musique",
    "space_digest",
    "book_sum_sort",
)
DESCRIPTION = (
    "ZeroSCROLLS (Shaham et al., 2023): ten zero-shot long-text tasks (summarisation, "
    "question answering, aggregation), each row a full prompt with its document and query. "
    "Imported from the authors' dataset rows."
)


def read(
    path: str | Path,
    *,
    benchmark: str = "zeroscrolls",
    benchmark_name: str | None = None,
    split: str = "validation",
    version: str = "qa",
    language: str = "en",
    task: str = "",
) -> BenchmarkBundle:
    path = Path(path)
    task = task or _task_of(path)
    check_names(slug=benchmark, split=split, version=version, language=language, task=task)
    bundle = BenchmarkBundle(
        benchmark,
        benchmark_name or "ZeroSCROLLS",
        FORMAT,
        version,
        language,
        split,
        str(path),
        description=DESCRIPTION,
        source_url="https://www.zero.scrolls-benchmark.com/",
    )
    by_id: dict[str, int] = {}  # question id -> its place in bundle.items
    documents: dict[str, str] = {}  # a document's text digest -> its id
    for record in read_records(path):
        unknown_fields(record, KNOWN_FIELDS)
        item = _item(record, task, documents, bundle)
        if item.question_id in by_id:
            # another reference of the same question: the same prompt, another output
            index = by_id[item.question_id]
            first = bundle.items[index]
            if first.prompt != item.prompt or first.question != item.question:
                raise ImportFailure(
                    f"{record.where}: row {item.question_id!r} appears before with another "
                    "input; rows of one id differ only in their output."
                )
            if item.answers[0] not in first.answers:
                bundle.items[index] = QuestionItem(
                    first.task,
                    first.document_id,
                    first.question_id,
                    first.question,
                    first.answers + item.answers,
                    prompt=first.prompt,
                )
            continue
        by_id[item.question_id] = len(bundle.items)
        bundle.items.append(item)
    if not bundle.items:
        raise ImportFailure(f"{path}: no rows in the file.")
    return bundle


def _task_of(path: Path) -> str:
    """`qasper.jsonl`, `qasper-validation.parquet`, `validation/qasper.parquet`: qasper."""
    for name in (path.stem, path.parent.name):
        for known in TASKS:
            if name.lower().startswith(known):
                return known
    return task_from_file(path.stem)


def _index(fields: dict[str, Any], name: str, where: str) -> int:
    value = fields.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ImportFailure(f"{where}: '{name}' must be a whole number.")
    if isinstance(value, float) and not value.is_integer():
        raise ImportFailure(f"{where}: '{name}' must be a whole number, not {value}.")
    return int(value)


def _item(
    record: Record, task: str, documents: dict[str, str], bundle: BenchmarkBundle
) -> QuestionItem:
    fields, where = record.fields, record.where
    question_id = identifier(fields.get("id"), "id", where)
    text = text_field(fields, "input", where)
    start, end, query_start, query_end = (_index(fields, name, where) for name in INDICES)
    if not 0 <= start <= end <= query_start <= query_end <= len(text):
        raise ImportFailure(
            f"{where}: the indices do not cut 'input' in order (0 <= document_start_index "
            f"<= document_end_index <= query_start_index <= query_end_index <= {len(text)}): "
            f"{start}, {end}, {query_start}, {query_end}."
        )
    separator = text_field(fields, "truncation_seperator", where, empty=True)
    output = fields.get("output")
    if output is not None and not isinstance(output, str):
        raise ImportFailure(f"{where}: 'output' must be a string.")
    document = text[start:end]
    if not document.strip():
        raise ImportFailure(f"{where}: the document (input[{start}:{end}]) is empty.")
    digest = hashlib.sha256(document.encode()).hexdigest()
    pid = fields.get("pid")
    document_id = documents.setdefault(
        digest, identifier(pid, "pid", where) if pid is not None else f"{task}-{digest[:12]}"
    )
    bundle.add_document(document_id, document, where)
    prompt: dict[str, Any] = {
        "before_document": text[:start],
        "between": text[end:query_start],
        "after_query": text[query_end:],
        "truncation_separator": separator,
    }
    inner = fields.get("inner_docs_start_indices")
    if inner is not None:
        if not isinstance(inner, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and start <= i <= end for i in inner
        ):
            raise ImportFailure(
                f"{where}: 'inner_docs_start_indices' must be whole numbers within the document."
            )
        prompt["inner_docs_start_indices"] = [i - start for i in inner]
    return QuestionItem(
        task=task,
        document_id=document_id,
        question_id=question_id,
        question=text[query_start:query_end],
        answers=(output or "",),
        prompt=prompt,
    )

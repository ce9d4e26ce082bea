"""Any long-document QA benchmark, one question per record, from JSON Lines,
CSV or Parquet (schema in docs/benchmark-formats.md, "Generic"):

    {"document_id": "report-17",            required
     "document": "full text ...",           required on the document's first record;
                                            later ones may omit it or repeat it exactly
     "question_id": "3",                    optional; default: its rank in the document
     "question": "What ...?",               required
     "answer": "..."  or  "answers": [...], required; the first answer is the reference,
                                            the others are kept as alternatives
     "task": "qasper",                      optional: the task it belongs to
     "question_type": "who|what|when|howmany",   optional
     "answer_position": "B|M|E|S"}               optional

In a CSV file `answers` is a JSON list in its cell.

A file whose columns have other names (`context`, `query`, `reference`) is
read with `columns`, Concord's field -> the file's column (the console's
upload shows the mapping it guessed and lets the researcher change it);
columns it does not name are left out, not refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from corpus.importers.checks import identifier
from corpus.importers.errors import ImportFailure
from corpus.importers.formats.base import (
    SLUG,
    BenchmarkBundle,
    QuestionItem,
    check_names,
    text_field,
)
from corpus.importers.records import Record, read_records, unknown_fields

FORMAT = "generic"
KNOWN_FIELDS = frozenset(
    {
        "document_id",
        "document",
        "question_id",
        "question",
        "answer",
        "answers",
        "task",
        "question_type",
        "answer_position",
    }
)
QUESTION_TYPES = ("who", "what", "when", "howmany")
ANSWER_POSITIONS = ("B", "M", "E", "S")
# Concord's fields in the order a mapping shows them; the required ones first.
REQUIRED_FIELDS = ("document_id", "document", "question")
FIELDS = (
    *REQUIRED_FIELDS,
    "answer",
    "answers",
    "question_id",
    "task",
    "question_type",
    "answer_position",
)


def read(
    path: str | Path,
    *,
    benchmark: str,
    benchmark_name: str | None = None,
    split: str = "test",
    version: str = "qa",
    language: str = "en",
    task: str = "",
    columns: Mapping[str, str] | None = None,
) -> BenchmarkBundle:
    check_names(slug=benchmark, split=split, version=version, language=language, task=task)
    if columns is not None:
        check_columns(columns)
    records = read_records(path)
    bundle = BenchmarkBundle(
        benchmark, benchmark_name or benchmark, FORMAT, version, language, split, str(path)
    )
    seen: set[tuple[str, str]] = set()
    rank: dict[str, int] = {}
    for record in records:
        if columns is None:
            unknown_fields(record, KNOWN_FIELDS)
        else:
            record = mapped(record, columns)
        fields, where = record.fields, record.where
        document_id = identifier(fields.get("document_id"), "document_id", where)
        document = fields.get("document")
        if document_id not in bundle.documents and not isinstance(document, str):
            raise ImportFailure(
                f"{where}: the first line of document {document_id!r} must hold its "
                "text in 'document'."
            )
        if document is not None:
            if not isinstance(document, str):
                raise ImportFailure(f"{where}: 'document' must be a string.")
            bundle.add_document(document_id, document, where)
        rank[document_id] = rank.get(document_id, 0) + 1
        question_id = identifier(fields.get("question_id", rank[document_id]), "question_id", where)
        if (document_id, question_id) in seen:
            raise ImportFailure(
                f"{where}: question {question_id!r} of document {document_id!r} appears twice."
            )
        seen.add((document_id, question_id))
        bundle.items.append(
            QuestionItem(
                task=_task(fields, task, where),
                document_id=document_id,
                question_id=question_id,
                question=text_field(fields, "question", where),
                answers=_answers(record),
                question_type=_choice(fields, "question_type", QUESTION_TYPES, where),
                answer_position=_choice(fields, "answer_position", ANSWER_POSITIONS, where),
            )
        )
    if not bundle.items:
        raise ImportFailure(f"{path}: no questions in the file.")
    return bundle


def check_columns(columns: Mapping[str, str]) -> None:
    """A mapping names each required field and gives each column one field."""
    unknown = sorted(set(columns) - KNOWN_FIELDS)
    if unknown:
        raise ImportFailure(f"Mapping: no field {', '.join(unknown)} in the generic format.")
    chosen = {field: column for field, column in columns.items() if column}
    for field in REQUIRED_FIELDS:
        if field not in chosen:
            raise ImportFailure(f"Mapping: choose the column that holds '{field}'.")
    if ("answer" in chosen) == ("answers" in chosen):
        raise ImportFailure(
            "Mapping: choose one column for the reference: 'answer' (a text) or 'answers' (a list)."
        )
    taken: dict[str, str] = {}
    for field, column in chosen.items():
        if column in taken:
            raise ImportFailure(
                f"Mapping: column '{column}' is chosen for both '{taken[column]}' and '{field}'."
            )
        taken[column] = field


def mapped(record: Record, columns: Mapping[str, str]) -> Record:
    """The record under Concord's field names; columns not mapped are left out."""
    fields = record.fields
    return Record(
        record.where,
        {field: fields[column] for field, column in columns.items() if column and column in fields},
    )


def _task(fields: dict, default: str, where: str) -> str:
    task = fields.get("task", default) or ""
    if not isinstance(task, str) or (task and not SLUG.match(task)):
        raise ImportFailure(f"{where}: 'task' {task!r}: lower-case letters, digits, '-', '_'.")
    return task


def _choice(fields: dict, key: str, choices: tuple[str, ...], where: str) -> str:
    value = fields.get(key, "") or ""
    if value not in (*choices, ""):
        raise ImportFailure(f"{where}: {key} {value!r} is not one of {', '.join(choices)}.")
    return str(value)


def _answers(record: Record) -> tuple[str, ...]:
    fields, where = record.fields, record.where
    if ("answer" in fields) == ("answers" in fields):
        raise ImportFailure(f"{where}: give either 'answer' (a string) or 'answers' (a list).")
    answers = [fields["answer"]] if "answer" in fields else fields["answers"]
    if isinstance(answers, str) and "answers" in fields:  # a CSV cell holds the list as JSON
        try:
            answers = json.loads(answers)
        except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
            raise ImportFailure(f"{where}: 'answers' must be a JSON list of strings.") from None
    if (
        not isinstance(answers, list)
        or not answers
        or not all(isinstance(a, str) and a.strip() for a in answers)
    ):
        raise ImportFailure(f"{where}: the reference answer(s) must be non-empty strings.")
    return tuple(answers)

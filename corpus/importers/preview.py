"""What a benchmark file holds, shown before anything is stored: its first
records as they are, how its fields become Concord's (guessed for a generic
file, fixed by L-Eval's and ZeroSCROLLS's formats), and what importing it
would write (tasks, documents, questions), from a full read by the same
reader the import uses, so that a file the import would refuse is refused
here, by its line and field.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus.importers.errors import ImportFailure
from corpus.importers.formats import (
    READERS,
    BenchmarkBundle,
    babilong,
    generic,
    leval,
    loogle,
    ruler,
    zeroscrolls,
)
from corpus.importers.records import read_records

PREVIEW_ROWS = 5
SHOWN_CHARS = 160

# For a generic file: the names its columns often have, per Concord field.
ALIASES: dict[str, tuple[str, ...]] = {
    "document_id": ("document_id", "doc_id", "documentid", "context_id", "article_id"),
    "document": ("document", "context", "text", "article", "transcript", "passage"),
    "question": ("question", "query", "instruction", "prompt"),
    "answer": ("answer", "reference", "output", "target", "gold"),
    "answers": ("answers", "references", "outputs", "targets"),
    "question_id": ("question_id", "qid", "query_id"),
    "task": ("task", "subset"),
    "question_type": ("question_type", "type"),
    "answer_position": ("answer_position", "position"),
}
FIELD_NOTES = {
    "document_id": "the document's id; its questions share it",
    "document": "the document's text (on its first record)",
    "question": "the question asked about the document",
    "answer": "the reference answer (a text)",
    "answers": "the reference first, then alternatives (a list)",
    "question_id": "default: its rank in the document",
    "task": "default: the task field of the form",
    "question_type": "who, what, when or howmany",
    "answer_position": "B, M, E or S",
}
# The formats whose authors fixed the fields: Concord's field <- where it is read.
FIXED_MAPPINGS: dict[str, list[tuple[str, str]]] = {
    leval.FORMAT: [
        ("document", "input"),
        ("question (one per instruction)", "instructions[i]"),
        ("answer", "outputs[i]"),
        ("document_id", "<task>-<line>"),
        ("question_id", "i (1, 2, ...)"),
        ("scored by", "evaluation (exam, f1, rouge, LLM, human)"),
    ],
    zeroscrolls.FORMAT: [
        ("document", "input[document_start_index:document_end_index]"),
        ("question", "input[query_start_index:query_end_index]"),
        ("answer", "output (several rows of one id: the alternatives)"),
        ("question_id", "id"),
        ("document_id", "the document's text (rows about one text share it)"),
        ("prompt", "the rest of input, with truncation_seperator"),
    ],
    ruler.FORMAT: [
        ("document", "input (the prompt, its context built in)"),
        ("question", "input's last line"),
        ("answers", "outputs (the needle tasks: every one; QA: any one)"),
        ("task", "<task>-<length>, from the form or the folders"),
        ("document_id", "<task>-<length>-<line>"),
        ("question_id", "the line's number (RULER's index is not unique)"),
        ("prompt", "answer_prefix, length, index"),
    ],
    babilong.FORMAT: [
        ("document", "input (the facts in PG-19 text)"),
        ("question", "question"),
        ("answers", "target"),
        ("task", "<task>-<length>, from the form or the file's name"),
        ("document_id", "<task>-<length>-<row>"),
        ("question_id", "the row's number"),
        ("prompt", "the bAbI task, the length and its tokens"),
    ],
    loogle.FORMAT: [
        ("document", "input"),
        ("question", "each of qa_pairs' Q (a summary: the authors' instruction)"),
        ("answers", "its A (a cloze question's masks as JSON; a summary: output)"),
        ("task", "the file's name (shortdep_qa), or from the form"),
        ("document_id", "<task>-<line>"),
        ("question_id", "<line>-<question>"),
        ("prompt", "title, the evidence sentences S, type"),
    ],
}


@dataclass(frozen=True)
class MappingRow:
    field: str  # Concord's
    source: str  # the file's column, or where the format reads it
    required: bool = False
    note: str = ""


@dataclass(frozen=True)
class TaskCount:
    task: str
    documents: int
    questions: int


@dataclass
class FilePreview:
    format: str
    columns: list[str]
    rows: list[list[str]]  # the first records' values, one per column ("" where absent)
    mapping: list[MappingRow]
    left_out: list[str] = field(default_factory=list)
    tasks: list[TaskCount] = field(default_factory=list)
    bundle: BenchmarkBundle | None = None
    error: str = ""  # what the import would refuse (the rows and mapping still show)

    @property
    def documents(self) -> int:
        return len(self.bundle.documents) if self.bundle else 0

    @property
    def questions(self) -> int:
        return len(self.bundle.items) if self.bundle else 0


def shown(value: Any) -> str:
    """A value as a cell shows it: a long text cut, with its length."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]}… ({len(text):,} characters)"


def first_rows(path: Path, count: int = PREVIEW_ROWS) -> tuple[list[str], list[list[str]]]:
    """The file's columns in order and its first records' cells (read no further)."""
    columns: list[str] = []
    records: list[dict[str, str]] = []
    for record in read_records(path):
        for name in record.fields:
            if name not in columns:
                columns.append(name)
        records.append({name: shown(value) for name, value in record.fields.items()})
        if len(records) >= count:
            break
    if not records:
        raise ImportFailure(f"{path}: no records in the file.")
    return columns, [[record.get(name, "") for name in columns] for record in records]


def guess_columns(columns: list[str]) -> dict[str, str]:
    """Concord's field -> the file's column, by name (case-insensitive); a
    column is guessed for one field at most, "answer" before "answers"."""
    lowered = {column.lower(): column for column in columns}
    guessed: dict[str, str] = {}
    taken: set[str] = set()
    for name in generic.FIELDS:
        for alias in ALIASES[name]:
            column = lowered.get(alias)
            if column and column not in taken:
                guessed[name] = column
                taken.add(column)
                break
    if "answer" in guessed and "answers" in guessed:
        guessed.pop("answers")
    return guessed


def preview_benchmark(
    format: str, path: Path, columns: dict[str, str] | None = None, **options: Any
) -> FilePreview:
    """The preview of one file in `format`. A file whose first records cannot
    be read raises ImportFailure; one the import would refuse further on (or a
    mapping that misses a field) comes back with its `error`, so that the
    researcher sees the rows and the mapping beside it. `columns` (generic
    only): the mapping to use, else the guessed one."""
    if format not in READERS:
        raise ImportFailure(f"Format {format!r}: one of {', '.join(READERS)}.")
    names, rows = first_rows(path)
    if format == generic.FORMAT:
        chosen = guess_columns(names) if columns is None else columns
        mapping = [
            MappingRow(
                name, chosen.get(name, ""), name in generic.REQUIRED_FIELDS, FIELD_NOTES[name]
            )
            for name in generic.FIELDS
        ]
        used = {column for column in chosen.values() if column}
        left_out = [column for column in names if column not in used]
        preview = FilePreview(format, names, rows, mapping, left_out)
        options["columns"] = chosen
    else:
        mapping = [MappingRow(name, source) for name, source in FIXED_MAPPINGS[format]]
        preview = FilePreview(format, names, rows, mapping)
    try:
        preview.bundle = READERS[format](path, **options)
    except ImportFailure as failure:
        preview.error = str(failure)
    else:
        preview.tasks = task_counts(preview.bundle)
    return preview


def task_counts(bundle: BenchmarkBundle) -> list[TaskCount]:
    documents: dict[str, set[str]] = defaultdict(set)
    questions: dict[str, int] = defaultdict(int)
    for item in bundle.items:
        documents[item.task].add(item.document_id)
        questions[item.task] += 1
    return [TaskCount(task, len(documents[task]), questions[task]) for task in sorted(questions)]

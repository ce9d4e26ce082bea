"""What every benchmark format reads into: a `BenchmarkBundle` of documents and
questions (with their tasks, reference answers and prompt parts), written by
one service (`corpus.services.import_benchmark`), whatever the format."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from corpus.choices import DatasetVersion, Language
from corpus.importers.errors import ImportFailure

SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
VERSIONS = tuple(DatasetVersion.values)
LANGUAGES = tuple(Language.values)


@dataclass(frozen=True)
class QuestionItem:
    task: str  # the dataset's task ("" for a benchmark of one task)
    document_id: str
    question_id: str
    question: str
    answers: tuple[str, ...]  # the reference first, then the alternatives
    question_type: str = ""
    answer_position: str = ""
    prompt: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass
class BenchmarkBundle:
    """A benchmark's documents and questions as read, nothing written yet."""

    slug: str
    name: str
    format: str  # corpus.models.Benchmark.Format
    version: str
    language: str
    split: str
    origin: str  # the file read
    description: str = ""
    source_url: str = ""
    documents: dict[str, str] = field(default_factory=dict)
    items: list[QuestionItem] = field(default_factory=list)

    def tasks(self) -> list[str]:
        return sorted({item.task for item in self.items})

    def add_document(self, document_id: str, text: str, where: str) -> None:
        """A document, once; the same id again must hold the same text."""
        stored = self.documents.get(document_id)
        if stored is None:
            if not text.strip():
                raise ImportFailure(f"{where}: document {document_id!r} is empty.")
            self.documents[document_id] = text
        elif stored != text:
            raise ImportFailure(
                f"{where}: document {document_id!r} has a different text than on an earlier line."
            )


def check_names(*, slug: str, split: str, version: str, language: str, task: str = "") -> None:
    """The options every format takes, checked before the file is read."""
    for value, name in ((slug, "benchmark"), (split, "split")):
        if not SLUG.match(value or ""):
            raise ImportFailure(
                f"--{name} {value!r}: use lower-case letters, digits, '-' and '_' only."
            )
    if task and not SLUG.match(task):
        raise ImportFailure(f"--task {task!r}: use lower-case letters, digits, '-' and '_' only.")
    if version not in VERSIONS:
        raise ImportFailure(f"--dataset-version {version!r}: choose from {', '.join(VERSIONS)}.")
    if language not in LANGUAGES:
        raise ImportFailure(f"--language {language!r}: choose from {', '.join(LANGUAGES)}.")


def task_from_file(stem: str) -> str:
    """A task named by its file (`quality.jsonl`, `qasper-validation.parquet`):
    lower case, with '-' for what a slug cannot hold."""
    return re.sub(r"[^a-z0-9_-]+", "-", stem.lower()).strip("-_") or "task"


def text_field(fields: dict[str, Any], key: str, where: str, *, empty: bool = False) -> str:
    value = fields.get(key)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ImportFailure(f"{where}: '{key}' must be a{'' if empty else ' non-empty'} string.")
    return value

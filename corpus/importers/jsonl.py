"""Reads any long-document QA benchmark from JSON Lines (schema in docs/import-jsonl.md).

One object per line:

    {"document_id": "report-17",            required
     "document": "full text ...",           required on the document's first line;
                                            later lines may omit it or repeat it exactly
     "question_id": "3",                    optional; default: its rank in the document
     "question": "What ...?",               required
     "answer": "..."  or  "answers": [...], required; the first answer is the reference,
                                            the others are kept as alternatives
     "question_type": "who|what|when|howmany",   optional
     "answer_position": "B|M|E|S"}               optional
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from corpus.choices import DatasetVersion, Language
from corpus.importers.checks import identifier, load_json_line
from corpus.importers.elitr_bench import ANSWER_POSITIONS, LANGUAGES, QUESTION_TYPES, VERSIONS
from corpus.importers.errors import ImportFailure

KNOWN_FIELDS = {
    "document_id",
    "document",
    "question_id",
    "question",
    "answer",
    "answers",
    "question_type",
    "answer_position",
}
SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class JsonlItem:
    document_id: str
    question_id: str
    question: str
    answers: tuple[str, ...]
    question_type: str
    answer_position: str


@dataclass
class JsonlBundle:
    benchmark_slug: str
    benchmark_name: str
    version: str
    language: str
    split: str
    origin: str
    documents: dict[str, str] = field(default_factory=dict)
    items: list[JsonlItem] = field(default_factory=list)


def parse_jsonl(
    path: str | Path,
    *,
    benchmark: str,
    benchmark_name: str | None = None,
    split: str = "test",
    version: str = DatasetVersion.QA,
    language: str = Language.ENGLISH,
) -> JsonlBundle:
    path = Path(path)
    for value, name in ((benchmark, "benchmark"), (split, "split")):
        if not SLUG.match(value or ""):
            raise ImportFailure(
                f"--{name} {value!r}: use lower-case letters, digits, '-' and '_' only."
            )
    if version not in VERSIONS:
        raise ImportFailure(f"--dataset-version {version!r}: choose from {', '.join(VERSIONS)}.")
    if language not in LANGUAGES:
        raise ImportFailure(f"--language {language!r}: choose from {', '.join(LANGUAGES)}.")
    try:
        # "\n" only: splitlines() would also cut at U+2028 and other separators
        # that a JSON text may hold, and every later line number would be wrong
        lines = path.read_text(encoding="utf-8-sig").split("\n")
    except FileNotFoundError as error:
        raise ImportFailure(f"{path}: no such file.") from error
    except UnicodeDecodeError as error:
        raise ImportFailure(f"{path}: not UTF-8 text ({error}).") from error

    bundle = JsonlBundle(
        benchmark, benchmark_name or benchmark, version, language, split, str(path)
    )
    seen: set[tuple[str, str]] = set()
    rank: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        obj = load_json_line(line, where)  # no NaN, no NUL: see checks.py
        if not isinstance(obj, dict):
            raise ImportFailure(f"{where}: expected a JSON object.")
        unknown = sorted(set(obj) - KNOWN_FIELDS)
        if unknown:
            raise ImportFailure(f"{where}: unknown field(s) {', '.join(unknown)}.")
        document_id = identifier(obj.get("document_id"), "document_id", where)
        document = obj.get("document")
        if document_id not in bundle.documents:
            if not isinstance(document, str) or not document.strip():
                raise ImportFailure(
                    f"{where}: the first line of document {document_id!r} must hold its "
                    "text in 'document'."
                )
            bundle.documents[document_id] = document
        elif document is not None and document != bundle.documents[document_id]:
            raise ImportFailure(
                f"{where}: document {document_id!r} has a different text than on an earlier line."
            )
        rank[document_id] = rank.get(document_id, 0) + 1
        question_id = identifier(obj.get("question_id", rank[document_id]), "question_id", where)
        if (document_id, question_id) in seen:
            raise ImportFailure(
                f"{where}: question {question_id!r} of document {document_id!r} appears twice."
            )
        seen.add((document_id, question_id))
        question_type = obj.get("question_type", "") or ""
        if question_type not in (*QUESTION_TYPES, ""):
            raise ImportFailure(
                f"{where}: question_type {question_type!r} is not one of "
                f"{', '.join(QUESTION_TYPES)}."
            )
        position = obj.get("answer_position", "") or ""
        if position not in (*ANSWER_POSITIONS, ""):
            raise ImportFailure(
                f"{where}: answer_position {position!r} is not one of "
                f"{', '.join(ANSWER_POSITIONS)}."
            )
        bundle.items.append(
            JsonlItem(
                document_id,
                question_id,
                _text(obj, "question", where),
                _answers(obj, where),
                question_type,
                position,
            )
        )
    if not bundle.items:
        raise ImportFailure(f"{path}: no questions in the file.")
    return bundle


def _text(obj: dict, key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ImportFailure(f"{where}: '{key}' must be a non-empty string.")
    return value


def _answers(obj: dict, where: str) -> tuple[str, ...]:
    if ("answer" in obj) == ("answers" in obj):
        raise ImportFailure(f"{where}: give either 'answer' (a string) or 'answers' (a list).")
    answers = [obj["answer"]] if "answer" in obj else obj["answers"]
    if (
        not isinstance(answers, list)
        or not answers
        or not all(isinstance(a, str) and a.strip() for a in answers)
    ):
        raise ImportFailure(f"{where}: the reference answer(s) must be non-empty strings.")
    return tuple(answers)

"""LongBench v2 as its authors publish it (THUDM/LongBench-v2 on the Hugging
Face hub: `data.json`, one JSON array; or its Parquet or JSON Lines forms),
503 multiple-choice questions, each with its own long context:

    {"_id": "...", "domain": "Single-Document QA", "sub_domain": "Financial",
     "difficulty": "easy" | "hard", "length": "short" | "medium" | "long",
     "question": "...", "choice_A": "...", "choice_B": "...", "choice_C": "...",
     "choice_D": "...", "answer": "A" | "B" | "C" | "D", "context": "..."}

A question is its `_id`; its reference is the answer's letter; its four
choices, domain, sub-domain, difficulty and length are kept as its prompt
parts (generation.prompts_longbench_v2 prompts with them, the benchmark's
Easy/Hard/Short/Medium/Long table groups by them). Contexts are shared by
text: questions on the same context make one document. The authors score
all 503 as one task, so the benchmark has no tasks unless one is given.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from corpus.importers.checks import identifier
from corpus.importers.errors import ImportFailure
from corpus.importers.formats.base import BenchmarkBundle, QuestionItem, check_names, text_field
from corpus.importers.records import read_records, unknown_fields

FORMAT = "longbench_v2"
CHOICE_FIELDS = ("choice_A", "choice_B", "choice_C", "choice_D")
LETTERS = ("A", "B", "C", "D")
GROUP_FIELDS = ("domain", "sub_domain", "difficulty", "length")
KNOWN_FIELDS = frozenset({"_id", "question", "answer", "context", *CHOICE_FIELDS, *GROUP_FIELDS})
DESCRIPTION = (
    "LongBench v2 (Bai et al., 2024): 503 multiple-choice questions on contexts of 8k to 2M "
    "words, easy or hard, short, medium or long. Imported from the authors' data file."
)


def read(
    path: str | Path,
    *,
    benchmark: str = "longbench_v2",
    benchmark_name: str | None = None,
    split: str = "test",
    version: str = "qa",
    language: str = "en",
    task: str = "",
) -> BenchmarkBundle:
    path = Path(path)
    check_names(slug=benchmark, split=split, version=version, language=language, task=task)
    bundle = BenchmarkBundle(
        benchmark,
        benchmark_name or "LongBench v2",
        FORMAT,
        version,
        language,
        split,
        str(path),
        description=DESCRIPTION,
        source_url="https://github.com/THUDM/LongBench",
    )
    documents: dict[str, str] = {}  # a context's digest -> its document id
    seen: set[str] = set()
    for record in read_records(path):
        unknown_fields(record, KNOWN_FIELDS)
        fields, where = record.fields, record.where
        question_id = identifier(fields.get("_id"), "_id", where)
        if question_id in seen:
            raise ImportFailure(f"{where}: '_id' {question_id!r} appears before.")
        seen.add(question_id)
        context = text_field(fields, "context", where)
        question = text_field(fields, "question", where)
        choices = {name: text_field(fields, name, where, empty=True) for name in CHOICE_FIELDS}
        answer = fields.get("answer")
        if answer not in LETTERS:
            raise ImportFailure(f"{where}: 'answer' must be one of A, B, C, D, not {answer!r}.")
        groups = {name: text_field(fields, name, where, empty=True) for name in GROUP_FIELDS}
        digest = hashlib.sha256(context.encode()).hexdigest()
        document_id = documents.setdefault(digest, f"context-{digest[:12]}")
        bundle.add_document(document_id, context, where)
        bundle.items.append(
            QuestionItem(
                task=task,
                document_id=document_id,
                question_id=question_id,
                question=question,
                answers=(answer,),
                prompt={**choices, **groups},
            )
        )
    if not bundle.items:
        raise ImportFailure(f"{path}: no questions in the file.")
    return bundle

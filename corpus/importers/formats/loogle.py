"""LooGLE as its authors publish it (bigai-nlco/LooGLE; the data on the Hugging
Face Hub as `bigainlco/LooGLE`, a sample in the repository's
`LooGLE-testdata/`): documents of 10k-100k+ words written after 2022, asked
short- and long-dependency questions. One file per task, named by it
(`shortdep_qa.jsonl`, `longdep_qa`, `longdep_summarization`,
`shortdep_cloze`; JSON Lines or Parquet), a folder of them, or one file with
`--task`.

Each line is a document: `{"input": "<the text>", "title": "...",
"qa_pairs": "[{'Q': ..., 'A': ..., 'S': [...], 'type': ...}, ...]",
"output": "..."}`. `qa_pairs` is written as a Python list (the authors'
scripts `eval` it; read here with `ast.literal_eval`, never run), or "none"
for a summary, whose reference is the line's `output`. A question keeps its
evidence sentences (`S`) and, for longdep_qa, its type (comprehension,
computation, timeline, multiple retrieval) in its prompt parts; a cloze
question's answer, a dict of masks (`{'<mask-0>': 'Bob'}`), is stored as
JSON and read back by its metrics (judging.metrics.loogle).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from corpus.importers.errors import ImportFailure
from corpus.importers.formats.base import BenchmarkBundle, QuestionItem, check_names, text_field
from corpus.importers.records import read_records, unknown_fields

FORMAT = "loogle"
TASKS = ("shortdep_qa", "longdep_qa", "longdep_summarization", "shortdep_cloze")
SUMMARY_TASK = "longdep_summarization"
CLOZE_TASK = "shortdep_cloze"
SUFFIXES = (".jsonl", ".json", ".parquet")
KNOWN_FIELDS = frozenset({"input", "title", "qa_pairs", "output", "question", "id", "doc_id"})
DESCRIPTION = (
    "LooGLE (Li et al., 2024): long documents written after 2022, short- and long-dependency "
    "questions, cloze and summaries."
)
# What a summary is asked, for people and judges (task2prompt.json's words;
# the model's prompt is the authors' template, generation.prompts_loogle)
SUMMARY_QUESTION = "Please generate a summary of the below paper."


def _task_of(path: Path) -> str | None:
    stem = path.stem.lower()
    return next((task for task in TASKS if stem == task or stem.startswith(f"{task}-")), None)


def task_files(path: Path, task: str) -> list[tuple[Path, str]]:
    """The files under `path` (or `path` itself), each with its task."""
    if task and task not in TASKS:
        raise ImportFailure(f"--task {task!r}: one of LooGLE's {', '.join(TASKS)}.")
    if path.is_file():
        found = task or _task_of(path)
        if not found:
            raise ImportFailure(
                f"{path}: its task is not its name (shortdep_qa.jsonl); give it (--task "
                f"{TASKS[0]}: one of {', '.join(TASKS)})."
            )
        return [(path, found)]
    if task:
        raise ImportFailure(f"--task names one file's task; {path} is a folder.")
    if not path.is_dir():
        raise ImportFailure(f"{path}: no such file or folder.")
    files = [
        (candidate, named)
        for candidate in sorted(p for p in path.rglob("*") if p.suffix.lower() in SUFFIXES)
        if (named := _task_of(candidate))
    ]
    if not files:
        raise ImportFailure(f"{path}: no LooGLE task file ({', '.join(TASKS)}) under this folder.")
    return files


def qa_pairs(value: Any, where: str) -> list[dict[str, Any]] | None:
    """A line's questions (None for a summary's "none"): a list of dicts,
    given as such or written as Python."""
    if isinstance(value, str):
        if value.strip().lower() == "none":
            return None
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise ImportFailure(
                f"{where}: 'qa_pairs' must be a list of questions ([{{'Q': ..., 'A': ...}}]) "
                "or 'none'."
            ) from None
    if not isinstance(value, list) or not value or not all(isinstance(p, dict) for p in value):
        raise ImportFailure(f"{where}: 'qa_pairs' must be a non-empty list of questions.")
    return value


def _answer(pair: dict[str, Any], task: str, where: str) -> str:
    answer = pair.get("A")
    if task == CLOZE_TASK:
        if (
            not isinstance(answer, dict)
            or not answer
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in answer.items())
        ):
            raise ImportFailure(
                f"{where}: a cloze question's 'A' is a dict of masks ({{'<mask-0>': 'Bob'}})."
            )
        return json.dumps(answer, ensure_ascii=False)
    if not isinstance(answer, str) or not answer.strip():
        raise ImportFailure(f"{where}: a question's 'A' must be a non-empty string.")
    return answer


def _evidence(pair: dict[str, Any], where: str) -> str | list[str]:
    """The evidence as written: a string (shortdep) or a list of sentences (longdep)."""
    evidence = pair.get("S", [])
    if isinstance(evidence, str):
        return evidence
    if not isinstance(evidence, list) or not all(isinstance(s, str) for s in evidence):
        raise ImportFailure(f"{where}: a question's 'S' must be its evidence sentences.")
    return evidence


def read(
    path: str | Path,
    *,
    benchmark: str = "loogle",
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
        benchmark_name or "LooGLE",
        FORMAT,
        version,
        language,
        split,
        str(path),
        description=DESCRIPTION,
        source_url="https://github.com/bigai-nlco/LooGLE",
    )
    for file, name in task_files(path, task):
        if any(item.task == name for item in bundle.items):
            raise ImportFailure(f"{file}: task {name} appears in two files.")
        before = len(bundle.items)
        for number, record in enumerate(read_records(file), 1):
            unknown_fields(record, KNOWN_FIELDS)
            fields, where = record.fields, record.where
            text = text_field(fields, "input", where)
            title = fields.get("title") or ""
            if not isinstance(title, str):
                raise ImportFailure(f"{where}: 'title' must be a string.")
            document_id = f"{name}-{number}"
            bundle.add_document(document_id, text, where)
            pairs = qa_pairs(fields.get("qa_pairs"), where)
            if name == SUMMARY_TASK or pairs is None:
                if name != SUMMARY_TASK:
                    raise ImportFailure(f"{where}: a {name} line needs its 'qa_pairs'.")
                summary = text_field(fields, "output", where)
                bundle.items.append(
                    QuestionItem(
                        task=name,
                        document_id=document_id,
                        question_id=str(number),
                        question=SUMMARY_QUESTION,
                        answers=(summary,),
                        prompt={"title": title},
                    )
                )
                continue
            for index, pair in enumerate(pairs, 1):
                at = f"{where}, question {index}"
                question = pair.get("Q")
                if not isinstance(question, str) or not question.strip():
                    raise ImportFailure(f"{at}: 'Q' must be a non-empty string.")
                kind = pair.get("type") or ""  # ELITR-Bench's question types are not these
                if not isinstance(kind, str):
                    raise ImportFailure(f"{at}: 'type' must be a string.")
                bundle.items.append(
                    QuestionItem(
                        task=name,
                        document_id=document_id,
                        question_id=f"{number}-{index}",
                        question=question,
                        answers=(_answer(pair, name, at),),
                        prompt={"title": title, "evidence": _evidence(pair, at), "type": kind},
                    )
                )
        if len(bundle.items) == before:
            raise ImportFailure(f"{file}: no lines in the file.")
    return bundle

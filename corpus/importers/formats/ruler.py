"""RULER as its authors' scripts make it (NVIDIA/RULER: `scripts/data/
prepare.py`, `run.sh`), or as corpus.ruler makes it: a data folder holding
`<length>/data/<task>/validation.jsonl`, or one such file. Each line:

    {"index": 0, "input": "<the prompt up to the answer>", "outputs": ["8675309"],
     "length": 4093, "length_w_model_temp": 4093,
     "answer_prefix": " The special magic number for ... is",
     "token_position_answer": 1870}

A task is stored with its length, `niah_single_1-4096` (RULER scores each
task at each length: evaluate.py runs once per length folder). A line is one
question on its own document (the prompt, with the context built into it):
the question is the prompt's last line, the references are `outputs` (every
one must be found for the needle tasks, any one for QA), and the prompt parts
keep the answer prefix (sent after the prompt, as call_api.py sends it), the
task's RULER name, its length in the authors' tokens (`length`: the prompt
and the answer budget) and the length asked for (`max_seq_length`), and the line's `index`. Lines
are numbered from 1 in their file: RULER's own `index` is not unique (niah.py
writes the answer's offset there).
"""

from __future__ import annotations

from pathlib import Path

from corpus.importers.errors import ImportFailure
from corpus.importers.formats.base import BenchmarkBundle, QuestionItem, check_names, text_field
from corpus.importers.records import read_records, unknown_fields

FORMAT = "ruler"
SUBSETS = ("validation.jsonl", "test.jsonl")
KNOWN_FIELDS = frozenset(
    {
        "index",
        "input",
        "outputs",
        "length",
        "length_w_model_temp",
        "answer_prefix",
        "token_position_answer",
        "others",
        "truncation",
    }
)
DESCRIPTION = (
    "RULER (Hsieh et al., 2024): synthetic needle-in-a-haystack, variable-tracking, "
    "word-extraction and QA tasks made at chosen lengths, each task scored at each length."
)


def task_files(path: Path) -> list[tuple[Path, str, int | None]]:
    """The task files under `path` (or `path` itself), each with its task and
    the length its folder names (`<length>/data/<task>/validation.jsonl`)."""
    if path.is_file():
        candidates = [path]
    elif path.is_dir():
        candidates = sorted(p for name in SUBSETS for p in path.rglob(name))
        if not candidates:
            raise ImportFailure(
                f"{path}: no <length>/data/<task>/validation.jsonl under this folder "
                "(the folder RULER's run.sh or `make_ruler` writes)."
            )
    else:
        raise ImportFailure(f"{path}: no such file or folder.")
    found = []
    for candidate in candidates:
        parts = candidate.parts
        task = parts[-2] if len(parts) >= 2 else ""
        length = None
        if len(parts) >= 4 and parts[-3] == "data" and parts[-4].isdigit():
            length = int(parts[-4])
        found.append((candidate, task, length))
    return found


def _stored_task(task: str, length: int | None, given: str, file: Path) -> tuple[str, str, int]:
    """(stored task, RULER's task, length): from --task (`niah_single_1-4096`)
    for a single file, else from the folders."""
    if given:
        name, _, size = given.rpartition("-")
        if not name or not size.isdigit():
            raise ImportFailure(
                f"--task {given!r}: RULER's task and its length, e.g. niah_single_1-4096."
            )
        return given, name, int(size)
    if length is None:
        raise ImportFailure(
            f"{file}: its length is not in its folders (<length>/data/<task>/validation.jsonl); "
            "give the task with its length (--task niah_single_1-4096)."
        )
    return f"{task.lower()}-{length}", task, length


def read(
    path: str | Path,
    *,
    benchmark: str = "ruler",
    benchmark_name: str | None = None,
    split: str = "validation",
    version: str = "qa",
    language: str = "en",
    task: str = "",
) -> BenchmarkBundle:
    path = Path(path)
    check_names(slug=benchmark, split=split, version=version, language=language, task=task)
    files = task_files(path)
    if task and len(files) > 1:
        raise ImportFailure(f"--task names one file's task; {path} holds {len(files)}.")
    bundle = BenchmarkBundle(
        benchmark,
        benchmark_name or "RULER",
        FORMAT,
        version,
        language,
        split,
        str(path),
        description=DESCRIPTION,
        source_url="https://github.com/NVIDIA/RULER",
    )
    for file, folder_task, folder_length in files:
        stored, name, length = _stored_task(folder_task, folder_length, task, file)
        check_names(slug=benchmark, split=split, version=version, language=language, task=stored)
        if any(item.task == stored for item in bundle.items):
            raise ImportFailure(f"{file}: task {stored} appears in two files.")
        before = len(bundle.items)
        for number, record in enumerate(read_records(file), 1):
            unknown_fields(record, KNOWN_FIELDS)
            fields, where = record.fields, record.where
            text = text_field(fields, "input", where)
            outputs = fields.get("outputs")
            if (
                not isinstance(outputs, list)
                or not outputs
                or not all(isinstance(o, str) and o for o in outputs)
            ):
                raise ImportFailure(f"{where}: 'outputs' must be a list of non-empty strings.")
            prefix = fields.get("answer_prefix", "")
            if not isinstance(prefix, str):
                raise ImportFailure(f"{where}: 'answer_prefix' must be a string.")
            tokens = fields.get("length")
            if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
                raise ImportFailure(f"{where}: 'length' must be a whole number of tokens.")
            document_id = f"{stored}-{number}"
            bundle.add_document(document_id, text, where)
            question = text.rstrip().rsplit("\n", 1)[-1].strip() or text.strip()[-200:]
            bundle.items.append(
                QuestionItem(
                    task=stored,
                    document_id=document_id,
                    question_id=str(number),
                    question=question,
                    answers=tuple(outputs),
                    prompt={
                        "answer_prefix": prefix,
                        "ruler_task": name,
                        "max_seq_length": length,
                        "length": tokens,
                        "index": fields.get("index"),
                    },
                )
            )
        if len(bundle.items) == before:
            raise ImportFailure(f"{file}: no lines in the file.")
    return bundle

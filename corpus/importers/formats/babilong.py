"""BABILong as its authors publish it (booydar/babilong; the data on the
Hugging Face Hub): bAbI's twenty tasks hidden in PG-19 text at lengths from
0k to 10M tokens. Either layout of the Hub's files, or one file:

- `RMT-team/babilong`: `data/<task>/<length>.json` (`data/qa1/4k.json`);
- `RMT-team/babilong-1k-samples`: `<length>/<task>-00000-of-00001.parquet`;
- one such file, one whose name holds both (`qa1_4k.json`), or any JSON,
  JSON Lines or Parquet file with `--task qa1-4k`.

Each row: `{"input": "<the text with the facts>", "question": "Where is
Mary?", "target": "bathroom"}`. A task is stored with its length, lower case
(`qa1-4k`, `qa1-1m`: the script scores each task at each length), a row is one
question on its own document, and the prompt parts keep the bAbI task, the
length as the authors write it (`1M`) and its tokens (`4k`: 4,000 GPT-2
tokens, the prompt's included, as create_tasks.py makes them).
"""

from __future__ import annotations

import re
from pathlib import Path

from corpus.importers.errors import ImportFailure
from corpus.importers.formats.base import BenchmarkBundle, QuestionItem, check_names, text_field
from corpus.importers.records import read_records, unknown_fields

FORMAT = "babilong"
SUFFIXES = (".json", ".jsonl", ".parquet")
KNOWN_FIELDS = frozenset({"input", "question", "target"})
DESCRIPTION = (
    "BABILong (Kuratov et al., 2024): bAbI's reasoning tasks hidden in long PG-19 text, each "
    "task scored at each length, 0k to 10M tokens."
)
# collect_results.py's LENGTHS, in order: the dataset's configurations
LENGTHS = (
    "0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k", "256k", "512k", "1M", "2M", "10M"
)  # fmt: skip
_TASK = re.compile(r"^qa([1-9]|1[0-9]|20)$")
_LENGTHS = {name.lower(): name for name in LENGTHS}


def task_name(task: str) -> str:
    """The bAbI task of a stored task (`qa1-4k` -> `qa1`)."""
    return task.split("-", 1)[0].lower()


def length_name(task: str) -> str:
    """The length of a stored task as the authors write it (`qa1-1m` -> `1M`);
    empty when the task names none."""
    _, _, length = task.partition("-")
    return _LENGTHS.get(length.lower(), length)


def length_tokens(length: str) -> int | None:
    """A length's tokens as the data were made (create_tasks.py's
    message_lengths, GPT-2 tokens with the prompt's 300: `4k` -> 4,000, `1M`
    -> 1,000,000; `0k`: the bAbI facts alone, 0)."""
    number, unit = length[:-1], length[-1:].lower()
    if not number.isdigit() or unit not in ("k", "m"):
        return None
    return int(number) * (1000 if unit == "k" else 1_000_000)


_BOTH = re.compile(r"^(qa\d+)[-_](\d+[km])(?:$|[-_.])")


def _named(path: Path) -> tuple[str, str] | None:
    """(task, length) from a file's place: `qa1/4k.json`, `4k/qa1-0000.parquet`,
    or a name holding both (`qa1_4k.json`, `qa1-4k.jsonl`)."""
    parent, stem = path.parent.name.lower(), path.stem.lower()
    if _TASK.match(parent) and stem in _LENGTHS:
        return parent, _LENGTHS[stem]
    head = stem.split("-", 1)[0]
    if _TASK.match(head) and parent in _LENGTHS:
        return head, _LENGTHS[parent]
    both = _BOTH.match(stem)
    if both and _TASK.match(both[1]) and both[2] in _LENGTHS:
        return both[1], _LENGTHS[both[2]]
    return None


def _given(task: str) -> tuple[str, str]:
    name, _, length = task.partition("-")
    if not _TASK.match(name.lower()) or length.lower() not in _LENGTHS:
        raise ImportFailure(
            f"--task {task!r}: BABILong's task and its length, e.g. qa1-4k "
            f"(qa1-qa20; {', '.join(LENGTHS)})."
        )
    return name.lower(), _LENGTHS[length.lower()]


def task_files(path: Path, task: str) -> list[tuple[Path, str, str]]:
    """The files under `path` (or `path` itself), each with its task and length."""
    if path.is_file():
        found = _given(task) if task else _named(path)
        if found is None:
            raise ImportFailure(
                f"{path}: its task and length are not in its name (qa1/4k.json); give them "
                "(--task qa1-4k)."
            )
        return [(path, *found)]
    if task:
        raise ImportFailure(f"--task names one file's task; {path} is a folder.")
    if not path.is_dir():
        raise ImportFailure(f"{path}: no such file or folder.")
    files = []
    for candidate in sorted(p for p in path.rglob("*") if p.suffix.lower() in SUFFIXES):
        named = _named(candidate)
        if named is not None:
            files.append((candidate, *named))
    if not files:
        raise ImportFailure(
            f"{path}: no <task>/<length>.json (RMT-team/babilong) or "
            "<length>/<task>-*.parquet (babilong-1k-samples) under this folder."
        )
    return files


def read(
    path: str | Path,
    *,
    benchmark: str = "babilong",
    benchmark_name: str | None = None,
    split: str = "test",
    version: str = "qa",
    language: str = "en",
    task: str = "",
) -> BenchmarkBundle:
    path = Path(path)
    check_names(slug=benchmark, split=split, version=version, language=language, task=task.lower())
    bundle = BenchmarkBundle(
        benchmark,
        benchmark_name or "BABILong",
        FORMAT,
        version,
        language,
        split,
        str(path),
        description=DESCRIPTION,
        source_url="https://github.com/booydar/babilong",
    )
    for file, name, length in task_files(path, task):
        stored = f"{name}-{length.lower()}"
        if any(item.task == stored for item in bundle.items):
            raise ImportFailure(f"{file}: task {name} at {length} appears in two files.")
        before = len(bundle.items)
        for number, record in enumerate(read_records(file), 1):
            unknown_fields(record, KNOWN_FIELDS)
            fields, where = record.fields, record.where
            # the 0k configuration holds the facts alone, short but never empty
            text = text_field(fields, "input", where)
            question = text_field(fields, "question", where)
            target = text_field(fields, "target", where)
            document_id = f"{stored}-{number}"
            bundle.add_document(document_id, text, where)
            bundle.items.append(
                QuestionItem(
                    task=stored,
                    document_id=document_id,
                    question_id=str(number),
                    question=question,
                    answers=(target,),
                    prompt={
                        "babilong_task": name,
                        "length": length,
                        "tokens": length_tokens(length),
                    },
                )
            )
        if len(bundle.items) == before:
            raise ImportFailure(f"{file}: no rows in the file.")
    return bundle

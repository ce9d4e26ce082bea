"""Benchmark formats as plug-ins: each reads the files its authors publish
into a `BenchmarkBundle` (pure Python, no Django), which
`corpus.services.import_benchmark` writes. docs/benchmark-formats.md says what
each holds.

| format | files | reader |
| --- | --- | --- |
| `generic` | one question per record, JSON Lines, CSV or Parquet | `generic.read` |
| `leval` | L-Eval's task files (one document per line with its instructions) | `leval.read` |
| `zeroscrolls` | ZeroSCROLLS rows (JSON Lines, or Parquet as on the HF hub) | `zeroscrolls.read` |
| `longbench_v2` | LongBench v2 (its `data.json` array, JSON Lines, Parquet) | `longbench_v2.read` |
| `ruler` | RULER's data folder (`<length>/data/<task>/validation.jsonl`) | `ruler.read` |
| `babilong` | BABILong from the Hub (`data/<task>/<length>.json`, or Parquet) | `babilong.read` |
| `loogle` | LooGLE's task files (`shortdep_qa.jsonl`: a document per line) | `loogle.read` |

ELITR-Bench has its own importer (`corpus.importers.elitr_bench`: archives,
transcripts, the paper's responses and scores).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpus.importers.errors import ImportFailure
from corpus.importers.formats import (
    babilong,
    generic,
    leval,
    longbench_v2,
    loogle,
    ruler,
    zeroscrolls,
)
from corpus.importers.formats.base import BenchmarkBundle, QuestionItem

READERS: dict[str, Callable[..., BenchmarkBundle]] = {
    generic.FORMAT: generic.read,
    leval.FORMAT: leval.read,
    zeroscrolls.FORMAT: zeroscrolls.read,
    longbench_v2.FORMAT: longbench_v2.read,
    ruler.FORMAT: ruler.read,
    babilong.FORMAT: babilong.read,
    loogle.FORMAT: loogle.read,
}

__all__ = ["READERS", "BenchmarkBundle", "QuestionItem", "read_benchmark"]


def read_benchmark(format: str, path: str | Path, **options: Any) -> BenchmarkBundle:
    """The file read by the format named `format` (ImportFailure naming the known ones)."""
    reader = READERS.get(format)
    if reader is None:
        raise ImportFailure(f"--format {format!r}: one of {', '.join(READERS)}.")
    return reader(path, **options)

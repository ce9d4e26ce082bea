"""Records (one object each) out of a JSON Lines, CSV or Parquet file, or a
JSON file that is one array of objects, each with where it came from ("file,
line 7", "file, row 7", "file, record 7"), so that every reader (benchmarks,
responses, ratings) refuses a bad record by its place.

What the database could not store is refused here for every format alike:
a NUL character anywhere (corpus.importers.checks), NaN and Infinity (a
Parquet float column or a CSV cell holds them as easily as a number). A CSV
file gives texts only; a Parquet file gives its columns' types (a null is
None); JSON gives JSON's. Parquet is read with pyarrow, as the Hugging Face
datasets store it.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus.importers.checks import check_no_nul, load_json_line
from corpus.importers.errors import ImportFailure
from corpus.importers.limits import (
    RowCount,
    UploadLimits,
    allow_csv_fields,
    check_file_size,
    check_value,
    lines,
    parquet_rows,
    text_lines,
    upload_limits,
)

JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet",)
SUFFIXES = (*JSON_SUFFIXES, *CSV_SUFFIXES, *PARQUET_SUFFIXES)


@dataclass(frozen=True)
class Record:
    where: str  # "file, line 7" (JSON Lines) or "file, row 7" (CSV, Parquet: header not counted)
    fields: dict[str, Any]


def read_records(path: str | Path) -> Iterator[Record]:
    """Every record of the file, in order (empty JSON lines skipped), read a line
    or a few Parquet rows at a time within the upload limits
    (corpus.importers.limits): a refusal names the line or row."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ImportFailure(f"{path}: use a JSON Lines (.jsonl), CSV (.csv) or Parquet file.")
    if not path.is_file():
        raise ImportFailure(f"{path}: no such file.")
    limits = upload_limits()
    check_file_size(path, limits)
    if suffix in PARQUET_SUFFIXES:
        return _parquet(path, limits)
    if suffix in CSV_SUFFIXES:
        return _csv(path, limits)
    if _holds_an_array(path):
        return _json_array(path, limits)
    return _json_lines(path, limits)


def _holds_an_array(path: Path) -> bool:
    """A JSON file whose first character (past white space and a byte-order
    mark) opens an array: one array of records, not a record per line."""
    with path.open("rb") as file:
        start = file.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return start.startswith(b"[")


def member_records(path: str | Path, member: str) -> Iterator[Record]:
    """The records of the array under `member` of a file that is one JSON
    object (HELMET's output files: {"data": [...], ...}), a record at a time,
    within the upload limits."""
    path = Path(path)
    if not path.is_file():
        raise ImportFailure(f"{path}: no such file.")
    limits = upload_limits()
    check_file_size(path, limits)
    return _json_array(path, limits, f"{member}.item")


def _json_array(path: Path, limits: UploadLimits, prefix: str = "item") -> Iterator[Record]:
    """The records of a file that is one JSON array of objects (or of the
    array at `prefix`), a record at a time (ijson), so that memory holds one
    record, whatever the file's size; each within the same limits as a line
    of JSON Lines."""
    import ijson

    count = RowCount(limits)
    with path.open("rb") as file:
        number = 0
        try:
            for number, value in enumerate(ijson.items(file, prefix, use_float=True), 1):
                where = f"{path}, record {number}"
                count.add(where)
                if not isinstance(value, dict):
                    raise ImportFailure(f"{where}: expected a JSON object.")
                check_value(value, where, limits)
                check_no_nul(value, where)
                _check_finite(value, where)
                yield Record(where, value)
        except ijson.JSONError as error:
            raise ImportFailure(
                f"{path}, after record {number}: not a readable JSON array ({error})."
            ) from error


def _json_lines(path: Path, limits: UploadLimits) -> Iterator[Record]:
    count = RowCount(limits)
    for number, line in lines(path, limits):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        count.add(where)
        value = load_json_line(line, where)
        if not isinstance(value, dict):
            raise ImportFailure(f"{where}: expected a JSON object.")
        yield Record(where, value)


def _csv(path: Path, limits: UploadLimits) -> Iterator[Record]:
    count = RowCount(limits)
    allow_csv_fields(limits)
    reader = csv.DictReader(text_lines(path, limits))
    try:
        if not reader.fieldnames:
            raise ImportFailure(f"{path}: no header row.")
        for number, row in enumerate(reader, 1):
            where = f"{path}, row {number}"
            count.add(where)
            if None in row:
                raise ImportFailure(f"{where}: more cells than the header names.")
            check_value(row, where, limits)
            check_no_nul(row, where)
            yield Record(where, {k: v for k, v in row.items() if v not in (None, "")})
    except csv.Error as error:
        raise ImportFailure(
            f"{path}, line {reader.line_num}: not a readable CSV file ({error})."
        ) from error


def _parquet(path: Path, limits: UploadLimits) -> Iterator[Record]:
    for number, row in parquet_rows(path, limits):
        where = f"{path}, row {number}"
        check_value(row, where, limits)
        check_no_nul(row, where)
        _check_finite(row, where)
        yield Record(where, {k: v for k, v in row.items() if v is not None})


def _check_finite(value: object, where: str, name: str = "") -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ImportFailure(f"{where}: {name or 'a value'} is {value} (numbers must be finite).")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, where, f"{name}.{key}" if name else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_finite(item, where, f"{name}[{index}]")


def unknown_fields(record: Record, known: set[str] | frozenset[str]) -> None:
    """Refuse a field the format does not have (a typo must not pass silently)."""
    unknown = sorted(set(record.fields) - known)
    if unknown:
        raise ImportFailure(
            f"{record.where}: unknown field(s) {', '.join(unknown)}; the known ones are "
            f"{', '.join(sorted(known))}."
        )

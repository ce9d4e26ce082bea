"""Bounded reading of what a person uploads: a file's size, a line's length, a
field's length, nesting depth, the number of records, a zip member's size and
its compression ratio (docs/deployment.md, "Upload limits").

Every reader of uploaded files (benchmarks, responses, ratings, the ELITR-Bench
archives; the command line, the console and the API alike) reads through here,
one line or a few Parquet rows at a time, and checks each limit before the
memory it guards is spent: a file's size from the disk, a Parquet file's rows,
values and page sizes from its metadata, a Parquet row's size from its
dictionary before the row is decoded, a zip member's size and ratio from its
directory entry. A refusal is an ImportFailure naming the file, the line (or
row, or member) and the setting that sets the limit, raised before anything is
written. With the defaults, reading stays under 300 MB above the process's
idle size whatever the upload (tests/corpus/test_upload_limits.py measures it).
"""

from __future__ import annotations

import csv
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from django.conf import settings

from corpus.importers.errors import ImportFailure

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

MIB = 1024 * 1024
# A zip member smaller than this is never refused for its ratio: it cannot hurt
# (a 6 KB .DS_Store compresses 32 times).
RATIO_FLOOR_BYTES = 1 * MIB
# Parquet rows are turned into Python objects a few at a time, at most this many
# bytes of text at once (one row may be larger: up to the line limit).
PARQUET_CHUNK_BYTES = 8 * MIB
PARQUET_BATCH_ROWS = 64
# Parquet columns of these logical types are read as dictionaries (not decimals)
TEXT_TYPES = frozenset({"STRING", "NONE", "JSON", "BSON", "ENUM"})
# A Parquet value (a number, a list's slot) costs at least this much once read.
VALUE_BYTES = 8


@dataclass(frozen=True)
class UploadLimits:
    max_bytes: int  # a file (and a Parquet file's decoded text)
    max_line_bytes: int  # a JSON Lines or CSV line, a Parquet row decoded
    max_field_chars: int  # one text in a record (a key included)
    max_depth: int  # lists and objects inside one record
    max_rows: int  # records in one file
    zip_max_member_bytes: int  # an archive member, uncompressed
    zip_max_ratio: float  # an archive member's uncompressed size / compressed size


def upload_limits() -> UploadLimits:
    """The limits the settings set now (read on each call, so tests may override them)."""
    return UploadLimits(
        max_bytes=settings.CONCORD_UPLOAD_MAX_BYTES,
        max_line_bytes=settings.CONCORD_UPLOAD_MAX_LINE_BYTES,
        max_field_chars=settings.CONCORD_UPLOAD_MAX_FIELD_CHARS,
        max_depth=settings.CONCORD_UPLOAD_MAX_DEPTH,
        max_rows=settings.CONCORD_UPLOAD_MAX_ROWS,
        zip_max_member_bytes=settings.CONCORD_UPLOAD_ZIP_MAX_MEMBER_BYTES,
        zip_max_ratio=settings.CONCORD_UPLOAD_ZIP_MAX_RATIO,
    )


def size(count: float) -> str:
    """A byte count for people: 512 bytes, 3.2 KB, 64 MB (binary units)."""
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if count < 1024 or unit == "TB":
            return f"{count:,.0f} {unit}" if unit == "bytes" else f"{count:,.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def over(what: str, limit: str, setting: str) -> str:
    """The end of every refusal: what is too much, the limit and where it is set."""
    return (
        f"{what}, over the limit of {limit} (the setting {setting}); split the file, "
        "or ask the administrator to raise the limit."
    )


# --- Files and lines ---------------------------------------------------------------------


def check_file_size(path: Path, limits: UploadLimits | None = None) -> None:
    limits = limits or upload_limits()
    length = path.stat().st_size
    if length > limits.max_bytes:
        raise ImportFailure(
            f"{path}: "
            + over(
                f"the file holds {size(length)}", size(limits.max_bytes), "CONCORD_UPLOAD_MAX_BYTES"
            )
        )


def lines(path: Path, limits: UploadLimits | None = None) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line, split at "\\n" only (U+2028 and the like
    may sit inside a JSON text), a UTF-8 byte order mark dropped. A line longer
    than the limit is refused after reading one byte past it, never whole."""
    limits = limits or upload_limits()
    check_file_size(path, limits)
    with path.open("rb") as handle:
        yield from _lines(handle, str(path), limits)


def _lines(handle: BinaryIO, origin: str, limits: UploadLimits) -> Iterator[tuple[int, str]]:
    number = 0
    while raw := handle.readline(limits.max_line_bytes + 1):
        number += 1
        if len(raw) > limits.max_line_bytes and not raw.endswith(b"\n"):
            raise ImportFailure(
                f"{origin}, line {number}: "
                + over(
                    "the line is longer than that",
                    size(limits.max_line_bytes),
                    "CONCORD_UPLOAD_MAX_LINE_BYTES",
                )
            )
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise ImportFailure(f"{origin}, line {number}: not UTF-8 text ({error}).") from error
        yield number, text


def text_lines(path: Path, limits: UploadLimits | None = None) -> Iterator[str]:
    """The lines with their ends, for the csv module (which joins a quoted cell's lines)."""
    for _, text in lines(path, limits):
        yield text


def allow_csv_fields(limits: UploadLimits | None = None) -> None:
    """The csv module refuses a cell over 128 KB with a message that names no
    setting; let it read what the file may hold, and check_value say the rest."""
    limits = limits or upload_limits()
    if csv.field_size_limit() < limits.max_bytes:
        csv.field_size_limit(limits.max_bytes)


class RowCount:
    """Counts a file's records and refuses the one past the limit."""

    def __init__(self, limits: UploadLimits | None = None) -> None:
        self.limit = (limits or upload_limits()).max_rows
        self.count = 0

    def add(self, where: str) -> None:
        self.count += 1
        if self.count > self.limit:
            raise ImportFailure(
                f"{where}: "
                + over(
                    "the file holds more records than that",
                    f"{self.limit:,} records",
                    "CONCORD_UPLOAD_MAX_ROWS",
                )
            )


# --- Values --------------------------------------------------------------------------------


def check_value(value: object, where: str, limits: UploadLimits | None = None) -> None:
    """One record: no deeper than the depth limit, no text (value or key) longer
    than the field limit. Walked without recursion, so any depth is safe here."""
    limits = limits or upload_limits()
    stack: list[tuple[object, int, tuple[str, ...]]] = [(value, 0, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str | bytes):
            _check_text(item, path, where, limits)
            continue
        children: Iterable[tuple[object, str]]
        if isinstance(item, dict):
            children = ((child, str(key)) for key, child in item.items())
            for key in item:
                if isinstance(key, str):
                    _check_text(key, (*path, "(a field name)"), where, limits)
        elif isinstance(item, list | tuple):
            children = ((child, f"[{index}]") for index, child in enumerate(item))
        else:
            continue
        if depth + 1 > limits.max_depth:
            raise too_deep(where, limits)
        stack.extend((child, depth + 1, (*path, name)) for child, name in children)


def _check_text(text: str | bytes, path: tuple[str, ...], where: str, limits: UploadLimits) -> None:
    if len(text) > limits.max_field_chars:
        name = ".".join(path).replace(".[", "[") or "a value"
        raise ImportFailure(
            f"{where}: "
            + over(
                f"'{name}' holds {len(text):,} characters",
                f"{limits.max_field_chars:,} characters",
                "CONCORD_UPLOAD_MAX_FIELD_CHARS",
            )
        )


def too_deep(where: str, limits: UploadLimits | None = None) -> ImportFailure:
    limits = limits or upload_limits()
    return ImportFailure(
        f"{where}: "
        + over(
            "lists and objects nest deeper than that",
            f"{limits.max_depth} levels",
            "CONCORD_UPLOAD_MAX_DEPTH",
        )
    )


# --- Archives ------------------------------------------------------------------------------


def check_zip_member(
    info: zipfile.ZipInfo, origin: str, limits: UploadLimits | None = None
) -> None:
    """A member's size and ratio, from the archive's directory, before it is
    extracted (zipfile stops at the size the directory gives, and a member
    that holds more fails its CRC check)."""
    limits = limits or upload_limits()
    check_member_size(info.file_size, origin, limits)
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > RATIO_FLOOR_BYTES and ratio > limits.zip_max_ratio:
        raise ImportFailure(
            f"{origin}: "
            + over(
                f"{size(info.compress_size)} unpacks to {size(info.file_size)} "
                f"({ratio:,.0f} times)",
                f"{limits.zip_max_ratio:g} times",
                "CONCORD_UPLOAD_ZIP_MAX_RATIO",
            )
        )


def check_member_size(length: int, origin: str, limits: UploadLimits | None = None) -> None:
    limits = limits or upload_limits()
    if length > limits.zip_max_member_bytes:
        raise ImportFailure(
            f"{origin}: "
            + over(
                f"the member holds {size(length)} uncompressed",
                size(limits.zip_max_member_bytes),
                "CONCORD_UPLOAD_ZIP_MAX_MEMBER_BYTES",
            )
        )


# --- Parquet -------------------------------------------------------------------------------


def parquet_rows(path: Path, limits: UploadLimits | None = None) -> Iterator[tuple[int, dict]]:
    """(row number, row) of a Parquet file, row group by row group, a few rows at
    a time. Before anything is read, the metadata's row count, value count and
    page sizes are checked; text columns are read as dictionaries, so that a
    value repeated a million times is held once, and each row's size once
    decoded is known (and checked) before it is decoded."""
    import pyarrow.parquet as pq  # loaded only when a Parquet file comes

    limits = limits or upload_limits()
    check_file_size(path, limits)
    try:
        parquet = pq.ParquetFile(path)
        columns = [parquet.schema.column(i) for i in range(parquet.metadata.num_columns)]
        texts = [
            column.path
            for column in columns
            if column.physical_type == "BYTE_ARRAY" and column.logical_type.type in TEXT_TYPES
        ]
        _check_parquet_metadata(parquet.metadata, path, limits)
        _check_schema_depth(parquet.schema_arrow, path, limits)
        parquet = pq.ParquetFile(path, read_dictionary=texts)
        number = total = 0
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            sizes = _row_sizes(batch)
            for offset, row_size in enumerate(sizes.tolist(), number + 1):
                total += row_size
                _check_parquet_row(path, offset, row_size, total, limits)
            for start, length in _chunks(sizes.tolist()):
                for row in batch.slice(start, length).to_pylist():
                    number += 1
                    yield number, row
    except ImportFailure:
        raise
    except Exception as error:  # pyarrow raises ArrowInvalid, OSError, ... for a bad file
        raise ImportFailure(f"{path}: not a readable Parquet file ({error}).") from error


def _check_parquet_row(
    path: Path, number: int, length: int, total: int, limits: UploadLimits
) -> None:
    if length > limits.max_line_bytes:
        raise ImportFailure(
            f"{path}, row {number}: "
            + over(
                f"the row holds {size(length)} once read",
                size(limits.max_line_bytes),
                "CONCORD_UPLOAD_MAX_LINE_BYTES",
            )
        )
    if total > limits.max_bytes:
        raise ImportFailure(
            f"{path}, row {number}: "
            + over(
                f"the rows so far hold {size(total)} once read",
                size(limits.max_bytes),
                "CONCORD_UPLOAD_MAX_BYTES",
            )
        )


def _chunks(sizes: list[int]) -> Iterator[tuple[int, int]]:
    """(start, length) of runs of rows holding at most PARQUET_CHUNK_BYTES
    together (a larger row alone), turned into Python objects at once."""
    start, held = 0, 0
    for index, length in enumerate(sizes):
        if index > start and held + length > PARQUET_CHUNK_BYTES:
            yield start, index - start
            start, held = index, 0
        held += length
    if start < len(sizes):
        yield start, len(sizes) - start


def _check_parquet_metadata(metadata: Any, path: Path, limits: UploadLimits) -> None:
    if metadata.num_rows > limits.max_rows:
        raise ImportFailure(
            f"{path}: "
            + over(
                f"the file holds {metadata.num_rows:,} rows",
                f"{limits.max_rows:,} records",
                "CONCORD_UPLOAD_MAX_ROWS",
            )
        )
    values = pages = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for column in range(row_group.num_columns):
            chunk = row_group.column(column)
            values += chunk.num_values
            pages += chunk.total_uncompressed_size
    if values * VALUE_BYTES > limits.max_bytes:
        raise ImportFailure(
            f"{path}: "
            + over(
                f"the file holds {values:,} values ({VALUE_BYTES} bytes each at least once read)",
                size(limits.max_bytes),
                "CONCORD_UPLOAD_MAX_BYTES",
            )
        )
    if pages > limits.max_bytes:
        raise ImportFailure(
            f"{path}: "
            + over(
                f"the file's pages hold {size(pages)} uncompressed",
                size(limits.max_bytes),
                "CONCORD_UPLOAD_MAX_BYTES",
            )
        )


def _check_schema_depth(schema: pa.Schema, path: Path, limits: UploadLimits) -> None:
    stack = [(field.type, 0) for field in schema]
    while stack:
        kind, depth = stack.pop()
        if kind.num_fields:  # a list, a struct, a map: one level more
            if depth + 1 > limits.max_depth:
                raise too_deep(str(path), limits)
            stack.extend((kind.field(i).type, depth + 1) for i in range(kind.num_fields))


def _row_sizes(batch: pa.RecordBatch) -> np.ndarray:
    import numpy as np

    sizes = np.zeros(batch.num_rows, dtype=np.int64)
    for column in batch.columns:
        sizes += _sizes(column)
    return sizes


def _sizes(array: pa.Array) -> np.ndarray:
    """Bytes each element of `array` takes once decoded (texts at their length,
    other values at VALUE_BYTES), computed without decoding any text."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    count = len(array)
    if pa.types.is_dictionary(kind):
        lengths = _sizes(array.dictionary)
        if not len(lengths):
            return np.zeros(count, dtype=np.int64)
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False)
        return lengths[indices.astype(np.int64)]
    if (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    ):
        lengths = pc.binary_length(array).fill_null(0)
        return lengths.to_numpy(zero_copy_only=False).astype(np.int64) + VALUE_BYTES
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        inner = _sizes(array.values)  # the whole child; the offsets place this slice in it
        cumulative = np.concatenate([[0], np.cumsum(inner)])
        offsets = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        return cumulative[offsets[1:]] - cumulative[offsets[:-1]] + VALUE_BYTES
    if pa.types.is_fixed_size_list(kind):
        inner = _sizes(array.flatten())
        return inner.reshape(count, kind.list_size).sum(axis=1) + VALUE_BYTES
    if pa.types.is_struct(kind):
        total = np.full(count, VALUE_BYTES, dtype=np.int64)
        for child in array.flatten():
            total += _sizes(child)
        return total
    return np.full(count, VALUE_BYTES, dtype=np.int64)

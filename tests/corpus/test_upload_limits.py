"""Every upload is read within limits (corpus.importers.limits): a file built
to exhaust the reader is refused with the line, row or member and the setting
that sets the limit, the database is unchanged, and reading it adds less than
MEMORY_BOUND_MB to the process (measured in a child process)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from tests.conftest import database_snapshot
from tests.corpus.bombs import (
    MB,
    MEMORY_BOUND_MB,
    deep_jsonl,
    parquet_bomb,
    read_in_child,
    sparse_file,
    zip_bomb,
)

pytestmark = pytest.mark.django_db

ENGLISH_QA = ("--versions", "qa", "--languages", "en")
QUESTION = {"document_id": "d", "document": "Text.", "question": "Q?", "answer": "A"}


def refused(*args: str) -> str:
    """The command's refusal, and that it wrote nothing."""
    before = database_snapshot()
    with pytest.raises(CommandError) as error:
        call_command(*args)
    assert "the database is unchanged" in str(error.value)
    assert database_snapshot() == before
    return str(error.value)


@pytest.fixture(scope="module")
def parquet_20m(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bombs") / "bench.parquet"
    parquet_bomb(path, {"document_id": "d", "document": "Text.", "question": "Q?", "answer": "A"})
    assert path.stat().st_size < 1 * MB  # 20 million rows in a few hundred KB
    return path


@pytest.fixture(scope="module")
def elitr_zip(tmp_path_factory) -> Path:
    # the ELITR-Bench layout's data.zip with one member of 1 GB (1 MB deflated)
    path = tmp_path_factory.mktemp("bombs") / "data.zip"
    zip_bomb(path, "data/elitr-bench-qa_dev.json", 1024 * MB)
    assert path.stat().st_size < 2 * MB
    return path


@pytest.mark.parametrize("command", [["import_jsonl"], ["import_benchmark", "--format", "generic"]])
def test_a_parquet_file_of_20_million_rows_is_refused_from_its_metadata(parquet_20m, command):
    message = refused(*command, str(parquet_20m), "--benchmark", "mine")
    assert (
        "bench.parquet: the file holds 20,000,000 rows, over the limit of 100,000 records "
        "(the setting CONCORD_UPLOAD_MAX_ROWS)" in message
    )


def test_reading_the_20_million_rows_stays_within_the_memory_bound(parquet_20m):
    child = read_in_child(f"read_benchmark('generic', {str(parquet_20m)!r}, benchmark='mine')")
    assert "20,000,000 rows" in (child["error"] or ""), child
    assert child["added_mb"] < MEMORY_BOUND_MB, child


@pytest.mark.parametrize("depth", [100, 100_000])
def test_a_line_nested_too_deep_is_refused_with_its_number(tmp_path, depth):
    path = deep_jsonl(tmp_path / "deep.jsonl", QUESTION, depth)
    message = refused("import_jsonl", str(path), "--benchmark", "mine")
    assert (
        "deep.jsonl, line 2: lists and objects nest deeper than that, over the limit of "
        "64 levels (the setting CONCORD_UPLOAD_MAX_DEPTH)" in message
    )


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = sparse_file(tmp_path / "big.jsonl", 110 * MB)
    message = refused("import_jsonl", str(path), "--benchmark", "mine")
    assert (
        "big.jsonl: the file holds 110.0 MB, over the limit of 64.0 MB "
        "(the setting CONCORD_UPLOAD_MAX_BYTES)" in message
    )
    child = read_in_child(f"read_benchmark('generic', {str(path)!r}, benchmark='mine')")
    assert "110.0 MB" in (child["error"] or ""), child
    assert child["added_mb"] < 50, child


def test_a_line_over_the_length_limit_is_refused_without_being_read_whole(tmp_path):
    path = tmp_path / "long.jsonl"
    long = QUESTION | {"document_id": "e", "document": "x" * (20 * MB)}
    path.write_text(json.dumps(QUESTION) + "\n" + json.dumps(long) + "\n")
    message = refused("import_jsonl", str(path), "--benchmark", "mine")
    assert (
        "long.jsonl, line 2: the line is longer than that, over the limit of 16.0 MB "
        "(the setting CONCORD_UPLOAD_MAX_LINE_BYTES)" in message
    )
    child = read_in_child(f"read_benchmark('generic', {str(path)!r}, benchmark='mine')")
    assert "line 2" in (child["error"] or ""), child
    assert child["added_mb"] < 50, child


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_field_over_the_length_limit_is_refused_with_its_name(tmp_path, suffix):
    path = tmp_path / f"field{suffix}"
    long = QUESTION | {"document_id": "e", "document": "x" * 5_000_000}
    if suffix == ".jsonl":
        path.write_text(json.dumps(QUESTION) + "\n" + json.dumps(long) + "\n")
    else:  # the csv module alone refuses a cell over 128 KB, naming no setting
        path.write_text(",".join(QUESTION) + "\n" + ",".join(QUESTION.values()) + "\n"
                        + ",".join(long.values()) + "\n")  # fmt: skip
    message = refused("import_jsonl", str(path), "--benchmark", "mine")
    where = "line 2" if suffix == ".jsonl" else "row 2"
    assert (
        f"field{suffix}, {where}: 'document' holds 5,000,000 characters, over the limit of "
        "4,000,000 characters (the setting CONCORD_UPLOAD_MAX_FIELD_CHARS)" in message
    )


@override_settings(CONCORD_UPLOAD_MAX_ROWS=3)
def test_a_file_over_the_row_limit_is_refused_at_the_first_record_past_it(tmp_path):
    path = tmp_path / "many.jsonl"
    rows = [QUESTION | {"question_id": str(n)} for n in range(1, 5)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    message = refused("import_jsonl", str(path), "--benchmark", "mine")
    assert (
        "many.jsonl, line 4: the file holds more records than that, over the limit of "
        "3 records (the setting CONCORD_UPLOAD_MAX_ROWS)" in message
    )


def test_an_archive_member_over_the_size_limit_is_named_before_it_is_extracted(elitr_zip):
    message = refused("import_elitr_bench", str(elitr_zip), *ENGLISH_QA)
    assert (
        "data.zip!data/elitr-bench-qa_dev.json: the member holds 1.0 GB uncompressed, "
        "over the limit of 64.0 MB (the setting CONCORD_UPLOAD_ZIP_MAX_MEMBER_BYTES)" in message
    )
    child = read_in_child(
        f"parse_elitr_bench({str(elitr_zip)!r}, versions=['qa'], languages=['en'])"
    )
    assert "data.zip!data/elitr-bench-qa_dev.json" in (child["error"] or ""), child
    assert child["added_mb"] < MEMORY_BOUND_MB, child


def test_an_archive_member_compressed_too_well_is_named_before_it_is_extracted(tmp_path):
    path = zip_bomb(tmp_path / "data.zip", "data/elitr-bench-qa_dev.json", 10 * MB)
    message = refused("import_elitr_bench", str(path), *ENGLISH_QA)
    assert re.search(
        r"data.zip!data/elitr-bench-qa_dev.json: [\d.]+ KB unpacks to 10.0 MB \([\d,]+ times\)",
        message,
    )
    assert "over the limit of 100 times (the setting CONCORD_UPLOAD_ZIP_MAX_RATIO)" in message


def test_the_elitr_json_nested_too_deep_is_refused_with_its_file(tmp_path):
    import zipfile

    path = tmp_path / "data.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data/elitr-bench-qa_dev.json", "[" * 100_000 + "]" * 100_000)
    message = refused("import_elitr_bench", str(path), *ENGLISH_QA)
    assert "data.zip!data/elitr-bench-qa_dev.json: lists and objects nest deeper" in message


def test_a_csv_answers_cell_nested_too_deep_is_refused_with_its_row(tmp_path):
    path = tmp_path / "deep.csv"
    cells = ["d", "Text.", "Q?", "[" * 100_000 + "]" * 100_000]
    path.write_text("document_id,document,question,answers\n" + ",".join(cells) + "\n")
    message = refused("import_jsonl", str(path), "--benchmark", "mine")
    assert "deep.csv, row 1: 'answers' must be a JSON list of strings" in message


class Zeros:
    """A file of zeros to stream into an archive (nothing held in memory)."""

    def read(self, size: int = -1) -> bytes:
        return bytes(max(size, 0))


def test_a_tar_member_over_the_size_limit_is_named_before_it_is_extracted(tmp_path):
    """The tar half of the archive check (ELITR-Bench ships a tar inside a
    zip): a member of 100 MB of zeros, 100 KB gzipped, against a 10 MB limit."""
    import tarfile

    path = tmp_path / "data.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        member = tarfile.TarInfo("data/elitr-bench-qa_dev.json")
        member.size = 100 * MB
        archive.addfile(member, Zeros())
    assert path.stat().st_size < 1 * MB
    before = database_snapshot()
    with override_settings(CONCORD_UPLOAD_ZIP_MAX_MEMBER_BYTES=10 * MB):
        message = refused("import_elitr_bench", str(path), *ENGLISH_QA)
    assert (
        "data.tar.gz!data/elitr-bench-qa_dev.json: the member holds 100.0 MB uncompressed, "
        "over the limit of 10.0 MB (the setting CONCORD_UPLOAD_ZIP_MAX_MEMBER_BYTES)" in message
    ), message
    assert database_snapshot() == before

"""Responses made elsewhere are read within the upload limits, from a file
(import_responses), the console's upload and the API alike: each bomb is
refused with its place and setting, nothing is written, and reading it adds
less than MEMORY_BOUND_MB to the process (tests/corpus/test_upload_limits.py
covers the benchmark and ELITR-Bench readers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from corpus.models import Dataset
from tests.conftest import database_snapshot
from tests.corpus.bombs import (
    MB,
    MEMORY_BOUND_MB,
    deep_jsonl,
    parquet_bomb,
    parquet_text_bomb,
    read_in_child,
)

pytestmark = pytest.mark.django_db

KEY = {"document_id": "quality-1", "question_id": "1", "system": "model-a"}
OPTIONS = ("--benchmark", "leval", "--split", "test", "--task", "quality")


def refused(path: Path) -> str:
    before = database_snapshot()
    with pytest.raises(CommandError) as error:
        call_command("import_responses", str(path), *OPTIONS)
    assert "the database is unchanged" in str(error.value)
    assert database_snapshot() == before
    return str(error.value)


def test_a_parquet_file_of_20_million_rows_is_refused_within_the_memory_bound(leval_tasks):
    path = parquet_bomb(leval_tasks / "outputs.parquet", KEY | {"response": "an answer"})
    assert path.stat().st_size < 1 * MB
    assert (
        "outputs.parquet: the file holds 20,000,000 rows, over the limit of 100,000 records "
        "(the setting CONCORD_UPLOAD_MAX_ROWS)" in refused(path)
    )
    child = read_in_child(f"read_response_file({str(path)!r})")
    assert "20,000,000 rows" in (child["error"] or ""), child
    assert child["added_mb"] < MEMORY_BOUND_MB, child


def test_parquet_rows_repeating_a_long_text_are_refused_by_their_size_once_read(leval_tasks):
    # 50,000 rows (under the row limit) of one 100 KB answer stored once: 5 GB once read
    path = parquet_text_bomb(leval_tasks / "outputs.parquet", KEY, 50_000, "x" * 100_000)
    assert path.stat().st_size < 1 * MB
    message = refused(path)
    assert "outputs.parquet, row 6" in message
    assert "once read, over the limit of 64.0 MB (the setting CONCORD_UPLOAD_MAX_BYTES)" in message
    child = read_in_child(f"read_response_file({str(path)!r})")
    assert "once read" in (child["error"] or ""), child
    assert child["added_mb"] < MEMORY_BOUND_MB, child


def test_a_response_over_the_field_limit_is_refused(leval_tasks):
    path = leval_tasks / "outputs.jsonl"
    path.write_text(json.dumps(KEY | {"response": "y" * 5_000_000}) + "\n")
    assert (
        "outputs.jsonl, line 1: 'response' holds 5,000,000 characters, over the limit of "
        "4,000,000 characters (the setting CONCORD_UPLOAD_MAX_FIELD_CHARS)" in refused(path)
    )


def test_a_60_mb_response_is_refused_by_its_line_within_the_memory_bound(leval_tasks):
    path = leval_tasks / "outputs.jsonl"
    path.write_text(json.dumps(KEY | {"response": "y" * (60 * MB)}) + "\n")
    assert (
        "outputs.jsonl, line 1: the line is longer than that, over the limit of 16.0 MB "
        "(the setting CONCORD_UPLOAD_MAX_LINE_BYTES)" in refused(path)
    )
    child = read_in_child(f"read_response_file({str(path)!r})")
    assert "line 1" in (child["error"] or ""), child
    assert child["added_mb"] < MEMORY_BOUND_MB, child


def test_a_deep_line_is_a_form_error_in_the_console(leval_tasks, client, researcher):
    client.force_login(researcher)
    quality = Dataset.objects.get(benchmark__slug="leval", task="quality")
    path = deep_jsonl(
        leval_tasks / "deep.jsonl", {k: v for k, v in KEY.items()} | {"response": "a"}
    )
    before = database_snapshot()
    answer = client.post(
        "/console/runs/generation/import/",
        {"dataset": quality.pk, "mode": "st",
         "file": SimpleUploadedFile("my-outputs.jsonl", path.read_bytes())},
    )  # fmt: skip
    page = answer.content.decode()
    assert answer.status_code == 200
    assert "my-outputs.jsonl, line 2: lists and objects nest deeper than that" in page
    assert "CONCORD_UPLOAD_MAX_DEPTH" in page and "/tmp/" not in page
    assert database_snapshot() == before


def test_an_api_body_over_the_upload_size_answers_json(leval_tasks, researcher, settings):
    api = APIClient()
    api.force_login(researcher)
    body = {
        "benchmark": "leval",
        "split": "test",
        "task": "quality",
        "system": "api-model",
        "responses": [{"document_id": "quality-1", "question_id": "1", "response": "y" * 3 * MB}],
    }
    before = database_snapshot()
    answer = api.post("/api/responses/", body, format="json")
    assert answer.status_code == 413 and answer["Content-Type"] == "application/json"
    assert answer.json()["code"] == "request_too_large"
    assert "over 2.5 MB (the setting DATA_UPLOAD_MAX_MEMORY_SIZE)" in answer.json()["detail"]
    assert database_snapshot() == before


def test_a_refused_file_makes_no_default_project_either(leval_tasks):
    """Where the default project does not exist yet (renamed here; a test that
    empties the tables leaves none), a refused file leaves none made for it."""
    from users.models import DEFAULT_PROJECT_SLUG, Project

    Project.objects.filter(slug=DEFAULT_PROJECT_SLUG).update(slug="renamed", name="Renamed")
    path = leval_tasks / "outputs.jsonl"
    path.write_text(json.dumps(KEY | {"response": "y" * 5_000_000}) + "\n")
    assert "over the limit of 4,000,000 characters" in refused(path)
    assert not Project.objects.filter(slug=DEFAULT_PROJECT_SLUG).exists()

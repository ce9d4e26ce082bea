"""The browser upload's two plain modules: staged files (corpus.staging:
bounded while written, one account's only, swept after a day) and the
preview (corpus.importers.preview: first records, the guessed or chosen
mapping of a generic file, what the import would write, a refusal by line
and field). The console's journeys: tests/console/test_imports_browser.py."""

from __future__ import annotations

import json
import os
import time

import pytest

from corpus.importers.errors import ImportFailure
from corpus.importers.formats import generic
from corpus.importers.preview import SHOWN_CHARS, guess_columns, preview_benchmark
from corpus.staging import KEEP_SECONDS, safe_name, stage, staged, staging_root, sweep


@pytest.fixture(autouse=True)
def own_var(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"


def lines(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_staged_upload_is_its_owners_only_and_bounded_while_written(settings):
    upload = stage([("../../etc/reports.jsonl", [b"a" * 10, b"b" * 10])], owner=7)
    assert upload.names() == ["reports.jsonl"]  # no folder of the sender's choosing
    assert upload.first.read_bytes() == b"a" * 10 + b"b" * 10
    assert staged(upload.token, 7).first == upload.first
    with pytest.raises(ImportFailure, match="no longer kept"):
        staged(upload.token, 8)  # another account's upload is not there for him
    with pytest.raises(ImportFailure, match="no longer kept"):
        staged("../" + upload.token, 7)
    settings.CONCORD_UPLOAD_MAX_BYTES = 15
    with pytest.raises(ImportFailure, match=r"big.csv: larger than the upload limit of 15 bytes"):
        stage([("big.csv", iter([b"x" * 10, b"x" * 10, b"never read"]))], owner=7)
    assert [p.name for p in staging_root().iterdir()] == [upload.token]  # nothing else kept
    with pytest.raises(ImportFailure, match="Choose a file"):
        stage([], owner=7)
    assert safe_name("C:\\Users\\me\\my data (1).csv") == "my-data-1-.csv"


def test_an_upload_nobody_confirmed_is_swept_after_a_day():
    old = stage([("a.jsonl", [b"{}"])], owner=1)
    new = stage([("b.jsonl", [b"{}"])], owner=1)
    past = time.time() - KEEP_SECONDS - 60
    os.utime(old.folder, (past, past))
    assert sweep() == 1
    assert [p.name for p in staging_root().iterdir()] == [new.token]


def test_a_generic_files_columns_are_guessed_and_a_chosen_mapping_is_checked(tmp_path):
    assert guess_columns(["Doc_ID", "context", "query", "gold", "references", "extra"]) == {
        "document_id": "Doc_ID",
        "document": "context",
        "question": "query",
        "answer": "gold",  # a text reference wins; "references" is left to the researcher
    }
    for columns, message in (
        ({"document_id": "a", "document": "b", "answer": "c"}, "holds 'question'"),
        (
            {"document_id": "a", "document": "b", "question": "c", "answer": "d", "answers": "e"},
            "'answer' \\(a text\\) or 'answers'",
        ),
        (
            {"document_id": "a", "document": "b", "question": "a", "answer": "d"},
            "column 'a' is chosen for both 'document_id' and 'question'",
        ),
        ({"document_id": "a", "document": "b", "question": "c", "gold": "d"}, "no field gold"),
    ):
        with pytest.raises(ImportFailure, match=message):
            generic.check_columns(columns)


def test_the_preview_shows_the_first_records_and_names_a_later_bad_line(tmp_path):
    path = tmp_path / "b.jsonl"
    long_text = "word " * 100
    records = [
        {"doc": f"d{n}", "context": long_text, "q": f"question {n}?", "reference": "yes"}
        for n in range(1, 8)
    ]
    records.append({"doc": "d9", "context": long_text, "q": "", "reference": "yes"})
    lines(path, records)
    preview = preview_benchmark("generic", path, benchmark="b")
    assert len(preview.rows) == 5 and preview.columns == ["doc", "context", "q", "reference"]
    assert preview.rows[0][1].endswith(f"… ({len(long_text):,} characters)")
    assert len(preview.rows[0][1]) < SHOWN_CHARS + 30
    # 'doc' and 'q' are not names it knows: the preview says which field lacks a column
    assert "choose the column that holds 'document_id'" in preview.error
    assert preview.bundle is None
    chosen = {"document_id": "doc", "document": "context", "question": "q", "answer": "reference"}
    preview = preview_benchmark("generic", path, chosen, benchmark="b")
    assert "b.jsonl, line 8: 'question' must be a non-empty string." in preview.error
    lines(path, records[:7])
    preview = preview_benchmark("generic", path, chosen, benchmark="b")
    assert preview.error == "" and (preview.documents, preview.questions) == (7, 7)
    assert [(t.task, t.documents, t.questions) for t in preview.tasks] == [("", 7, 7)]
    with pytest.raises(ImportFailure, match="no records"):
        (tmp_path / "empty.jsonl").write_text("\n")
        preview_benchmark("generic", tmp_path / "empty.jsonl", benchmark="b")


def test_a_200_mb_upload_is_refused_at_the_limit_without_reading_the_rest(settings):
    """The chunks come as the browser sends them: the file is refused once it
    passes the limit (64 MB by default), the rest never read, nothing kept."""
    read = []

    def chunks():
        for number in range(200):  # 200 MB, one MB at a time
            read.append(number)
            yield b"x" * 1024 * 1024

    with pytest.raises(ImportFailure, match=r"huge.jsonl: larger than the upload limit of 64.0 MB"):
        stage([("huge.jsonl", chunks())], owner=1)
    assert len(read) == 65  # the limit, and the chunk that passed it
    assert not list(staging_root().iterdir())


def test_a_file_in_the_wrong_format_is_named(tmp_path):
    png = tmp_path / "chart.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(ImportFailure, match=r"chart.png: use a JSON Lines \(.jsonl\), CSV"):
        preview_benchmark("leval", png)
    # a generic file uploaded as L-Eval: the fields L-Eval does not have are named
    path = tmp_path / "quality.jsonl"
    lines(path, [{"document_id": "d", "document": "t", "question": "q", "answer": "a"}])
    preview = preview_benchmark("leval", path)
    assert "quality.jsonl, line 1: unknown field(s) answer, document, document_id" in preview.error

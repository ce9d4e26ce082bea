"""Walking folders, zips and tars (nested) as one tree."""

import io
import tarfile
import zipfile

import pytest

from corpus.importers.errors import ImportFailure
from corpus.importers.sources import walk


def make_tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_nested_tar_in_zip_and_junk_skipped(tmp_path):
    tar = make_tar(
        {
            "corpus/meeting_a/transcript_MAN_annot01.txt": b"(PERSON1) hello",
            "corpus/meeting_a/._transcript_MAN_annot01.txt": b"\x00junk",
            "corpus/.DS_Store": b"junk",
            "corpus/meeting_a/minutes.txt": b"not wanted",
        }
    )
    with zipfile.ZipFile(tmp_path / "corpus.tar.zip", "w") as archive:
        archive.writestr("corpus.tar", tar)
        archive.writestr("__MACOSX/corpus.tar", b"junk")
    found = list(walk(tmp_path, None, lambda path: path.endswith(".txt")))
    assert [f.path for f in found] == [
        "corpus/meeting_a/transcript_MAN_annot01.txt",
        "corpus/meeting_a/minutes.txt",
    ]
    assert found[0].origin.endswith(
        "corpus.tar.zip!corpus.tar!corpus/meeting_a/transcript_MAN_annot01.txt"
    )
    assert found[0].read_text() == "(PERSON1) hello"
    assert found[0].parent_name == "meeting_a"


def test_encrypted_member_needs_a_password(elitr_data):
    files = list(walk(elitr_data / "data.zip", None, lambda path: path.endswith(".json")))
    assert len(files) == 4
    with pytest.raises(ImportFailure, match="password-protected"):
        files[0].read_bytes()


def test_wrong_password_is_named(elitr_data):
    files = list(walk(elitr_data / "data.zip", b"not-the-password", lambda path: True))
    with pytest.raises(ImportFailure, match=r"data\.zip!data/.*(wrong password|damaged)"):
        for item in files:
            item.read_bytes()


def test_damaged_archive(tmp_path):
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 this is no zip")
    with pytest.raises(ImportFailure, match="broken.zip: not a valid zip"):
        list(walk(tmp_path, None, lambda path: True))


def test_missing_source(tmp_path):
    with pytest.raises(ImportFailure, match="no such file or folder"):
        list(walk(tmp_path / "nowhere", None, lambda path: True))

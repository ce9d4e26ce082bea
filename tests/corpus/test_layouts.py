"""One importer for every layout: archives, unpacked copies, the LINDAT corpus."""

import shutil
import zipfile

import pytest

from corpus.importers.elitr_bench import parse_elitr_bench


def test_lindat_layout_for_transcripts(synthetic_source, tmp_path):
    """Questions from an unpacked data folder, transcripts from the LINDAT
    corpus folders (elitr-minuting-corpus-en/<split>/<meeting>/transcript_MAN*.txt),
    with meetings of other splits that the benchmark does not use."""
    source = tmp_path / "source"
    shutil.copytree(synthetic_source / "data", source / "data")
    shutil.copytree(synthetic_source / "czech", source / "czech")
    meeting = "meeting_en_synthetic_001"
    lindat = source / "elitr-minuting-corpus-en"
    (lindat / "test2" / meeting).mkdir(parents=True)
    shutil.copy(
        synthetic_source / "ELITR-English-test" / meeting / "transcript_MAN_annot01.txt",
        lindat / "test2" / meeting / "transcript_MAN_annot01.txt",
    )
    (lindat / "test2" / meeting / "minutes_GENER_annot01.txt").write_text("minutes, not used")
    (lindat / "train" / "meeting_en_train_001").mkdir(parents=True)
    (lindat / "train" / "meeting_en_train_001" / "transcript_MAN_annot01.txt").write_text("other")
    bundle = parse_elitr_bench(source)
    assert list(bundle.transcripts) == [meeting]
    assert "elitr-minuting-corpus-en/test2/" in bundle.transcripts[meeting].origin
    assert bundle.transcripts[meeting].text.startswith("(PERSON1) Hi")


def test_plain_zips_of_an_unpacked_copy(synthetic_source, tmp_path):
    """Archives without a password work too (and no password is needed)."""
    archive = tmp_path / "all.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in synthetic_source.rglob("*"):
            if path.is_file():
                out.write(path, path.relative_to(synthetic_source).as_posix())
    bundle = parse_elitr_bench(archive, password=None, with_responses=True)
    assert len(bundle.questions) == 6 and len(bundle.responses) == 18


def test_two_transcripts_in_one_meeting_folder_is_reported(synthetic_source):
    folder = synthetic_source / "ELITR-English-test" / "meeting_en_synthetic_001"
    (folder / "transcript_MAN_annot02.txt").write_text("(PERSON9) A second annotator's transcript.")
    bundle = parse_elitr_bench(synthetic_source)
    assert bundle.transcripts["meeting_en_synthetic_001"].origin.endswith(
        "transcript_MAN_annot01.txt"
    )
    assert bundle.warnings == [
        "meeting meeting_en_synthetic_001 has 2 different transcript_MAN files; took "
        f"{folder / 'transcript_MAN_annot01.txt'}."
    ]


def test_same_file_twice_is_fine_but_different_copies_are_refused(synthetic_source, tmp_path):
    from corpus.importers import ImportFailure

    shutil.copytree(synthetic_source / "data", synthetic_source / "copy-of-data")
    assert len(parse_elitr_bench(synthetic_source).questions) == 6
    (synthetic_source / "copy-of-data" / "elitr-bench-qa_test2.json").write_text("{}")
    with pytest.raises(ImportFailure, match="Two different copies of elitr-bench-qa_test2.json"):
        parse_elitr_bench(synthetic_source)

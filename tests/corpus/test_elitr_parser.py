"""The parser on the real ELITR-Bench archives, checked against the facts in
the data README (shared/datasets/elitr-bench/README.md) and the paper's Table 1."""

import re
from collections import Counter

import pytest

from corpus.importers.elitr_bench import parse_elitr_bench


@pytest.fixture(scope="module")
def bundle(elitr_data):
    return parse_elitr_bench(elitr_data, with_responses=True)


def by_split(bundle, attribute):
    return Counter(
        (bundle.meeting_splits[q.meeting_id], getattr(q, attribute))
        for q in bundle.questions.values()
    )


def test_meetings_and_questions_per_split(bundle):
    assert Counter(bundle.meeting_splits.values()) == {"dev": 10, "test2": 8}
    questions = Counter(bundle.meeting_splits[m] for m, _ in bundle.questions)
    assert questions == {"dev": 141, "test2": 130}


def test_question_types_per_split(bundle):
    types = by_split(bundle, "question_type")
    assert {t: types["dev", t] for t in ("what", "who", "when", "howmany")} == {
        "what": 59,
        "who": 51,
        "when": 21,
        "howmany": 10,
    }
    assert {t: types["test2", t] for t in ("what", "who", "when", "howmany")} == {
        "what": 57,
        "who": 45,
        "when": 20,
        "howmany": 8,
    }


def test_answer_positions_per_split(bundle):
    positions = by_split(bundle, "answer_position")
    assert {p: positions["dev", p] for p in "BMES"} == {"B": 45, "M": 29, "E": 32, "S": 35}
    assert {p: positions["test2", p] for p in "BMES"} == {"B": 43, "M": 34, "E": 22, "S": 31}


def test_transcripts(bundle):
    assert len(bundle.transcripts) == 18
    total_words = sum(t.word_count for t in bundle.transcripts.values())
    assert 118_000 <= total_words <= 120_000  # "about 119,000 words in all"
    for meeting_id, transcript in bundle.transcripts.items():
        assert f"{meeting_id}/transcript_MAN" in transcript.origin
        assert re.search(r"[(\[]PERSON\d+[)\]]", transcript.text)  # de-identified names
    assert not any("/._" in t.origin for t in bundle.transcripts.values())


def test_qa_and_conv_differ_in_16_dev_and_17_test2_questions(bundle):
    texts = {
        (w.meeting_id, w.question_id, w.version): w for w in bundle.wordings if w.language == "en"
    }
    differing_questions = Counter()
    differing_references = []
    for (meeting, question, version), qa in texts.items():
        if version != "qa":
            continue
        conv = texts[meeting, question, "conv"]
        if qa.text != conv.text:
            differing_questions[qa.split] += 1
        if qa.reference != conv.reference:
            differing_references.append((meeting, question, qa.reference, conv.reference))
    assert differing_questions == {"dev": 16, "test2": 17}
    assert differing_references == [
        (
            "meeting_en_test2_008",
            "9",
            "Yes, they should be anonymized.",
            "Yes, they should be anonymized as well.",
        ),
    ]


def test_czech_versions(bundle):
    czech = [w for w in bundle.wordings if w.language == "cs"]
    assert len(czech) == 2 * 271
    assert {(w.version, w.split) for w in czech} == {
        ("qa", "dev"),
        ("qa", "test2"),
        ("conv", "dev"),
        ("conv", "test2"),
    }
    first = next(
        w for w in czech if w.meeting_id == "meeting_en_test2_001" and w.question_id == "1"
    )
    assert first.text == "Jaký byl účel meetingu?"


def test_responses_and_scores(bundle):
    runs = Counter((r.version, r.split, r.mode) for r in bundle.responses)
    # single-turn files: 9 models (GPT-3.5 included); multi-turn files: 8.
    assert runs == {
        ("qa", "dev", "st"): 9 * 141,
        ("qa", "test2", "st"): 9 * 130,
        ("qa", "dev", "mt"): 8 * 141,
        ("qa", "test2", "mt"): 8 * 130,
        ("conv", "dev", "mt"): 8 * 141,
        ("conv", "test2", "mt"): 8 * 130,
    }
    all_eval = [r for r in bundle.responses if len(r.scores) == 4]
    assert len(all_eval) == 390
    assert Counter(r.system for r in all_eval) == {
        "GPT-4": 130,
        "Vicuna-13B-v1.5": 130,
        "LongAlpaca-7B": 130,
    }
    assert {(r.version, r.split, r.mode) for r in all_eval} == {("qa", "test2", "st")}
    # The 390 all-eval responses repeat gpt-4-eval ones: merged, not doubled.
    assert bundle.duplicate_responses_merged == 390
    assert "GPT-3.5" not in {r.system for r in bundle.responses if r.mode == "mt"}


def test_scores_are_numbers_from_the_files(bundle):
    response = next(
        r
        for r in bundle.responses
        if r.system == "LongAlpaca-7B"
        and r.meeting_id == "meeting_en_test2_001"
        and r.question_id == "1"
        and r.mode == "st"
    )
    # As printed in the all-eval file for this response.
    assert response.scores == {
        "gpt-4-eval": 9.0,
        "prometheus-eval": 4.0,
        "gold-human-eval": 9.0,
        "silver-human-eval": 6.8,
    }


def test_version_and_language_selection(elitr_data):
    bundle = parse_elitr_bench(elitr_data, versions=["conv"], languages=["en"])
    assert bundle.datasets() == [("conv", "en", "dev"), ("conv", "en", "test2")]
    assert bundle.responses == []

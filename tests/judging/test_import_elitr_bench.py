"""The whole ELITR-Bench import into the database, on the real archives."""

import pytest
from django.core.management import call_command
from django.db.models import Count

from corpus.models import Dataset, Document, Question, QuestionText
from generation.models import GenerationRun, Response, System
from judging.importing import import_elitr_bench
from judging.models import Evaluator, Judgment
from tests.conftest import database_snapshot, rolled_back_once

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(elitr_data):
    """A fresh import, for a test of the import itself (a second import)."""
    return import_elitr_bench(elitr_data, with_responses=True)


@pytest.fixture(scope="class")
def imported_once(django_db_setup, django_db_blocker, elitr_data):
    """One import for a class of tests that only read its result (5-6 s an
    import), in a transaction rolled back after them."""
    with rolled_back_once(django_db_blocker):
        yield import_elitr_bench(elitr_data, with_responses=True)


@pytest.fixture
def imported_read_only(imported_once, db):
    """The class's import, in this test's own transaction."""
    return imported_once


class TestOneImportRead:
    """The counts and links of one import of the archives as published: these
    tests only read it, and share it. The tests of the import's own behaviour
    (a second import, the command) below import afresh."""

    def test_corpus_counts(self, imported_read_only):
        assert Document.objects.count() == 18
        assert dict(Document.objects.values_list("split").annotate(n=Count("id"))) == {
            "dev": 10,
            "test2": 8,
        }
        assert Question.objects.count() == 271
        assert Dataset.objects.count() == 8
        per_dataset = {
            (version, language, split): n
            for version, language, split, n in QuestionText.objects.values_list(
                "dataset__version", "dataset__language", "dataset__split"
            )
            .annotate(n=Count("id"))
            .order_by()
        }
        for version in ("qa", "conv"):
            for language in ("en", "cs"):
                assert per_dataset[(version, language, "dev")] == 141
                assert per_dataset[(version, language, "test2")] == 130
        types = dict(
            Question.objects.filter(document__split="test2")
            .values_list("question_type")
            .annotate(n=Count("id"))
            .order_by()
        )
        assert types == {"what": 57, "who": 45, "when": 20, "howmany": 8}
        positions = dict(
            Question.objects.filter(document__split="dev")
            .values_list("answer_position")
            .annotate(n=Count("id"))
            .order_by()
        )
        assert positions == {"B": 45, "M": 29, "E": 32, "S": 35}

    def test_references_belong_to_a_version(self, imported_read_only):
        question = Question.objects.get(
            document__external_id="meeting_en_test2_008", external_id="9"
        )
        references = dict(
            question.texts.filter(dataset__language="en").values_list(
                "dataset__version", "reference_answer"
            )
        )
        assert references == {
            "qa": "Yes, they should be anonymized.",
            "conv": "Yes, they should be anonymized as well.",
        }
        differing = 0
        for q in Question.objects.prefetch_related("texts__dataset"):
            en = {t.dataset.version: t.text for t in q.texts.all() if t.dataset.language == "en"}
            differing += en["qa"] != en["conv"]
        assert differing == 16 + 17

    def test_all_eval_responses_carry_four_judgments(self, imported_read_only):
        runs = GenerationRun.objects.filter(
            dataset__version="qa", dataset__language="en", dataset__split="test2", mode="st"
        )
        assert runs.count() == 9
        four = Response.objects.filter(run__in=runs).annotate(n=Count("judgments")).filter(n=4)
        assert four.count() == 390
        assert set(four.values_list("run__system__name", flat=True)) == {
            "GPT-4",
            "Vicuna-13B-v1.5",
            "LongAlpaca-7B",
        }
        assert set(Evaluator.objects.values_list("name", flat=True)) == {
            "gpt-4-eval",
            "prometheus-eval",
            "gold-human-eval",
            "silver-human-eval",
        }
        # stored once: the gpt-4-eval file and the all-eval file share these responses
        assert Response.objects.count() == 6775
        assert Judgment.objects.count() == 6775 + 3 * 390
        assert System.objects.count() == 9
        assert GenerationRun.objects.count() == 50
        silver = Judgment.objects.get(
            evaluator__name="silver-human-eval",
            response__run__system__name="LongAlpaca-7B",
            response__run__mode="st",
            response__question__document__external_id="meeting_en_test2_001",
            response__question__external_id="1",
        )
        assert (silver.score, silver.raw_score) == (6.8, 6.8)


def test_second_import_changes_nothing(imported, elitr_data):
    before = database_snapshot()
    summary = import_elitr_bench(elitr_data, with_responses=True)
    assert not summary.changed
    assert all(c.created == c.updated == 0 for c in summary.counts.values())
    assert database_snapshot() == before
    assert "Nothing changed" in summary.as_text()


def test_command_prints_summary_and_time(elitr_data, capsys):
    call_command("import_elitr_bench", str(elitr_data), "--with-responses")
    out = capsys.readouterr().out
    assert (
        "│ dev   │       10 │       141 │  51 │   59 │   21 │      10 │ 45 │ 29 │ 32 │ 35 │" in out
    )
    assert (
        "│ test2 │        8 │       130 │  45 │   57 │   20 │       8 │ 43 │ 34 │ 22 │ 31 │" in out
    )
    assert "Responses: 6775 (390 repeated across files, stored once)" in out
    assert "gold-human-eval 390, gpt-4-eval 6775, prometheus-eval 390, silver-human-eval 390" in out
    assert "Imported in" in out
    call_command("import_elitr_bench", str(elitr_data), "--with-responses")
    assert "Nothing changed" in capsys.readouterr().out

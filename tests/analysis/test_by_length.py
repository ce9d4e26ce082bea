"""Scores by input length (analysis.report.by_length, its page and files):
on RULER made at 4K, 8K and 16K tokens, each bucket's mean is the authors'
task score at that length, the effective length is where a system first
falls below the stated share, and the page, figure and files show it; on the
paper's ELITR-Bench data (transcripts of different lengths), the buckets are
terciles of the meetings' tokens, every evaluator's scores and each judge's
agreement with the gold annotators come per bucket, with an interval or the
reason for none."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command

from analysis.report.by_length import document_tokens, length_view
from corpus.models import Dataset, QuestionText
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.models import Evaluator
from tests.judging.test_ruler_metrics import OFFICIAL, postprocess_pred

LENGTHS = (4096, 8192, 16384)


@pytest.fixture
def paper(db, elitr_data_unlocked):
    from judging.importing import import_elitr_bench

    import_elitr_bench(elitr_data_unlocked, with_responses=True, languages=("en",))


RIGHT = {4096: 8, 8192: 6, 16384: 2}  # of 8 answers, the ones holding the needle


@pytest.fixture
def ruler_scored(db, tmp_path):
    call_command(
        "make_ruler", "--output", str(tmp_path / "ruler"), "--tasks", "niah_single_1",
        "--lengths", ",".join(map(str, LENGTHS)), "--samples", "8", "--import", stdout=None,
    )  # fmt: skip
    answers = {}
    records = []
    for length in LENGTHS:
        texts = QuestionText.objects.filter(dataset__task=f"niah_single_1-{length}").order_by("pk")
        for number, text in enumerate(texts):
            needle = text.reference_answer
            answer = f"The number is {needle}." if number < RIGHT[length] else "I do not know."
            answers[(length, text.question_id)] = (answer, [needle])
            records.append(
                {"system": "tiny", "task": f"niah_single_1-{length}", "response": answer,
                 "document_id": text.question.document.external_id,
                 "question_id": text.question.external_id}
            )  # fmt: skip
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    call_command(
        "import_responses", str(path), "--benchmark", "ruler", "--split", "validation",
        stdout=None,
    )  # fmt: skip
    ensure_metric_evaluators()
    metric = Evaluator.objects.get(name="metric: ruler.string_match_all")
    for dataset in Dataset.objects.filter(benchmark__slug="ruler"):
        judge_run(create_judging_run(metric, dataset, "st").pk)
    return answers


def test_ruler_by_length_is_the_authors_score_per_length_with_the_effective_length(ruler_scored):
    view = length_view("ruler", "validation", share=0.9)
    assert [b.label for b in view.buckets] == ["4096", "8192", "16384"]
    assert all(b.documents == 8 and b.high <= int(b.label) for b in view.buckets)
    assert "RULER's `length`" in view.tokenizer
    rows = {r["bucket"]: r for r in view.scores}
    for length in LENGTHS:
        answers = [a for (n, _), a in ruler_scored.items() if n == length]
        official = OFFICIAL["ruler.string_match_all"](
            [postprocess_pred(a, {}) for a, _ in answers], [refs for _, refs in answers]
        )
        row = rows[str(length)]
        assert round(row["mean"], 2) == official == 100 * RIGHT[length] / 8
        assert (row["clusters"], row["n"]) == (8, 8)
        low, high = row["ci95"]
        assert 0 <= low <= row["mean"] <= high <= 100
    (effective,) = view.effective
    assert effective["short_score"] == 100 and effective["threshold"] == pytest.approx(90)
    assert (effective["reached_bucket"], effective["first_below"]) == ("4096", "8192")
    assert effective["effective_length"] == view.buckets[0].high
    # a lower bar reaches further
    lenient = length_view("ruler", "validation", share=0.7).effective[0]
    assert (lenient["reached_bucket"], lenient["first_below"]) == ("8192", "16384")


def test_the_page_figure_and_files_show_it_to_a_researcher_only(
    ruler_scored, client, researcher, gold_annotator
):
    client.force_login(researcher)
    report = client.get("/analysis/benchmark/ruler/?split=validation").content.decode()
    assert 'id="by-length"' in report
    page = client.get("/analysis/benchmark/ruler/length/?split=validation").content.decode()
    assert 'id="length-scores"' in page and 'id="effective-length"' in page
    assert "<td>8192</td>" in page and 'id="by-length-figure"' in page
    svg = client.get("/analysis/benchmark/ruler/length/?split=validation&format=svg")
    assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content
    assert b"metric: ruler.string_match_all" in svg.content
    table = client.get("/analysis/benchmark/ruler/length/?split=validation&format=csv")
    rows = list(csv.DictReader(io.StringIO(table.content.decode())))
    assert [(r["bucket"], float(r["mean"])) for r in rows] == [
        ("4096", 100.0), ("8192", 75.0), ("16384", 25.0)
    ]  # fmt: skip
    data = json.loads(
        client.get("/analysis/benchmark/ruler/length/?split=validation&format=json").content
    )
    assert data["effective_length"][0]["first_below"] == "8192"
    bad = client.get("/analysis/benchmark/ruler/length/?split=validation&share=2&format=json")
    assert bad.status_code == 400 and b"a fraction between 0 and 1" in bad.content
    assert client.get("/analysis/benchmark/ruler/length/?split=nope").status_code == 404
    client.force_login(gold_annotator)
    assert client.get("/analysis/benchmark/ruler/length/?split=validation").status_code == 403


def test_the_agreement_report_links_its_setting_by_length(paper, client, researcher):
    client.force_login(researcher)
    page = client.get("/analysis/report/", follow=True).content.decode()  # the default selection
    assert 'id="agreement-by-length"' in page
    assert 'href="/analysis/benchmark/elitr-bench/length/?split=test2"' in page
    length_page = client.get("/analysis/benchmark/elitr-bench/length/?split=test2")
    assert length_page.status_code == 200 and b'id="length-agreement"' in length_page.content


def test_the_papers_meetings_by_length_with_each_judges_agreement(paper):
    view = length_view("elitr-bench", "test2")
    assert view.tokenizer == "tiktoken cl100k_base" and "terciles" in view.bucketing
    assert len(view.buckets) == 3 and sum(b.documents for b in view.buckets) == 8
    assert view.buckets[0].high <= view.buckets[1].low <= view.buckets[2].low
    from corpus.models import Document

    meetings = Document.objects.filter(
        benchmark__slug="elitr-bench", questions__texts__dataset__split="test2"
    ).distinct()
    tokens = sorted(document_tokens(d.text) for d in meetings)
    assert [view.buckets[0].low, view.buckets[-1].high] == [tokens[0], tokens[-1]]
    evaluators = {r["evaluator"] for r in view.scores}
    assert evaluators == {"gold-human-eval", "gpt-4-eval", "prometheus-eval", "silver-human-eval"}
    for row in view.scores:
        assert row["clusters"] <= 3  # 2-3 meetings a bucket: the interval is wide, and given
        low, high = row["ci95"]
        assert low is not None and low <= row["mean"] <= high
    pairs = {(a["evaluator"], a["human"]) for a in view.agreement}
    assert pairs == {
        (judge, human)
        for judge in ("gpt-4-eval", "prometheus-eval")
        for human in ("gold-human-eval", "silver-human-eval")
    }
    assert {a["bucket"] for a in view.agreement} == {b.label for b in view.buckets}
    for row in view.agreement:  # under 6 meetings a bucket: r without an interval, and why
        assert -1 <= row["r"] <= 1 and row["ci95"] == [None, None]
        assert "not enough meetings for an interval" in row["ci_note"]


@pytest.mark.django_db(transaction=True)
def test_ruler_at_4k_8k_16k_with_the_tiny_model_end_to_end(tmp_path, tiny_model):
    """Made in the tiny model's own tokens, answered by it through the local
    generation path (the prompt under its template, the answer prefix after,
    the task's answer budget), scored, and viewed by length."""
    from generation.models import System
    from generation.runner import create_generation_run, run_generation

    call_command(
        "make_ruler", "--output", str(tmp_path / "ruler"), "--tasks", "niah_multikey_3",
        "--lengths", ",".join(map(str, LENGTHS)), "--samples", "2",
        "--tokenizer", f"hf:{tiny_model}", "--import", stdout=None,
    )  # fmt: skip
    config = {
        "backend": "hf", "model_path": str(tiny_model), "dtype": "float32",
        "chat_template": "llama-2", "max_new_tokens": 6,
    }  # fmt: skip
    system = System.objects.create(
        name="tiny", model_name="tiny-llama", backend="hf", config=config
    )
    ensure_metric_evaluators()
    metric = Evaluator.objects.get(name="metric: ruler.string_match_all")
    for dataset in Dataset.objects.filter(benchmark__slug="ruler"):
        run = run_generation(create_generation_run(system, dataset, "st").pk)
        assert (run.status, run.done) == ("done", 2), run.error
        judged = judge_run(create_judging_run(metric, dataset, "st").pk)
        assert (judged.status, judged.done) == ("done", 2)
    view = length_view("ruler", "validation")
    assert [b.label for b in view.buckets] == ["4096", "8192", "16384"]
    for bucket in view.buckets:  # the tiny model's own tokens, prompt and answer budget
        assert int(bucket.label) * 0.9 < bucket.high <= int(bucket.label)
    assert [(r["system"], r["bucket"], r["clusters"]) for r in view.scores] == [
        ("tiny", label, 2) for label in ("4096", "8192", "16384")
    ]
    assert all(0 <= r["mean"] <= 100 for r in view.scores)
    (effective,) = view.effective
    assert effective["system"] == "tiny" and effective["short_bucket"] == "4096"


def test_babilong_by_length_is_collect_results_accuracy_per_configuration(db, tmp_path):
    """BABILong's buckets are its configurations, in the authors' order (0k
    before 4k before 32k, not as text sorts them), each at its nominal tokens,
    and each bucket's mean is collect_results.py's accuracy there."""
    right = {"0k": 3, "4k": 2, "32k": 1}  # of 3 answers
    records = []
    for length in right:
        rows = [
            {"input": f"Mary went to the garden. {'Filler. ' * n}", "question": "Where is Mary?",
             "target": "garden"}
            for n in range(3)
        ]  # fmt: skip
        path = tmp_path / "babilong" / "data" / "qa1" / f"{length}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        for number in range(3):
            answer = "garden" if number < right[length] else "kitchen"
            records.append(
                {"system": "tiny", "task": f"qa1-{length}", "response": answer,
                 "document_id": f"qa1-{length}-{number + 1}", "question_id": str(number + 1)}
            )  # fmt: skip
    folder = tmp_path / "babilong"
    call_command("import_benchmark", str(folder), "--format", "babilong", stdout=None)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    call_command(
        "import_responses", str(answers), "--benchmark", "babilong", "--split", "test", stdout=None
    )
    ensure_metric_evaluators()
    metric = Evaluator.objects.get(name="metric: babilong.accuracy")
    for dataset in Dataset.objects.filter(benchmark__slug="babilong"):
        judge_run(create_judging_run(metric, dataset, "st").pk)
    view = length_view("babilong", "test", share=0.9)
    assert [(b.label, b.low, b.high) for b in view.buckets] == [
        ("0k", 0, 0), ("4k", 4000, 4000), ("32k", 32000, 32000)
    ]  # fmt: skip
    assert "BABILong's configurations" in view.tokenizer
    means = {r["bucket"]: r["mean"] for r in view.scores}
    assert means == pytest.approx({length: 100 * n / 3 for length, n in right.items()})
    (effective,) = view.effective
    assert (effective["reached_bucket"], effective["first_below"]) == ("0k", "4k")

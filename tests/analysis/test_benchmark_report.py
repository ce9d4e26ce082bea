"""A benchmark's results in its authors' shape: task scores (0-100) per system
and metric with the average, equal to what the metric's official aggregation
gives on the same predictions (`manage.py score`); win rates against the
baseline as the judge counts; Kendall's tau with human scores; exports as a
table, JSON, CSV and Parquet."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from analysis.report.benchmark_exports import as_bytes
from analysis.report.benchmark_report import benchmark_report
from corpus.importers.samples import write_leval_tasks, write_zeroscrolls_task
from corpus.models import Dataset
from generation.models import Response
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.models import Evaluator, Judgment

pytestmark = pytest.mark.django_db

OUTPUTS = {
    "strong": {"q1": "four", "q2": "a bronze bell", "q3": "214 nights"},
    "weak": {"q1": "five", "q2": "a bell", "q3": "many"},
}


@pytest.fixture
def zeroscrolls(tmp_path):
    call_command(
        "import_benchmark", str(write_zeroscrolls_task(tmp_path)), "--format", "zeroscrolls"
    )
    for system, answers in OUTPUTS.items():
        records = [
            {"system": system, "document_id": doc, "question_id": q, "response": answers[q]}
            for doc, q in (("doc1", "q1"), ("doc2", "q2"), ("doc1", "q3"))
        ]
        path = tmp_path / f"{system}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        call_command("import_responses", str(path), "--benchmark", "zeroscrolls",
                     "--split", "validation", "--task", "qasper")  # fmt: skip
    ensure_metric_evaluators()
    from corpus.models import Dataset

    dataset = Dataset.objects.get(benchmark__slug="zeroscrolls")
    for name in ("metric: zeroscrolls.f1", "metric: zeroscrolls.rouge"):
        judge_run(create_judging_run(Evaluator.objects.get(name=name), dataset, "st").pk)
    return tmp_path


def official(tmp_path, metric: str, system: str) -> float:
    """What `manage.py score` prints for the system's predictions."""
    lines = []
    for response in Response.objects.filter(run__system__name=system).select_related("question"):
        text = response.question.texts.get()
        references = [text.reference_answer, *text.alternative_answers]
        lines.append(json.dumps({"prediction": response.text, "references": references}))
    path = tmp_path / f"{system}-{metric}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    err = io.StringIO()
    call_command(
        "score", "--metric", metric, "--predictions", str(path), stdout=io.StringIO(), stderr=err
    )
    return float(err.getvalue().split("task score ")[1].split(";")[0])


def test_task_scores_equal_the_official_aggregation(zeroscrolls):
    report = benchmark_report("zeroscrolls", "validation")
    assert report.tasks == ["qasper"]
    rows = {(r["system"], r["metric"]): r for r in report.rows()}
    assert set(rows) == {(s, m) for s in OUTPUTS for m in ("zeroscrolls.f1", "zeroscrolls.rouge")}
    for (system, metric), row in rows.items():
        assert row["qasper"] == official(zeroscrolls, metric, system)
        assert row["average"] == row["qasper"]  # one task: its score
    assert rows[("strong", "zeroscrolls.f1")]["qasper"] > rows[("weak", "zeroscrolls.f1")]["qasper"]
    # ROUGE's task score comes from the F-measures kept with each judgment
    stored = Judgment.objects.filter(evaluator__name="metric: zeroscrolls.rouge").first()
    assert set(json.loads(stored.feedback)) == {"rouge1", "rouge2", "rougeL"}


def test_kendall_tau_with_human_scores_and_every_export(zeroscrolls, tmp_path):
    people = Evaluator.objects.create(name="experts", kind="gold_human")
    for response in Response.objects.all():
        good = response.run.system.name == "strong"
        Judgment.objects.create(
            evaluator=people, response=response, score=9 if good else 2, raw_score=9 if good else 2,
            raw_scale_min=1, raw_scale_max=10, rater="r1",
        )  # fmt: skip
    report = benchmark_report("zeroscrolls", "validation")
    # the experts put the strong system first on every question: no finite rating
    rankings = {r["evaluator"]: r for r in report.rankings}
    assert rankings["experts"] == {
        "evaluator": "experts",
        "documents": 2,
        "computable": False,
        "reason": "no finite ratings: strong won every comparison (no loss or tie)",
    }
    taus = {(t["metric"], t["human"]): t for t in report.kendall}
    f1 = taus[("metric: zeroscrolls.f1", "experts")]
    assert f1["responses"] == 6 and f1["systems"] == 2 and f1["tau_systems"] == 1.0
    assert f1["tau_responses"] > 0.5
    table = as_bytes(report, "table").decode()
    assert "zeroscrolls.f1" in table and "average" in table and "Kendall tau" in table
    data = json.loads(as_bytes(report, "json"))
    assert data["table"][0]["system"] in OUTPUTS and data["kendall_tau"]
    assert {r["evaluator"] for r in data["rankings"]} >= {"experts", "metric: zeroscrolls.f1"}
    csv_text = as_bytes(report, "csv").decode()
    assert next(csv.reader(io.StringIO(csv_text))) == ["system", "metric", "qasper", "average"]
    import pyarrow.parquet as pq

    path = tmp_path / "report.parquet"
    call_command("benchmark_report", "--benchmark", "zeroscrolls", "--split", "validation",
                 "--format", "parquet", "--output", str(path))  # fmt: skip
    frame = pq.read_table(path).to_pylist()
    assert {row["system"] for row in frame} == set(OUTPUTS) and "qasper" in frame[0]


def test_a_bad_benchmark_or_split_is_named(zeroscrolls):
    with pytest.raises(CommandError, match="No benchmark 'zero'; known: zeroscrolls"):
        call_command("benchmark_report", "--benchmark", "zero", "--split", "validation")
    with pytest.raises(CommandError, match="has no split 'test'; its splits: validation"):
        call_command("benchmark_report", "--benchmark", "zeroscrolls", "--split", "test")


def test_leval_win_rates_against_the_baseline_as_leval_counts(tmp_path):
    from corpus.models import Dataset
    from generation.models import GenerationRun, System
    from judging.models import PairwiseVerdict

    _, reports = write_leval_tasks(tmp_path)
    call_command("import_benchmark", str(reports), "--format", "leval")
    dataset = Dataset.objects.get(benchmark__slug="leval")
    runs = {}
    for name in ("turbo-16k-0613", "my-model"):
        system = System.objects.create(name=name, model_name=name, backend="imported")
        runs[name] = GenerationRun.objects.create(
            system=system, dataset=dataset, mode="st", origin="imported", status="done"
        )
    judge = Evaluator.objects.create(
        name="leval judge", kind="llm_pairwise",
        config={"protocol": "leval_pairwise", "baseline": "turbo-16k-0613"},
    )  # fmt: skip
    winners = iter(["first", "second", "first", "tie"] * 4)
    for text in dataset.question_texts.all():
        mine = Response.objects.create(run=runs["my-model"], question=text.question, text="x")
        theirs = Response.objects.create(
            run=runs["turbo-16k-0613"], question=text.question, text="y"
        )
        for order in (0, 1):
            PairwiseVerdict.objects.create(
                evaluator=judge, response=mine, opponent=theirs, seed=0, order=order,
                winner=next(winners),
            )  # fmt: skip
    (rate,) = benchmark_report("leval", "test").win_rates
    assert (rate["judge"], rate["system"], rate["against"]) == (
        "leval judge",
        "my-model",
        "turbo-16k-0613",
    )
    assert rate["counting"] == "per_order" and rate["n"] == 8
    # per pair: order 0 "first" (the judged answer shown first) and order 1 "second"
    # (shown second) are its wins, then "first" again and a tie: 6 wins, 2 ties
    assert rate["wins"] == 6 and rate["ties"] == 2 and rate["win_rate"] == (6 + 1) / 8


def test_the_page_shows_the_table_and_downloads_each_format(zeroscrolls, client, researcher):
    client.force_login(researcher)
    home = client.get("/console/").content.decode()
    assert "/analysis/benchmark/zeroscrolls/?split=validation" in home
    page = client.get("/analysis/benchmark/zeroscrolls/?split=validation")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="task-scores"' in html and "zeroscrolls.f1" in html
    for fmt, kind in (("json", "application/json"), ("csv", "text/csv"), ("parquet", "parquet")):
        download = client.get(f"/analysis/benchmark/zeroscrolls/?split=validation&format={fmt}")
        assert download.status_code == 200 and kind in download["Content-Type"]
        assert "concord-zeroscrolls-validation-scores" in download["Content-Disposition"]
    assert client.get("/analysis/benchmark/zeroscrolls/?split=nope").status_code == 404
    assert (
        client.get("/analysis/benchmark/zeroscrolls/?split=validation&format=xls").status_code
        == 400
    )


def test_an_average_covers_the_same_tasks_for_every_system_or_is_none():
    """L-Eval's table averages each system over the metric's tasks: a system
    scored on fewer (its run on one task missing) gets no average, named,
    rather than a mean over other tasks that would not compare."""
    from analysis.report.benchmark_exports import columns
    from analysis.report.benchmark_report import BenchmarkReport, TaskScore

    report = BenchmarkReport("leval", "L-Eval", "leval", "test", ["coursera", "quality"])
    report.scores = [
        TaskScore("full", "leval.exam", "coursera", 40.0, 10),
        TaskScore("full", "leval.exam", "quality", 60.0, 10),
        TaskScore("half", "leval.exam", "quality", 90.0, 10),
    ]
    rows = {row["system"]: row for row in report.rows()}
    assert rows["full"]["average"] == 50.0
    assert rows["half"]["average"] is None  # not 90: it has no coursera score
    assert report.missing_for_average() == [
        {"system": "half", "metric": "leval.exam", "tasks": ["coursera"]}
    ]
    assert columns(report) == ["system", "metric", "coursera", "quality", "average"]


def test_a_benchmark_without_tasks_has_a_score_column_and_no_average():
    from analysis.report.benchmark_exports import as_bytes, columns
    from analysis.report.benchmark_report import BenchmarkReport, TaskScore

    report = BenchmarkReport("reports", "Reports", "generic", "test", [""])
    report.scores = [TaskScore("mine", "f1", "", 70.0, 4)]
    assert columns(report) == ["system", "metric", "score"]
    assert report.rows() == [{"system": "mine", "metric": "f1", "score": 70.0}]
    table = as_bytes(report, "table").decode()
    assert "(task)" not in table and "average" not in table and "70.00" in table


def test_rankings_with_intervals_on_the_page(zeroscrolls, client, researcher):
    """One tie is enough for finite ratings; two documents are too few for
    an interval, and the page says so."""
    people = Evaluator.objects.create(name="experts", kind="gold_human")
    for response in Response.objects.select_related("question", "run__system"):
        good = response.run.system.name == "strong" or response.question.external_id == "q3"
        Judgment.objects.create(
            evaluator=people, response=response, score=9 if good else 2, raw_score=9 if good else 2,
            raw_scale_min=1, raw_scale_max=10, rater="r1",
        )  # fmt: skip
    report = benchmark_report("zeroscrolls", "validation")
    experts = next(r for r in report.rankings if r["evaluator"] == "experts")
    assert [s["system"] for s in experts["systems"]] == ["strong", "weak"]
    assert [(s["wins"], s["ties"], s["losses"]) for s in experts["systems"]] == [
        (2, 1, 0),
        (0, 1, 2),
    ]
    # 2 wins and a tie of 3: odds 5 to 1, 400 log10(5) Elo points apart
    gap = experts["systems"][0]["rating"] - experts["systems"][1]["rating"]
    assert gap == pytest.approx(400 * math.log10(5))
    assert experts["ci_note"].startswith("not enough documents for an interval: 2, 4 more")
    client.force_login(researcher)
    html = client.get("/analysis/benchmark/zeroscrolls/?split=validation").content.decode()
    title, page = html.split("</title>", 1)
    assert "Rankings" not in title  # once rendered into the page's <title>
    assert "Rankings with intervals (Bradley-Terry)" in page
    assert "not enough documents for an interval" in page


def test_judges_and_panels_are_ranked_beside_the_metrics(zeroscrolls):
    """A panel of a metric and an LLM judge (mean) ranks the systems as the
    same mean scores stored as an evaluator of their own would; a learned
    panel says why it is not ranked here."""
    from judging.panels import checked_panel

    judge = Evaluator.objects.create(name="rubric judge", kind="llm_rubric")
    twin = Evaluator.objects.create(name="the panel's scores", kind="imported")
    f1 = Evaluator.objects.get(name="metric: zeroscrolls.f1")
    for i, response in enumerate(Response.objects.order_by("pk")):
        mine = float(1 + (i * 7) % 10)
        Judgment.objects.create(
            evaluator=judge, response=response, score=mine, raw_score=mine,
            raw_scale_min=1, raw_scale_max=10,
        )  # fmt: skip
        metric = Judgment.objects.get(evaluator=f1, response=response).score
        Judgment.objects.create(
            evaluator=twin, response=response, score=(metric + mine) / 2,
            raw_score=(metric + mine) / 2, raw_scale_min=0, raw_scale_max=100,
        )  # fmt: skip
    for name, rule in (("metric and judge", "mean"), ("learned pair", "learned")):
        Evaluator.objects.create(
            name=name,
            kind="panel",
            config=checked_panel({"members": [f1.name, judge.name], "rule": rule}),
        )
    rankings = {r["evaluator"]: r for r in benchmark_report("zeroscrolls", "validation").rankings}
    assert "rubric judge" in rankings
    panel, same = rankings["metric and judge"], rankings["the panel's scores"]
    assert {k: v for k, v in panel.items() if k != "evaluator"} == {
        k: v for k, v in same.items() if k != "evaluator"
    }
    assert rankings["learned pair"]["computable"] is False
    assert "learned from the reference" in rankings["learned pair"]["reason"]


def test_a_pairwise_panel_has_win_rates_counted_as_its_members(tmp_path):
    """Two L-Eval judges that agree on every verdict but one: the panel's
    per-order win rate counts their majority (a tie where they differ)."""
    from judging.panels import checked_panel

    test_leval_win_rates_against_the_baseline_as_leval_counts(tmp_path)
    from judging.models import PairwiseVerdict

    first = Evaluator.objects.get(name="leval judge")
    second = Evaluator.objects.create(
        name="second leval judge", kind="llm_pairwise", config=first.config
    )
    verdicts = list(PairwiseVerdict.objects.filter(evaluator=first).order_by("pk"))
    for index, verdict in enumerate(verdicts):
        # the second judge differs once: a tie where the first judge gave "first"
        winner = "tie" if index == 0 else verdict.winner
        PairwiseVerdict.objects.create(
            evaluator=second, response=verdict.response, opponent=verdict.opponent,
            seed=0, order=verdict.order, winner=winner,
        )  # fmt: skip
    Evaluator.objects.create(
        name="two leval judges",
        kind="panel",
        config=checked_panel({"members": ["leval judge", "second leval judge"]}),
    )
    rates = {r["judge"]: r for r in benchmark_report("leval", "test").win_rates}
    panel = rates["two leval judges"]
    assert panel["counting"] == "per_order" and panel["n"] == 8
    # the first judge's 6 wins and 2 ties, one win now split between win and tie: a tie
    assert (panel["wins"], panel["ties"], panel["losses"]) == (5, 3, 0)


def test_leval_task_scores_leave_out_the_questions_auto_eval_skips(tmp_path, client, researcher):
    """L-Eval's auto_eval.py scores only the questions whose `evaluation` is
    exam, f1 or rouge: a task with questions meant for an LLM judge or people
    (financial_qa has 16 of 68) gets its task score over the rest, as the
    script's, the same as `manage.py score` gives on the lines with their
    field, and the report says how many were left out and why."""
    from corpus.models import Dataset
    from generation.models import GenerationRun, System

    lines = [
        ("What was the revenue?", "12 million euros", "f1", "12 million euros"),
        ("Who audited the accounts?", "Vell and partners", "f1", "the partners of Vell"),
        ("Judge the outlook.", "cautious growth", "LLM", "cautious growth"),
        ("Rate the letter's tone.", "calm", "human", "calm"),
    ]
    task = tmp_path / "financial_qa.jsonl"
    task.write_text(
        "".join(
            json.dumps(
                {"instructions": [q], "outputs": [a], "input": f"Report {n}: the year in numbers.",
                 "source": "financial_qa", "evaluation": evaluation}
            ) + "\n"
            for n, (q, a, evaluation, _) in enumerate(lines)
        )
    )  # fmt: skip
    call_command("import_benchmark", str(task), "--format", "leval")
    dataset = Dataset.objects.get(benchmark__slug="leval")
    system = System.objects.create(name="my-model", model_name="my-model", backend="imported")
    run = GenerationRun.objects.create(
        system=system, dataset=dataset, mode="st", origin="imported", status="done"
    )
    predictions = {q: p for q, _, _, p in lines}
    for text in dataset.question_texts.all():
        Response.objects.create(run=run, question=text.question, text=predictions[text.text])
    ensure_metric_evaluators()
    evaluator = Evaluator.objects.get(name="metric: leval.f1")
    judge_run(create_judging_run(evaluator, dataset, "st").pk)
    assert Judgment.objects.filter(evaluator=evaluator).count() == 4  # every question scored
    report = benchmark_report("leval", "test")
    (score,) = report.scores
    assert (score.items, score.left_out) == (2, 2)
    # the two f1 questions alone: 100 and SQuAD's F1 of "the partners of Vell"
    path = tmp_path / "predictions.jsonl"
    path.write_text(
        "".join(
            json.dumps({"prediction": p, "references": [a], "evaluation": e}) + "\n"
            for _, a, e, p in lines
        )
    )
    said = io.StringIO()  # with --output, the summary is the command's standard output
    call_command("score", "--metric", "leval.f1", "--predictions", str(path),
                 "--output", str(tmp_path / "scored.jsonl"), stdout=said)  # fmt: skip
    assert "4 of 4 lines scored; 2 left out of the task score, 2 in it" in said.getvalue()
    from_command = float(said.getvalue().split("task score ")[1].split(";")[0])
    counted_only = [json.dumps({"prediction": p, "references": [a]}) for _, a, e, p in lines[:2]]
    path.write_text("\n".join(counted_only) + "\n")
    assert score.score == pytest.approx(from_command) == pytest.approx(official_of(path))
    assert score.score < 100  # the left-out questions (exact answers) would have raised it
    scored = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert [s.get("counted", True) for s in scored] == [True, True, False, False]
    assert all("score" in s for s in scored)  # scored all the same
    (left,) = report.as_json()["left_out"]
    assert left["items"] == 2 and "auto_eval.py" in left["because"]
    assert "left out of the task score" in as_bytes(report, "table").decode()
    client.force_login(researcher)
    page = client.get("/analysis/benchmark/leval/?split=test").content.decode()
    assert (
        "financial_qa (leval.f1): 2 questions scored but left out of the task score: "
        "L-Eval&#x27;s auto_eval.py"
    ) in page


def official_of(path) -> float:
    err = io.StringIO()
    call_command("score", "--metric", "leval.f1", "--predictions", str(path),
                 stderr=err, stdout=io.StringIO())  # fmt: skip
    return float(err.getvalue().split("task score ")[1].split(";")[0])


def test_leval_headline_win_rate_pools_every_task_s_verdicts(tmp_path):
    """L-Eval's llm_eval.py counts one figure over every task's questions: the
    report gives it beside the per-task rates, equal to a plain count of
    every verdict (per order, a tie a half)."""
    from analysis.report.benchmark_report import POOLED
    from generation.models import GenerationRun, System
    from judging.models import PairwiseVerdict

    for path in write_leval_tasks(tmp_path):
        call_command("import_benchmark", str(path), "--format", "leval", stdout=None)
    judge = Evaluator.objects.create(
        name="leval judge", kind="llm_pairwise",
        config={"protocol": "leval_pairwise", "baseline": "turbo-16k-0613"},
    )  # fmt: skip
    systems = {
        name: System.objects.create(name=name, model_name=name, backend="imported")
        for name in ("turbo-16k-0613", "my-model")
    }
    winners = iter(["first", "second", "second", "tie", "first", "first", "tie"] * 10)
    tally = {"wins": 0, "ties": 0, "n": 0}
    for dataset in Dataset.objects.filter(benchmark__slug="leval"):
        runs = {
            name: GenerationRun.objects.create(
                system=system, dataset=dataset, mode="st", origin="imported", status="done"
            )
            for name, system in systems.items()
        }
        for text in dataset.question_texts.all():
            mine = Response.objects.create(run=runs["my-model"], question=text.question, text="x")
            theirs = Response.objects.create(
                run=runs["turbo-16k-0613"], question=text.question, text="y"
            )
            for order in (0, 1):
                winner = next(winners)
                PairwiseVerdict.objects.create(
                    evaluator=judge, response=mine, opponent=theirs, seed=0, order=order,
                    winner=winner,
                )  # fmt: skip
                # my-model is shown first in order 0, second in order 1
                won = winner == ("first" if order == 0 else "second")
                tally["wins"] += won
                tally["ties"] += winner == "tie"
                tally["n"] += 1
    rates = benchmark_report("leval", "test").win_rates
    per_task = [r for r in rates if not r["pooled"]]
    assert sorted(r["task"] for r in per_task) == ["quality", "report_qa"]
    (pooled,) = [r for r in rates if r["pooled"]]
    assert pooled["task"] == POOLED and pooled["n"] == tally["n"] == sum(r["n"] for r in per_task)
    assert (pooled["wins"], pooled["ties"]) == (tally["wins"], tally["ties"])
    assert pooled["win_rate"] == pytest.approx((tally["wins"] + tally["ties"] / 2) / tally["n"])

"""Sweeps and multi-seed runs as one object, and their grid once judged."""

import statistics

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Avg

from analysis.report.sweeps import sweep_table
from corpus.models import Dataset
from generation.models import GenerationRun, Sweep, System
from generation.sweeps import PAPER_GRID, combinations
from judging.models import Judgment
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db


def test_paper_grid_has_eight_points():
    points = combinations(PAPER_GRID)
    assert len(points) == 8
    assert {"temperature": 0.6, "chat_template": "raw", "qa_markers": True} in points
    assert combinations({}) == [{}]


@pytest.mark.django_db(transaction=True)
def test_sweep_runs_and_its_judged_grid(two_meetings_committed, capsys):
    with FakeOpenAI() as server:
        System.objects.create(
            name="api base",
            model_name="m",
            backend="openai",
            config={
                "backend": "openai",
                "base_url": server.url,
                "model": "m",
                "server": "vllm",
                "max_new_tokens": 32,
            },
        )
        call_command(
            "sweep",
            "--name",
            "decoding",
            "--system",
            "api base",
            "--split",
            "test2",
            "--grid",
            '{"temperature": [0.0, 0.6]}',
            "--seeds",
            "2023,2024",
            "--now",
        )
    sweep = Sweep.objects.get(name="decoding")
    assert sweep.runs.count() == 4
    assert set(sweep.runs.values_list("system__name", flat=True)) == {
        "api base [temperature=0.0]",
        "api base [temperature=0.6]",
    }
    assert all(r.status == "done" and r.done == 12 for r in sweep.runs.all())
    hot = System.objects.get(name="api base [temperature=0.6]")
    assert hot.config["temperature"] == 0.6 and hot.config["max_new_tokens"] == 32
    call_command("judge", "--evaluator", "metric: f1", "--split", "test2", "--now")
    rows = {row["system"]: row for row in sweep_table(sweep, "metric: f1")}
    run_means = [
        Judgment.objects.filter(response__run=run, evaluator__name="metric: f1").aggregate(
            m=Avg("score")
        )["m"]
        for run in GenerationRun.objects.filter(system=hot).order_by("seed")
    ]
    assert rows["api base [temperature=0.6]"]["mean"] == pytest.approx(statistics.fmean(run_means))
    assert rows["api base [temperature=0.6]"]["std"] == pytest.approx(statistics.stdev(run_means))
    capsys.readouterr()
    call_command("sweep_report", "--sweep", str(sweep.pk), "--evaluator", "metric: f1")
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "system\t2023\t2024\tmean\tstd"
    assert "api base [temperature=0.6]" in out


def test_bad_sweeps_are_refused(two_meetings):
    System.objects.create(
        name="base",
        model_name="m",
        backend="openai",
        config={"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
    )
    with pytest.raises(CommandError, match="--grid is JSON"):
        call_command(
            "sweep", "--name", "x", "--system", "base", "--split", "test2", "--grid", "{oops"
        )
    with pytest.raises(CommandError, match="does not accept repetition_penalty"):
        call_command(
            "sweep",
            "--name",
            "y",
            "--system",
            "base",
            "--split",
            "test2",
            "--grid",
            '{"repetition_penalty": [1.0, 1.1]}',
        )
    assert (
        not Sweep.objects.exists()
        and not GenerationRun.objects.filter(
            dataset=Dataset.objects.get(version="qa", language="en", split="test2"),
            origin="generated",
        ).exists()
    )


@pytest.mark.django_db(transaction=True)
def test_sweep_page_shows_the_judged_grid(two_meetings_committed, client, django_user_model):
    with FakeOpenAI() as server:
        System.objects.create(
            name="api base",
            model_name="m",
            backend="openai",
            config={"backend": "openai", "base_url": server.url, "model": "m", "server": "vllm"},
        )
        call_command(
            "sweep",
            "--name",
            "seeds",
            "--system",
            "api base",
            "--split",
            "test2",
            "--seeds",
            "2023,2024",
            "--now",
        )
    sweep = Sweep.objects.get()
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-123-x")
    client.force_login(admin)
    page = client.get(f"/admin/generation/sweep/{sweep.pk}/change/").content.decode()
    assert "Not judged yet" in page
    call_command("judge", "--evaluator", "metric: exact match", "--split", "test2", "--now")
    page = client.get(f"/admin/generation/sweep/{sweep.pk}/change/").content.decode()
    assert "<h3>metric: exact match</h3>" in page and "<th>2023</th><th>2024</th>" in page

"""The commands' `--project SLUG`: what a command makes goes to the project
named (the default project without it), and the names it looks up are that
project's or shared ones; another project's are "no such", as in the API."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from adaptive.models import AdaptiveStudy
from corpus.models import Dataset
from generation.models import GenerationRun, Response, Sweep, System
from generation.runner import GenerationError
from generation.sweeps import launch_sweep
from judging.models import Evaluator, JudgingRun, Judgment
from tests.conftest import database_snapshot
from users.models import Project, default_project

pytestmark = pytest.mark.django_db

MEETING = "meeting_en_synthetic_001"


@pytest.fixture
def lab(two_meetings) -> Project:
    return Project.objects.create(slug="lab", name="Lab")


def api_system(name: str, project: Project) -> System:
    return System.objects.create(
        name=name,
        model_name="m",
        backend="openai",
        project=project,
        config={"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
    )


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_an_unknown_project_is_named_with_the_projects_there_are(lab):
    api_system("lab-model", lab)
    before = database_snapshot()
    for command in (
        ("generate", "--system", "lab-model", "--split", "test2"),
        ("judge", "--evaluator", "metric: f1", "--split", "test2"),
        ("sweep", "--name", "s", "--system", "lab-model", "--split", "test2"),
        ("import_ratings", "/nonexistent.csv"),
    ):
        with pytest.raises(CommandError, match=r"No project 'nowhere'\. Projects: default, lab\."):
            call_command(*command, "--project", "nowhere")
    assert database_snapshot() == before


def test_generate_makes_the_run_in_the_project_and_finds_only_its_systems(lab):
    api_system("lab-model", lab)
    with pytest.raises(CommandError, match="No system 'lab-model' in project 'default'"):
        call_command("generate", "--system", "lab-model", "--split", "test2")
    out = run("generate", "--system", "lab-model", "--split", "test2", "--project", "lab")
    generated = GenerationRun.objects.get(system__name="lab-model")
    assert generated.project == lab and generated.status == "queued"
    assert f"Run {generated.pk} queued" in out
    # a shared system (as the release's are) generates in the project named
    System.objects.filter(pk=api_system("shared-model", lab).pk).update(project=None)
    run("generate", "--system", "shared-model", "--split", "test2", "--project", "lab")
    assert GenerationRun.objects.get(system__name="shared-model").project == lab


def test_a_sweep_goes_to_the_project_with_its_systems_and_runs(lab):
    base = api_system("lab-model", lab)
    run("sweep", "--name", "decoding", "--system", "lab-model", "--split", "test2",
        "--grid", '{"temperature": [0.0, 0.6]}', "--seeds", "1,2", "--project", "lab")  # fmt: skip
    sweep = Sweep.objects.get(name="decoding")
    assert sweep.project == lab
    assert set(sweep.runs.values_list("project__slug", flat=True)) == {"lab"}
    points = System.objects.filter(name__startswith="lab-model [")
    assert points.count() == 2 and set(points.values_list("project__slug", flat=True)) == {"lab"}
    # without --project the sweep went to the base system's project, never the default one
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    assert launch_sweep("again", base, dataset, "st", {}, [3]).project == lab
    with pytest.raises(GenerationError, match="lab-model belongs to another project"):
        launch_sweep("elsewhere", base, dataset, "st", {}, [4], project=default_project())
    with pytest.raises(CommandError, match="No sweep .* in project 'default'"):
        call_command("sweep_report", "--sweep", str(sweep.pk), "--evaluator", "metric: f1",
                     "--project", "default")  # fmt: skip


def test_responses_ratings_and_judging_stay_in_the_project(lab, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps(
                {
                    "system": "lab-rag",
                    "document_id": MEETING,
                    "question_id": str(q),
                    "response": f"answer {q}",
                }
            )
            + "\n"  # fmt: skip
            for q in (1, 2, 3)
        )
    )
    run("import_responses", str(answers), "--benchmark", "elitr-bench", "--split", "test2",
        "--project", "lab")  # fmt: skip
    imported = GenerationRun.objects.get(system__name="lab-rag")
    assert imported.project == lab and imported.system.project == lab
    lab_response = Response.objects.filter(run=imported).order_by("pk").first()
    default_response = Response.objects.filter(run__project=default_project()).first()

    # judging: the project's responses only, and its run
    out = run("judge", "--evaluator", "metric: f1", "--split", "test2", "--now",
              "--project", "lab")  # fmt: skip
    assert "3/3 judged" in out
    judging = JudgingRun.objects.get(project=lab)
    assert set(
        Judgment.objects.filter(evaluator__name="metric: f1").values_list(
            "response__run__project__slug", flat=True
        )
    ) == {"lab"}
    with pytest.raises(CommandError, match=f"No run {judging.pk} in project 'default'"):
        call_command("judge", "--resume", str(judging.pk), "--project", "default")
    with pytest.raises(CommandError, match=r"Unknown system\(s\) in project 'default': lab-rag"):
        call_command("judge", "--evaluator", "metric: f1", "--split", "test2",
                     "--systems", "lab-rag")  # fmt: skip

    # ratings: on the project's responses, by an evaluator of the project
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(f"response,evaluator,rater,score\n{lab_response.pk},lab-panel,r1,7\n")
    run("import_ratings", str(ratings), "--project", "lab")
    assert Evaluator.objects.get(name="lab-panel").project == lab
    before = database_snapshot()
    foreign = tmp_path / "foreign.csv"
    foreign.write_text(f"response,evaluator,rater,score\n{default_response.pk},lab-panel,r1,7\n")
    with pytest.raises(CommandError, match="line 2: no such response"):
        call_command("import_ratings", str(foreign), "--project", "lab")
    # the same evaluator name from the default project: it is the lab's
    again = tmp_path / "again.csv"
    again.write_text(f"response,evaluator,rater,score\n{default_response.pk},lab-panel,r2,5\n")
    with pytest.raises(CommandError, match="lab-panel belong to another project than 'default'"):
        call_command("import_ratings", str(again))
    assert database_snapshot() == before

    # the benchmark report reads the project's runs when one is named
    table = run("benchmark_report", "--benchmark", "elitr-bench", "--split", "test2",
                "--format", "json", "--project", "lab")  # fmt: skip
    assert "lab-rag" in table and "Synthetic-Echo" not in table


def test_an_adaptive_study_plans_in_the_project_with_its_judges_only(lab):
    Evaluator.objects.create(name="default-judge", kind="imported")  # the default project's
    refused = "--judge: no evaluator named 'default-judge' in project 'lab'"
    with pytest.raises(CommandError, match=refused):
        call_command("adaptive_study", "plan", "--name", "a", "--judge", "default-judge",
                     "--systems", "Synthetic-Echo", "--budget-gbp", "10",
                     "--project", "lab")  # fmt: skip
    assert not AdaptiveStudy.objects.exists()
    with pytest.raises(CommandError, match="No adaptive study named 'a' in project 'lab'"):
        call_command("adaptive_study", "show", "a", "--project", "lab")

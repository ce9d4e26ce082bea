"""Model outputs a researcher already has, for any imported benchmark: from a
file (JSON Lines, CSV, Parquet), the API or the console; checked whole,
written atomically and idempotently, never changing a judged answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from generation.models import GenerationRun, Response, System
from judging.models import Evaluator, Judgment

pytestmark = pytest.mark.django_db


def outputs(tmp_path: Path, records: list[dict], name: str = "outputs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


QUALITY = [
    {"system": "model-a", "document_id": "quality-1", "question_id": "1", "response": "(B)"},
    {"system": "model-a", "document_id": "quality-1", "question_id": "2", "response": "Tobin"},
    {"system": "model-a", "document_id": "quality-2", "question_id": "1", "response": ""},
    {"system": "model-b", "document_id": "quality-1", "question_id": "1", "response": "A"},
]


def state() -> tuple:
    return (
        list(System.objects.values_list("name", "backend").order_by("name")),
        list(GenerationRun.objects.values_list("system__name", "total", "done").order_by("pk")),
        list(Response.objects.values_list("run__system__name", "text").order_by("pk")),
    )


def test_responses_import_per_system_and_again_change_nothing(leval_tasks, capsys):
    path = outputs(leval_tasks, QUALITY)
    call_command("import_responses", str(path), "--benchmark", "leval", "--split", "test",
                 "--task", "quality")  # fmt: skip
    runs = GenerationRun.objects.order_by("system__name")
    assert [(r.system.name, r.origin, r.status, r.total, r.done) for r in runs] == [
        ("model-a", "imported", "done", 3, 3),
        ("model-b", "imported", "done", 1, 1),
    ]
    assert runs[0].dataset.task == "quality" and runs[0].mode == "st"
    texts = Response.objects.filter(run=runs[0]).values_list("text", flat=True)
    assert sorted(texts) == ["", "(B)", "Tobin"]  # an empty answer is an answer
    before = state()
    capsys.readouterr()
    call_command("import_responses", str(path), "--benchmark", "leval", "--split", "test",
                 "--task", "quality")  # fmt: skip
    assert "Nothing changed" in capsys.readouterr().out
    assert state() == before


def test_csv_and_parquet_hold_the_same_responses(leval_tasks):
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    with (leval_tasks / "out.csv").open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, ["system", "document_id", "question_id", "response"])
        writer.writeheader()
        writer.writerows(QUALITY[:2])
    pq.write_table(pa.Table.from_pylist(QUALITY[2:]), leval_tasks / "out.parquet")
    for name in ("out.csv", "out.parquet"):
        call_command("import_responses", str(leval_tasks / name), "--benchmark", "leval",
                     "--split", "test", "--task", "quality")  # fmt: skip
    assert Response.objects.count() == 4
    assert Response.objects.get(run__system__name="model-b").text == "A"


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"document_id": "quality-9", "question_id": "1", "response": "x"},
         "holds no question '1' of document 'quality-9'"),
        ({"document_id": "quality-1", "question_id": "1", "response": 3},
         "'response' must be a string"),
        ({"document_id": "quality-1", "question_id": "1", "response": "x", "score": 1},
         "unknown field(s) score"),
        ({"document_id": "quality-1", "question_id": "1", "response": "x", "seed": -1},
         "'seed' must be a whole number from 0"),
        ({"document_id": "quality-1", "question_id": "1", "response": "x", "task": "tpo"},
         "no task 'tpo' in leval test"),
        ({"system": "model-a", "document_id": "quality-1", "question_id": "1",
          "response": "again"}, "a second response to this question"),
    ],
)  # fmt: skip
def test_a_bad_record_is_named_and_nothing_is_written(leval_tasks, record, message):
    path = outputs(leval_tasks, [QUALITY[0], {"system": "model-a", **record}])
    before = state()
    with pytest.raises(CommandError) as refused:
        call_command("import_responses", str(path), "--benchmark", "leval", "--split", "test",
                     "--task", "quality")  # fmt: skip
    assert message in str(refused.value) and "line 2" in str(refused.value)
    assert state() == before


def test_a_judged_answer_keeps_its_text(leval_tasks):
    path = outputs(leval_tasks, QUALITY[:1])
    call_command("import_responses", str(path), "--benchmark", "leval", "--split", "test",
                 "--task", "quality")  # fmt: skip
    response = Response.objects.get()
    judge = Evaluator.objects.create(name="j", kind="imported")
    Judgment.objects.create(
        evaluator=judge, response=response, score=5, raw_score=5, raw_scale_min=1, raw_scale_max=10
    )
    changed = outputs(leval_tasks, [QUALITY[0] | {"response": "(C)"}], "changed.jsonl")
    with pytest.raises(CommandError, match="was judged or rated and keeps its text"):
        call_command("import_responses", str(changed), "--benchmark", "leval", "--split", "test",
                     "--task", "quality")  # fmt: skip
    assert Response.objects.get().text == "(B)"


def test_a_system_that_generates_is_not_overwritten(leval_tasks):
    System.objects.create(name="model-a", model_name="m", backend="openai", config={})
    path = outputs(leval_tasks, QUALITY[:1])
    with pytest.raises(CommandError, match="System model-a generates its own responses"):
        call_command("import_responses", str(path), "--benchmark", "leval", "--split", "test",
                     "--task", "quality")  # fmt: skip
    assert not GenerationRun.objects.exists()


def test_the_api_imports_responses_and_refuses_with_nothing_written(leval_tasks, researcher):
    api = APIClient()
    api.force_login(researcher)
    body = {
        "benchmark": "leval",
        "split": "test",
        "task": "quality",
        "system": "api-model",
        "responses": [{k: v for k, v in r.items() if k != "system"} for r in QUALITY[:3]],
    }
    answer = api.post("/api/responses/", body, format="json")
    assert answer.status_code == 201, answer.json()
    assert answer.json()["counts"]["responses"] == {"created": 3, "updated": 0, "unchanged": 0}
    assert Response.objects.filter(run__system__name="api-model").count() == 3
    before = state()
    bad = body | {"responses": [{"document_id": "quality-1", "question_id": "7", "response": ""}]}
    refused = api.post("/api/responses/", bad, format="json")
    assert refused.status_code == 400
    assert "responses[0]" in refused.json()["detail"] and refused.json()["code"] == "import_failed"
    unknown = api.post("/api/responses/", body | {"sytem": "x"}, format="json")
    assert unknown.status_code == 400 and "sytem" in unknown.json()
    assert state() == before
    response = Response.objects.first()
    assert api.delete(f"/api/responses/{response.pk}/").status_code == 405
    assert api.patch(f"/api/responses/{response.pk}/", {"text": "x"}).status_code == 405


def confirm(client, previewed, **options):
    """Press the preview page's Import: its form posts the upload's options back."""
    import re

    assert previewed.redirect_chain, previewed.content.decode()[-3000:]
    url = previewed.redirect_chain[-1][0]
    form = previewed.content.decode().split('id="import-form"', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
    fields.pop("csrfmiddlewaretoken", None)
    return client.post(url.split("?")[0], {**fields, "action": "import"}, **options)


def test_the_console_uploads_a_file_of_responses(leval_tasks, client, researcher):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from corpus.models import Dataset

    client.force_login(researcher)
    quality = Dataset.objects.get(benchmark__slug="leval", task="quality")
    body = "".join(
        json.dumps({k: v for k, v in r.items() if k != "system"}) + "\n" for r in QUALITY[:3]
    )
    before = state()
    previewed = client.post(
        "/console/runs/generation/import/",
        {
            "dataset": quality.pk,
            "system": "uploaded",
            "mode": "st",
            "file": SimpleUploadedFile("my-outputs.jsonl", body.encode()),
        },
        follow=True,
    )
    # the preview: the first records, each system's responses, what would be written
    page = previewed.content.decode()
    assert 'id="preview-rows"' in page and "responses: 3 new, 0 changed" in page
    assert state() == before  # nothing stored before the confirmation
    answer = confirm(client, previewed)
    run = GenerationRun.objects.get(system__name="uploaded")
    assert answer.status_code == 302 and answer["Location"].endswith(f"/generation/{run.pk}/")
    assert run.done == 3
    # a file of two systems' outputs: every system's run is listed, and the next step named
    both = "".join(json.dumps(r) + "\n" for r in QUALITY)
    previewed = client.post(
        "/console/runs/generation/import/",
        {
            "dataset": quality.pk,
            "mode": "st",
            "file": SimpleUploadedFile("ab.jsonl", both.encode()),
        },
        follow=True,
    )
    answer = confirm(client, previewed, follow=True)
    assert answer.redirect_chain[-1][0] == "/console/runs/?imported=1#generation-runs"
    page = answer.content.decode()
    assert "into 2 runs, one per system. Next: judge them" in page
    assert "model-a" in page and "model-b" in page
    before = state()
    bad = body + json.dumps({"document_id": "quality-1", "question_id": "9", "response": ""})
    refused = client.post(
        "/console/runs/generation/import/",
        {"dataset": quality.pk, "system": "uploaded", "mode": "st",
         "file": SimpleUploadedFile("my-outputs.jsonl", bad.encode())},
    )  # fmt: skip
    page = refused.content.decode()
    assert refused.status_code == 200 and "my-outputs.jsonl, line 4" in page
    assert "holds no question" in page and "/tmp/" not in page
    assert state() == before


@pytest.mark.parametrize("of_two", [False, True], ids=["member of it only", "member of two"])
def test_another_project_imports_judges_reports_and_exports_its_own_responses(
    leval_tasks, client, of_two, django_capture_on_commit_callbacks
):
    """The whole chain in a project that is not the default one: responses
    uploaded in the console and through the API, a metric's run over them, a
    report of that project and its export; its viewer reads and changes
    nothing."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from corpus.models import Dataset
    from judging.models import JudgingRun
    from tests.conftest import database_snapshot
    from users.models import Membership, Project, User, default_project

    lab = Project.objects.create(name="Lab", slug="lab")
    olga = User.objects.create_user("olga", password="pw-olga-123", role="researcher")
    olga.memberships.all().delete()
    Membership.objects.create(project=lab, user=olga, role="researcher")
    if of_two:
        Membership.objects.create(project=default_project(), user=olga, role="researcher")
    named = {"project": "lab"} if of_two else {}
    client.force_login(olga)
    quality = Dataset.objects.get(benchmark__slug="leval", task="quality")
    body = "".join(
        json.dumps({k: v for k, v in r.items() if k != "system"}) + "\n" for r in QUALITY[:3]
    )
    upload = {"dataset": quality.pk, "system": "lab-model", "mode": "st",
              "file": SimpleUploadedFile("lab.jsonl", body.encode())}  # fmt: skip
    if of_two:
        upload["project"] = lab.pk
    previewed = client.post("/console/runs/generation/import/", upload, follow=True)
    answer = confirm(client, previewed)
    assert answer.status_code == 302, answer.content.decode()[-3000:]
    assert GenerationRun.objects.get(system__name="lab-model").project == lab
    api = APIClient()
    api.force_login(olga)
    imported = api.post(
        "/api/responses/",
        {"benchmark": "leval", "split": "test", "task": "quality", "system": "lab-api",
         "responses": [{k: v for k, v in r.items() if k != "system"} for r in QUALITY[:3]],
         **named},
        format="json",
    )  # fmt: skip
    assert imported.status_code == 201, imported.content
    assert GenerationRun.objects.get(system__name="lab-api").project == lab
    from tests.conftest import tasks_run_eagerly

    with tasks_run_eagerly(), django_capture_on_commit_callbacks(execute=True):
        started = api.post(
            "/api/judging-runs/",
            {"evaluator": "metric: exact match", "dataset": quality.pk, "mode": "st", **named},
            format="json",
        )
    assert started.status_code in (201, 202), started.content
    run = JudgingRun.objects.get(pk=started.json()["id"])
    assert (run.project, run.total, run.status) == (lab, 6, "done")
    report = api.get("/api/reports/agreement/", {"project": "lab", "benchmark": "leval"})
    assert report.status_code == 200, report.content
    csv_text = client.get("/analysis/report/", {"project": "lab", "benchmark": "leval",
                                                "format": "csv"})  # fmt: skip
    assert csv_text.status_code == 200 and b"lab-model" in csv_text.content
    # the project's viewer reads it and changes nothing
    vera = User.objects.create_user("vera", password="pw-vera-123", role="researcher")
    vera.memberships.all().delete()
    Membership.objects.create(project=lab, user=vera, role="viewer")
    viewer = APIClient()
    viewer.force_login(vera)
    assert viewer.get(f"/api/judging-runs/{run.pk}/").status_code == 200
    assert viewer.get("/api/reports/agreement/", {"project": "lab"}).status_code == 200
    before = database_snapshot()
    again = viewer.post(
        "/api/responses/",
        {"benchmark": "leval", "split": "test", "task": "quality", "system": "vera-model",
         "responses": [{k: v for k, v in r.items() if k != "system"} for r in QUALITY[:1]]},
        format="json",
    )  # fmt: skip
    assert again.status_code in (400, 403), again.content
    assert viewer.post(f"/api/judging-runs/{run.pk}/cancel/").status_code == 403
    assert database_snapshot() == before

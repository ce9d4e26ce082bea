"""Projects: a member of another project learns nothing of a project's objects
(every API operation answers 404, as for an id that does not exist, and
changes nothing), viewers read without changing, creates land in a project
the user may write to, and reports read one project. Its tests share one
module's data (two_projects_once); those that build their own are in
test_gold_annotators.py."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from rest_framework.test import APIClient

from adaptive.models import AdaptiveStudy
from annotator.models import Participant, Study
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset
from generation.models import Response
from judging.importing import import_elitr_bench
from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment
from tests.api_objects import api_models, build_api_objects, build_other_project_objects
from tests.conftest import database_snapshot, rolled_back_once
from users.models import Membership, Project, User, default_project
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

# The model a path's {id} names. Benchmarks (datasets, documents, questions)
# are shared by every project, so they have no project to hide.
SHARED = {"datasets", "documents", "questions"}
OWNED = {name: model for name, model in api_models().items() if name not in SHARED}
# How each model reaches its project.
PATHS = {
    Response: "run__project",
    Judgment: "response__run__project",
    JudgeItem: "run__project",
    Participant: "study__project",
}


def member(username: str, project: Project, role: str = "researcher") -> User:
    user = User.objects.create_user(username, password=f"pw-{username}-123", role="researcher")
    user.memberships.all().delete()  # only the membership this test gives
    Membership.objects.create(project=project, user=user, role=role)
    return user


def api_as(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture(scope="module")
def two_projects_once(django_db_setup, django_db_blocker, tmp_path_factory):
    """Every kind of object in the default project (whose member is the
    researcher "rita"), a few in project "other", and members of each: built
    once for the module (2 s a test when each built its own) inside a
    transaction rolled back at the module's end. Each test's own transaction
    (pytest-django's `db`) is a savepoint within it, so every test starts from
    the same rows. Returns ids: instances held across tests would keep what an
    earlier test changed in memory."""
    with rolled_back_once(django_db_blocker):
        # what the two_meetings and researcher fixtures make, in their order
        import_elitr_bench(
            write_synthetic_elitr(tmp_path_factory.mktemp("data"), meetings=2),
            with_responses=True,
        )
        researcher = User.objects.create_user("rita", password="pw-rita-123", role="researcher")
        build_api_objects(researcher)
        WebhookEndpoint.objects.create(
            project=default_project(), url="https://hooks.example.org/x", events=["run.failed"]
        )
        other = Project.objects.create(name="Other team", slug="other")
        build_other_project_objects(other)
        outsider = member("olga", other)
        yield {"other": other.pk, "insider": researcher.pk, "outsider": outsider.pk}


@pytest.fixture
def two_projects(two_projects_once, db):
    """The module's two projects and their members, fetched afresh in this
    test's own transaction."""
    return {
        "default": default_project(),
        "other": Project.objects.get(pk=two_projects_once["other"]),
        "insider": User.objects.get(pk=two_projects_once["insider"]),
        "outsider": User.objects.get(pk=two_projects_once["outsider"]),
    }


def default_project_object(model) -> int:
    path = PATHS.get(model, "project")
    found = model.objects.filter(**{path: default_project()}).order_by("pk").first()
    assert found is not None, f"no {model.__name__} in the default project"
    return found.pk


def operations(client: APIClient) -> list[tuple[str, str, str]]:
    """Every operation on one object: (method, path template, collection), the
    path's other parameters filled with their first allowed value."""
    schema = client.get("/api/schema/", {"format": "json"}).json()
    found = []
    for path, item in schema["paths"].items():
        if "{id}" not in path:
            continue
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            filled = path
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] != "id":
                    value = parameter["schema"]["enum"][0]
                    filled = filled.replace("{" + parameter["name"] + "}", str(value))
            found.append((method, filled, path.split("/")[2]))
    return found


def test_every_api_operation_on_another_projects_object_is_404_and_changes_nothing(
    two_projects,
):
    outsider, insider = api_as(two_projects["outsider"]), api_as(two_projects["insider"])
    ops = operations(insider)
    collections = {collection for _, _, collection in ops}
    assert collections == set(OWNED) | SHARED, collections  # a new route must be listed here
    checked = 0
    for method, template, collection in ops:
        if collection in SHARED:
            continue
        pk = default_project_object(OWNED[collection])
        url = template.replace("{id}", str(pk))
        before = database_snapshot()
        answer = getattr(outsider, method)(url, {}, format="json")
        assert answer.status_code == 404, (method, url, answer.status_code, answer.content[:300])
        # the answer is the one an id that does not exist gets: nothing tells them apart
        missing = getattr(outsider, method)(
            template.replace("{id}", "987654321"), {}, format="json"
        )
        assert answer.json() == missing.json(), (method, url)
        assert database_snapshot() == before, (method, url)
        checked += 1
        # the object is real: its own project's member reads it
        if method == "get":
            assert insider.get(url).status_code == 200, url
    assert checked >= 25, checked


@pytest.mark.parametrize("collection", sorted(OWNED))
def test_lists_show_only_the_users_projects(two_projects, collection):
    model = OWNED[collection]
    path = PATHS.get(model, "project")
    theirs = set(model.objects.filter(**{path: default_project()}).values_list("pk", flat=True))
    assert theirs
    answer = api_as(two_projects["outsider"]).get(f"/api/{collection}/", {"page_size": 1000})
    assert answer.status_code == 200
    body = answer.json()
    rows = body["results"] if isinstance(body, dict) else body
    shown = {row["id"] for row in rows}
    assert not shown & theirs
    if collection in {"studies", "evaluators", "systems", "judging-runs", "runs"}:
        assert shown, "the outsider's own project's objects are listed"


def test_a_filter_on_another_projects_object_answers_as_one_that_does_not_exist(two_projects):
    outsider = api_as(two_projects["outsider"])
    study = Study.objects.get(name="Crowd pilot")
    theirs = outsider.get("/api/participants/", {"study": study.pk})
    missing = outsider.get("/api/participants/", {"study": 987654321})
    assert theirs.status_code == missing.status_code == 400
    assert theirs.json().keys() == missing.json().keys()
    run = JudgingRun.objects.filter(project=two_projects["default"]).first()
    assert outsider.get("/api/judge-items/", {"run": run.pk}).status_code == 400


def test_a_create_cannot_name_another_projects_objects(two_projects):
    outsider = api_as(two_projects["outsider"])
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    before = database_snapshot()
    answer = outsider.post(
        "/api/judging-runs/",
        {"evaluator": "rubric judge", "dataset": dataset.pk, "mode": "st"},
        format="json",
    )
    assert answer.status_code == 400
    assert "evaluator" in answer.json()
    answer = outsider.post(
        "/api/studies/",
        {"name": "x", "dataset": dataset.pk, "systems": ["team-served"], "completion_code": "C1"},
        format="json",
    )
    assert answer.status_code == 400
    assert "systems" in answer.json()
    assert database_snapshot() == before


def test_a_member_of_two_projects_cannot_give_a_study_the_other_projects_systems(
    two_projects,
):
    insider = two_projects["insider"]
    Membership.objects.create(project=two_projects["other"], user=insider, role="researcher")
    study = Study.objects.create(
        project=two_projects["default"],
        name="fresh study",
        dataset=Dataset.objects.get(version="qa", language="en", split="test2"),
        completion_code="X2",
    )
    client = api_as(insider)
    before = database_snapshot()
    answer = client.patch(f"/api/studies/{study.pk}/", {"systems": ["other-served"]}, format="json")
    assert answer.status_code == 400, answer.content
    assert "other-served" in answer.json()["detail"]  # it has no run in the study's project
    assert database_snapshot() == before


def test_a_shared_evaluators_judgment_count_is_of_the_readers_projects(two_projects):
    from django.core.management import call_command

    call_command("judge", "--evaluator", "metric: f1", "--split", "test2", "--now")
    f1 = Evaluator.objects.get(name="metric: f1")
    in_default = Judgment.objects.filter(evaluator=f1, response__run__project__slug="default")
    assert f1.project is None and in_default.count() > 0

    def count(user) -> int:
        return api_as(user).get(f"/api/evaluators/{f1.pk}/").json()["judgment_count"]

    assert count(two_projects["insider"]) == in_default.count()
    assert count(two_projects["outsider"]) == 0


def test_the_workers_page_names_only_the_readers_runs(two_projects):
    from django.utils import timezone

    from runs.models import WorkerHeartbeat

    theirs = JudgingRun.objects.filter(project=two_projects["other"]).first()
    ours = JudgingRun.objects.filter(project=two_projects["default"]).first()
    now = timezone.now()
    WorkerHeartbeat.objects.create(
        name="llm@host", host="host", pid=1, queues=["llm"], started_at=now, last_beat_at=now,
        running=[
            {"model": "judging.judgingrun", "kind": "judging run", "id": run.pk,
             "done": 7, "total": 90 + run.pk, "pid": 1}
            for run in (ours, theirs)
        ],
    )  # fmt: skip
    browser = Client()
    browser.force_login(two_projects["outsider"])
    page = browser.get(reverse("console:workers")).content.decode()
    assert reverse("console:run", args=["judging", theirs.pk]) in page
    assert reverse("console:run", args=["judging", ours.pk]) not in page
    assert f"7/{90 + ours.pk}" not in page and "a run of another project" in page


def test_creates_go_to_a_project_the_user_may_write_to(two_projects):
    insider = two_projects["insider"]
    client = api_as(insider)
    made = client.post(
        "/api/evaluators/",
        {"name": "mine", "kind": "metric", "config": {"metric": "f1"}},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["project"] == "default"
    assert Evaluator.objects.get(name="mine").project == two_projects["default"]
    # a project he does not see is unknown; one he only views is refused for it
    unknown = client.post(
        "/api/evaluators/",
        {"name": "m2", "kind": "metric", "config": {"metric": "f1"}, "project": "other"},
        format="json",
    )
    assert unknown.status_code == 400 and "project" in unknown.json()
    Membership.objects.create(project=two_projects["other"], user=insider, role="viewer")
    viewing = client.post(
        "/api/evaluators/",
        {"name": "m3", "kind": "metric", "config": {"metric": "f1"}, "project": "other"},
        format="json",
    )
    assert viewing.status_code == 400
    assert "may only read" in str(viewing.json()["project"])
    # a researcher of two projects names the one
    Membership.objects.filter(user=insider, project=two_projects["other"]).update(role="researcher")
    unnamed = client.post(
        "/api/evaluators/",
        {"name": "m4", "kind": "metric", "config": {"metric": "f1"}},
        format="json",
    )
    assert unnamed.status_code == 400
    assert "default" in str(unnamed.json()["project"]) and "other" in str(unnamed.json())
    assert not Evaluator.objects.filter(name__in=["m2", "m3", "m4"]).exists()
    # a slug PostgreSQL cannot be asked for (found by Schemathesis: a 500 before)
    nul = client.post(
        "/api/evaluators/",
        {"name": "m5", "kind": "metric", "config": {"metric": "f1"}, "project": "E\x00k"},
        format="json",
    )
    assert nul.status_code == 400 and "NUL character" in str(nul.json()["project"])


def test_viewers_read_and_cannot_change(two_projects):
    viewer = api_as(member("vera", two_projects["default"], role="viewer"))
    study = Study.objects.get(name="Crowd pilot")
    assert viewer.get(f"/api/studies/{study.pk}/").status_code == 200
    before = database_snapshot()
    for method, url in [
        ("post", f"/api/studies/{study.pk}/pause/"),
        ("patch", f"/api/studies/{study.pk}/"),
        ("delete", f"/api/studies/{study.pk}/"),
    ]:
        answer = getattr(viewer, method)(url, {}, format="json")
        assert answer.status_code == 403, (method, url, answer.content)
    participant = Participant.objects.filter(study=study).first()
    refused = viewer.post(f"/api/participants/{participant.pk}/exclude/", {"reason": "x"})
    assert refused.status_code == 403
    assert database_snapshot() == before


def test_a_viewer_neither_creates_studies_from_a_report_nor_rates_gold(two_projects):
    from annotator.actions.status import check_set_study_status

    vera = member("vera", two_projects["default"], role="viewer")
    body = {"method": "random", "count": 3, "kind": "gold", "name": "made by a viewer",
            "split": "test2", "mode": "st", "dataset_version": "qa",
            "systems": "Synthetic-Echo,Synthetic-Hedge"}  # fmt: skip
    api, browser = api_as(vera), Client()
    browser.force_login(vera)
    before = database_snapshot()
    assert api.post("/api/reports/select-items/", body, format="json").status_code == 403
    page = browser.post(reverse("analysis-select-items"), {**body, "raters_per_task": 1})
    assert page.status_code == 403, page.content.decode()[:500]
    assert database_snapshot() == before
    # the project's researcher may; the gold study he makes is not a viewer's to rate (its
    # ratings would be the gold the judges are measured against)
    made = api_as(two_projects["insider"]).post(
        "/api/reports/select-items/", {**body, "name": "Gold pass"}, format="json"
    )
    assert made.status_code == 201, made.content
    gold = Study.objects.get(pk=made.json()["study"])
    check_set_study_status(gold, Study.Status.OPEN)
    before = database_snapshot()
    assert gold.name not in browser.get(reverse("annotator:gold_home")).content.decode()
    assert browser.post(reverse("annotator:gold_start", args=[gold.pk])).status_code == 404
    assert database_snapshot() == before
    insider = Client()
    insider.force_login(two_projects["insider"])
    assert gold.name in insider.get(reverse("annotator:gold_home")).content.decode()
    assert insider.post(reverse("annotator:gold_start", args=[gold.pk])).status_code == 302


def test_shared_objects_are_changed_by_site_admins_only(two_projects, admin_user):
    metric = Evaluator.objects.get(name="metric: f1")
    assert metric.project is None
    researcher = api_as(two_projects["insider"])
    answer = researcher.patch(f"/api/evaluators/{metric.pk}/", {"description": "x"})
    assert answer.status_code == 403
    assert "site admin" in answer.json()["detail"]
    admin = api_as(admin_user)
    assert admin.patch(f"/api/evaluators/{metric.pk}/", {"description": "x"}).status_code == 200


def test_a_report_reads_one_project(two_projects):
    outsider = api_as(two_projects["outsider"])
    refused = outsider.get("/api/reports/agreement/", {"project": "default", "split": "test2"})
    assert refused.status_code == 400
    assert "no such project" in refused.json()["detail"]
    unknown = outsider.get("/api/reports/agreement/", {"project": "nowhere", "split": "test2"})
    assert refused.json() == {**unknown.json(), "detail": refused.json()["detail"]}
    report = api_as(two_projects["insider"]).get(
        "/api/reports/agreement/", {"split": "test2", "mode": "st"}
    )
    assert report.status_code == 200, report.content[:300]
    assert report.json()["stamp"]["selection"]["project"] == "default"
    # the other project's study is not the insider's to name
    theirs = Study.objects.get(project=two_projects["other"])
    named = api_as(two_projects["insider"]).get(
        "/api/reports/agreement/", {"split": "test2", "study": theirs.pk}
    )
    assert named.status_code == 400


def test_console_pages_of_another_project_are_not_found(two_projects):
    browser = Client()
    browser.force_login(two_projects["outsider"])
    study = Study.objects.get(name="Crowd pilot")
    run = JudgingRun.objects.filter(project=two_projects["default"]).first()
    adaptive = AdaptiveStudy.objects.get()
    for url in [
        reverse("console:study", args=[study.pk]),
        reverse("console:run", args=["judging", run.pk]),
        reverse("console:adaptive", args=[adaptive.pk]),
    ]:
        assert browser.get(url).status_code == 404, url
    before = database_snapshot()
    assert (
        browser.post(reverse("console:study_status", args=[study.pk, "pause"])).status_code == 404
    )
    assert database_snapshot() == before
    home = browser.get(reverse("console:home")).content.decode()
    assert study.name not in home
    assert escape("other team's study") in home


def test_a_console_viewer_cannot_act(two_projects):
    browser = Client()
    browser.force_login(member("vera", two_projects["default"], role="viewer"))
    study = Study.objects.get(name="Crowd pilot")
    assert browser.get(reverse("console:study", args=[study.pk])).status_code == 200
    before = database_snapshot()
    assert (
        browser.post(reverse("console:study_status", args=[study.pk, "pause"])).status_code == 403
    )
    assert database_snapshot() == before


def test_the_admin_changes_are_for_site_admins(two_projects, admin_user):
    staff = two_projects["insider"]
    staff.is_staff = True
    staff.save()
    browser = Client()
    browser.force_login(staff)
    # a member reads his project's rows (tests/users/test_admin_scope.py), not the site's
    assert browser.get("/admin/annotator/study/").status_code == 200
    assert browser.get("/admin/users/project/").status_code == 403
    browser.force_login(admin_user)
    page = browser.get("/admin/users/project/")
    assert page.status_code == 200
    assert re.search(r"Other team", page.content.decode())
    # the admin role (not a superuser: a role the identity provider may set) reaches it too
    site_admin = User.objects.create_user("ada", role="admin", is_staff=True)
    browser.force_login(site_admin)
    assert browser.get("/admin/users/project/").status_code == 200
    assert browser.get("/admin/annotator/study/").status_code == 200

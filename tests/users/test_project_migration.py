"""The migration that brings projects: what existed goes to one default
project, existing researchers and admins become its members, metrics and the
published release stay shared, and gold annotators keep the gold studies."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("users", "0002_role_none_by_default")]


@pytest.mark.django_db(transaction=True)
def test_existing_data_and_people_go_to_the_default_project():
    executor = MigrationExecutor(connection)
    # every migration that needs projects is taken back
    old = executor.migrate(BEFORE).apps
    User, Evaluator = old.get_model("users", "User"), old.get_model("judging", "Evaluator")
    for name, role in [("rita", "researcher"), ("ada", "admin"), ("gina", "gold_annotator")]:
        User.objects.create(username=name, role=role)
    Evaluator.objects.create(name="team judge", kind="llm_rubric", origin="concord")
    Evaluator.objects.create(name="metric: f1", kind="metric", origin="concord")
    Evaluator.objects.create(name="gpt-4-eval", kind="imported", origin="paper")

    executor = MigrationExecutor(connection)
    new = executor.migrate(executor.loader.graph.leaf_nodes()).apps
    Project, Membership = new.get_model("users", "Project"), new.get_model("users", "Membership")
    Evaluator = new.get_model("judging", "Evaluator")
    default = Project.objects.get(slug="default")
    roles = dict(Membership.objects.values_list("user__username", "role"))
    assert roles == {"rita": "researcher", "ada": "owner"}  # the gold annotator sees no project
    projects = dict(Evaluator.objects.values_list("name", "project_id"))
    assert projects == {"team judge": default.pk, "metric: f1": None, "gpt-4-eval": None}

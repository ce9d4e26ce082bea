"""The migration that gave adaptive studies their design: the studies made
before it keep running as they ran (adaptively). In a file of its own: it
migrates the schema back and forth, so it needs a database outside any
transaction, and the other files share the paper's data in a transaction
open for the whole module (tests/adaptive/conftest.py: paper_once)."""

from __future__ import annotations

import pytest

from adaptive.models import AdaptiveStudy


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_existing_studies_adaptive():
    from datetime import timedelta

    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from django.utils import timezone

    from corpus.models import Benchmark, Dataset
    from judging.models import Evaluator
    from users.models import default_project_id

    benchmark = Benchmark.objects.create(slug="b", name="B")
    dataset = Dataset.objects.create(benchmark=benchmark, version="qa", language="en", split="s")
    judge = Evaluator.objects.create(name="a judge", kind="llm_rubric")
    executor = MigrationExecutor(connection)
    old = executor.migrate([("adaptive", "0002_adaptivestudy_project")]).apps
    Old = old.get_model("adaptive", "AdaptiveStudy")
    Old.objects.create(
        name="before the designs",
        project_id=default_project_id(),
        half_width=1.0,
        dataset_id=dataset.pk,
        judge_id=judge.pk,
        budget_pence=100,
        deadline=timezone.now() + timedelta(days=1),
    )
    executor = MigrationExecutor(connection)
    new = executor.migrate(executor.loader.graph.leaf_nodes()).apps
    study = new.get_model("adaptive", "AdaptiveStudy").objects.get(name="before the designs")
    assert study.design == "adaptive"  # what it ran
    assert AdaptiveStudy._meta.get_field("design").default == ""  # new ones: the plan's
